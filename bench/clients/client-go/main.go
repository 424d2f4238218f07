// client-go on the replay server (a URL: rest.Config{Host: url}, no auth) or
// on a real apiserver (a kubeconfig file): a shared informer for pods (what a
// Go user would write), or with -mode reflector a bare reflector feeding a
// store that keeps nothing (client-go's floor). WatchListClient is on by
// default from client-go 1.35: the informer syncs from a watch-list stream;
// every request is logged on stderr.
//
// usage: client-go [-mode informer|reflector] [-content json|protobuf] [-metadata] [-fields SELECTOR] URL|KUBECONFIG
//
//	-content   json: Accept application/json only; protobuf: application/vnd.kubernetes.protobuf
//	           first (client-go's own default for built-in types; the replay server answers JSON)
//	-metadata  a metadata informer (metadatainformer: PartialObjectMetadata only)
//	-fields    a field selector (spec.nodeName=node-042: a node agent)
//
// Prints {"client","objects","bytes","seconds_to_synced",...} once the
// initial state is in (the handler registration's HasSynced, checked every millisecond;
// for the reflector, the store's Replace).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var touched atomic.Int64

func touch(obj interface{}) {
	switch p := obj.(type) {
	case *corev1.Pod:
		touched.Add(int64(len(p.Name) + len(p.Namespace) + len(p.ResourceVersion)))
	case *metav1.PartialObjectMetadata:
		touched.Add(int64(len(p.Name) + len(p.Namespace) + len(p.ResourceVersion)))
	}
}

// logRequests writes each request's method, URL and Accept header to stderr;
// accept, if set, replaces the Accept header first (the metadata client sets
// its own, protobuf first).
type logRequests struct {
	rt     http.RoundTripper
	accept string
}

func (l logRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.accept != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Accept", l.accept)
	}
	fmt.Fprintf(os.Stderr, "client-go: request: %s %s Accept: %s\n", r.Method, r.URL.RequestURI(), r.Header.Get("Accept"))
	return l.rt.RoundTrip(r)
}

func main() {
	mode := flag.String("mode", "informer", "informer or reflector")
	content := flag.String("content", "", "json or protobuf (default: client-go's, protobuf then JSON)")
	meta := flag.Bool("metadata", false, "a metadata informer")
	fieldSel := flag.String("fields", "", "field selector")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: client-go [-mode informer|reflector] [-content json|protobuf] [-metadata] [-fields SELECTOR] URL|KUBECONFIG")
		os.Exit(2)
	}
	target := flag.Arg(0)
	watchList := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)

	t0 := time.Now()
	var cfg *rest.Config
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		cfg = &rest.Config{Host: target}
	} else {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", target); err != nil {
			fmt.Fprintln(os.Stderr, "client-go:", err)
			os.Exit(1)
		}
	}
	// No client-side throttling: an informer makes one request anyway.
	cfg.QPS, cfg.Burst = -1, 0
	switch *content {
	case "":
	case "json":
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	case "protobuf":
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	default:
		fmt.Fprintln(os.Stderr, "client-go: -content is json or protobuf")
		os.Exit(2)
	}
	accept := ""
	if *meta && *content == "json" {
		accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return logRequests{rt, accept} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client-go:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tweak := func(o *metav1.ListOptions) { o.FieldSelector = *fieldSel }

	var objects int64
	var secs float64
	if *meta && *mode != "informer" {
		fmt.Fprintln(os.Stderr, "client-go: -metadata is an informer")
		os.Exit(2)
	}
	switch *mode {
	case "informer":
		var adds atomic.Int64
		var inf cache.SharedIndexInformer
		if *meta {
			mc, err := metadata.NewForConfig(cfg)
			if err != nil {
				fmt.Fprintln(os.Stderr, "client-go:", err)
				os.Exit(1)
			}
			f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll, tweak)
			inf = f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
		} else {
			factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(tweak))
			inf = factory.Core().V1().Pods().Informer()
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				adds.Add(1)
				touch(obj)
			},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "client-go:", err)
			os.Exit(1)
		}
		go inf.Run(ctx.Done())
		// The handler's own HasSynced: every initial object has reached it
		// (the informer's says only that its store has them). Polled every
		// millisecond, finer than cache.WaitForCacheSync's 100 ms.
		for !reg.HasSynced() {
			time.Sleep(time.Millisecond)
		}
		secs = time.Since(t0).Seconds()
		objects = adds.Load()
		if int64(len(inf.GetStore().ListKeys())) != objects {
			fmt.Fprintln(os.Stderr, "client-go: store and handler disagree")
		}
	case "reflector":
		store := &countingStore{done: make(chan struct{})}
		sel := fields.Everything()
		if *fieldSel != "" {
			sel = fields.ParseSelectorOrDie(*fieldSel)
		}
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", sel)
		r := cache.NewReflector(lw, &corev1.Pod{}, store, 0)
		go r.Run(ctx.Done())
		<-store.done
		secs = time.Since(t0).Seconds()
		objects = store.replaced
	default:
		fmt.Fprintln(os.Stderr, "client-go: -mode is informer or reflector")
		os.Exit(2)
	}
	name := "client-go"
	if *mode == "reflector" {
		name = "client-go-reflector"
	}
	if *meta {
		name += "-metadata"
	}
	if *content != "" {
		name += "-" + *content
	}
	fmt.Printf("{\"client\":%q,\"objects\":%d,\"bytes\":0,\"seconds_to_synced\":%.6f,\"touched\":%d,\"watch_list_client\":%t}\n",
		name, objects, secs, touched.Load(), watchList)
}

// countingStore keeps nothing: it counts the initial list and signals once it is in.
type countingStore struct {
	replaced int64
	done     chan struct{}
	closed   bool
}

func (s *countingStore) Add(obj interface{}) error    { touch(obj); return nil }
func (s *countingStore) Update(obj interface{}) error { touch(obj); return nil }
func (s *countingStore) Delete(obj interface{}) error { return nil }
func (s *countingStore) List() []interface{}          { return nil }
func (s *countingStore) ListKeys() []string           { return nil }
func (s *countingStore) Get(obj interface{}) (interface{}, bool, error) {
	return nil, false, nil
}
func (s *countingStore) GetByKey(key string) (interface{}, bool, error) { return nil, false, nil }
func (s *countingStore) Replace(list []interface{}, rv string) error {
	for _, o := range list {
		touch(o)
	}
	s.replaced = int64(len(list))
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	return nil
}
func (s *countingStore) Resync() error                        { return nil }
func (s *countingStore) LastStoreSyncResourceVersion() string { return "" }
