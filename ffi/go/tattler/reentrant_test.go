//go:build cgo

package tattler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// trigger is the line the configmaps stream logs on its own thread once
// synced: the LogFunc under test acts on it, inside the library's callback.
const trigger = "v1/configmaps: synced"

// onTrigger installs a LogFunc that runs act once, on the trigger line,
// and removes it when the test ends.
func onTrigger(t *testing.T, act func()) {
	t.Helper()
	var once sync.Once
	if err := SetLogFunc(func(_ LogLevel, _, msg string) {
		if strings.Contains(msg, trigger) {
			once.Do(act)
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SetLogFunc(nil); err != nil {
			t.Error(err)
		}
	})
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s: nothing after %v (a deadlock?)", what, wait)
	}
	var zero T
	return zero
}

func TestEveryCallFromALogFunc(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")

	// A Next blocked in the library holds the waiter slot: the LogFunc's own
	// Next must refuse rather than queue behind it.
	blocked := make(chan error, 1)
	go func() {
		for {
			if _, err := r.Next(context.Background()); err != nil {
				blocked <- err
				return
			}
		}
	}()
	for len(r.waiter) == 0 {
		time.Sleep(time.Millisecond)
	}

	replaced := make(chan string, 64)
	results := make(chan []string, 1)
	onTrigger(t, func() {
		var fails []string
		check := func(ok bool, what string, err error) {
			if !ok {
				fails = append(fails, fmt.Sprintf("%s: %v", what, err))
			}
		}
		_, err := r.Stats()
		check(err == nil, "Stats works", err)
		text, err := r.MetricsText()
		check(err == nil && strings.Contains(text, `tattler_synced{resource="v1/configmaps"}`), "MetricsText works", err)
		cp, err := r.Checkpoint()
		check(err == nil && strings.Contains(string(cp), `"pods"`), "Checkpoint works", err)
		// Only the Synced entry this line announces may be queued.
		e, ok, err := r.TryNext()
		check(err == nil && (!ok || (e.Change == ChangeSynced && e.Resource == "configmaps")),
			"TryNext works", err)
		_, err = r.Next(context.Background())
		check(errors.Is(err, ErrReentrant), "Next is ErrReentrant", err)
		_, err = r.NextTimeout(time.Second)
		check(errors.Is(err, ErrReentrant), "NextTimeout is ErrReentrant", err)
		_, err = r.SetResources([]string{"pods"}, false)
		check(errors.Is(err, ErrReentrant) && strings.Contains(err.Error(), "log callback"),
			"SetResources is ErrReentrant with its message", err)
		err = SetLogLevel(LogInfo)
		check(err == nil, "SetLogLevel works", err)
		check(Version() != "", "Version works", nil)
		r2, err := Open(Config{Server: f.URL, Resources: []string{"nodes"}, Resume: cp})
		check(err == nil, "Open with a checkpoint works", err)
		if r2 != nil {
			_, err = r2.Stats()
			check(err == nil, "Stats of the new reader", err)
			r2.Stop()
			err = r2.Close() // nothing in progress on r2: closed here, threads joined
			check(err == nil, "Close of another reader works", err)
			_, err = r2.Stats()
			check(errors.Is(err, ErrClosed), "the other reader is closed", err)
		}
		err = SetLogFunc(func(_ LogLevel, _, msg string) {
			select {
			case replaced <- msg:
			default:
			}
		})
		check(err == nil, "SetLogFunc works (no deadlock)", err)
		results <- fails
	})
	if _, err := r.SetResources([]string{"pods", "configmaps"}, false); err != nil {
		t.Fatal(err)
	}
	for _, fail := range receive(t, results, "the LogFunc") {
		t.Error(fail)
	}

	// The replacement gets the lines logged after it: Open logs the plain-http
	// warning on this goroutine.
	r3, err := Open(Config{Server: f.URL, Resources: []string{"pods"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	for msg := receive(t, replaced, "the replacement LogFunc"); !strings.Contains(msg, "plain http"); {
		msg = receive(t, replaced, "the plain-http line")
	}
	r.Stop()
	if err := receive(t, blocked, "the blocked Next"); !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Next: %v", err)
	}
}

func TestSetLogFuncFromALogFuncWhileAnotherCallerWaits(t *testing.T) {
	inside := make(chan struct{})
	proceed := make(chan struct{})
	inner := make(chan error, 1)
	onTrigger(t, func() {
		close(inside)
		<-proceed
		inner <- SetLogFunc(func(LogLevel, string, string) {})
	})
	f := startFake(t)
	open(t, f, "configmaps")
	receive(t, inside, "the LogFunc")
	// This one waits in the library for the LogFunc in progress to return,
	// holding the package's lock; the LogFunc's own SetLogFunc must not wait
	// for it.
	outer := make(chan error, 1)
	go func() { outer <- SetLogFunc(nil) }()
	close(proceed)
	if err := receive(t, inner, "SetLogFunc inside the LogFunc"); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, outer, "SetLogFunc outside"); err != nil {
		t.Fatal(err)
	}
}

func TestCloseFromALogFuncWhileNextWaits(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	closed := make(chan error, 1)
	onTrigger(t, func() { closed <- r.Close() })
	next := make(chan error, 1)
	go func() {
		for {
			if _, err := r.Next(context.Background()); err != nil {
				next <- err
				return
			}
		}
	}()
	for len(r.waiter) == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.SetResources([]string{"pods", "configmaps"}, false); err != nil {
		t.Fatal(err)
	}
	// Inside the LogFunc, Close cannot wait for the Next in progress.
	if err := receive(t, closed, "Close in the LogFunc"); err != nil {
		t.Fatalf("Close in the LogFunc: %v", err)
	}
	if err := receive(t, next, "the waiting Next"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next: %v", err)
	}
	if err := r.Close(); err != nil { // waits for the free the Next's return made
		t.Fatalf("Close after: %v", err)
	}
	f.do(t, "wait-watches 0 8")
}

func TestCloseFromALogFuncOnTheReadersOwnThread(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	untilSynced(t, r, "pods")
	closed := make(chan error, 1)
	onTrigger(t, func() { closed <- r.Close() })
	if _, err := r.SetResources([]string{"pods", "configmaps"}, false); err != nil {
		t.Fatal(err)
	}
	// Nothing in progress: the reader is freed right there, on its own
	// configmaps stream's thread, which must not join itself.
	if err := receive(t, closed, "Close in the LogFunc"); err != nil {
		t.Fatalf("Close in the LogFunc: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close after: %v", err)
	}
	f.do(t, "wait-watches 0 8")
}
