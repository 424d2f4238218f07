//! `tattler_entry`: one change to one object, and its getters.

use std::ffi::{c_char, CStr, CString};

use tattler_core::{Change, Entry};

use crate::cast;
use crate::error::guard_value;

/// What an entry reports; the same numbers as the Rust `tattler::Change`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum tattler_change {
    /// Only returned by `tattler_entry_change(NULL)`.
    TATTLER_CHANGE_NONE = 0,
    /// An object the consumer has not seen before.
    TATTLER_CHANGE_ADD = 1,
    /// A newer version of an object the consumer has seen.
    TATTLER_CHANGE_UPDATE = 2,
    /// An object is gone; `tattler_entry_inferred` tells a delete the server
    /// reported from one found by comparing a re-sync with what was delivered.
    TATTLER_CHANGE_DELETE = 3,
    /// During a re-sync: an object the consumer already has, unchanged.
    TATTLER_CHANGE_SNAPSHOT = 4,
    /// This resource's full state has been delivered (after the first sync and
    /// after every re-sync); every later entry is a live change.
    TATTLER_CHANGE_SYNCED = 5,
    /// This resource failed for good (see `tattler_entry_error_code` and
    /// `tattler_entry_error_message`); it stops streaming, the others go on.
    TATTLER_CHANGE_ERROR = 6,
}

impl From<Change> for tattler_change {
    fn from(c: Change) -> tattler_change {
        match c {
            Change::Add => tattler_change::TATTLER_CHANGE_ADD,
            Change::Update => tattler_change::TATTLER_CHANGE_UPDATE,
            Change::Delete => tattler_change::TATTLER_CHANGE_DELETE,
            Change::Snapshot => tattler_change::TATTLER_CHANGE_SNAPSHOT,
            Change::Synced => tattler_change::TATTLER_CHANGE_SYNCED,
            Change::Error => tattler_change::TATTLER_CHANGE_ERROR,
        }
    }
}

/// One entry handed out by `tattler_next_entry`. Opaque; read it with the
/// `tattler_entry_*` getters and free it with `tattler_entry_free`.
pub struct tattler_entry {
    entry: Entry,
    // The C strings the getters lend out, made once so a getter never allocates.
    group: CString,
    version: CString,
    resource: CString,
    kind: CString,
    namespace: CString,
    name: CString,
    uid: CString,
    error_reason: CString,
    error_message: CString,
}

impl tattler_entry {
    pub(crate) fn new(entry: Entry) -> tattler_entry {
        let r = entry.resource();
        let err = entry.error();
        tattler_entry {
            group: c_string(&r.group),
            version: c_string(&r.version),
            resource: c_string(&r.resource),
            kind: c_string(&r.kind),
            namespace: c_string(entry.namespace().unwrap_or("")),
            name: c_string(entry.name()),
            uid: c_string(entry.uid()),
            error_reason: c_string(err.map_or("", |e| e.reason.as_str())),
            error_message: c_string(err.map_or("", |e| e.message.as_str())),
            entry,
        }
    }
}

/// `s` as a C string; a NUL inside (never in a Kubernetes name, possible in a
/// server's message) is dropped rather than cutting the text short.
fn c_string(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).unwrap_or_default()
    })
}

/// Borrows the entry for a getter; `None` for NULL.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`, not freed while the
/// borrow lives.
unsafe fn get<'a>(e: *const tattler_entry) -> Option<&'a tattler_entry> {
    if e.is_null() {
        return None;
    }
    // SAFETY: non-NULL, and live by the caller's promise.
    Some(unsafe { cast::entry(e) })
}

/// A string getter: the field's C string, or `""` for a NULL entry.
///
/// # Safety
/// As [`get`].
unsafe fn string_field(
    e: *const tattler_entry,
    field: impl FnOnce(&tattler_entry) -> &CStr,
) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    guard_value(c"".as_ptr(), || {
        e.map_or(c"".as_ptr(), |e| field(e).as_ptr())
    })
}

/// What happened: Add, Update, Delete, Snapshot, Synced or Error.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: the change; `TATTLER_CHANGE_NONE` (0) when `e` is NULL.
///
/// Thread safety: an entry may be read from several threads at once; it must
/// not be freed while another thread reads it.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_change(e: *const tattler_entry) -> tattler_change {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    guard_value(tattler_change::TATTLER_CHANGE_NONE, || {
        e.map_or(tattler_change::TATTLER_CHANGE_NONE, |e| {
            e.entry.change().into()
        })
    })
}

/// The API group of the entry's resource; `""` for the core group.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Do not
/// free it.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_group(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.group) }
}

/// The API version of the entry's resource, e.g. `"v1"`.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_version(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.version) }
}

/// The plural resource name, e.g. `"pods"`.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_resource(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.resource) }
}

/// The kind, e.g. `"Pod"`; `""` only before the server has sent an object of
/// a resource whose kind tattler does not know.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_kind(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.kind) }
}

/// The object's namespace; `""` for cluster-scoped objects and for Synced and
/// Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_namespace(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.namespace) }
}

/// The object's name; `""` for Synced and Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_name(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.name) }
}

/// The object's uid; `""` for Synced and Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL (`""` when `e` is NULL).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_uid(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.uid) }
}

/// The object's resourceVersion. On a Delete: the version of the deletion
/// when the server reported it, the last version delivered when inferred. On
/// Synced: the version the state is complete at. 0 on Error.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: the resourceVersion; 0 when `e` is NULL.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_resource_version(e: *const tattler_entry) -> u64 {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    guard_value(0, || e.map_or(0, |e| e.entry.resource_version()))
}

/// The object's JSON exactly as the server sent it (re-serialised only when
/// scrubbing changed it). Not NUL-terminated: use `*len`.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL; `len`, where
/// to write the byte count, or NULL.
///
/// Returns: the bytes; NULL (and `*len = 0`) for inferred deletes, Synced and
/// Error entries, and when `e` is NULL.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Copy
/// the bytes to keep them longer.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`; `len` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_object(
    e: *const tattler_entry,
    len: *mut usize,
) -> *const u8 {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    let (ptr, n) = guard_value((std::ptr::null(), 0), || {
        e.and_then(|e| e.entry.object())
            .map_or((std::ptr::null(), 0), |o| (o.as_ptr(), o.len()))
    });
    if !len.is_null() {
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { cast::write(len, n) };
    }
    ptr
}

/// Whether a Delete was inferred (the object was missing from a re-sync)
/// rather than reported by the server.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: true on an inferred Delete; false otherwise and when `e` is NULL.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_inferred(e: *const tattler_entry) -> bool {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    guard_value(false, || e.is_some_and(|e| e.entry.inferred()))
}

/// On an Error entry, the HTTP status that ended the stream (401, 403, 404,
/// ...), or 0 when the failure was not an HTTP answer (an object over
/// `max_frame_bytes`, a panic caught in the stream).
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: the code; 0 on other entries and when `e` is NULL.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_error_code(e: *const tattler_entry) -> u16 {
    // SAFETY: the caller's promise, passed on.
    let e = unsafe { get(e) };
    guard_value(0, || {
        e.and_then(|e| e.entry.error()).map_or(0, |err| err.code)
    })
}

/// On an Error entry, the server's `reason` (e.g. `"Forbidden"`) or a short
/// word of tattler's own.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL; `""` on other entries and
/// when `e` is NULL.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_error_reason(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.error_reason) }
}

/// On an Error entry, the server's message or tattler's description of the
/// failure.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL.
///
/// Returns: a NUL-terminated string, never NULL; `""` on other entries and
/// when `e` is NULL.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_error_message(e: *const tattler_entry) -> *const c_char {
    // SAFETY: the caller's promise, passed on.
    unsafe { string_field(e, |e| &e.error_message) }
}

/// Frees an entry and every string and byte it lent out.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL (then
/// nothing happens).
///
/// Ownership: takes `e`; it and its borrowed strings are invalid afterwards.
/// Entries do not depend on their reader: freeing one before or after
/// `tattler_close` is fine.
///
/// Thread safety: any thread, but no other thread may be reading `e`.
///
/// # Safety
/// `e` is NULL or a live entry from `tattler_next_entry`, freed only once.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_free(e: *mut tattler_entry) {
    if e.is_null() {
        return;
    }
    // SAFETY: non-NULL, and the caller promises a live entry freed only once.
    let entry = unsafe { cast::entry_release(e) };
    guard_value((), || drop(entry));
}
