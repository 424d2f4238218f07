//go:build cgo

package tattler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait bounds every Next in the tests: a hang fails instead.
const wait = 10 * time.Second

func open(t *testing.T, f *fake, resources ...string) *Reader {
	t.Helper()
	r, err := Open(Config{Server: f.URL, Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func next(t *testing.T, r *Reader) Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	e, err := r.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return e
}

// line is how the C example prints an entry.
func line(e Entry) string {
	switch e.Change {
	case ChangeSynced:
		return fmt.Sprintf("Synced %s/%s %s", e.Version, e.Resource, e.ResourceVersion)
	case ChangeError:
		return fmt.Sprintf("Error %s/%s %v", e.Version, e.Resource, e.Err)
	case ChangeStale:
		var se *StreamError
		errors.As(e.Err, &se)
		return fmt.Sprintf("Stale %s/%s %s", e.Version, e.Resource, se.Reason)
	}
	return fmt.Sprintf("%s %s/%s %s", e.Change, e.Namespace, e.Name, e.ResourceVersion)
}

// untilSynced reads up to the Synced entry of `resource` and returns the lines before it.
func untilSynced(t *testing.T, r *Reader, resource string) (lines []string, synced Entry) {
	t.Helper()
	for {
		e := next(t, r)
		if e.Change == ChangeSynced && e.Resource == resource {
			return lines, e
		}
		lines = append(lines, line(e))
	}
}

func TestFirstSyncThenLiveChanges(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	adds, synced := untilSynced(t, r, "pods")
	var want []string
	var last uint64
	for key, rv := range f.Seeded {
		want = append(want, fmt.Sprintf("Add %s %d", key, rv))
		last = max(last, rv)
	}
	sort.Strings(adds)
	sort.Strings(want)
	if strings.Join(adds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first sync:\n%s\nwant:\n%s", strings.Join(adds, "\n"), strings.Join(want, "\n"))
	}
	if synced.ResourceVersion != fmt.Sprint(last) || synced.Namespace != "" || synced.Object != nil {
		t.Fatalf("synced entry: %+v", synced)
	}

	rv := f.do(t, "apply pods shop cart-1")
	e := next(t, r)
	if got := line(e); got != fmt.Sprintf("Add shop/cart-1 %d", rv) {
		t.Fatalf("got %s", got)
	}
	if e.Kind != "Pod" || e.Version != "v1" || e.Group != "" || e.UID == "" || e.Inferred || e.Err != nil {
		t.Fatalf("entry: %+v", e)
	}
	var obj struct {
		Metadata struct{ Name, UID string } `json:"metadata"`
	}
	if err := json.Unmarshal(e.Object, &obj); err != nil || obj.Metadata.Name != "cart-1" || obj.Metadata.UID != e.UID {
		t.Fatalf("object %s: %v", e.Object, err)
	}
	rv = f.do(t, "apply pods shop cart-1")
	if got := line(next(t, r)); got != fmt.Sprintf("Update shop/cart-1 %d", rv) {
		t.Fatalf("got %s", got)
	}
	rv = f.do(t, "delete pods shop cart-1")
	if got := line(next(t, r)); got != fmt.Sprintf("Delete shop/cart-1 %d", rv) {
		t.Fatalf("got %s", got)
	}
}

func TestACancellableNextWaitsInOneLibraryCall(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan struct{})
	done := make(chan error, 1)
	before := libraryNexts.Load()
	go func() {
		close(entered)
		_, err := r.Next(ctx)
		done <- err
	}()
	<-entered
	select {
	case err := <-done:
		t.Fatalf("Next returned before the cancel: %v", err)
	case <-time.After(500 * time.Millisecond): // long enough for a 100 ms poll to show
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Next: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("a cancelled Next did not return")
	}
	if n := libraryNexts.Load() - before; n != 1 {
		t.Fatalf("a Next that waited 500 ms made %d library calls, want 1 (no polling)", n)
	}
}

func TestCancellingOneNextLeavesTheReaderRunning(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with a deadline: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a cancelled Next took %v", took)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Next(cctx)
		done <- err
	}()
	ccancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Next: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("a cancelled Next did not return")
	}

	rv := f.do(t, "apply pods default late")
	if got := line(next(t, r)); got != fmt.Sprintf("Add default/late %d", rv) {
		t.Fatalf("after the cancellations: %s", got)
	}
}

func TestStopWakesABlockedNext(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	done := make(chan error, 1)
	go func() {
		_, err := r.Next(context.Background()) // blocks in the library: no poll
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Next returned before Stop: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	r.Stop()
	r.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("after Stop: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Stop did not wake Next")
	}
	if _, err := r.SetResources([]string{"pods"}, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetResources after Stop: %v", err)
	}
}

func TestCloseIsIdempotentAndWaitsForCallsInProgress(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() { // blocked in the library
			defer wg.Done()
			_, err := r.Next(context.Background())
			errs <- err
		}()
		go func() { // polling
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err := r.Next(ctx)
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them get inside Next
	var cwg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cwg.Add(1)
		go func() { defer cwg.Done(); r.Close() }()
	}
	cwg.Wait()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Next during Close: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
	if _, err := r.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if _, _, err := r.TryNext(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryNext after Close: %v", err)
	}
	if _, err := r.Stats(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Stats after Close: %v", err)
	}
	r.Stop()
}

func TestEntriesOutliveTheReader(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	e := next(t, r)
	r.Close()
	runtime.GC()
	if e.Change != ChangeAdd || len(e.Object) == 0 || !json.Valid(e.Object) {
		t.Fatalf("entry after Close: %+v", e)
	}
}

// TestLeaderElectionEntriesCarryTheTermAndNameTheHolder: a Lease another
// replica held in its fourth term and stopped renewing. Following names
// that holder; this reader then takes the Lease in term 5, which Leading
// and every entry after it carry. Without leader election there is none.
func TestLeaderElectionEntriesCarryTheTermAndNameTheHolder(t *testing.T) {
	f := startFake(t, "--pods", "1")
	plain := open(t, f, "pods")
	if e := next(t, plain); e.Change != ChangeAdd || e.HasTerm || e.Term != 0 || e.Holder != "" {
		t.Fatalf("without leader election: %+v", e)
	}
	f.do(t, "add-resource coordination.k8s.io v1 leases Lease namespaced")
	f.do(t, `apply-json coordination.k8s.io/v1/leases {"apiVersion":"coordination.k8s.io/v1","kind":"Lease",`+
		`"metadata":{"namespace":"ns","name":"feed"},`+
		`"spec":{"holderIdentity":"other","leaseDurationSeconds":1,"leaseTransitions":4}}`)
	r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}, LeaderElection: &LeaderElection{
		Namespace: "ns", Lease: "feed", Identity: "me",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var got []string
	for len(got) < 4 {
		e := next(t, r)
		got = append(got, fmt.Sprintf("%s identity=%q holder=%q term=%d,%v",
			e.Change, e.Identity, e.Holder, e.Term, e.HasTerm))
	}
	want := []string{
		`Following identity="me" holder="other" term=0,false`,
		`Leading identity="me" holder="me" term=5,true`,
		`Add identity="" holder="" term=5,true`,
		`Synced identity="" holder="" term=5,true`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOpenErrorsSayWhatIsWrong(t *testing.T) {
	cases := []struct {
		json   string
		status Status
		needle string
	}{
		{"{not json", StatusInvalidConfig, "JSON"},
		{`{"server":"http://127.0.0.1:1","resources":["pods"],"tokn":"x"}`, StatusInvalidConfig, "`tokn`"},
		{`{"server":"http://127.0.0.1:1","resources":["pods!"]}`, StatusInvalidResource, `"pods!"`},
		{`{"server":"http://127.0.0.1:1","resources":["pods"],"token_file":"/no/such"}`, StatusIO, "/no/such"},
	}
	for _, c := range cases {
		r, err := OpenJSON(c.json)
		var se *Error
		if r != nil || !errors.As(err, &se) || se.Status != c.status || !strings.Contains(se.Message, c.needle) {
			t.Errorf("%s: %v (%#v)", c.json, err, se)
		}
		if !errors.Is(err, sentinels[c.status]) {
			t.Errorf("%s: %v is not %v", c.json, err, sentinels[c.status])
		}
	}
	_, err := OpenJSON("{not json")
	if !errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrIO) || errors.Is(err, ErrClosed) {
		t.Errorf("errors.Is matches the wrong sentinels: %v", err)
	}
	_, err = Open(Config{Server: "http://127.0.0.1:1", Resources: []string{"pods"}, Extra: map[string]any{"bogus": 1}})
	if err == nil || !strings.Contains(err.Error(), "`bogus`") {
		t.Errorf("Extra keys reach the library: %v", err)
	}
	if StatusClosed.String() != "reader closed" || Version() == "" {
		t.Errorf("status text %q, version %q", StatusClosed, Version())
	}
}

func TestSetResourcesAndStats(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	changed, err := r.SetResources([]string{"pods", "nodes"}, false)
	if err != nil || !changed {
		t.Fatalf("SetResources: %v %v", changed, err)
	}
	if lines, _ := untilSynced(t, r, "nodes"); len(lines) != 0 {
		t.Fatalf("nodes: %v", lines)
	}
	if changed, err := r.SetResources([]string{"nodes", "pods"}, false); err != nil || changed {
		t.Fatalf("the same set again: %v %v", changed, err)
	}
	_, err = r.SetResources([]string{"pods!"}, false)
	var se *Error
	if !errors.As(err, &se) || se.Status != StatusInvalidResource || !strings.Contains(se.Message, `"pods!"`) ||
		!errors.Is(err, ErrInvalidResource) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := r.SetResources(nil, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty list: %v", err)
	}
	stats, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// In the order of the last SetResources.
	if len(stats) != 2 || stats[0].Resource != "v1/nodes" || stats[1].Resource != "v1/pods" ||
		stats[1].Objects != uint64(len(f.Seeded)) || !stats[0].Synced || !stats[1].Synced {
		t.Fatalf("stats: %+v", stats)
	}
}

func TestForbiddenResourceIsAnErrorEntry(t *testing.T) {
	f := startFake(t)
	f.do(t, "forbid nodes on")
	r := open(t, f, "nodes")
	e := next(t, r)
	var se *StreamError
	if e.Change != ChangeError || !errors.As(e.Err, &se) || se.Code != 403 || se.Reason != "Forbidden" {
		t.Fatalf("entry: %+v", e)
	}
}

func TestLogLinesReachTheLogFunc(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	if err := SetLogLevel(LogLevel(9)); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("level 9: %v", err)
	}
	if err := SetLogLevel(LogInfo); err != nil {
		t.Fatal(err)
	}
	err := SetLogFunc(func(level LogLevel, target, msg string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%s %s: %s", level, target, msg))
	})
	if err != nil {
		t.Fatal(err)
	}
	f := startFake(t)
	r := open(t, f, "configmaps")
	untilSynced(t, r, "configmaps")
	r.Close()
	if err := SetLogFunc(nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, l := range lines {
		found = found || (strings.HasPrefix(l, "INFO kube_tattler::") && strings.Contains(l, f.URL))
	}
	if !found {
		t.Fatalf("no INFO line naming %s in %q", f.URL, lines)
	}
}

func TestAllIteratesUntilStopped(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	var first []string
	for e, err := range r.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Change == ChangeSynced {
			break // leaves the reader running
		}
		first = append(first, line(e))
	}
	if len(first) != len(f.Seeded) {
		t.Fatalf("first sync: %v", first)
	}
	rv := f.do(t, "apply pods shop iter-1")
	n := 0
	for e, err := range r.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if got := line(e); got != fmt.Sprintf("Add shop/iter-1 %d", rv) {
			t.Fatalf("after the break: %s", got)
		}
		n++
		r.Stop() // the loop ends once the queue is drained
	}
	if n != 1 {
		t.Fatalf("%d entries after Stop", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2 := open(t, f, "pods")
	var errs []error
	for _, err := range r2.All(ctx) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("a cancelled context: %v", errs)
	}
}

func TestNextTimeoutSaysErrTimeout(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	start := time.Now()
	if _, err := r.NextTimeout(100 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("NextTimeout: %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
		t.Fatalf("NextTimeout(100ms) took %v", took)
	}
	r.Stop()
	if _, err := r.NextTimeout(wait); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Stop: %v", err)
	}
}

func TestErrorTextBelongsToItsCall(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for _, bad := range []string{"pods!", "nodes!"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				_, err := r.SetResources([]string{bad}, false)
				if !errors.Is(err, ErrInvalidResource) || !strings.Contains(err.Error(), `"`+bad+`"`) {
					errs <- fmt.Sprintf("SetResources(%s): %v", bad, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestTheFinalizerClosesAnUnreachableReader(t *testing.T) {
	f := startFake(t)
	func() {
		r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}})
		if err != nil {
			t.Fatal(err)
		}
		untilSynced(t, r, "pods")
	}()
	f.do(t, "wait-watches 1 8")
	// The finalizer stops the reader and closes it on a goroutine of its own.
	deadline := time.Now().Add(wait)
	for {
		runtime.GC()
		if _, err := fmt.Fprintln(f.in, "wait-watches 0 1"); err != nil {
			t.Fatal(err)
		}
		if f.line(t) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unreachable reader's watch is still open")
		}
	}
}
