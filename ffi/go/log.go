package tattler

/*
#include "tattler.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// LogLevel is the level of a library log line; the numbers are the C
// header's tattler_log_level.
type LogLevel int

// The levels.
const (
	LogOff   LogLevel = C.TATTLER_LOG_OFF
	LogError LogLevel = C.TATTLER_LOG_ERROR
	LogWarn  LogLevel = C.TATTLER_LOG_WARN
	LogInfo  LogLevel = C.TATTLER_LOG_INFO
	LogDebug LogLevel = C.TATTLER_LOG_DEBUG
	LogTrace LogLevel = C.TATTLER_LOG_TRACE
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
	return "?"
}

// LogFunc receives the library's log lines: target is the module that
// logged (e.g. "tattler::watch"). It is called from the library's own
// threads and must not block for long.
type LogFunc func(level LogLevel, target, msg string)

var (
	logFunc atomic.Pointer[LogFunc]
	logMu   sync.Mutex // orders SetLogFunc calls
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
func SetLogFunc(f LogFunc) error {
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
// by default.
func SetLogLevel(l LogLevel) error {
	return statusError(Status(C.tattler_set_log_level(C.int(l))))
}

func statusError(st Status) error {
	if st == StatusOK {
		return nil
	}
	return &StatusError{Status: st}
}
