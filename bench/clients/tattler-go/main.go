// tattler's Go package (cgo over the C ABI) on the replay server: sync pods,
// touching each entry's namespace, name, resourceVersion and object, and
// print one JSON line.
//
// usage: tattler-go [-noscrub] URL|CONFIG.json
//
// URL is the replay server's; CONFIG.json a configuration for OpenJSON (a
// real apiserver: bench/real.sh writes them; -noscrub is then ignored).
//
// Build (bench/run.sh does this, after `cargo build --release -p tattler-ffi`):
//
//	go build -tags tattler_release -o tattler-go .
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"example.invalid/kube-tattler/ffi/go/tattler"
)

// libtattler is the SHA-256 of the libtattler.a linked in, set by run.sh
// with -ldflags -X: it also forces a relink whenever the archive changes,
// which the go command does not notice by itself (it links the archive
// through cgo LDFLAGS, whose content is not part of its cache key).
var libtattler = "unknown"

func main() {
	noscrub := flag.Bool("noscrub", false, "turn secret scrubbing off")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tattler-go [-noscrub] URL|CONFIG.json")
		os.Exit(2)
	}
	target := flag.Arg(0)
	cfg := tattler.Config{Server: target, Resources: []string{"pods"}}
	name := "tattler-go"
	if *noscrub {
		off := false
		cfg.Scrub = &off
		name = "tattler-go-noscrub"
	}
	js, err := cfg.JSON()
	if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		var b []byte
		b, err = os.ReadFile(target)
		js = string(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tattler-go:", err)
		os.Exit(2)
	}
	t0 := time.Now()
	r, err := tattler.OpenJSON(js)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tattler-go:", err)
		os.Exit(1)
	}
	defer r.Close()
	ctx := context.Background()
	var objects, touched uint64
	for {
		e, err := r.Next(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tattler-go:", err)
			os.Exit(1)
		}
		if e.Change == tattler.ChangeSynced {
			break
		}
		if e.Change == tattler.ChangeError {
			fmt.Fprintln(os.Stderr, "tattler-go: error entry:", e.Err)
			os.Exit(1)
		}
		objects++
		touched += uint64(len(e.Name)+len(e.Namespace)+len(e.Object)) + uint64(len(e.ResourceVersion))
	}
	secs := time.Since(t0).Seconds()
	fmt.Printf("{\"client\":%q,\"objects\":%d,\"bytes\":0,\"seconds_to_synced\":%.6f,\"touched\":%d,\"libtattler_sha256\":%q}\n",
		name, objects, secs, touched, libtattler)
}
