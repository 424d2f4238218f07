//go:build cgo

package tattler

/*
#include "tattler.h"
*/
import "C"

// cConstant is one of the Go constants beside the C header's, for the test
// that holds them equal (cgo cannot be used in a _test.go file).
type cConstant struct {
	name   string
	goVal  int
	cValue int
}

func cConstants() []cConstant {
	return []cConstant{
		{"StatusOK", int(StatusOK), C.TATTLER_OK},
		{"StatusTimeout", int(StatusTimeout), C.TATTLER_TIMEOUT},
		{"StatusClosed", int(StatusClosed), C.TATTLER_CLOSED},
		{"StatusNullArg", int(StatusNullArg), C.TATTLER_ERR_NULL_ARG},
		{"StatusInvalidConfig", int(StatusInvalidConfig), C.TATTLER_ERR_INVALID_CONFIG},
		{"StatusInvalidUTF8", int(StatusInvalidUTF8), C.TATTLER_ERR_INVALID_UTF8},
		{"StatusIO", int(StatusIO), C.TATTLER_ERR_IO},
		{"StatusPanic", int(StatusPanic), C.TATTLER_ERR_PANIC},
		{"StatusBufferTooSmall", int(StatusBufferTooSmall), C.TATTLER_ERR_BUFFER_TOO_SMALL},
		{"StatusInvalidResource", int(StatusInvalidResource), C.TATTLER_ERR_INVALID_RESOURCE},
		{"StatusTLS", int(StatusTLS), C.TATTLER_ERR_TLS},
		{"StatusInvalidArg", int(StatusInvalidArg), C.TATTLER_ERR_INVALID_ARG},
		{"StatusLoggerInUse", int(StatusLoggerInUse), C.TATTLER_ERR_LOGGER_IN_USE},
		{"StatusOther", int(StatusOther), C.TATTLER_ERR_OTHER},
		{"StatusReentrant", int(StatusReentrant), C.TATTLER_ERR_REENTRANT},
		{"StatusInvalidCheckpoint", int(StatusInvalidCheckpoint), C.TATTLER_ERR_INVALID_CHECKPOINT},
		{"StatusInvalidHandle", int(StatusInvalidHandle), C.TATTLER_ERR_INVALID_HANDLE},
		{"ChangeAdd", int(ChangeAdd), C.TATTLER_CHANGE_ADD},
		{"ChangeUpdate", int(ChangeUpdate), C.TATTLER_CHANGE_UPDATE},
		{"ChangeDelete", int(ChangeDelete), C.TATTLER_CHANGE_DELETE},
		{"ChangeSnapshot", int(ChangeSnapshot), C.TATTLER_CHANGE_SNAPSHOT},
		{"ChangeSynced", int(ChangeSynced), C.TATTLER_CHANGE_SYNCED},
		{"ChangeError", int(ChangeError), C.TATTLER_CHANGE_ERROR},
		{"ChangeStale", int(ChangeStale), C.TATTLER_CHANGE_STALE},
		{"ChangeLeading", int(ChangeLeading), C.TATTLER_CHANGE_LEADING},
		{"ChangeFollowing", int(ChangeFollowing), C.TATTLER_CHANGE_FOLLOWING},
		{"LogOff", int(LogOff), C.TATTLER_LOG_OFF},
		{"LogError", int(LogError), C.TATTLER_LOG_ERROR},
		{"LogWarn", int(LogWarn), C.TATTLER_LOG_WARN},
		{"LogInfo", int(LogInfo), C.TATTLER_LOG_INFO},
		{"LogDebug", int(LogDebug), C.TATTLER_LOG_DEBUG},
		{"LogTrace", int(LogTrace), C.TATTLER_LOG_TRACE},
	}
}

// libraryKeys is tattler_config_keys(): every key of the library's
// configuration with its JSON type and default, for the tests that hold
// Config's fields and documented defaults to the library's.
func libraryKeys() string {
	return C.GoString(C.tattler_config_keys())
}

// changeName is tattler_change_str, for the test that Change.String says
// what the library does.
func changeName(c Change) string {
	return C.GoString(C.tattler_change_str(C.int(c)))
}
