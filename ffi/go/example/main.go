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
//	go run ./example -checkpoint state.json -server ... pods            # an agent that keeps its place
//
// It links the installed library through pkg-config (make install PREFIX=DIR,
// then PKG_CONFIG_PATH=DIR/lib/pkgconfig LD_LIBRARY_PATH=DIR/lib); inside the
// repository, -tags tattler_dev links target/debug/libtattler.a instead;
// -tags tattler_static links the installed libtattler.a (a prefix installed
// with LIBRARY=static).
//
// Without -server the cluster is found as kubectl finds it (kubeconfig,
// in-cluster). SIGINT or SIGTERM stops the reader the documented way: the
// entries already queued are printed, then "Closed", the checkpoint is
// written (-checkpoint) and the reader closed; the exit status is 0. With
// -checkpoint the next start resumes from the file: only what changed
// meanwhile. Log lines go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"syscall"

	"example.invalid/kube-tattler/ffi/go/tattler"
)

func main() {
	var cfg tattler.Config
	flag.StringVar(&cfg.Server, "server", "", "apiserver URL (default: kubeconfig or in-cluster)")
	flag.StringVar(&cfg.CAFile, "ca-file", "", "CA bundle (PEM)")
	flag.StringVar(&cfg.TokenFile, "token-file", "", "bearer token file")
	flag.StringVar(&cfg.Namespace, "namespace", "", "watch only this namespace")
	untilSynced := flag.Bool("until-synced", false, "exit once every resource is synced")
	checkpoint := flag.String("checkpoint", "", "resume from this file, and write the checkpoint there on the way out")
	flag.Parse()
	cfg.Resources = flag.Args()
	if len(cfg.Resources) == 0 {
		cfg.Resources = []string{"pods"}
	}
	if err := run(cfg, *untilSynced, *checkpoint); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(cfg tattler.Config, untilSynced bool, checkpoint string) error {
	logger := log.New(os.Stderr, "", 0)
	if err := tattler.SetLogFunc(func(l tattler.LogLevel, target, msg string) {
		logger.Printf("%s %s: %s", l, target, msg)
	}); err != nil {
		return err
	}
	if checkpoint != "" {
		cp, err := os.ReadFile(checkpoint)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		cfg.Resume = cp
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

	// A signal stops the reader: the loop below then takes what is queued
	// and ends, so the checkpoint holds exactly what was printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		r.Stop()
	}()
	synced := map[string]bool{}
	var failed error
	for e, err := range r.All(context.Background()) { // ends once stopped and drained
		if err != nil {
			return err
		}
		switch e.Change {
		case tattler.ChangeSynced:
			fmt.Printf("Synced %s %s\n", gvr(e), e.ResourceVersion)
			synced[gvr(e)] = true
			if untilSynced && len(synced) == len(stats) {
				r.Stop()
			}
		case tattler.ChangeStale:
			// Not current (e.Err says why); a Synced ends it.
			fmt.Printf("Stale %s %v\n", gvr(e), e.Err)
		case tattler.ChangeError:
			fmt.Printf("Error %s %v\n", gvr(e), e.Err)
			if untilSynced {
				failed = fmt.Errorf("%s failed: %w", gvr(e), e.Err)
				r.Stop()
			}
		default:
			name := e.Name
			if e.Namespace != "" {
				name = e.Namespace + "/" + e.Name
			}
			fmt.Printf("%s %s %s\n", e.Change, name, e.ResourceVersion)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "example: signal: stopped")
	}
	fmt.Println("Closed")
	if checkpoint != "" {
		if err := save(r, checkpoint); err != nil {
			return err
		}
	}
	if err := r.Close(); err != nil {
		return err
	}
	return failed
}

// save writes the reader's checkpoint to path, through a temporary file and
// a rename so that a crash leaves the old one whole.
func save(r *tattler.Reader, path string) error {
	cp, err := r.Checkpoint()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, cp, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "example: checkpoint: %d bytes to %s\n", len(cp), path)
	return os.Rename(tmp, path)
}

func gvr(e tattler.Entry) string {
	if e.Group == "" {
		return e.Version + "/" + e.Resource
	}
	return e.Group + "/" + e.Version + "/" + e.Resource
}
