//go:build cgo

package tattler

/*
#include "tattler.h"
*/
import "C"

import (
	"errors"
	"fmt"
)

// Status is a tattler_status: what a call into the C library did. The
// numbers are the C header's (a test holds them equal) and never change.
type Status int

// The statuses.
const (
	StatusOK      Status = 0
	StatusTimeout Status = 1
	StatusClosed  Status = 2

	StatusNullArg           Status = 100
	StatusInvalidConfig     Status = 101
	StatusInvalidUTF8       Status = 102
	StatusIO                Status = 103
	StatusPanic             Status = 104
	StatusBufferTooSmall    Status = 105
	StatusInvalidResource   Status = 106
	StatusTLS               Status = 107
	StatusInvalidArg        Status = 108
	StatusLoggerInUse       Status = 109
	StatusOther             Status = 110
	StatusReentrant         Status = 111
	StatusInvalidCheckpoint Status = 112
	// StatusInvalidHandle: the library refused a handle it does not hold
	// (closed, freed, or never its own). This package never passes one: it
	// would be a bug here, to report.
	StatusInvalidHandle Status = 113
)

// String is the library's fixed text for the status.
func (s Status) String() string {
	return C.GoString(C.tattler_status_str(C.int(s)))
}

// Error is a failed call: its status and the message of this call (never
// another call's). errors.Is matches it against the sentinel error of its
// status, errors.As finds it:
//
//	if errors.Is(err, tattler.ErrInvalidConfig) { ... }
//	var te *tattler.Error
//	if errors.As(err, &te) { log.Print(te.Status, te.Message) }
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "tattler: " + e.Status.String()
	}
	return "tattler: " + e.Message
}

// Is reports whether target is the sentinel error of e's status.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Status]
	return ok && target == s
}

// The sentinel errors, for errors.Is. Calls return them as they are
// (ErrClosed, ErrTimeout) or inside an *Error that carries the call's
// message.
var (
	// ErrClosed: the reader is stopped or closed and every queued entry
	// has been handed out (Next, NextTimeout), or the call came after Close.
	ErrClosed = errors.New("tattler: reader closed")
	// ErrTimeout: NextTimeout saw no entry in time; the reader runs on.
	ErrTimeout = errors.New("tattler: timed out waiting for an entry")
	// ErrInvalidConfig: Open's configuration is unusable (the message names
	// the key or field), or SetResources got an empty list.
	ErrInvalidConfig = errors.New("tattler: invalid configuration")
	// ErrInvalidResource: a resource name could not be understood.
	ErrInvalidResource = errors.New("tattler: invalid resource")
	// ErrInvalidUTF8: a string passed to the library is not UTF-8.
	ErrInvalidUTF8 = errors.New("tattler: a string is not UTF-8")
	// ErrIO: a file named in the configuration could not be read, or a
	// thread could not be started.
	ErrIO = errors.New("tattler: I/O error")
	// ErrTLS: the TLS setup failed (a CA bundle without a certificate).
	ErrTLS = errors.New("tattler: TLS setup failed")
	// ErrInvalidArg: an argument is out of range (SetLogLevel).
	ErrInvalidArg = errors.New("tattler: an argument is out of range")
	// ErrLoggerInUse: the process already has another Rust logger, so
	// SetLogFunc cannot route the library's lines.
	ErrLoggerInUse = errors.New("tattler: another logger is installed")
	// ErrReentrant: the call was made from inside a LogFunc, where it
	// cannot work (Next, SetResources); nothing was done.
	ErrReentrant = errors.New("tattler: not allowed from inside a LogFunc")
	// ErrPanic: the library caught a panic of its own (a bug: report it).
	ErrPanic = errors.New("tattler: internal panic")
	// ErrInvalidCheckpoint: Config.Resume holds bytes this library cannot
	// read (not a checkpoint, another version, cut short); nothing was
	// opened. Open without it, a full sync, and drop the stored one.
	ErrInvalidCheckpoint = errors.New("tattler: invalid checkpoint")
	// ErrInvalidHandle: the library refused a handle (StatusInvalidHandle);
	// a bug of this package if it happens: report it.
	ErrInvalidHandle = errors.New("tattler: invalid handle")
)

var sentinels = map[Status]error{
	StatusClosed:            ErrClosed,
	StatusTimeout:           ErrTimeout,
	StatusInvalidConfig:     ErrInvalidConfig,
	StatusInvalidResource:   ErrInvalidResource,
	StatusInvalidUTF8:       ErrInvalidUTF8,
	StatusIO:                ErrIO,
	StatusTLS:               ErrTLS,
	StatusInvalidArg:        ErrInvalidArg,
	StatusLoggerInUse:       ErrLoggerInUse,
	StatusReentrant:         ErrReentrant,
	StatusPanic:             ErrPanic,
	StatusInvalidCheckpoint: ErrInvalidCheckpoint,
	StatusInvalidHandle:     ErrInvalidHandle,
}

// statusError is nil for StatusOK, else an *Error with the status's own
// text (for calls whose status says everything).
func statusError(st Status) error {
	if st == StatusOK {
		return nil
	}
	return &Error{Status: st}
}

// configError is an *Error for a configuration the Go side refuses before
// the library sees it.
func configError(format string, args ...any) error {
	return &Error{Status: StatusInvalidConfig, Message: "config: " + fmt.Sprintf(format, args...)}
}
