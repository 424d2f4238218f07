// Command etcd is a minimal single-member etcd for tests, started through
// go.etcd.io/etcd/server/v3/embed. It only knows the handful of flags the
// test harness needs and exits cleanly on SIGTERM/SIGINT.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func parseURLs(name, s string) []url.URL {
	var out []url.URL
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		u, err := url.Parse(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcd: bad %s %q: %v\n", name, p, err)
			os.Exit(2)
		}
		out = append(out, *u)
	}
	if len(out) == 0 {
		fmt.Fprintf(os.Stderr, "etcd: %s must not be empty\n", name)
		os.Exit(2)
	}
	return out
}

func main() {
	var (
		name          = flag.String("name", "default", "member name")
		dataDir       = flag.String("data-dir", "", "data directory (required)")
		listenClient  = flag.String("listen-client-urls", "http://127.0.0.1:2379", "comma-separated client listen URLs")
		advertClient  = flag.String("advertise-client-urls", "", "comma-separated advertised client URLs (default: listen-client-urls)")
		listenPeer    = flag.String("listen-peer-urls", "http://127.0.0.1:2380", "comma-separated peer listen URLs")
		advertPeer    = flag.String("initial-advertise-peer-urls", "", "comma-separated advertised peer URLs (default: listen-peer-urls)")
		logLevel      = flag.String("log-level", "warn", "debug, info, warn, error")
		unsafeNoFsync = flag.Bool("unsafe-no-fsync", true, "disable fsync (test data only)")
		quota         = flag.Int64("quota-backend-bytes", 0, "backend quota in bytes (0: etcd default)")
		progressNtf   = flag.Duration("watch-progress-notify-interval", 5*time.Second, "period of watch progress notifications")
	)
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		os.Exit(2)
	}
	if *advertClient == "" {
		*advertClient = *listenClient
	}
	if *advertPeer == "" {
		*advertPeer = *listenPeer
	}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = parseURLs("listen-client-urls", *listenClient)
	cfg.AdvertiseClientUrls = parseURLs("advertise-client-urls", *advertClient)
	cfg.ListenPeerUrls = parseURLs("listen-peer-urls", *listenPeer)
	cfg.AdvertisePeerUrls = parseURLs("initial-advertise-peer-urls", *advertPeer)
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = *logLevel
	cfg.LogOutputs = []string{"stderr"}
	cfg.UnsafeNoFsync = *unsafeNoFsync
	cfg.WatchProgressNotifyInterval = *progressNtf
	// etcdmain sets these from its flag defaults; embed.NewConfig leaves them
	// at 0, which logs every request as slow.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	cfg.WarningApplyDuration = embed.DefaultWarningApplyDuration
	if *quota > 0 {
		cfg.QuotaBackendBytes = *quota
	}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		os.Exit(1)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready, serving clients on %s\n", *advertClient)
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		fmt.Fprintln(os.Stderr, "etcd: took too long to become ready")
		os.Exit(1)
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: got %v before ready, stopping\n", s)
		e.Close()
		os.Exit(0)
	}

	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: got %v, stopping\n", s)
		e.Close()
		fmt.Fprintln(os.Stderr, "etcd: stopped")
		os.Exit(0)
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: server error: %v\n", err)
		e.Close()
		os.Exit(1)
	}
}
