//! `tattler_entry`: one change to one object, and its getters.

use std::ffi::{c_char, c_int, CStr};

use kube_tattler::{Change, Entry};
use parking_lot::Mutex;

use crate::cast;
use crate::error::guard_value;
use crate::handle::Registry;

/// What an entry reports; the same numbers as the Rust `kube_tattler::Change`.
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
    /// after every re-sync), or it is current again after a
    /// `TATTLER_CHANGE_STALE`; every later entry is a live change.
    TATTLER_CHANGE_SYNCED = 5,
    /// A failure (see `tattler_entry_error_code` and
    /// `tattler_entry_error_message`): with `tattler_entry_error_ended`, this
    /// resource failed for good and stops streaming, the others go on;
    /// without, one object or frame was skipped and the stream goes on.
    TATTLER_CHANGE_ERROR = 6,
    /// This resource's view is not current: the server is unreachable or
    /// refusing, the stream was silent past the idle timeout, or a new full
    /// state is under way. `tattler_entry_error_reason` says why
    /// (`Unreachable`, `Refused`, `Throttled`, `Silent`, `Resyncing`,
    /// `Credentials`),
    /// `tattler_entry_error_code` the HTTP status when the server answered,
    /// `tattler_entry_namespace` which namespace's stream. The stream goes
    /// on; `TATTLER_CHANGE_SYNCED` says when the view is current again.
    TATTLER_CHANGE_STALE = 7,
    /// With leader election: this reader now holds its Lease and starts its
    /// streams. `tattler_entry_namespace` and `tattler_entry_name` are the
    /// Lease's, `tattler_entry_identity` and `tattler_entry_holder` this
    /// reader's, `tattler_entry_term` the term its entries carry until the
    /// next `TATTLER_CHANGE_FOLLOWING`.
    TATTLER_CHANGE_LEADING = 8,
    /// With leader election: this reader does not stream. Once at the start
    /// (`tattler_entry_error_reason` `Standby`), and when it held the Lease
    /// and stopped its streams (`LeaseLost`: another holder took it;
    /// `RenewFailed`: it could not renew in time); nothing of the term that
    /// ended comes after it (entries still queued are dropped: the next
    /// leader delivers them). Namespace, name and identity as on
    /// `TATTLER_CHANGE_LEADING`; `tattler_entry_holder` who holds the Lease
    /// now (a new `TATTLER_CHANGE_FOLLOWING` when that changes while it
    /// waits); no term. Values above this one may come in later versions:
    /// treat them as unknown, not as errors.
    TATTLER_CHANGE_FOLLOWING = 9,
}

/// The name of a change, e.g. `"Add"`: what `tattler_change_str` returns.
fn change_name(change: c_int) -> &'static CStr {
    use tattler_change::*;
    const NAMES: [(tattler_change, &CStr); 10] = [
        (TATTLER_CHANGE_NONE, c"None"),
        (TATTLER_CHANGE_ADD, c"Add"),
        (TATTLER_CHANGE_UPDATE, c"Update"),
        (TATTLER_CHANGE_DELETE, c"Delete"),
        (TATTLER_CHANGE_SNAPSHOT, c"Snapshot"),
        (TATTLER_CHANGE_SYNCED, c"Synced"),
        (TATTLER_CHANGE_ERROR, c"Error"),
        (TATTLER_CHANGE_STALE, c"Stale"),
        (TATTLER_CHANGE_LEADING, c"Leading"),
        (TATTLER_CHANGE_FOLLOWING, c"Following"),
    ];
    NAMES
        .iter()
        .find(|(c, _)| *c as c_int == change)
        .map_or(c"Unknown", |(_, name)| name)
}

/// The name of a change, as the examples print it: `"Add"`, `"Update"`,
/// `"Delete"`, `"Snapshot"`, `"Synced"`, `"Error"`, `"Stale"`, `"Leading"`,
/// `"Following"`, `"None"` for
/// `TATTLER_CHANGE_NONE`.
///
/// Parameters: `change`, a `tattler_change` value (any int is accepted).
///
/// Returns: a static NUL-terminated string, never NULL; `"Unknown"` for a
/// number this library does not know (a newer library's change, seen
/// through an older header: print it, do not index an array with it).
///
/// Ownership: static; do not free it.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn tattler_change_str(change: c_int) -> *const c_char {
    guard_value(c"Unknown", || change_name(change)).as_ptr()
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
            Change::Stale => tattler_change::TATTLER_CHANGE_STALE,
            Change::Leading => tattler_change::TATTLER_CHANGE_LEADING,
            Change::Following => tattler_change::TATTLER_CHANGE_FOLLOWING,
            // The core's kinds are the header's; a newer core would add one to both.
            _ => tattler_change::TATTLER_CHANGE_NONE,
        }
    }
}

/// One entry handed out by `tattler_next_entry`. Opaque; read it with the
/// `tattler_entry_*` getters and free it with `tattler_entry_free`.
///
/// The pointer is a handle, checked on every call: a getter on an entry
/// freed already (or on any pointer `tattler_next_entry` did not hand out)
/// returns its "no entry" value, a second `tattler_entry_free` does nothing.
#[derive(Default)]
pub struct tattler_entry {
    /// Never read: the address is the handle (see `handle.rs`), the entry is
    /// in [`ENTRIES`].
    _shell: u8,
}

/// Every entry handed out and not yet freed.
static ENTRIES: Mutex<Registry<tattler_entry, Box<EntryData>>> =
    Mutex::new(Registry::new(ENTRY_QUARANTINE));

/// Entries freed before a freed entry's handle names a new one. 4096 shells
/// of one byte (32 with malloc's overhead) are 128 KiB.
const ENTRY_QUARANTINE: usize = 4096;

/// What a `tattler_entry` handle names: the entry and the strings its
/// getters lend out. Boxed in the registry so that those never move.
pub(crate) struct EntryData {
    entry: Entry,
    /// The C strings the getters lend out, one after the other, each ending
    /// in NUL: made once (one allocation) so that a getter never allocates.
    strings: Box<[u8]>,
    /// Where each [`Field`]'s string starts in `strings`.
    at: [usize; FIELDS],
}

/// The entry's strings, in the order they are laid out.
#[derive(Clone, Copy)]
enum Field {
    Group,
    Version,
    Resource,
    Kind,
    Namespace,
    Name,
    Uid,
    ResourceVersion,
    ErrorReason,
    ErrorMessage,
    Holder,
}

const FIELDS: usize = Field::Holder as usize + 1;

impl EntryData {
    fn new(entry: Entry) -> EntryData {
        let r = entry.resource();
        let err = entry.error();
        let texts: [&str; FIELDS] = [
            &r.group,
            &r.version,
            &r.resource,
            &r.kind,
            entry.namespace().unwrap_or(""),
            entry.name(),
            entry.uid(),
            entry.resource_version_str(),
            err.map_or("", |e| e.reason.as_str()),
            err.map_or("", |e| e.message.as_str()),
            // Never empty when there is one: "" is none.
            entry.holder().unwrap_or(""),
        ];
        let (strings, at) = pack(&texts);
        EntryData { strings, at, entry }
    }

    fn text(&self, f: Field) -> &CStr {
        CStr::from_bytes_until_nul(&self.strings[self.at[f as usize]..])
            .expect("every string ends in NUL")
    }
}

/// The texts one after the other, each ending in NUL, and where each starts.
/// A NUL inside a text (never in a Kubernetes name, possible in a server's
/// message) is dropped rather than cutting the text short.
fn pack(texts: &[&str; FIELDS]) -> (Box<[u8]>, [usize; FIELDS]) {
    let mut strings = Vec::with_capacity(texts.iter().map(|t| t.len() + 1).sum());
    let mut at = [0; FIELDS];
    for (i, text) in texts.iter().enumerate() {
        at[i] = strings.len();
        strings.extend(text.bytes().filter(|&b| b != 0));
        strings.push(0);
    }
    (strings.into_boxed_slice(), at)
}

/// Registers an entry from `tattler_next_entry`: its handle, for C.
pub(crate) fn hand_out(entry: Entry) -> *mut tattler_entry {
    let data = Box::new(EntryData::new(entry));
    ENTRIES.lock().insert(data)
}

/// Runs a getter on the entry behind `e`, or gives `default` when `e` is
/// NULL or not a live entry (or the getter panicked). The registry's lock is
/// held while it runs: a getter only reads, and a `tattler_entry_free` on
/// another thread waits for it instead of freeing what it reads.
fn with_entry<R: Copy>(
    e: *const tattler_entry,
    default: R,
    body: impl FnOnce(&EntryData) -> R,
) -> R {
    if e.is_null() {
        return default;
    }
    guard_value(default, || {
        ENTRIES.lock().get(e).map_or(default, |d| body(d))
    })
}

/// A string getter: the field's C string, or `""` for no entry.
fn string_field(e: *const tattler_entry, field: Field) -> *const c_char {
    with_entry(e, c"".as_ptr(), |d| d.text(field).as_ptr())
}

/// What happened: Add, Update, Delete, Snapshot, Synced or Error.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: the change; `TATTLER_CHANGE_NONE` (0) for no entry.
///
/// Thread safety: an entry may be read from several threads at once. A
/// getter racing `tattler_entry_free(e)` on another thread is safe (it sees
/// the entry or no entry), but what a getter lent out dies with the entry:
/// free it only once every thread is done with its strings and bytes.
#[no_mangle]
pub extern "C" fn tattler_entry_change(e: *const tattler_entry) -> tattler_change {
    with_entry(e, tattler_change::TATTLER_CHANGE_NONE, |d| {
        d.entry.change().into()
    })
}

/// The API group of the entry's resource; `""` for the core group.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Do not
/// free it.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_group(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Group)
}

/// The API version of the entry's resource, e.g. `"v1"`.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_version(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Version)
}

/// The plural resource name, e.g. `"pods"`.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_resource(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Resource)
}

/// The kind, e.g. `"Pod"`; `""` only before the server has sent an object of
/// a resource whose kind tattler does not know.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_kind(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Kind)
}

/// The object's namespace; `""` for cluster-scoped objects and for Synced and
/// Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_namespace(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Namespace)
}

/// The object's name; `""` for Synced and Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_name(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Name)
}

/// The object's uid; `""` for Synced and Error entries.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_uid(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Uid)
}

/// On `TATTLER_CHANGE_LEADING` and `TATTLER_CHANGE_FOLLOWING`, this reader's
/// identity in its Lease; `""` on every other entry.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for no entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_identity(e: *const tattler_entry) -> *const c_char {
    with_entry(e, c"".as_ptr(), |d| match d.entry.identity() {
        Some(_) => d.text(Field::Uid).as_ptr(),
        None => c"".as_ptr(),
    })
}

/// On `TATTLER_CHANGE_LEADING` and `TATTLER_CHANGE_FOLLOWING`, the replica
/// that holds the Lease now (client-go's `OnNewLeader`): this reader's
/// identity on Leading; on Following, the other holder, or `""` when nobody
/// holds it. `""` on every other entry. A Lease's holder is never `""`, so
/// `""` always means none.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL (`""` for none and for no
/// entry).
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_holder(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::Holder)
}

/// Under leader election, the term the entry was delivered in: the Lease's
/// `leaseTransitions` when this replica took it (0 for the Lease's first
/// holder). Every entry a leading replica delivers carries it,
/// `TATTLER_CHANGE_LEADING` too; there is none without leader election and
/// on `TATTLER_CHANGE_FOLLOWING`. Fencing: a consumer writing to a store
/// shared by replicas keeps the highest term it has written and refuses a
/// lower one, so a late writer whose term ended is turned away. With
/// shards, each shard's Lease counts its own terms.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry); `out`, where to write the term, or NULL to ask
/// only whether there is one.
///
/// Returns: true when the entry has a term (written to `*out`); false when
/// it has none and for no entry (`*out` is then left as it was).
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_term(e: *const tattler_entry, out: *mut u64) -> bool {
    let Some(term) = with_entry(e, None, |d| d.entry.term()) else {
        return false;
    };
    if !out.is_null() {
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { cast::write(out, term) };
    }
    true
}

/// `tattler_entry_resource_version_str` as an integer: 0 when it is not one
/// (aggregated and non-etcd servers may send any string), on Error, and
/// for no entry.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: the resourceVersion; 0 when it is not an integer.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_resource_version(e: *const tattler_entry) -> u64 {
    with_entry(e, 0, |d| d.entry.resource_version().unwrap_or(0))
}

/// The object's resourceVersion as the server sent it. On a Delete: the
/// version of the deletion when the server reported it, the last version
/// delivered when inferred. On Synced: the version the state is complete at.
/// `""` on Error. The API calls resourceVersions opaque: compare them only
/// for equality, unless both are integers of one etcd-backed resource.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL; `""` for no entry.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_resource_version_str(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::ResourceVersion)
}

/// The object's JSON exactly as the server sent it (re-serialised only when
/// scrubbing changed it). Not NUL-terminated: use `*len`.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry); `len`, where to write the byte count, or NULL.
///
/// Returns: the bytes; NULL (and `*len = 0`) for inferred deletes, Synced and
/// Error entries, and for no entry.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Copy
/// the bytes to keep them longer.
///
/// Thread safety: as `tattler_entry_change`.
///
/// # Safety
/// `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tattler_entry_object(
    e: *const tattler_entry,
    len: *mut usize,
) -> *const u8 {
    let none = (std::ptr::null(), 0);
    let (ptr, n) = with_entry(e, none, |d| {
        d.entry.object().map_or(none, |o| (o.as_ptr(), o.len()))
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
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: true on an inferred Delete; false otherwise and for no entry.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_inferred(e: *const tattler_entry) -> bool {
    with_entry(e, false, |d| d.entry.inferred())
}

/// On an Error entry, whether the resource's stream ended with it (it failed
/// for good). False when one object or frame was skipped (an object over a
/// limit, not JSON, nested too deep) and the stream goes on: the skipped
/// object's namespace and name, when readable, are the entry's.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: the flag; false on other entries and for no entry.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_error_ended(e: *const tattler_entry) -> bool {
    with_entry(e, false, |d| d.entry.error().is_some_and(|err| err.ended))
}

/// On an Error entry, the HTTP status that ended the stream (401, 403, 404,
/// ...), or 0 when the failure was not an HTTP answer (an object over
/// `max_frame_bytes`, a panic caught in the stream); on a Stale entry, the
/// status the server answered with (429, 503, ...), or 0.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: the code; 0 on other entries and for no entry.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_error_code(e: *const tattler_entry) -> u16 {
    with_entry(e, 0, |d| d.entry.error().map_or(0, |err| err.code))
}

/// On an Error entry, the server's `reason` (e.g. `"Forbidden"`) or a short
/// word of tattler's own; on a Stale entry, why the view is not current
/// (`"Unreachable"`, `"Refused"`, `"Throttled"`, `"Silent"`, `"Resyncing"`).
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL; `""` on other entries and
/// for no entry.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_error_reason(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::ErrorReason)
}

/// On an Error or Stale entry, the server's message or tattler's
/// description of the failure.
///
/// Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
/// pointer is no entry).
///
/// Returns: a NUL-terminated string, never NULL; `""` on other entries and
/// for no entry.
///
/// Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
///
/// Thread safety: as `tattler_entry_change`.
#[no_mangle]
pub extern "C" fn tattler_entry_error_message(e: *const tattler_entry) -> *const c_char {
    string_field(e, Field::ErrorMessage)
}

/// Frees an entry and every string and byte it lent out.
///
/// Parameters: `e`, an entry from `tattler_next_entry`, or NULL (then
/// nothing happens).
///
/// An `e` that is not a live entry (freed already, or never handed out by
/// `tattler_next_entry`) is left alone and not followed: a second free does
/// nothing but log a warning (there is no status to return it in). The
/// handle of a freed entry is not reused for the next 4096 entries freed,
/// so a late second free cannot free a newer entry that came since.
///
/// Ownership: takes `e`; it and its borrowed strings are invalid afterwards.
/// Entries do not depend on their reader: freeing one before or after
/// `tattler_close` is fine.
///
/// Thread safety: any thread. A getter on `e` running on another thread
/// finishes first; what getters lent out must not be used after this.
#[no_mangle]
pub extern "C" fn tattler_entry_free(e: *mut tattler_entry) {
    if e.is_null() {
        return;
    }
    guard_value((), || {
        // Out of the registry under the lock; dropped, or logged about,
        // after it: the log callback may call a getter.
        let data = ENTRIES.lock().remove(e);
        if data.is_none() {
            log::warn!("tattler_entry_free: not a live entry (freed already, or not from tattler_next_entry); ignored");
        }
        drop(data);
    });
}

/// The string getter's body `n` times without the registry: what a getter
/// cost before handles were checked (the micro benchmark's baseline).
pub(crate) fn name_unchecked(e: *const tattler_entry, n: u64) -> std::time::Duration {
    let entries = ENTRIES.lock();
    let d = entries.get(e).expect("a live entry");
    let t = std::time::Instant::now();
    for _ in 0..n {
        let p = guard_value(c"".as_ptr(), || d.text(Field::Name).as_ptr());
        std::hint::black_box(p);
    }
    t.elapsed()
}

/// Whether `e` is an entry handed out and not yet freed.
pub(crate) fn is_live(e: *const tattler_entry) -> bool {
    ENTRIES.lock().get(e).is_some()
}

#[cfg(test)]
mod change_tests {
    use super::*;

    #[test]
    fn each_change_has_its_name_and_others_are_unknown() {
        let name = |n: c_int| change_name(n).to_str().unwrap();
        let names: Vec<&str> = (0..10).map(name).collect();
        assert_eq!(
            names,
            [
                "None",
                "Add",
                "Update",
                "Delete",
                "Snapshot",
                "Synced",
                "Error",
                "Stale",
                "Leading",
                "Following"
            ]
        );
        for n in [-1, 10, 99, c_int::MAX, c_int::MIN] {
            assert_eq!(name(n), "Unknown", "{n}");
        }
    }
}

#[cfg(test)]
mod pack_tests {
    #[test]
    fn each_text_ends_in_one_nul_and_inner_nuls_go() {
        let texts = [
            "", "v1", "pods", "Pod", "ns", "a\0b", "u", "42", "", "end\0", "h",
        ];
        let (strings, at) = super::pack(&texts);
        let got: Vec<&[u8]> = at
            .iter()
            .map(|&a| {
                std::ffi::CStr::from_bytes_until_nul(&strings[a..])
                    .unwrap()
                    .to_bytes()
            })
            .collect();
        let want: Vec<&[u8]> = vec![
            b"", b"v1", b"pods", b"Pod", b"ns", b"ab", b"u", b"42", b"", b"end", b"h",
        ];
        assert_eq!(got, want);
        assert_eq!(strings.len(), "v1podsPodnsabu42endh".len() + super::FIELDS);
    }
}
