//go:build cgo

// Package tattler streams the full state of Kubernetes objects, and then
// every change to them, from a kube-apiserver.
//
//	import "example.invalid/kube-tattler/ffi/go/tattler"
//
// It wraps tattler's C library (libtattler, tattler.h) with cgo, so it
// needs CGO_ENABLED=1 and a C compiler. A release of the module carries the
// library, prebuilt for linux/amd64 and linux/arm64; elsewhere, and in a
// checkout, install it first: `make install PREFIX=DIR` in the tattler
// repository (it needs Rust), then PKG_CONFIG_PATH=DIR/lib/pkgconfig (and
// -tags tattler_system with a release).
//
//	r, err := tattler.Open(tattler.Config{Server: "https://10.0.0.1:6443",
//		CAFile: "/etc/k8s/ca.crt", TokenFile: "/var/run/token",
//		Resources: []string{"pods", "apps/v1/deployments"},
//		IdleTimeout: 2 * time.Minute})
//	if err != nil { ... }
//	defer r.Close()
//	for e, err := range r.All(ctx) { // ends when the reader is stopped
//		if err != nil { break }      // ctx.Err()
//		fmt.Println(e.Change, e.Namespace, e.Name, e.ResourceVersion)
//	}
//
// An agent that waits on several things at once selects on r.Events(ctx).C
// instead. An agent that keeps its place across restarts stops, drains and
// keeps r.Checkpoint() on the way out, and opens with Config.Resume on the
// way in; r.MetricsText() is its /metrics. Config.Specs give resources a
// scope of their own (a node agent's pods of one node), Config.MetadataOnly
// or ResourceSpec.MetadataOnly stream only metadata.
//
// A Reader is safe for concurrent use. Cancelling the context of one Next
// ends only that call, at once (no polling); Stop ends the stream for every
// caller; Close stops, waits for calls in progress to return, and frees the
// reader. Failures are *Error values that errors.Is matches against the
// sentinel errors (ErrClosed, ErrInvalidConfig, ErrReentrant, ...).
//
// Linking: by default the shared library, through `pkg-config tattler`;
// with the build tag tattler_static the static one, through
// `pkg-config --static tattler` (see lib_static.go). The go command does
// not notice a change of PKG_CONFIG_PATH or of the installed library:
// build with -a once after one.
package tattler

/*
#include <stdlib.h>
#include "tattler.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Version is the version of the linked C library.
func Version() string {
	return C.GoString(C.tattler_version())
}

// Reader streams entries. Safe for concurrent use.
type Reader struct {
	c *C.tattler_reader // freed once, by the last of Close and the calls in progress

	mu       sync.Mutex // guards calls and closing; never held across a C call
	calls    int        // calls inside the library, and a Close in progress
	closing  bool
	done     chan struct{} // closed once the C reader is freed
	closeErr error         // set before done is closed

	// waiter is held by the one Next that may wait in the library, so that
	// the wake its context sends reaches that call and no other.
	waiter chan struct{}

	// scope is what SetResources' names take on the Go side (Open's
	// MetadataOnly); zero for OpenJSON.
	scope nameScope
}

// Open checks the configuration and starts streaming; with cfg.Resume, from
// that checkpoint.
func Open(cfg Config) (*Reader, error) {
	js, err := cfg.JSON()
	if err != nil {
		return nil, fmt.Errorf("tattler: config: %w", err)
	}
	r, err := OpenJSONResume(js, cfg.Resume)
	if r != nil {
		r.scope = cfg.scope()
	}
	return r, err
}

// OpenJSON opens a reader from the library's JSON configuration (the keys
// of Config.JSON; tattler_config_set_json in tattler.h).
func OpenJSON(config string) (*Reader, error) {
	return OpenJSONResume(config, nil)
}

// OpenJSONResume opens a reader from the library's JSON configuration that
// resumes from checkpoint (Reader.Checkpoint bytes; nil for none).
func OpenJSONResume(config string, checkpoint []byte) (*Reader, error) {
	cs := C.CString(config)
	defer C.free(unsafe.Pointer(cs))
	var cp *C.uint8_t
	if len(checkpoint) > 0 {
		// Go memory without Go pointers in it, read only during the call:
		// cgo's rules allow passing it as it is.
		cp = (*C.uint8_t)(unsafe.Pointer(&checkpoint[0]))
	}
	cfg := C.tattler_config_new()
	defer C.tattler_config_free(cfg)
	// The library's one way in: a configuration given the document, opened.
	var c *C.tattler_reader
	err := withMessage(func(buf *C.char, n C.size_t, needed *C.size_t) Status {
		if st := Status(C.tattler_config_set_json(cfg, cs, buf, n, needed)); st != StatusOK {
			return st
		}
		return Status(C.tattler_open_config(cfg, cp, C.size_t(len(checkpoint)), &c, buf, n, needed))
	})
	runtime.KeepAlive(checkpoint)
	if err != nil {
		return nil, err
	}
	r := &Reader{c: c, done: make(chan struct{}), waiter: make(chan struct{}, 1)}
	// A backstop only: a Reader left open holds threads and sockets until
	// the garbage collector notices. Call Close.
	runtime.SetFinalizer(r, finalize)
	return r, nil
}

// withMessage makes a library call that writes its error text into a
// buffer and the text's size into *needed, again with a buffer that fits
// when the text was cut (a failed call changes nothing); nil on StatusOK,
// else an *Error with the whole text.
func withMessage(call func(buf *C.char, n C.size_t, needed *C.size_t) Status) error {
	var small [512]C.char
	var needed C.size_t
	st := call(&small[0], C.size_t(len(small)), &needed)
	if st == StatusOK {
		return nil
	}
	if int(needed) <= len(small) {
		return &Error{Status: st, Message: C.GoString(&small[0])}
	}
	full := make([]byte, needed)
	p := (*C.char)(unsafe.Pointer(&full[0]))
	if st = call(p, needed, &needed); st == StatusOK {
		return nil
	}
	return &Error{Status: st, Message: C.GoString(p)}
}

// finalize frees a Reader nobody closed. It runs only once r is
// unreachable, so no call is in progress; it never blocks the finalizer
// goroutine: joining the library's threads happens on a goroutine of its own.
func finalize(r *Reader) {
	c := r.c
	C.tattler_stop(c)
	go C.tattler_close(c)
}

// acquire counts a call into the library; false once Close has begun.
func (r *Reader) acquire() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.calls++
	return true
}

// release ends a call; the last one out after Close frees the C reader.
func (r *Reader) release() {
	r.mu.Lock()
	r.calls--
	last := r.closing && r.calls == 0
	r.mu.Unlock()
	if last {
		r.closeErr = statusError(Status(C.tattler_close(r.c)))
		close(r.done)
	}
}

// Next waits for the next entry. It returns ErrClosed once the reader is
// stopped or closed and drained, or ctx.Err() as soon as ctx ends;
// cancelling ctx ends only this call, the reader runs on. Concurrent Next
// calls take turns waiting. From inside a LogFunc, Next fails with
// ErrReentrant (use TryNext there).
func (r *Reader) Next(ctx context.Context) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, err
	}
	select {
	case r.waiter <- struct{}{}:
	default:
		if inLogCallback() {
			// The waiter may be waiting for the very stream that is logging.
			return Entry{}, &Error{Status: StatusReentrant, Message: "Next cannot wait inside a LogFunc"}
		}
		select {
		case r.waiter <- struct{}{}:
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		}
	}
	defer func() { <-r.waiter }()
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, r.wake)
		defer stop()
	}
	for {
		e, ok, err := r.next(-1)
		if ok || err != nil {
			return e, err
		}
		// Woken: by ctx, or by a wake an earlier Next's context left behind.
		if err := ctx.Err(); err != nil {
			return Entry{}, err
		}
	}
}

// NextTimeout waits at most d for the next entry: ErrTimeout when none
// came, ErrClosed once the reader is stopped and drained.
func (r *Reader) NextTimeout(d time.Duration) (Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e, err := r.Next(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = ErrTimeout
	}
	return e, err
}

// TryNext returns the next entry if one is ready, without waiting; ok is
// false when none is. It works from inside a LogFunc too.
func (r *Reader) TryNext() (e Entry, ok bool, err error) {
	return r.next(0)
}

// All iterates over the entries until the reader is stopped or closed
// (the loop then ends), or until ctx ends (the loop gets ctx.Err() once,
// then ends). Breaking out of the loop leaves the reader running.
func (r *Reader) All(ctx context.Context) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for {
			e, err := r.Next(ctx)
			if errors.Is(err, ErrClosed) {
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// libraryNexts counts tattler_next_entry calls, for the test that a
// cancellable Next waits in one call rather than polling.
var libraryNexts atomic.Int64

// next makes one tattler_next_entry call; ok is false on a timeout or wake.
func (r *Reader) next(timeoutMs int64) (Entry, bool, error) {
	if !r.acquire() {
		return Entry{}, false, ErrClosed
	}
	defer r.release()
	libraryNexts.Add(1)
	st, entry := nextEntry(r.c, timeoutMs)
	switch st {
	case StatusOK:
		return entry, true, nil
	case StatusTimeout:
		return Entry{}, false, nil
	case StatusClosed:
		return Entry{}, false, ErrClosed
	default:
		return Entry{}, false, statusError(st)
	}
}

// wake ends the library wait of the Next that holds r.waiter.
func (r *Reader) wake() {
	if r.acquire() {
		C.tattler_wake(r.c)
		r.release()
	}
}

// Stop ends every stream: Next calls in progress return ErrClosed once the
// queued entries are drained. Safe from any goroutine, also from a LogFunc;
// Close must still be called.
func (r *Reader) Stop() {
	if r.acquire() {
		C.tattler_stop(r.c)
		r.release()
	}
}

// Close stops the reader, waits for calls in progress to return, joins the
// library's threads and frees it. It returns what the library reported
// (an error wrapping ErrPanic if stopping or joining panicked). Idempotent:
// a later Close waits for the same end and returns the same result. Safe
// from any goroutine.
//
// From inside a LogFunc, Close cannot wait (the call that logged may be one
// of this reader's, on this very goroutine): it stops the reader and
// returns nil; the last call in progress frees the reader when it returns,
// and a later Close outside the LogFunc reports the result.
func (r *Reader) Close() error {
	r.mu.Lock()
	first := !r.closing
	if first {
		r.closing = true
		r.calls++ // this Close's own call, so that nothing frees r.c under it
	}
	r.mu.Unlock()
	if first {
		runtime.SetFinalizer(r, nil)
		C.tattler_stop(r.c) // wakes calls blocked in the library
		r.release()
	}
	if inLogCallback() {
		select {
		case <-r.done:
			return r.closeErr
		default:
			return nil
		}
	}
	<-r.done
	return r.closeErr
}

// SetResources changes the resources streamed while entries flow (see
// tattler_set_resources): added ones start with a full sync, removed ones
// stop, the rest run on. The names take the namespace, selectors and
// MetadataOnly of the configuration. It reports whether anything changed.
// From inside a LogFunc it fails with ErrReentrant.
func (r *Reader) SetResources(names []string, force bool) (changed bool, err error) {
	return r.SetResourceSpecs(names, nil, force)
}

// SetResourceSpecs is SetResources with specs beside the names, as
// Config.Resources and Config.Specs: the specs take only their own scope.
func (r *Reader) SetResourceSpecs(names []string, specs []ResourceSpec, force bool) (changed bool, err error) {
	js, err := json.Marshal(resourceList(names, specs, r.scope))
	if err != nil {
		return false, err
	}
	cs := C.CString(string(js))
	defer C.free(unsafe.Pointer(cs))
	if !r.acquire() {
		return false, ErrClosed
	}
	defer r.release()
	var c C.bool
	err = withMessage(func(buf *C.char, n C.size_t, needed *C.size_t) Status {
		return Status(C.tattler_set_resources_ex(r.c, cs, C.bool(force), &c, buf, n, needed))
	})
	switch {
	case err == nil:
		return bool(c), nil
	case errors.Is(err, ErrClosed):
		return false, ErrClosed
	default:
		return false, err
	}
}

// StreamStats are the counters of one resource stream.
type StreamStats struct {
	Resource   string `json:"resource"`
	Events     uint64 `json:"events"`
	Bytes      uint64 `json:"bytes"`
	Reconnects uint64 `json:"reconnects"`
	Resyncs    uint64 `json:"resyncs"`
	Relists    uint64 `json:"relists"`
	StaleDrops uint64 `json:"stale_drops"`
	// Skipped counts objects and frames that could not be delivered, each
	// reported by an Error entry whose StreamError.Ended is false.
	Skipped uint64 `json:"skipped"`
	// OtherShardDrops counts objects outside the stream's Shard that the
	// server sent anyway (it does not shard) and the library dropped.
	OtherShardDrops uint64 `json:"other_shard_drops"`
	// ResourceVersion is the last one seen, as the server sent it.
	ResourceVersion string `json:"resource_version"`
	Objects         uint64 `json:"objects"`
	Synced          bool   `json:"synced"`
	ListFallback    bool   `json:"list_fallback"`
	Failed          bool   `json:"failed"`
	// LastError is why the stream last retried or gave up; "" once synced.
	LastError string `json:"last_error"`
}

// Stats returns the counters of each stream, in the configured order.
func (r *Reader) Stats() ([]StreamStats, error) {
	text, err := r.text(textStats)
	if err != nil {
		return nil, err
	}
	var stats []StreamStats
	err = json.Unmarshal(text, &stats)
	return stats, err
}

// MetricsText returns the counters in the Prometheus text exposition format
// (version 0.0.4), ready to serve on an agent's /metrics with
// Content-Type "text/plain; version=0.0.4": tattler_events_total,
// tattler_objects, tattler_synced, tattler_seconds_since_sync, ... per
// stream, labelled by resource (and namespace, selectors, metadata_only
// where set); see tattler_metrics_text in tattler.h.
func (r *Reader) MetricsText() (string, error) {
	text, err := r.text(textMetrics)
	return string(text), err
}

// Checkpoint returns a checkpoint of the reader, to open a new one with
// (Config.Resume) after a restart without delivering everything again: per
// synced resource its resourceVersion and the objects the consumer holds
// (namespace, name, uid, resourceVersion; no contents). It is exact once
// the reader is stopped and drained: Stop, then Next until ErrClosed, then
// Checkpoint, then Close. Taken while it runs it may hold changes still
// waiting in the channel, which a resumed reader would not deliver.
func (r *Reader) Checkpoint() ([]byte, error) {
	return r.text(bytesCheckpoint)
}

// The library calls that write into a buffer: NUL-terminated texts, and
// the checkpoint's bytes.
const (
	textStats = iota
	textMetrics
	bytesCheckpoint
)

// text makes one of those calls, growing the buffer as the library says,
// and returns the text without its NUL.
func (r *Reader) text(which int) ([]byte, error) {
	if !r.acquire() {
		return nil, ErrClosed
	}
	defer r.release()
	var needed C.size_t
	size := 4096
	for {
		buf := make([]byte, size)
		p, n := (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))
		var st Status
		switch which {
		case textStats:
			st = Status(C.tattler_stats_json(r.c, p, n, &needed))
		case textMetrics:
			st = Status(C.tattler_metrics_text(r.c, p, n, &needed))
		default:
			st = Status(C.tattler_checkpoint(r.c, (*C.uint8_t)(unsafe.Pointer(p)), n, &needed))
		}
		switch st {
		case StatusOK:
			if which == bytesCheckpoint {
				return buf[:needed], nil
			}
			return buf[:needed-1], nil
		case StatusBufferTooSmall:
			size = int(needed) + int(needed)/8 + 256 // it may grow between two calls
		default:
			return nil, statusError(st)
		}
	}
}

// inLogCallback is true on a goroutine running a LogFunc (the library's
// thread-local flag: a cgo callback runs on the thread that called it).
func inLogCallback() bool {
	return bool(C.tattler_in_log_callback())
}
