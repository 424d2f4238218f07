package tattler

/*
#include "tattler.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Change is what an entry reports; the numbers are the C header's.
type Change int

// The changes.
const (
	// Add is an object the consumer has not seen before.
	Add Change = C.TATTLER_CHANGE_ADD
	// Update is a newer version of an object the consumer has seen.
	Update Change = C.TATTLER_CHANGE_UPDATE
	// Delete is an object that is gone (Entry.Inferred: found missing
	// from a re-sync rather than reported).
	Delete Change = C.TATTLER_CHANGE_DELETE
	// Snapshot is, during a re-sync, an object the consumer has, unchanged.
	Snapshot Change = C.TATTLER_CHANGE_SNAPSHOT
	// Synced says the resource's full state has been delivered.
	Synced Change = C.TATTLER_CHANGE_SYNCED
	// Error says the resource failed for good (Entry.Err); the other
	// resources go on.
	Error Change = C.TATTLER_CHANGE_ERROR
)

func (c Change) String() string {
	switch c {
	case Add:
		return "Add"
	case Update:
		return "Update"
	case Delete:
		return "Delete"
	case Snapshot:
		return "Snapshot"
	case Synced:
		return "Synced"
	case Error:
		return "Error"
	}
	return fmt.Sprintf("Change(%d)", int(c))
}

// Entry is one change to one object, or a resource's Synced or Error
// marker. Everything in it is a Go copy: it stays valid after the reader
// is closed.
type Entry struct {
	Change   Change
	Group    string // "" for the core group
	Version  string
	Resource string // plural, e.g. "pods"
	Kind     string
	// Namespace is "" for cluster-scoped objects and for Synced and Error.
	Namespace string
	// Name and UID are "" for Synced and Error.
	Name string
	UID  string
	// ResourceVersion is the object's; on Synced, the version the state
	// is complete at; 0 on Error.
	ResourceVersion uint64
	// Object is the object's JSON as the server sent it; nil for inferred
	// deletes, Synced and Error.
	Object   []byte
	Inferred bool
	// Err is a *StreamError on Error entries, nil otherwise.
	Err error
}

// StreamError is why a resource stream failed for good.
type StreamError struct {
	Code    int // the HTTP status (403, 404, ...), 0 when not an HTTP answer
	Reason  string
	Message string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

// copyEntry copies everything out of a C entry; the caller frees it after.
func copyEntry(e *C.tattler_entry) Entry {
	out := Entry{
		Change:          Change(C.tattler_entry_change(e)),
		Group:           C.GoString(C.tattler_entry_group(e)),
		Version:         C.GoString(C.tattler_entry_version(e)),
		Resource:        C.GoString(C.tattler_entry_resource(e)),
		Kind:            C.GoString(C.tattler_entry_kind(e)),
		Namespace:       C.GoString(C.tattler_entry_namespace(e)),
		Name:            C.GoString(C.tattler_entry_name(e)),
		UID:             C.GoString(C.tattler_entry_uid(e)),
		ResourceVersion: uint64(C.tattler_entry_resource_version(e)),
		Inferred:        bool(C.tattler_entry_inferred(e)),
	}
	var n C.size_t
	if p := C.tattler_entry_object(e, &n); p != nil {
		out.Object = C.GoBytes(unsafe.Pointer(p), C.int(n))
	}
	if out.Change == Error {
		out.Err = &StreamError{
			Code:    int(C.tattler_entry_error_code(e)),
			Reason:  C.GoString(C.tattler_entry_error_reason(e)),
			Message: C.GoString(C.tattler_entry_error_message(e)),
		}
	}
	return out
}
