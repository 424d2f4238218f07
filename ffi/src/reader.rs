//! `tattler_reader`: open, next entry, stop, close, and the calls between.

use std::ffi::{c_char, c_int};
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube_tattler::{Checkpoint, NextTimeoutError, Reader, StreamStats, TryNextError};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::cast;
use crate::config::{parse_config, parse_resources, Scope};
use crate::entry::{self, tattler_entry};
use crate::error::{guard, report, utf8, Failure};
use crate::handle::Registry;
use crate::logging::in_callback;
use crate::readiness::Readiness;
use crate::status::tattler_status::{self, *};

/// A running reader. Opaque; made by `tattler_open_config`, freed by
/// `tattler_close`.
///
/// The pointer is a handle, checked on every call: a call on a reader closed
/// already, or on any pointer `tattler_open_config` did not hand out, returns
/// `TATTLER_ERR_INVALID_HANDLE` at once and does nothing.
#[derive(Default)]
pub struct tattler_reader {
    /// Never read: the address is the handle (see `handle.rs`), the reader
    /// is in [`READERS`].
    _shell: u8,
}

/// What a `tattler_reader` handle names. Reference-counted: every call holds
/// its own reference while it runs, so a `tattler_close` racing with a call
/// already inside (say, blocked in `tattler_next_entry`) cannot free what
/// that call uses.
pub(crate) struct OpenReader {
    pub(crate) reader: Reader,
    /// What the names given to `tattler_set_resources` take.
    scope: Scope,
    /// `tattler_fd`'s, made by its first call (`None`: it could not be).
    ready: OnceLock<Option<Arc<Readiness>>>,
}

/// Every reader opened and not yet closed.
static READERS: Mutex<Registry<tattler_reader, Arc<OpenReader>>> =
    Mutex::new(Registry::new(READER_QUARANTINE));

/// Readers closed before a closed reader's handle names a new one.
const READER_QUARANTINE: usize = 64;

/// The reader behind `r`, with a reference of the caller's; a failure for
/// NULL and for a pointer that is not an open reader. The registry's lock is
/// held for the lookup only: the call that follows may block.
pub(crate) fn lookup(r: *const tattler_reader) -> Result<Arc<OpenReader>, Failure> {
    if r.is_null() {
        return Err(Failure::null("r"));
    }
    let found = READERS.lock().get(r).cloned();
    found.ok_or_else(not_open)
}

fn not_open() -> Failure {
    Failure::new(
        TATTLER_ERR_INVALID_HANDLE,
        "r is not an open reader (closed already, or not from tattler_open)",
    )
}

/// Timeouts longer than this (about 30 years) mean "forever": a deadline that
/// far off could overflow the clock.
const FOREVER_MS: i64 = 1 << 40;

/// One call on a reader: the handle check, a counted reference for the
/// length of the call, and panics caught. A failure's text goes to `err_buf`
/// (the caller's, for this call only; nothing is kept in the reader).
///
/// # Safety
/// `err_needed` is NULL or writable.
unsafe fn with_reader_needed(
    r: *const tattler_reader,
    err_buf: &mut [u8],
    err_needed: *mut usize,
    body: impl FnOnce(&OpenReader) -> Result<tattler_status, Failure>,
) -> tattler_status {
    let result = guard(|| {
        let handle = lookup(r)?;
        let status = body(&handle);
        // When a close raced with this call, this is the last reference: the
        // stream threads are joined here (a panic there is caught too).
        drop(handle);
        status
    });
    // SAFETY: NULL or writable, by the caller's promise.
    result.unwrap_or_else(|f| unsafe { report(&f, err_buf, err_needed) })
}

/// `with_reader_needed` for calls without an error size.
fn with_reader(
    r: *const tattler_reader,
    err_buf: &mut [u8],
    body: impl FnOnce(&OpenReader) -> Result<tattler_status, Failure>,
) -> tattler_status {
    // SAFETY: no `err_needed`.
    unsafe { with_reader_needed(r, err_buf, null_mut(), body) }
}

/// Opens a reader from a configuration document (what `tattler_config`
/// builds) and, when not empty, the bytes of a checkpoint: the one way a
/// reader is made. Returns its handle, registered.
pub(crate) fn open(json: &str, checkpoint: &[u8]) -> Result<*mut tattler_reader, Failure> {
    let mut config = parse_config(json)?;
    if !checkpoint.is_empty() {
        config.resume = Some(Checkpoint::from_bytes(checkpoint)?);
    }
    let handle = Arc::new(OpenReader {
        reader: Reader::open(config)?,
        scope: Scope::from_json(json),
        ready: OnceLock::new(),
    });
    Ok(READERS.lock().insert(handle))
}

/// Waits for the next entry.
///
/// Parameters:
/// - `r`: the reader.
/// - `timeout_ms`: how long to wait at most: negative waits until an entry
///   comes, the reader stops or `tattler_wake` is called; 0 only takes an
///   entry that is ready.
/// - `out`: where to store the entry.
///
/// Returns:
/// - `TATTLER_OK`: `*out` holds the next entry.
/// - `TATTLER_TIMEOUT`: no entry within `timeout_ms`, or `tattler_wake(r)`
///   ended the wait early; the reader runs on.
/// - `TATTLER_CLOSED`: the reader was stopped (`tattler_stop`,
///   `tattler_close`) and every entry it had queued has been handed out;
///   every later call returns `TATTLER_CLOSED` too.
/// - `TATTLER_ERR_NULL_ARG`: `r` or `out` is NULL.
/// - `TATTLER_ERR_INVALID_HANDLE`: `r` is not an open reader (closed
///   already, or not from `tattler_open_config`); returned at once, without waiting.
/// - `TATTLER_ERR_REENTRANT`: called from inside the log callback with a
///   timeout other than 0 (waiting there would stall the stream that is
///   logging); a timeout of 0 works there.
///
/// Every failure is described by its status alone (`tattler_status_str`);
/// this call has no error text. `*out` is written only with `TATTLER_OK`. Entries of one resource come in
/// order; a consumer that falls behind slows the streams down, no entry is
/// ever dropped.
///
/// Ownership: the caller owns `*out` and must free it with
/// `tattler_entry_free`; it stays valid after `tattler_close(r)`.
///
/// Thread safety: may run while another thread calls `tattler_stop(r)`
/// (which wakes it with `TATTLER_CLOSED`), `tattler_wake(r)` (which wakes it
/// with `TATTLER_TIMEOUT`), `tattler_stats_json(r)` or
/// `tattler_set_resources(r)`. Several threads may wait on one reader; each
/// entry goes to one of them, and a `tattler_wake` wakes one of them.
///
/// # Safety
/// `out` is NULL or writable (`r` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_next_entry(
    r: *mut tattler_reader,
    timeout_ms: i64,
    out: *mut *mut tattler_entry,
) -> tattler_status {
    let body = |h: &OpenReader| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        if timeout_ms != 0 && in_callback() {
            return Err(Failure::new(
                TATTLER_ERR_REENTRANT,
                "tattler_next_entry cannot wait inside the log callback",
            ));
        }
        let got = if timeout_ms == 0 {
            h.reader.try_next().map_err(|e| match e {
                TryNextError::Empty => TATTLER_TIMEOUT,
                TryNextError::Closed => TATTLER_CLOSED,
            })
        } else {
            // Negative waits "forever": a timeout too, so that tattler_wake
            // can end it.
            let ms = if (0..=FOREVER_MS).contains(&timeout_ms) {
                timeout_ms.unsigned_abs()
            } else {
                FOREVER_MS.unsigned_abs()
            };
            h.reader
                .next_timeout(Duration::from_millis(ms))
                .map_err(|e| match e {
                    NextTimeoutError::Timeout => TATTLER_TIMEOUT,
                    NextTimeoutError::Closed => TATTLER_CLOSED,
                })
        };
        if let Some(Some(ready)) = h.ready.get() {
            // The queue was found empty, or is now: clear the fd (re-armed
            // if an entry came meanwhile). Not on CLOSED: it stays readable.
            let drained = match &got {
                Ok(_) => h.reader.is_queue_empty(),
                Err(status) => *status == TATTLER_TIMEOUT,
            };
            if drained {
                ready.clear(|| h.reader.is_queue_empty());
            }
        }
        match got {
            Ok(entry) => {
                let entry = entry::hand_out(entry);
                // SAFETY: non-NULL (checked above) and writable, by the caller's promise.
                unsafe { cast::write(out, entry) };
                Ok(TATTLER_OK)
            }
            Err(status) => Ok(status),
        }
    };
    with_reader(r, &mut [], body)
}

/// A file descriptor that is readable while entries are waiting, so that a
/// poll/epoll/select loop can drive `tattler_next_entry(r, 0, ...)`
/// instead of a thread blocking in it. Linux only (an eventfd).
///
/// The protocol (level-triggered):
/// - Watch the fd for readability (`POLLIN`, `EPOLLIN`); never read,
///   write or close it: tattler keeps its level.
/// - It is readable while at least one entry is queued, and from the
///   moment the reader is stopped (`tattler_stop`, `tattler_close`) on, so
///   that the loop sees `TATTLER_CLOSED`.
/// - When it is readable, call `tattler_next_entry(r, 0, &e)` until it
///   returns `TATTLER_TIMEOUT` (or stop earlier: the fd stays readable
///   while entries remain). A `TATTLER_TIMEOUT`, and a call that takes
///   the last queued entry, clear the fd, and re-arm it at once when an
///   entry arrived meanwhile: no wake-up is lost between the two.
/// - It may be readable with nothing queued (another thread took the
///   entry, or just after this call): the `TATTLER_TIMEOUT` that follows
///   clears it. With `EPOLLET` (edge-triggered), always go on until
///   `TATTLER_TIMEOUT`.
/// - `tattler_wake` does not touch it.
///
/// Parameters: `r`, the reader.
///
/// Returns: the fd (0 or more; the same one on every call); -1 when `r`
/// is NULL or not an open reader, on systems without eventfd (not Linux),
/// or when the eventfd could not be made (the file descriptor limit;
/// later calls return -1 too).
///
/// Ownership: the reader owns the fd; it is closed by `tattler_close(r)`
/// (remove it from an epoll set first). It is close-on-exec.
///
/// Thread safety: any thread, concurrently with any other call on `r`.
/// Not async-signal-safe. Other threads may still call
/// `tattler_next_entry` on `r`; each entry goes to one caller.
#[no_mangle]
pub extern "C" fn tattler_fd(r: *mut tattler_reader) -> c_int {
    let mut fd = -1;
    let _ = with_reader(r, &mut [], |h| {
        let ready = h.ready.get_or_init(|| {
            let ready = Arc::new(Readiness::new()?);
            let hook = ready.clone();
            h.reader
                .set_ready_hook(Box::new(move || hook.signal()))
                .then_some(ready)
        });
        if let Some(ready) = ready {
            fd = ready.raw();
        }
        Ok(TATTLER_OK)
    });
    fd
}

/// Stops the reader: every stream ends, and a thread blocked in
/// `tattler_next_entry(r)` wakes up. Entries already queued are still handed
/// out; after them `tattler_next_entry` returns `TATTLER_CLOSED`. Does not
/// wait for the stream threads (`tattler_close` joins them).
///
/// Parameters: `r`, the reader, or NULL (then nothing happens). A reader
/// closed already, or a pointer not from `tattler_open_config`, is not followed:
/// nothing happens but a logged warning (there is no status to return).
///
/// Ownership: `r` stays the caller's; it must still be closed.
///
/// Thread safety: safe from any thread, at any time, any number of times,
/// concurrently with any other call on `r`, also from inside the log
/// callback. This is how another thread (a signal handler's helper thread)
/// ends a blocked `tattler_next_entry` for good; `tattler_wake` ends one
/// wait only. Not async-signal-safe (it takes locks and may log): never
/// call it from a signal handler; have the handler write to a self-pipe
/// and call it from the thread that reads the pipe.
#[no_mangle]
pub extern "C" fn tattler_stop(r: *mut tattler_reader) {
    on_reader(r, "tattler_stop", |h| h.reader.stop());
}

/// `tattler_stop` and `tattler_wake`, which have no status: a handle that is
/// not an open reader is logged instead.
fn on_reader(r: *mut tattler_reader, call: &str, body: impl FnOnce(&OpenReader)) {
    let st = with_reader(r, &mut [], |h| {
        body(h);
        Ok(TATTLER_OK)
    });
    if st == TATTLER_ERR_INVALID_HANDLE {
        log::warn!(
            "{call}: not an open reader (closed already, or not from tattler_open); ignored"
        );
    }
}

/// Ends one wait: a thread blocked in `tattler_next_entry(r)` returns
/// `TATTLER_TIMEOUT` at once, and the reader runs on. With no thread
/// waiting, the next `tattler_next_entry(r)` that would wait returns
/// `TATTLER_TIMEOUT` at once instead (one wake is kept, not more: waking
/// twice with nobody waiting ends one wait). A `tattler_next_entry` with
/// timeout 0 neither waits nor uses up the kept wake.
///
/// This is how a caller cancels one wait without stopping the stream: a Go
/// context, a C++ `std::stop_token`, an event loop shutting a worker down.
/// With several threads waiting on `r`, one of them wakes (any one).
///
/// Parameters: `r`, the reader, or NULL (then nothing happens). A reader
/// closed already, or a pointer not from `tattler_open_config`, is not followed:
/// nothing happens but a logged warning.
///
/// Thread safety: safe from any thread, at any time, concurrently with any
/// other call on `r`, also from inside the log callback. Not
/// async-signal-safe, as `tattler_stop`.
#[no_mangle]
pub extern "C" fn tattler_wake(r: *mut tattler_reader) {
    on_reader(r, "tattler_wake", |h| h.reader.wake());
}

/// Stops the reader, joins its threads and frees it.
///
/// Returns within about a second whatever the streams are doing (a TCP
/// connect under way ends within 0.1 s on Linux, elsewhere it finishes
/// first, bounded by `connect_timeout_secs`; a thread in a DNS lookup
/// finishes it first, bounded by the system resolver's own timeout).
/// Entries already handed out stay valid.
///
/// Parameters: `r`, the reader, or NULL (then nothing happens).
///
/// Returns: `TATTLER_OK` (also for NULL); `TATTLER_ERR_INVALID_HANDLE` when
/// `r` is not an open reader (a second close, or a pointer not from
/// `tattler_open_config`: nothing is done, nothing is followed);
/// `TATTLER_ERR_PANIC` if stopping or joining panicked (a bug: the panic's
/// text is logged). Either way `r` is invalid afterwards: there is nothing
/// to retry.
///
/// From inside the log callback: works, also on the reader whose stream
/// thread is logging; that thread is not joined (it cannot join itself): it
/// ends on its own once the callback returns.
///
/// Ownership: takes `r`; it is invalid afterwards.
///
/// Thread safety: meant to be called once, when no other thread is inside a
/// call on `r` and none will start one; use `tattler_stop` to wake a thread
/// blocked in `tattler_next_entry` first. Misuse is refused, never undefined
/// behaviour: a call on `r` that starts after the close (on any thread)
/// returns `TATTLER_ERR_INVALID_HANDLE`, and so does a second close (of two
/// racing closes, one closes). A call still running on another thread
/// (a close racing with a blocked `tattler_next_entry`) keeps the reader
/// alive and returns as after `tattler_stop`: an entry still queued, else
/// `TATTLER_CLOSED`; the threads are joined and the memory freed when it
/// returns, on its thread.
#[no_mangle]
pub extern "C" fn tattler_close(r: *mut tattler_reader) -> tattler_status {
    if r.is_null() {
        return TATTLER_OK;
    }
    let result = guard(|| {
        // Out of the registry first: every call that starts from here on is
        // refused. The lock is released before the join below.
        let handle = READERS.lock().remove(r).ok_or_else(not_open)?;
        handle.reader.stop();
        // The last reference (unless a racing call holds one): Reader's drop
        // joins the stream threads.
        drop(handle);
        Ok(TATTLER_OK)
    });
    result.unwrap_or_else(|f| f.status)
}

/// Changes the resources streamed, while entries flow.
///
/// Streams for added resources start with a full initial sync (their entries
/// then Synced), streams for removed ones stop, the others run on without a
/// reconnect. With `force`, every stream restarts. A resource is the same
/// stream when its group, version, resource, namespace, selectors and
/// `metadata_only` are.
///
/// Parameters:
/// - `r`: the reader.
/// - `resources_json`: a JSON array, the same as the configuration's
///   `resources`: names, which take the `namespace`, `label_selector` and
///   `field_selector` of the open configuration as its own names did, and
///   objects, which take only their own keys:
///   `["configmaps",{"resource":"pods","field_selector":"spec.nodeName=n1","metadata_only":true},{"resource":"nodes","field_selector":"metadata.name=n1"}]`.
///   An object's keys: `resource` (required; a name as above), `namespace`
///   or `namespaces` (a list: one stream each, entries of one resource),
///   `label_selector`, `field_selector`, `metadata_only` (the objects as
///   `PartialObjectMetadata`: only their `metadata`), `encoding`, `shard`
///   (`{"count":N,"index":i}`; without it, the configuration's).
/// - `force`: restart every stream even if the set is unchanged.
/// - `changed`: where to store whether anything changed, or NULL.
/// - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
///   and 0. The text is NUL-terminated and cut to fit; it is this call's
///   own (nothing is kept in the reader).
/// - `err_needed`: NULL, or where to store, on failure, the size of the
///   whole error text with its NUL (more than `err_len` when the text in
///   `err_buf` was cut).
///
/// Returns: `TATTLER_OK` and `*changed` set; `TATTLER_CLOSED` if the reader
/// is stopped; or a failure with its reason in `err_buf`
/// (`TATTLER_ERR_INVALID_RESOURCE` for a bad name, an unknown or mistyped
/// key of an object or not a JSON array of names and objects, the text
/// naming the item and key (`resources[1].nmespace`);
/// `TATTLER_ERR_INVALID_CONFIG` for an empty list;
/// `TATTLER_ERR_INVALID_UTF8`, `TATTLER_ERR_IO` when a thread cannot start,
/// `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_HANDLE` when `r` is not an
/// open reader, `TATTLER_ERR_REENTRANT` from inside the log callback, where
/// the streams it stops could include the one logging).
/// A bad list changes nothing. `*err_needed` is written only on failure (a
/// status of 100 or more), `*changed` only with `TATTLER_OK`.
///
/// Ownership: `resources_json` is only read during the call.
///
/// Thread safety: may run while other threads are in `tattler_next_entry`,
/// `tattler_stop`, `tattler_stats_json` or `tattler_metrics_text` on `r`;
/// two `tattler_set_resources_ex` on one reader take turns.
///
/// (The name keeps its `_ex`: `tattler_set_resources`, the same call without
/// `err_needed`, is a legacy wrapper kept for the programs that link it.)
///
/// # Safety
/// `resources_json` is NULL or NUL-terminated; `changed` is NULL or writable;
/// `err_buf` is NULL or has `err_len` writable bytes; `err_needed` is NULL or
/// writable (`r` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_set_resources_ex(
    r: *mut tattler_reader,
    resources_json: *const c_char,
    force: bool,
    changed: *mut bool,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: NULL or `err_len` writable bytes, by the caller's promise.
    let err_buf = unsafe { cast::buf_arg(err_buf, err_len) };
    let body = |h: &OpenReader| {
        if resources_json.is_null() {
            return Err(Failure::null("resources_json"));
        }
        if in_callback() {
            return Err(Failure::new(
                TATTLER_ERR_REENTRANT,
                "tattler_set_resources cannot run inside the log callback",
            ));
        }
        // SAFETY: non-NULL and NUL-terminated, by the caller's promise.
        let json = utf8(unsafe { cast::c_str(resources_json) }, "resources_json")?;
        let specs = parse_resources(json, &h.scope)?;
        let set = if force {
            h.reader.restart_resources(&specs)
        } else {
            h.reader.set_resources(&specs)
        };
        match set {
            Ok(c) => {
                if !changed.is_null() {
                    // SAFETY: non-NULL and writable, by the caller's promise.
                    unsafe { cast::write(changed, c) };
                }
                Ok(TATTLER_OK)
            }
            Err(kube_tattler::Error::Stopped) => Ok(TATTLER_CLOSED),
            Err(e) => Err(e.into()),
        }
    };
    // SAFETY: `err_needed` is NULL or writable, by the caller's promise.
    unsafe { with_reader_needed(r, err_buf, err_needed, body) }
}

/// The counters of each stream as a JSON array, in the configured order:
/// `[{"resource":"v1/pods","events":12,"bytes":40960,"reconnects":0,"resyncs":0,"relists":0,"stale_drops":0,"skipped":0,"other_shard_drops":0,"resource_version":"1234","objects":10,"synced":true,"list_fallback":false,"failed":false,"last_error":null}]`
/// (`last_error`: why the stream last retried or gave up, `null` once synced).
///
/// `resource_version` is the last one seen, as the server sent it (a string:
/// the API calls resourceVersions opaque).
///
/// Parameters:
/// - `r`: the reader.
/// - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
/// - `needed`: where to store the bytes required, NUL included, or NULL.
///
/// Returns: `TATTLER_OK` with the NUL-terminated JSON in `buf`;
/// `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (the JSON is never
/// cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a NULL `buf` with a
/// non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r` is not an open
/// reader. `*needed` is set with `TATTLER_OK` and with
/// `TATTLER_ERR_BUFFER_TOO_SMALL`. Counters move: the size may grow between
/// two calls, so leave some room (or retry). Every failure is described by
/// its status alone; this call has no error text.
///
/// Ownership: the caller owns `buf`.
///
/// Thread safety: any thread, concurrently with any call on `r` but
/// `tattler_close`, also from inside the log callback.
///
/// # Safety
/// `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
/// (`r` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_stats_json(
    r: *mut tattler_reader,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> tattler_status {
    let body = |h: &OpenReader| {
        check_buf(buf, len)?;
        let json = stats_json(&h.reader.stats());
        // SAFETY: the caller's promise, passed on.
        unsafe { copy_out(json.as_bytes(), true, buf, len, needed) }
    };
    with_reader(r, &mut [], body)
}

/// The NULL check of a caller's output buffer: NULL only with length 0.
fn check_buf(buf: *mut c_char, len: usize) -> Result<(), Failure> {
    if buf.is_null() && len != 0 {
        return Err(Failure::null("buf"));
    }
    Ok(())
}

/// Copies `bytes`, and a NUL after them when `nul`, into the caller's
/// buffer, whole or not at all; `*needed` (when not NULL) gets the size
/// required either way.
///
/// # Safety
/// `buf` is NULL with `len` 0, or has `len` writable bytes; `needed` is NULL
/// or writable.
unsafe fn copy_out(
    bytes: &[u8],
    nul: bool,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> Result<tattler_status, Failure> {
    let need = bytes.len() + usize::from(nul);
    if !needed.is_null() {
        // SAFETY: non-NULL and writable, by the caller's promise.
        unsafe { cast::write(needed, need) };
    }
    if len < need {
        return Err(Failure::new(
            TATTLER_ERR_BUFFER_TOO_SMALL,
            format!("{need} bytes are needed, the buffer has {len}"),
        ));
    }
    // SAFETY: `len` writable bytes (or none), by the caller's promise.
    let out = unsafe { cast::buf_arg(buf, len) };
    out[..bytes.len()].copy_from_slice(bytes);
    if nul {
        out[bytes.len()] = 0;
    }
    Ok(TATTLER_OK)
}

/// The reader's counters in the Prometheus text exposition format (0.0.4),
/// ready to serve as an agent's `/metrics` (`Content-Type: text/plain;
/// version=0.0.4`): `# HELP` and `# TYPE` lines, then one sample per stream,
/// labelled by `resource` (`group/version/resource`, `v1/pods` for the core
/// group) and, where set, `namespace`, `label_selector`, `field_selector`,
/// `metadata_only`:
///
/// ```text
/// # HELP tattler_events_total Watch events and LIST items received.
/// # TYPE tattler_events_total counter
/// tattler_events_total{resource="v1/pods"} 12
/// ```
///
/// The series: `tattler_events_total`, `tattler_received_bytes_total`,
/// `tattler_reconnects_total`, `tattler_resyncs_total`,
/// `tattler_relists_total`, `tattler_stale_drops_total`,
/// `tattler_skipped_total`, `tattler_other_shard_drops_total` (counters);
/// `tattler_objects` (objects tracked),
/// `tattler_synced`, `tattler_current`, `tattler_failed`, `tattler_list_fallback`
/// (0 or 1), `tattler_seconds_since_heard` and `tattler_seconds_since_sync`
/// (absent until the server answered, the first full state completed) per
/// stream; `tattler_channel_entries` and `tattler_channel_bytes` (what waits
/// for the consumer) for the reader. The text is the Rust
/// `kube_tattler::Reader::metrics_text`.
///
/// Parameters:
/// - `r`: the reader.
/// - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
/// - `needed`: where to store the bytes required, NUL included, or NULL.
///
/// Returns: `TATTLER_OK` with the NUL-terminated text in `buf`;
/// `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (the text is never
/// cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a NULL `buf` with a
/// non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r` is not an open
/// reader. `*needed` is set with `TATTLER_OK` and with
/// `TATTLER_ERR_BUFFER_TOO_SMALL`. Values move (bytes, seconds since the
/// sync): the size may grow between two calls, so leave some room (or
/// retry). Every failure is described by its status alone; this call has no
/// error text.
///
/// Ownership: the caller owns `buf`.
///
/// Thread safety: any thread, concurrently with any call on `r` but
/// `tattler_close`, also from inside the log callback.
///
/// # Safety
/// `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
/// (`r` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_metrics_text(
    r: *mut tattler_reader,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> tattler_status {
    let body = |h: &OpenReader| {
        check_buf(buf, len)?;
        let text = h.reader.metrics_text();
        // SAFETY: the caller's promise, passed on.
        unsafe { copy_out(text.as_bytes(), true, buf, len, needed) }
    };
    with_reader(r, &mut [], body)
}

/// A checkpoint of the reader, for `tattler_open_config` after a restart:
/// per resource whose full state is complete, where its watch can resume and
/// the objects the consumer holds (namespace, name, uid and resourceVersion
/// each; about 100 bytes an object, never the objects themselves).
///
/// It matches what the consumer got exactly when taken after
/// `tattler_stop(r)` and once `tattler_next_entry(r)` has returned
/// `TATTLER_CLOSED` (every entry taken). Taken while the reader runs, it may
/// hold changes still waiting in the channel, which a resumed reader would
/// then not deliver. So, on shutdown: stop, drain, checkpoint, close.
///
/// The bytes are a versioned JSON document, not NUL-terminated. They hold
/// names, uids and resourceVersions (no object contents, no credentials);
/// keep them where the agent keeps its own state.
///
/// Parameters:
/// - `r`: the reader.
/// - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
/// - `needed`: where to store the byte count of the checkpoint, or NULL.
///
/// Returns: `TATTLER_OK` with the checkpoint in the first `*needed` bytes
/// of `buf`; `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (a
/// checkpoint is never cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a
/// NULL `buf` with a non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r`
/// is not an open reader. `*needed` is set with `TATTLER_OK` and
/// with `TATTLER_ERR_BUFFER_TOO_SMALL`. While the reader runs the size may
/// grow between two calls (retry with the new `*needed`); once it is stopped
/// and drained it does not change. Every failure is described by its status
/// alone; this call has no error text.
///
/// Ownership: the caller owns `buf`.
///
/// Thread safety: any thread, concurrently with any call on `r` but
/// `tattler_close`, also from inside the log callback.
///
/// # Safety
/// `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
/// (`r` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_checkpoint(
    r: *mut tattler_reader,
    buf: *mut u8,
    len: usize,
    needed: *mut usize,
) -> tattler_status {
    let buf = buf.cast::<c_char>();
    let body = |h: &OpenReader| {
        check_buf(buf, len)?;
        let bytes = h.reader.checkpoint().to_bytes();
        // SAFETY: the caller's promise, passed on.
        unsafe { copy_out(&bytes, false, buf, len, needed) }
    };
    with_reader(r, &mut [], body)
}

fn stats_json(stats: &[StreamStats]) -> String {
    let list: Vec<Value> = stats
        .iter()
        .map(|s| {
            json!({
                "resource": s.resource,
                "events": s.events,
                "bytes": s.bytes,
                "reconnects": s.reconnects,
                "resyncs": s.resyncs,
                "relists": s.relists,
                "stale_drops": s.stale_drops,
                "skipped": s.skipped,
                "other_shard_drops": s.other_shard_drops,
                "resource_version": s.resource_version,
                "objects": s.objects,
                "synced": s.synced,
                "list_fallback": s.list_fallback,
                "failed": s.failed,
                "last_error": s.last_error,
            })
        })
        .collect();
    Value::Array(list).to_string()
}
