// Command example streams Kubernetes objects through the tattler Go package
// and prints one line per entry, as ffi/examples/watch.c does:
//
//	Add default/web-1 1234
//	Synced v1/pods 1240
//
// Usage:
//
//	go run ./example -server https://10.0.0.1:6443 -ca-file ca.crt -token-file token pods nodes
//	go run ./example -until-synced -server http://127.0.0.1:PORT pods   # against ffi's fakeapi_serve
//
// It links the installed library through pkg-config (make install PREFIX=DIR,
// then PKG_CONFIG_PATH=DIR/lib/pkgconfig LD_LIBRARY_PATH=DIR/lib); inside the
// repository, -tags tattler_dev links target/debug/libtattler.a instead;
// -tags tattler_static links the installed libtattler.a (a prefix installed
// with LIBRARY=static).
//
// Without -server the cluster is found as kubectl finds it (kubeconfig, in-cluster).
// SIGINT or SIGTERM ends the wait and closes the reader. Log lines go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	tattler "example.invalid/kube-tattler/ffi/go"
)

func main() {
	var cfg tattler.Config
	flag.StringVar(&cfg.Server, "server", "", "apiserver URL (default: kubeconfig or in-cluster)")
	flag.StringVar(&cfg.CAFile, "ca-file", "", "CA bundle (PEM)")
	flag.StringVar(&cfg.TokenFile, "token-file", "", "bearer token file")
	flag.StringVar(&cfg.Namespace, "namespace", "", "watch only this namespace")
	untilSynced := flag.Bool("until-synced", false, "exit once every resource is synced")
	flag.Parse()
	cfg.Resources = flag.Args()
	if len(cfg.Resources) == 0 {
		cfg.Resources = []string{"pods"}
	}
	if err := run(cfg, *untilSynced); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(cfg tattler.Config, untilSynced bool) error {
	logger := log.New(os.Stderr, "", 0)
	if err := tattler.SetLogFunc(func(l tattler.LogLevel, target, msg string) {
		logger.Printf("%s %s: %s", l, target, msg)
	}); err != nil {
		return err
	}
	r, err := tattler.Open(cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	stats, err := r.Stats()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	synced := map[string]bool{}
	for e, err := range r.All(ctx) { // ends when the reader is stopped
		if errors.Is(err, context.Canceled) {
			return r.Close() // a signal
		}
		if err != nil {
			return err
		}
		switch e.Change {
		case tattler.ChangeSynced:
			fmt.Printf("Synced %s %s\n", gvr(e), e.ResourceVersion)
			synced[gvr(e)] = true
			if untilSynced && len(synced) == len(stats) {
				return nil
			}
		case tattler.ChangeError:
			fmt.Printf("Error %s %v\n", gvr(e), e.Err)
			if untilSynced {
				return fmt.Errorf("%s failed: %w", gvr(e), e.Err)
			}
		default:
			name := e.Name
			if e.Namespace != "" {
				name = e.Namespace + "/" + e.Name
			}
			fmt.Printf("%s %s %s\n", e.Change, name, e.ResourceVersion)
		}
	}
	return r.Close()
}

func gvr(e tattler.Entry) string {
	if e.Group == "" {
		return e.Version + "/" + e.Resource
	}
	return e.Group + "/" + e.Version + "/" + e.Resource
}
