//go:build cgo

package tattler

/*
#include "tattler.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// LogLevel is the level of a library log line; the numbers are the C
// header's tattler_log_level (a test holds them equal).
type LogLevel int

// The levels.
const (
	LogOff   LogLevel = 0
	LogError LogLevel = 1
	LogWarn  LogLevel = 2
	LogInfo  LogLevel = 3
	LogDebug LogLevel = 4
	LogTrace LogLevel = 5
)

func (l LogLevel) String() string {
	switch l {
	case LogOff:
		return "OFF"
	case LogError:
		return "ERROR"
	case LogWarn:
		return "WARN"
	case LogInfo:
		return "INFO"
	case LogDebug:
		return "DEBUG"
	case LogTrace:
		return "TRACE"
	}
	return fmt.Sprintf("LogLevel(%d)", int(l))
}

// LogFunc receives the library's log lines: target is the module that
// logged (e.g. "kube_tattler::stream::watch"). It is called from the library's own
// threads (and from a goroutine whose call into the library logs), must not
// block for long and must not panic.
//
// It may call this package: everything works from inside it except Next
// and SetResources, which fail with ErrReentrant (TryNext works), and Close,
// which stops the reader without waiting (see Close). Lines logged by the
// calls it makes are dropped, so it is never called inside itself.
type LogFunc func(level LogLevel, target, msg string)

var (
	logFunc atomic.Pointer[LogFunc]
	logMu   sync.Mutex // orders SetLogFunc calls made outside a LogFunc
)

//export tattlerGoLog
func tattlerGoLog(user unsafe.Pointer, level C.int, target, msg *C.char) {
	if f := logFunc.Load(); f != nil {
		(*f)(LogLevel(level), C.GoString(target), C.GoString(msg))
	}
}

// SetLogFunc routes the library's log lines (process-wide, for every
// reader) to f; nil turns them off. Once it returns, the previous function
// is never called again.
//
// Called from inside a LogFunc it works too, but cannot wait for the line
// being delivered (its own caller): the lines logged after it go to f, and
// a line being delivered on another thread at that moment may still reach
// the previous function.
func SetLogFunc(f LogFunc) error {
	if inLogCallback() {
		// Only the Go side changes: the library's callback (this package's)
		// stays installed, and with f nil it drops the lines.
		if f == nil {
			logFunc.Store(nil)
		} else {
			logFunc.Store(&f)
		}
		return nil
	}
	// Serialises the callers outside a LogFunc; never taken inside one, so a
	// LogFunc calling SetLogFunc cannot wait for a SetLogFunc that waits for it.
	logMu.Lock()
	defer logMu.Unlock()
	if f == nil {
		st := setLogCallback(false)
		logFunc.Store(nil)
		return statusError(st)
	}
	logFunc.Store(&f)
	return statusError(setLogCallback(true))
}

// SetLogLevel sets the most detailed level passed to the LogFunc; LogInfo
// by default. Works from inside a LogFunc.
func SetLogLevel(l LogLevel) error {
	return statusError(Status(C.tattler_set_log_level(C.int(l))))
}
