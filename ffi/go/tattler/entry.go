//go:build cgo

package tattler

/*
#include <string.h>
#include "tattler.h"

// What Go copies out of an entry, gathered by one cgo call instead of one
// per getter: group, version, resource, kind, namespace, name, uid,
// resourceVersion, holder; the term when has_term.
typedef struct {
	int change;
	const char *str[9];
	size_t len[9];
	bool inferred;
	const uint8_t *object;
	size_t object_len;
	bool has_term;
	uint64_t term;
} tattler_go_view;

static enum tattler_status tattler_go_next(struct tattler_reader *r, int64_t timeout_ms,
		struct tattler_entry **e, tattler_go_view *v) {
	enum tattler_status st = tattler_next_entry(r, timeout_ms, e);
	if (st != TATTLER_OK) {
		return st;
	}
	v->change = tattler_entry_change(*e);
	v->str[0] = tattler_entry_group(*e);
	v->str[1] = tattler_entry_version(*e);
	v->str[2] = tattler_entry_resource(*e);
	v->str[3] = tattler_entry_kind(*e);
	v->str[4] = tattler_entry_namespace(*e);
	v->str[5] = tattler_entry_name(*e);
	v->str[6] = tattler_entry_uid(*e);
	v->str[7] = tattler_entry_resource_version_str(*e);
	v->str[8] = tattler_entry_holder(*e);
	for (int i = 0; i < 9; i++) {
		v->len[i] = strlen(v->str[i]);
	}
	v->inferred = tattler_entry_inferred(*e);
	v->object = tattler_entry_object(*e, &v->object_len);
	v->has_term = tattler_entry_term(*e, &v->term);
	return st;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Change is what an entry reports; the numbers are the C header's
// tattler_change (a test holds them equal).
type Change int

// The changes.
const (
	// ChangeAdd is an object the consumer has not seen before.
	ChangeAdd Change = 1
	// ChangeUpdate is a newer version of an object the consumer has seen.
	ChangeUpdate Change = 2
	// ChangeDelete is an object that is gone (Entry.Inferred: found missing
	// from a re-sync rather than reported).
	ChangeDelete Change = 3
	// ChangeSnapshot is, during a re-sync, an object the consumer has,
	// unchanged.
	ChangeSnapshot Change = 4
	// ChangeSynced says the resource's full state has been delivered, or
	// that it is current again after a ChangeStale.
	ChangeSynced Change = 5
	// ChangeError says a resource failed for good, or one of its objects
	// was skipped (Entry.Err, a *StreamError); the other resources go on.
	ChangeError Change = 6
	// ChangeStale says the resource's view is not current (Entry.Err, a
	// *StreamError, says why: Reason "Unreachable", "Refused", "Throttled",
	// "Silent", "Resyncing" or "Credentials"; Ended false). The stream goes
	// on; ChangeSynced says when the view is current again.
	ChangeStale Change = 7
	// ChangeLeading says this reader (with leader election) holds its Lease
	// and starts its streams: Namespace and Name are the Lease's, Identity
	// and Holder this reader's, Term the term its entries carry until the
	// next ChangeFollowing.
	ChangeLeading Change = 8
	// ChangeFollowing says this reader does not stream (Entry.Err, a
	// *StreamError, says why: Reason "Standby" at the start, "LeaseLost" or
	// "RenewFailed" after it led; nothing of the term that ended comes
	// after it). Holder names who holds the Lease now; a new
	// ChangeFollowing comes when that changes while it waits.
	ChangeFollowing Change = 9
)

// String is the change's name without its prefix: "Add", "Synced", ...
// (tattler_change_str's); Change(N) for a number this package does not
// name, which a newer library may send: handle it as unknown, do not panic.
func (c Change) String() string {
	switch c {
	case ChangeAdd:
		return "Add"
	case ChangeUpdate:
		return "Update"
	case ChangeDelete:
		return "Delete"
	case ChangeSnapshot:
		return "Snapshot"
	case ChangeSynced:
		return "Synced"
	case ChangeError:
		return "Error"
	case ChangeStale:
		return "Stale"
	case ChangeLeading:
		return "Leading"
	case ChangeFollowing:
		return "Following"
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
	// ResourceVersion is the object's, as the server sent it; on Synced,
	// the version the state is complete at; "" on Error. The API calls it
	// opaque: compare for equality only, unless both are integers of one
	// etcd-backed resource.
	ResourceVersion string
	// Object is the object's JSON as the server sent it; nil for inferred
	// deletes, Synced and Error.
	Object   []byte
	Inferred bool
	// Identity is, on Leading and Following, this reader's identity in its
	// Lease; "" otherwise.
	Identity string
	// Holder is, on Leading and Following, the replica holding the Lease
	// now (client-go's OnNewLeader): this reader on Leading; on Following
	// the other holder, "" when nobody holds it. "" on other entries.
	Holder string
	// Term is, under leader election, the term the entry was delivered in:
	// the Lease's leaseTransitions when this reader took it (0 for the
	// Lease's first holder), on every entry a leading reader delivers,
	// Leading too. HasTerm says whether there is one: none without leader
	// election and on Following. Fencing: a consumer writing to a store
	// shared by replicas keeps the highest term it has written and refuses
	// a lower one.
	Term    uint64
	HasTerm bool
	// Err is a *StreamError on Error, Stale and Following entries, nil otherwise.
	Err error
}

// String summarises the entry on one line, as ffi/examples/watch.c prints
// it, with the group, version and resource and the object's size instead
// of its bytes:
//
//	Add v1/pods shop/web-1 1234 (812 bytes)
//	Delete v1/pods shop/db-0 1200 (inferred)
//	Synced v1/pods 1240
//	Error v1/nodes 403 Forbidden: nodes is forbidden
//	Stale v1/pods shop 0 Unreachable: connection refused
//	Following coordination.k8s.io/v1/leases ns/collector pod-1 0 Standby: waiting for the Lease
func (e Entry) String() string {
	gvr := e.Version + "/" + e.Resource
	if e.Group != "" {
		gvr = e.Group + "/" + gvr
	}
	switch e.Change {
	case ChangeSynced:
		return fmt.Sprintf("Synced %s %s", gvr, e.ResourceVersion)
	case ChangeError:
		return fmt.Sprintf("Error %s %v", gvr, e.Err)
	case ChangeStale:
		ns := ""
		if e.Namespace != "" {
			ns = " " + e.Namespace
		}
		return fmt.Sprintf("Stale %s%s %v", gvr, ns, e.Err)
	case ChangeLeading:
		return fmt.Sprintf("Leading %s %s/%s %s", gvr, e.Namespace, e.Name, e.Identity)
	case ChangeFollowing:
		return fmt.Sprintf("Following %s %s/%s %s %v", gvr, e.Namespace, e.Name, e.Identity, e.Err)
	}
	name := e.Name
	if e.Namespace != "" {
		name = e.Namespace + "/" + e.Name
	}
	s := fmt.Sprintf("%s %s %s %s", e.Change, gvr, name, e.ResourceVersion)
	switch {
	case e.Inferred:
		s += " (inferred)"
	case e.Object != nil:
		s += fmt.Sprintf(" (%d bytes)", len(e.Object))
	}
	return s
}

// StreamError is what an Error entry reports: with Ended, why a resource
// stream failed for good; without, one object or frame that was skipped
// (its namespace and name, when readable, are the entry's) while the
// stream goes on.
type StreamError struct {
	Code    int // the HTTP status (403, 404, ...), 0 when not an HTTP answer
	Reason  string
	Message string
	Ended   bool
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

// nextEntry makes one tattler_next_entry call and, on StatusOK, copies the
// entry out and frees it: two cgo calls in all.
func nextEntry(r *C.tattler_reader, timeoutMs int64) (Status, Entry) {
	var e *C.tattler_entry
	var v C.tattler_go_view
	st := Status(C.tattler_go_next(r, C.int64_t(timeoutMs), &e, &v))
	if st != StatusOK {
		return st, Entry{}
	}
	entry := copyEntry(e, &v)
	C.tattler_entry_free(e)
	return st, entry
}

// copyEntry copies everything out of a C entry, read into v by
// tattler_go_next; the caller frees the entry after.
func copyEntry(e *C.tattler_entry, v *C.tattler_go_view) Entry {
	str := func(i int) string { return C.GoStringN(v.str[i], C.int(v.len[i])) }
	out := Entry{
		Change:          Change(v.change),
		Group:           str(0),
		Version:         str(1),
		Resource:        str(2),
		Kind:            str(3),
		Namespace:       str(4),
		Name:            str(5),
		UID:             str(6),
		ResourceVersion: str(7),
		Holder:          str(8),
		Inferred:        bool(v.inferred),
		Term:            uint64(v.term),
		HasTerm:         bool(v.has_term),
	}
	if v.object != nil {
		out.Object = C.GoBytes(unsafe.Pointer(v.object), C.int(v.object_len))
	}
	if out.Change == ChangeLeading || out.Change == ChangeFollowing {
		out.Identity = out.UID
	}
	if out.Change == ChangeError || out.Change == ChangeStale || out.Change == ChangeFollowing {
		out.Err = &StreamError{
			Code:    int(C.tattler_entry_error_code(e)),
			Reason:  C.GoString(C.tattler_entry_error_reason(e)),
			Message: C.GoString(C.tattler_entry_error_message(e)),
			Ended:   bool(C.tattler_entry_error_ended(e)),
		}
	}
	return out
}
