//go:build cgo

package tattler

import (
	"context"
	"errors"
	"sync"
)

// Events is a channel of entries for a select-based agent, fed by a
// goroutine calling Next; see Reader.Events.
type Events struct {
	// C delivers the entries. It is unbuffered: the goroutine waits for
	// each receive, so a slow receiver slows the stream (the library's
	// bounded channel fills and its watches wait) and nothing is dropped.
	// Closed when the stream ends; Err then says why.
	C <-chan Entry

	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Events starts a goroutine that calls r.Next(ctx) and sends each entry on
// the returned Events' C:
//
//	ev := r.Events(ctx)
//	for {
//		select {
//		case e, ok := <-ev.C:
//			if !ok {
//				return ev.Err() // nil: the reader was stopped or closed
//			}
//			handle(e)
//		case <-tick.C:
//			flush()
//		}
//	}
//
// C is closed once the reader is stopped or closed and drained (Err is
// then nil), once ctx ends (Err is ctx.Err()), or after a failing Next
// (Err is its error). Error entries (ChangeError) are entries, delivered
// on C. Cancel ctx or stop the reader when you stop receiving, or the
// goroutine waits for a receiver for ever.
//
// An entry the goroutine has taken from the reader when ctx ends is not
// delivered; for an exact Checkpoint end the stream with Stop instead,
// which delivers every queued entry before C closes.
func (r *Reader) Events(ctx context.Context) *Events {
	ch := make(chan Entry)
	ev := &Events{C: ch, done: make(chan struct{})}
	go func() {
		var err error
		defer func() {
			ev.mu.Lock()
			ev.err = err
			ev.mu.Unlock()
			close(ch)
			close(ev.done)
		}()
		for {
			var e Entry
			e, err = r.Next(ctx)
			if errors.Is(err, ErrClosed) {
				err = nil
				return
			}
			if err != nil {
				return
			}
			select {
			case ch <- e:
			case <-ctx.Done():
				err = ctx.Err()
				return
			}
		}
	}()
	return ev
}

// Err is why C was closed: nil when the reader was stopped or closed,
// ctx.Err() when the context ended, or the error of a failing Next. It is
// nil while C is open.
func (ev *Events) Err() error {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.err
}

// Done is closed once the goroutine has returned, C closed and Err set:
// for a caller that stops reading C early and must know the goroutine is
// gone (Close needs no such wait: it waits for calls in progress itself).
func (ev *Events) Done() <-chan struct{} {
	return ev.done
}
