//! The status every fallible function returns, and its fixed text.

use std::ffi::{c_char, c_int, CStr};

/// What a call did. The numbers are part of the ABI and never change; new
/// statuses get new numbers.
///
/// `TATTLER_OK`, `TATTLER_TIMEOUT` and `TATTLER_CLOSED` are not failures;
/// every failure is 100 or above, so `status >= 100` tests for one.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum tattler_status {
    /// Success.
    TATTLER_OK = 0,
    /// `tattler_next_entry`: no entry arrived within the timeout; the reader
    /// runs on.
    TATTLER_TIMEOUT = 1,
    /// `tattler_next_entry`: the reader was stopped or closed and every entry
    /// it had queued has been handed out; there will be no more.
    /// `tattler_set_resources`: the reader is stopped.
    TATTLER_CLOSED = 2,
    /// A pointer argument that must not be NULL was NULL.
    TATTLER_ERR_NULL_ARG = 100,
    /// The configuration is unusable: not JSON, an unknown key, a value of the
    /// wrong type, a bad server URL, nothing to watch. The error text names
    /// the key.
    TATTLER_ERR_INVALID_CONFIG = 101,
    /// A string argument is not UTF-8.
    TATTLER_ERR_INVALID_UTF8 = 102,
    /// A file named in the configuration could not be read, or a thread could
    /// not be started.
    TATTLER_ERR_IO = 103,
    /// tattler panicked inside the call (a bug: please report it). The panic
    /// was caught; it never unwinds into the caller.
    TATTLER_ERR_PANIC = 104,
    /// The caller's buffer is too small; `*needed` tells the size required.
    TATTLER_ERR_BUFFER_TOO_SMALL = 105,
    /// A resource name could not be understood, or the resource list is not a
    /// JSON array of strings.
    TATTLER_ERR_INVALID_RESOURCE = 106,
    /// The TLS setup failed (a CA bundle without a PEM certificate).
    TATTLER_ERR_TLS = 107,
    /// An integer argument is out of range.
    TATTLER_ERR_INVALID_ARG = 108,
    /// `tattler_set_log_callback`: the process already has a different Rust
    /// logger installed, so tattler's log lines go there instead.
    TATTLER_ERR_LOGGER_IN_USE = 109,
    /// A failure of a kind this version of the header does not name.
    TATTLER_ERR_OTHER = 110,
}

use tattler_status::*;

/// Every status, for `tattler_status_str`.
const ALL: [tattler_status; 14] = [
    TATTLER_OK,
    TATTLER_TIMEOUT,
    TATTLER_CLOSED,
    TATTLER_ERR_NULL_ARG,
    TATTLER_ERR_INVALID_CONFIG,
    TATTLER_ERR_INVALID_UTF8,
    TATTLER_ERR_IO,
    TATTLER_ERR_PANIC,
    TATTLER_ERR_BUFFER_TOO_SMALL,
    TATTLER_ERR_INVALID_RESOURCE,
    TATTLER_ERR_TLS,
    TATTLER_ERR_INVALID_ARG,
    TATTLER_ERR_LOGGER_IN_USE,
    TATTLER_ERR_OTHER,
];

impl tattler_status {
    /// A short fixed description.
    pub fn text(self) -> &'static CStr {
        match self {
            TATTLER_OK => c"ok",
            TATTLER_TIMEOUT => c"timed out waiting for an entry",
            TATTLER_CLOSED => c"reader closed",
            TATTLER_ERR_NULL_ARG => c"a required pointer argument is NULL",
            TATTLER_ERR_INVALID_CONFIG => c"invalid configuration",
            TATTLER_ERR_INVALID_UTF8 => c"a string argument is not UTF-8",
            TATTLER_ERR_IO => c"I/O error",
            TATTLER_ERR_PANIC => c"internal panic (a bug in tattler)",
            TATTLER_ERR_BUFFER_TOO_SMALL => c"buffer too small",
            TATTLER_ERR_INVALID_RESOURCE => c"invalid resource",
            TATTLER_ERR_TLS => c"TLS setup failed",
            TATTLER_ERR_INVALID_ARG => c"an argument is out of range",
            TATTLER_ERR_LOGGER_IN_USE => c"another logger is installed",
            TATTLER_ERR_OTHER => c"error",
        }
    }

    /// The status with this number, if any.
    pub fn from_int(n: c_int) -> Option<tattler_status> {
        ALL.into_iter().find(|s| *s as c_int == n)
    }
}

/// The fixed text of a status, e.g. `"reader closed"`.
///
/// Parameters: `status`, a `tattler_status` value (any int is accepted).
///
/// Returns: a static NUL-terminated string; `"unknown status"` for a number
/// that is no status. Never NULL.
///
/// Ownership: the string is static; do not free it.
///
/// Thread safety: callable from any thread at any time.
#[no_mangle]
pub extern "C" fn tattler_status_str(status: c_int) -> *const c_char {
    let text =
        std::panic::catch_unwind(|| tattler_status::from_int(status).map(tattler_status::text))
            .ok()
            .flatten()
            .unwrap_or(c"unknown status");
    text.as_ptr()
}

/// The version of the tattler library, e.g. `"0.1.0"`.
///
/// Returns: a static NUL-terminated string. Never NULL.
///
/// Ownership: the string is static; do not free it.
///
/// Thread safety: callable from any thread at any time.
#[no_mangle]
pub extern "C" fn tattler_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"unknown",
        };
    VERSION.as_ptr()
}
