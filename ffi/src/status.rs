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
    /// JSON array of names and objects (an object's key unknown or of the
    /// wrong type).
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
    /// The call was made from inside the log callback, where it cannot work:
    /// it would wait for the very thread that is logging (see
    /// `tattler_set_log_callback` for what the callback may call). Nothing
    /// was done; make the call after the callback returned.
    TATTLER_ERR_REENTRANT = 111,
    /// `tattler_open_resume`: the checkpoint is not one this library can
    /// read (not a checkpoint, another format version, cut short, out of
    /// bounds); the error text says where. Nothing was opened: open without
    /// it (a full sync) and drop the stored one.
    TATTLER_ERR_INVALID_CHECKPOINT = 112,
    /// The reader or entry pointer is not a live one: closed or freed
    /// already, or never handed out by tattler (another object's pointer,
    /// garbage). Nothing was done and the pointer was not followed: every
    /// call checks its handle against the library's registry first. A bug
    /// in the caller; the handle stays invalid.
    TATTLER_ERR_INVALID_HANDLE = 113,
}

use tattler_status::*;

/// Every status, for `tattler_status_str`.
const ALL: [tattler_status; 17] = [
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
    TATTLER_ERR_REENTRANT,
    TATTLER_ERR_INVALID_CHECKPOINT,
    TATTLER_ERR_INVALID_HANDLE,
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
            TATTLER_ERR_REENTRANT => c"not allowed from inside the log callback",
            TATTLER_ERR_INVALID_CHECKPOINT => c"invalid checkpoint",
            TATTLER_ERR_INVALID_HANDLE => c"not a live reader or entry (closed, freed or foreign)",
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

/// The major version of this header (tattler's, from Cargo.toml).
/// `tattler_version()` is the library's at run time.
pub const TATTLER_VERSION_MAJOR: u32 = 0;
/// The minor version of this header.
pub const TATTLER_VERSION_MINOR: u32 = 1;
/// The patch version of this header.
pub const TATTLER_VERSION_PATCH: u32 = 0;
/// The version of this header as one number, MAJOR * 10000 + MINOR * 100 +
/// PATCH (0.1.0 is 100), for `#if TATTLER_VERSION_NUMBER >= ...`.
pub const TATTLER_VERSION_NUMBER: u32 =
    TATTLER_VERSION_MAJOR * 10000 + TATTLER_VERSION_MINOR * 100 + TATTLER_VERSION_PATCH;

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

/// The version of the tattler library as one number, MAJOR * 10000 +
/// MINOR * 100 + PATCH (0.1.0 is 100): the run-time counterpart of the
/// header's `TATTLER_VERSION_NUMBER`, to check at start-up that the library
/// loaded is at least the one compiled against
/// (`tattler_version_number() >= TATTLER_VERSION_NUMBER`).
///
/// Returns: the number.
///
/// Thread safety: callable from any thread at any time.
#[no_mangle]
pub extern "C" fn tattler_version_number() -> u32 {
    const fn parse(s: &str) -> u32 {
        let b = s.as_bytes();
        let mut n = 0u32;
        let mut i = 0;
        while i < b.len() {
            n = n * 10 + (b[i] - b'0') as u32;
            i += 1;
        }
        n
    }
    const NUMBER: u32 = parse(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + parse(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + parse(env!("CARGO_PKG_VERSION_PATCH"));
    NUMBER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_macros_match_cargo_toml() {
        let n = |v: &str| v.parse::<u32>().unwrap();
        assert_eq!(
            (
                TATTLER_VERSION_MAJOR,
                TATTLER_VERSION_MINOR,
                TATTLER_VERSION_PATCH
            ),
            (
                n(env!("CARGO_PKG_VERSION_MAJOR")),
                n(env!("CARGO_PKG_VERSION_MINOR")),
                n(env!("CARGO_PKG_VERSION_PATCH"))
            ),
            "update the TATTLER_VERSION_* constants with Cargo.toml's version"
        );
        assert_eq!(
            TATTLER_VERSION_NUMBER,
            TATTLER_VERSION_MAJOR * 10000 + TATTLER_VERSION_MINOR * 100 + TATTLER_VERSION_PATCH
        );
        assert_eq!(tattler_version_number(), TATTLER_VERSION_NUMBER);
    }
}
