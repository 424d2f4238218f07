//! Routing tattler's log lines into the caller's own logging.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::RwLock;

use crate::cast::{self, UserData};
use crate::error::guard;
use crate::status::tattler_status::{self, *};

/// The level of a log line, as passed to the log callback's `level`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tattler_log_level {
    /// No log lines (only for `tattler_set_log_level`).
    TATTLER_LOG_OFF = 0,
    /// A stream failed for good, a thread panicked.
    TATTLER_LOG_ERROR = 1,
    /// Something the operator should know: a retry, TLS verification off.
    TATTLER_LOG_WARN = 2,
    /// Streams starting, syncing, re-syncing.
    TATTLER_LOG_INFO = 3,
    /// Detail for debugging: requests, reconnect reasons.
    TATTLER_LOG_DEBUG = 4,
    /// Very detailed; costly.
    TATTLER_LOG_TRACE = 5,
}

/// The log callback: `user` as given to `tattler_set_log_callback`, `level` a
/// `tattler_log_level` (1 error ... 5 trace), `target` the module that logged
/// (e.g. `"kube_tattler::watch"`), `msg` the line. Both strings are valid only
/// during the call.
#[allow(non_camel_case_types)]
pub type tattler_log_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        level: c_int,
        target: *const c_char,
        msg: *const c_char,
    ),
>;

/// The callback itself, never NULL.
pub(crate) type LogFn = unsafe extern "C" fn(
    user: *mut c_void,
    level: c_int,
    target: *const c_char,
    msg: *const c_char,
);

struct Sink {
    cb: LogFn,
    user: UserData,
}

struct CallbackLogger {
    sink: RwLock<Option<Sink>>,
}

static LOGGER: CallbackLogger = CallbackLogger {
    sink: RwLock::new(None),
};
thread_local! {
    /// True while this thread runs the caller's log callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is inside the caller's log callback: the calls
/// that would wait there for the logging thread refuse with
/// `TATTLER_ERR_REENTRANT` instead.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.try_with(Cell::get).unwrap_or(false)
}

/// Marks the current thread as inside the callback until dropped.
struct InCallback;

impl InCallback {
    fn enter() -> InCallback {
        let _ = IN_CALLBACK.try_with(|c| c.set(true));
        InCallback
    }
}

impl Drop for InCallback {
    fn drop(&mut self) {
        let _ = IN_CALLBACK.try_with(|c| c.set(false));
    }
}

/// Whether `LOGGER` is the process's logger, decided on first use.
static INSTALLED: OnceLock<bool> = OnceLock::new();
/// The level set with `tattler_set_log_level` (a `LevelFilter` as usize).
static LEVEL: AtomicUsize = AtomicUsize::new(LevelFilter::Info as usize);

fn level_filter(n: usize) -> LevelFilter {
    LevelFilter::iter()
        .find(|l| *l as usize == n)
        .unwrap_or(LevelFilter::Info)
}

/// Whether a log target is tattler's: the core's (`kube_tattler::…`) or
/// this crate's (`tattler::…`).
fn ours(target: &str) -> bool {
    target.starts_with("kube_tattler") || target.starts_with("tattler")
}

impl Log for CallbackLogger {
    fn enabled(&self, m: &Metadata) -> bool {
        // Other libraries' TRACE lines never reach the callback (below), so
        // they are not enabled either.
        if m.level() == Level::Trace && !ours(m.target()) {
            return false;
        }
        self.sink.read_recursive().is_some()
    }

    fn log(&self, record: &Record) {
        if record.level() > level_filter(LEVEL.load(Ordering::Relaxed)) {
            return;
        }
        // A line logged by a tattler call the callback made: delivering it
        // would call the callback inside itself, without bound.
        if in_callback() {
            return;
        }
        // Other libraries' TRACE lines never reach the callback: none under
        // tattler sees a request or response byte today (tattler reads and
        // writes HTTP itself), and one that did would log them at TRACE.
        if record.level() == Level::Trace && !ours(record.target()) {
            return;
        }
        // Held during the call, so that once tattler_set_log_callback returns
        // the old callback is never called again and its `user` may be freed.
        // Recursive: while one thread's callback waits for another thread (a
        // tattler_close joining streams), that thread's lines must get
        // through even if a tattler_set_log_callback is waiting to write.
        let sink = self.sink.read_recursive();
        let Some(sink) = sink.as_ref() else {
            return;
        };
        let level = match record.level() {
            Level::Error => 1,
            Level::Warn => 2,
            Level::Info => 3,
            Level::Debug => 4,
            Level::Trace => 5,
        };
        let target = c_string(record.target().to_string());
        let msg = c_string(record.args().to_string());
        let _inside = InCallback::enter();
        // SAFETY: the callback and user the caller installed, not replaced
        // while we hold the read lock.
        unsafe { cast::call_log(sink.cb, sink.user, level, &target, &msg) };
    }

    fn flush(&self) {}
}

fn c_string(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).unwrap_or_default()
    })
}

fn apply_level() {
    let on = LOGGER.sink.read_recursive().is_some();
    let level = if on {
        level_filter(LEVEL.load(Ordering::Relaxed))
    } else {
        LevelFilter::Off
    };
    log::set_max_level(level);
}

/// Routes tattler's log lines to `cb`. Without a callback tattler logs
/// nothing.
///
/// Parameters:
/// - `cb`: called once per log line, from whichever thread logs (mostly
///   tattler's stream threads, named `tattler-watch-<resource>`); NULL
///   removes the callback.
/// - `user`: passed back to `cb` untouched; tattler never reads it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_LOGGER_IN_USE` when the process
/// already has another Rust `log` logger (a Rust host program's own): tattler
/// logs through that one and `cb` is not installed;
/// `TATTLER_ERR_REENTRANT` when called from inside the callback (it would
/// have to wait for its own caller to return), with nothing changed.
///
/// Ownership: `user` stays the caller's. Once this call returns, the
/// previous callback is never called again, so its `user` may be freed.
///
/// Thread safety: process-global; one callback serves every reader. May be
/// called at any time from any thread, also to replace or remove the
/// callback. `cb` must be callable from any thread and must not unwind.
///
/// What the callback may call: every tattler function works from inside it
/// except three, which return `TATTLER_ERR_REENTRANT` there and do nothing:
/// `tattler_set_log_callback`, `tattler_set_resources` (it may have to join
/// the very stream thread that is logging) and a `tattler_next_entry` that
/// would wait (a timeout other than 0: it would stall the stream that is
/// logging). `tattler_close` works there too, also on the reader whose
/// thread is logging. Lines logged by the calls the callback makes are
/// dropped, so the callback is never called inside itself.
///
/// # Safety
/// `cb` is NULL or a function with this signature that stays callable, with
/// this `user`, until it is replaced or removed.
#[no_mangle]
pub unsafe extern "C" fn tattler_set_log_callback(
    cb: tattler_log_fn,
    user: *mut c_void,
) -> tattler_status {
    let result = guard(|| {
        if in_callback() {
            return Err(crate::error::Failure::new(TATTLER_ERR_REENTRANT, ""));
        }
        let ours = *INSTALLED.get_or_init(|| log::set_logger(&LOGGER).is_ok());
        if !ours {
            return Err(crate::error::Failure::new(TATTLER_ERR_LOGGER_IN_USE, ""));
        }
        *LOGGER.sink.write() = cb.map(|cb| Sink {
            cb,
            user: UserData(user),
        });
        apply_level();
        Ok(TATTLER_OK)
    });
    result.unwrap_or_else(|f| f.status)
}

/// Sets the most detailed level passed to the log callback; `TATTLER_LOG_INFO`
/// by default. Lines below it are not even formatted.
///
/// Parameters: `level`, a `tattler_log_level` (0 off ... 5 trace).
///
/// Returns: `TATTLER_OK`, or `TATTLER_ERR_INVALID_ARG` for a number outside
/// 0 to 5.
///
/// Thread safety: process-global, like the callback; any thread, any time,
/// also from inside the callback.
#[no_mangle]
pub extern "C" fn tattler_set_log_level(level: c_int) -> tattler_status {
    let result = guard(|| {
        let n = usize::try_from(level)
            .ok()
            .filter(|n| *n <= LevelFilter::Trace as usize)
            .ok_or_else(|| {
                crate::error::Failure::new(TATTLER_ERR_INVALID_ARG, "level must be 0 to 5")
            })?;
        LEVEL.store(n, Ordering::Relaxed);
        if INSTALLED.get() == Some(&true) {
            apply_level();
        }
        Ok(TATTLER_OK)
    });
    result.unwrap_or_else(|f: crate::error::Failure| f.status)
}

/// Whether the calling thread is inside the log callback right now.
///
/// For wrappers over this API (the Go package, `tattler.hpp`) that hold a
/// lock of their own around tattler calls: from inside the callback they
/// must not wait for that lock, since the call that logged may hold it.
///
/// Returns: true on a thread that is running the log callback.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn tattler_in_log_callback() -> bool {
    in_callback()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_match_log_crate() {
        assert_eq!(
            LevelFilter::Off as usize,
            tattler_log_level::TATTLER_LOG_OFF as usize
        );
        assert_eq!(
            LevelFilter::Error as usize,
            tattler_log_level::TATTLER_LOG_ERROR as usize
        );
        assert_eq!(
            LevelFilter::Trace as usize,
            tattler_log_level::TATTLER_LOG_TRACE as usize
        );
        assert_eq!(level_filter(4), LevelFilter::Debug);
    }
}
