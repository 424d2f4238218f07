// Package tattler streams the full state of Kubernetes objects, and then
// every change to them, from a kube-apiserver. It wraps tattler's C library
// (libtattler.a, include/tattler.h) with cgo.
//
//	r, err := tattler.Open(tattler.Config{Server: "https://10.0.0.1:6443",
//		CAFile: "/etc/k8s/ca.crt", TokenFile: "/var/run/token",
//		Resources: []string{"pods", "apps/v1/deployments"}})
//	if err != nil { ... }
//	defer r.Close()
//	for {
//		e, err := r.Next(ctx)
//		if err != nil { break } // ErrClosed, or ctx.Err()
//		fmt.Println(e.Change, e.Namespace, e.Name, e.ResourceVersion)
//	}
//
// A Reader is safe for concurrent use. Cancelling the context of one Next
// ends only that call; Stop ends the stream for every caller; Close stops,
// waits for calls in progress to return, and frees the reader.
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
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Status is a tattler_status: what a call into the C library did.
type Status int

// The statuses, with the C header's fixed numbers.
const (
	StatusOK              Status = C.TATTLER_OK
	StatusTimeout         Status = C.TATTLER_TIMEOUT
	StatusClosed          Status = C.TATTLER_CLOSED
	StatusNullArg         Status = C.TATTLER_ERR_NULL_ARG
	StatusInvalidConfig   Status = C.TATTLER_ERR_INVALID_CONFIG
	StatusInvalidUTF8     Status = C.TATTLER_ERR_INVALID_UTF8
	StatusIO              Status = C.TATTLER_ERR_IO
	StatusPanic           Status = C.TATTLER_ERR_PANIC
	StatusBufferTooSmall  Status = C.TATTLER_ERR_BUFFER_TOO_SMALL
	StatusInvalidResource Status = C.TATTLER_ERR_INVALID_RESOURCE
	StatusTLS             Status = C.TATTLER_ERR_TLS
	StatusInvalidArg      Status = C.TATTLER_ERR_INVALID_ARG
	StatusLoggerInUse     Status = C.TATTLER_ERR_LOGGER_IN_USE
	StatusOther           Status = C.TATTLER_ERR_OTHER
)

// String is the library's fixed text for the status.
func (s Status) String() string {
	return C.GoString(C.tattler_status_str(C.int(s)))
}

// StatusError is a failed call: its status and the library's message.
type StatusError struct {
	Status  Status
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return "tattler: " + e.Status.String()
	}
	return "tattler: " + e.Message
}

// ErrClosed is returned by Next once the reader is stopped or closed and
// every queued entry has been handed out, and by any call after Close.
var ErrClosed = errors.New("tattler: reader closed")

// Version is the version of the linked C library.
func Version() string {
	return C.GoString(C.tattler_version())
}

// Config is what to watch and how to reach the cluster; it is passed to the
// library as JSON (see tattler_open in tattler.h). Zero values are left out,
// so the library's defaults apply.
type Config struct {
	// Server is the apiserver URL, https://host:port. Without it the
	// library finds the cluster as kubectl does (Kubeconfig, Context, or
	// in-cluster).
	Server     string `json:"server,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	CAFile     string `json:"ca_file,omitempty"`
	CAData     string `json:"ca_data,omitempty"`
	Token      string `json:"token,omitempty"`
	TokenFile  string `json:"token_file,omitempty"`
	Insecure   bool   `json:"insecure,omitempty"`
	// Resources are names such as "pods", "nodes", "rbac", "v1/pods" or
	// "apps/v1/deployments".
	Resources          []string `json:"resources"`
	Namespace          string   `json:"namespace,omitempty"`
	LabelSelector      string   `json:"label_selector,omitempty"`
	FieldSelector      string   `json:"field_selector,omitempty"`
	ChannelCapacity    int      `json:"channel_capacity,omitempty"`
	RelistIntervalSecs int      `json:"relist_interval_secs,omitempty"`
	Scrub              *bool    `json:"scrub,omitempty"`
	// Extra holds further keys of the library's JSON configuration, merged
	// in as they are.
	Extra map[string]any `json:"-"`
}

// JSON is the configuration as the library reads it.
func (c Config) JSON() (string, error) {
	b, err := json.Marshal(c)
	if err != nil || len(c.Extra) == 0 {
		return string(b), err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	for k, v := range c.Extra {
		m[k] = v
	}
	b, err = json.Marshal(m)
	return string(b), err
}

// Reader streams entries. Safe for concurrent use.
type Reader struct {
	// Every call into the library holds mu for reading; Close holds it for
	// writing, so the C reader is freed only once no call is inside it, as
	// tattler.h requires.
	mu sync.RWMutex
	r  *C.tattler_reader // nil once closed
}

// Open checks the configuration and starts streaming.
func Open(cfg Config) (*Reader, error) {
	js, err := cfg.JSON()
	if err != nil {
		return nil, fmt.Errorf("tattler: config: %w", err)
	}
	return OpenJSON(js)
}

// OpenJSON opens a reader from the library's JSON configuration.
func OpenJSON(config string) (*Reader, error) {
	cs := C.CString(config)
	defer C.free(unsafe.Pointer(cs))
	var buf [1024]C.char
	var r *C.tattler_reader
	st := Status(C.tattler_open(cs, &r, &buf[0], C.size_t(len(buf))))
	if st != StatusOK {
		return nil, &StatusError{Status: st, Message: C.GoString(&buf[0])}
	}
	reader := &Reader{r: r}
	// A backstop only: a Reader left open holds threads and sockets until
	// the garbage collector notices. Call Close.
	runtime.SetFinalizer(reader, (*Reader).Close)
	return reader, nil
}

// poll is how long one wait in the library lasts while Next watches a
// context: the longest a cancelled Next takes to return.
const poll = 100 * time.Millisecond

// Next waits for the next entry. It returns ErrClosed once the reader is
// stopped or closed and drained, or ctx.Err() when ctx ends first;
// cancelling ctx ends only this call, the reader runs on.
func (r *Reader) Next(ctx context.Context) (Entry, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Entry{}, err
		}
		wait := int64(-1) // a context that never ends: wait until an entry or Stop
		if ctx.Done() != nil {
			wait = poll.Milliseconds()
			if d, ok := ctx.Deadline(); ok {
				if left := time.Until(d).Milliseconds() + 1; left < wait {
					wait = max(left, 0)
				}
			}
		}
		e, ok, err := r.next(wait)
		if ok || err != nil {
			return e, err
		}
	}
}

// TryNext returns the next entry if one is ready, without waiting; ok is
// false when none is.
func (r *Reader) TryNext() (e Entry, ok bool, err error) {
	return r.next(0)
}

// next makes one tattler_next_entry call; ok is false on a timeout.
func (r *Reader) next(timeoutMs int64) (Entry, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.r == nil {
		return Entry{}, false, ErrClosed
	}
	st, entry := nextEntry(r.r, timeoutMs)
	runtime.KeepAlive(r)
	switch st {
	case StatusOK:
		return entry, true, nil
	case StatusTimeout:
		return Entry{}, false, nil
	case StatusClosed:
		return Entry{}, false, ErrClosed
	default:
		return Entry{}, false, r.lastError(st)
	}
}

// Stop ends every stream: Next calls in progress return ErrClosed once the
// queued entries are drained. Safe from any goroutine; Close must still be
// called.
func (r *Reader) Stop() {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.r != nil {
		C.tattler_stop(r.r)
	}
	runtime.KeepAlive(r)
}

// Close stops the reader, waits for calls in progress to return, joins the
// library's threads and frees it. Idempotent; safe from any goroutine.
func (r *Reader) Close() error {
	r.Stop() // wakes a Next blocked in the library
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r != nil {
		C.tattler_close(r.r)
		r.r = nil
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

// SetResources changes the resources streamed while entries flow (see
// tattler_set_resources): added ones start with a full sync, removed ones
// stop, the rest run on. The namespace and selectors of the configuration
// still apply. It reports whether anything changed.
func (r *Reader) SetResources(names []string, force bool) (changed bool, err error) {
	js, err := json.Marshal(names)
	if err != nil {
		return false, err
	}
	cs := C.CString(string(js))
	defer C.free(unsafe.Pointer(cs))
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.r == nil {
		return false, ErrClosed
	}
	var c C.bool
	st := Status(C.tattler_set_resources(r.r, cs, C.bool(force), &c))
	runtime.KeepAlive(r)
	switch st {
	case StatusOK:
		return bool(c), nil
	case StatusClosed:
		return false, ErrClosed
	default:
		return false, r.lastError(st)
	}
}

// StreamStats are the counters of one resource stream.
type StreamStats struct {
	Resource        string `json:"resource"`
	Events          uint64 `json:"events"`
	Bytes           uint64 `json:"bytes"`
	Reconnects      uint64 `json:"reconnects"`
	Resyncs         uint64 `json:"resyncs"`
	StaleDrops      uint64 `json:"stale_drops"`
	ResourceVersion uint64 `json:"resource_version"`
	Objects         uint64 `json:"objects"`
	Synced          bool   `json:"synced"`
	ListFallback    bool   `json:"list_fallback"`
	Failed          bool   `json:"failed"`
}

// Stats returns the counters of each stream, in the configured order.
func (r *Reader) Stats() ([]StreamStats, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.r == nil {
		return nil, ErrClosed
	}
	var needed C.size_t
	size := 1024
	for {
		buf := make([]byte, size)
		st := Status(C.tattler_stats_json(r.r, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed))
		runtime.KeepAlive(r)
		switch st {
		case StatusOK:
			var stats []StreamStats
			err := json.Unmarshal(buf[:needed-1], &stats)
			return stats, err
		case StatusBufferTooSmall:
			size = int(needed) + 256 // counters may grow between two calls
		default:
			return nil, r.lastError(st)
		}
	}
}

// lastError wraps a failure status with the reader's error text. Called
// with mu held for reading.
func (r *Reader) lastError(st Status) error {
	var buf [1024]C.char
	msg := ""
	if C.tattler_last_error(r.r, &buf[0], C.size_t(len(buf))) == C.TATTLER_OK {
		msg = C.GoString(&buf[0])
	}
	runtime.KeepAlive(r)
	return &StatusError{Status: st, Message: msg}
}
