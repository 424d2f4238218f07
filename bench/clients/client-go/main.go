// client-go on the replay server: a shared informer for pods (what a Go
// user would write), or with -mode reflector a bare reflector feeding a
// store that keeps nothing (client-go's floor). rest.Config{Host: url}, JSON,
// no auth. WatchListClient is on by default from client-go 1.35: the
// informer syncs from a watch-list stream; the replay server's request log
// shows which request was made.
//
// usage: client-go [-mode informer|reflector] URL
//
// Prints {"client","objects","bytes","seconds_to_synced",...} once the
// initial state is in (the handler registration's HasSynced, checked every millisecond;
// for the reflector, the store's Replace).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var touched atomic.Int64

func touch(obj interface{}) {
	if p, ok := obj.(*corev1.Pod); ok {
		touched.Add(int64(len(p.Name) + len(p.Namespace) + len(p.ResourceVersion)))
	}
}

func main() {
	mode := flag.String("mode", "informer", "informer or reflector")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: client-go [-mode informer|reflector] URL")
		os.Exit(2)
	}
	url := flag.Arg(0)
	watchList := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)

	t0 := time.Now()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client-go:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var objects int64
	var secs float64
	switch *mode {
	case "informer":
		var adds atomic.Int64
		factory := informers.NewSharedInformerFactory(cs, 0)
		inf := factory.Core().V1().Pods().Informer()
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
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())
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
