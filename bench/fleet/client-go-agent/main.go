// One client-go agent of the fleet benchmark (bench/fleet/run.sh): the same
// node-agent scopes as tattler's agent, in one process with one transport
// (one rest.Config: client-go shares its TLS transport, so every informer's
// watch rides one HTTP/2 connection), protobuf on the wire.
//
// usage: client-go-agent -variant metadata|typed -node NODE KUBECONFIG
//
//	metadata  what tattler's agent asks for: typed informers for the node's pods
//	          (spec.nodeName) and the Node (metadata.name), metadata informers
//	          (PartialObjectMetadata) for namespaces and services
//	typed     the agent people write by default: typed informers on full
//	          objects for all four, the same selectors
//
// Prints one JSON line per event the harness needs, each with "t"
// (CLOCK_MONOTONIC seconds, as tattler's agent and the harness read it):
// "open"; "Synced" per resource when its handler has synced; "Error" for each
// watch error the reflector reports (SetWatchErrorHandler: a refused
// connection, an expired resourceVersion); "marker" when an object carries a
// newer fleet.bench/marker annotation than seen before. On stdin, "stats"
// prints counts of handler calls and of requests by kind; "quit" or end of
// input exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	outMu sync.Mutex
	name  string
)

func monotonic() float64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func emit(m map[string]any) {
	m["t"] = monotonic()
	m["agent"] = name
	b, _ := json.Marshal(m)
	outMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	outMu.Unlock()
}

// counts of requests by kind, from the transport (the audit log is the
// harness's record; this is the client's own).
type counting struct {
	rt http.RoundTripper
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	kind := "other"
	switch {
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		kind = "watch_list"
	case q.Get("watch") == "true":
		kind = "watch_resume"
	case r.Method == http.MethodGet && q.Get("continue") == "":
		kind = "list"
	}
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

func main() {
	variant := flag.String("variant", "metadata", "metadata or typed")
	node := flag.String("node", "", "this agent's node")
	flag.StringVar(&name, "name", "", "the agent's name in its output (default: the node)")
	flag.Parse()
	if flag.NArg() != 1 || *node == "" || (*variant != "metadata" && *variant != "typed") {
		fmt.Fprintln(os.Stderr, "usage: client-go-agent -variant metadata|typed -node NODE KUBECONFIG")
		os.Exit(2)
	}
	if name == "" {
		name = *node
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "client-go-agent:", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "fleet-client-go-agent/" + *variant
	reqs := &counting{n: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { reqs.rt = rt; return reqs })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client-go-agent:", err)
		os.Exit(1)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client-go-agent:", err)
		os.Exit(1)
	}
	emit(map[string]any{"ev": "open", "variant": *variant,
		"watch_list_client": clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	field := func(sel string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.FieldSelector = sel }
	}
	typed := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(tweak))
	}
	metaInf := func(res string) cache.SharedIndexInformer {
		f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll, nil)
		return f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: res}).Informer()
	}
	infs := map[string]cache.SharedIndexInformer{
		"pods":  typed(field("spec.nodeName=" + *node)).Core().V1().Pods().Informer(),
		"nodes": typed(field("metadata.name=" + *node)).Core().V1().Nodes().Informer(),
	}
	if *variant == "typed" {
		infs["namespaces"] = typed(nil).Core().V1().Namespaces().Informer()
		infs["services"] = typed(nil).Core().V1().Services().Informer()
	} else {
		infs["namespaces"] = metaInf("namespaces")
		infs["services"] = metaInf("services")
	}

	var cmu sync.Mutex
	counts := map[string]int{}
	markers := map[string]int64{}
	count := func(res, kind string, obj any) {
		cmu.Lock()
		defer cmu.Unlock()
		counts[kind]++
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		v, err := strconv.ParseInt(m.GetAnnotations()["fleet.bench/marker"], 10, 64)
		if err == nil && v > markers[res] {
			markers[res] = v
			emit(map[string]any{"ev": "marker", "resource": res, "value": v, "object": m.GetName()})
		}
	}
	for res, inf := range infs {
		res, inf := res, inf
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			emit(map[string]any{"ev": "Error", "resource": res, "message": err.Error()})
		})
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { count(res, "Add", o) },
			UpdateFunc: func(_, o any) { count(res, "Update", o) },
			DeleteFunc: func(o any) { count(res, "Delete", o) },
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "client-go-agent:", err)
			os.Exit(1)
		}
		go inf.Run(ctx.Done())
		go func() {
			for !reg.HasSynced() {
				time.Sleep(5 * time.Millisecond)
			}
			cmu.Lock()
			c := map[string]int{}
			for k, v := range counts {
				c[k] = v
			}
			cmu.Unlock()
			emit(map[string]any{"ev": "Synced", "resource": res, "counts": c})
		}()
	}

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "stats":
			cmu.Lock()
			c := map[string]int{}
			for k, v := range counts {
				c[k] = v
			}
			cmu.Unlock()
			reqs.mu.Lock()
			r := map[string]int{}
			for k, v := range reqs.n {
				r[k] = v
			}
			reqs.mu.Unlock()
			emit(map[string]any{"ev": "stats", "counts": c, "requests": r})
		case "quit":
			emit(map[string]any{"ev": "closed"})
			return
		}
	}
	emit(map[string]any{"ev": "closed"})
}
