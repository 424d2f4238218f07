//! Failures: a status plus its text, the panic guard every extern function
//! runs its body in, and copying text into a caller's buffer.

use std::any::Any;
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::tattler_status::{self, *};

/// A failed call: what to return, and the text the caller can fetch.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: tattler_status,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: tattler_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Failure {
        Failure::new(TATTLER_ERR_NULL_ARG, format!("{what} is NULL"))
    }
}

impl From<kube_tattler::Error> for Failure {
    fn from(e: kube_tattler::Error) -> Failure {
        use kube_tattler::Error;
        if let Error::Checkpoint(m) = &e {
            // The status says "invalid checkpoint" already.
            return Failure::new(TATTLER_ERR_INVALID_CHECKPOINT, format!("checkpoint: {m}"));
        }
        let status = match &e {
            Error::Config(_) => TATTLER_ERR_INVALID_CONFIG,
            Error::ReadFile { .. } | Error::Spawn(_) => TATTLER_ERR_IO,
            Error::Resource(_) => TATTLER_ERR_INVALID_RESOURCE,
            Error::Tls(_) => TATTLER_ERR_TLS,
            Error::Reentrant(_) => TATTLER_ERR_REENTRANT,
            _ => TATTLER_ERR_OTHER,
        };
        // tattler's message says what failed and leaves why to its source
        // (an I/O error): C gets one text, so both go in it.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Failure::new(status, message)
    }
}

/// The UTF-8 text of a C string argument; `what` names it in the failure.
pub(crate) fn utf8<'a>(s: &'a CStr, what: &str) -> Result<&'a str, Failure> {
    s.to_str().map_err(|e| {
        Failure::new(
            TATTLER_ERR_INVALID_UTF8,
            format!("{what} is not UTF-8: {e}"),
        )
    })
}

/// Runs `body`, turning a panic into `TATTLER_ERR_PANIC` so that it never
/// unwinds into C.
pub(crate) fn guard<T>(body: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(panic) => {
            let message = format!("panic: {}", panic_text(&*panic));
            // Calls without an error buffer report only the status: the text
            // goes to the log.
            log::error!("caught at the C boundary: {message}");
            Err(Failure::new(TATTLER_ERR_PANIC, message))
        }
    }
}

/// Runs a getter that has no way to report a failure: a panic gives `default`.
pub(crate) fn guard_value<T>(default: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(default)
}

fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Copies `text` into `buf` NUL-terminated, cut at a UTF-8 character boundary
/// to fit. An empty `buf` receives nothing.
pub(crate) fn copy_truncated(text: &str, buf: &mut [u8]) {
    let Some(room) = buf.len().checked_sub(1) else {
        return;
    };
    let mut n = text.len().min(room);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&text.as_bytes()[..n]);
    buf[n] = 0;
}

/// Reports a failure to a caller with an error buffer: the text into
/// `buf` (cut to fit), and into `*needed`, when `needed` is not NULL, the
/// size the whole text takes with its NUL, so that the caller can learn it
/// was cut and how large a buffer it needs. Returns the failure's status.
///
/// # Safety
/// `needed` is NULL or writable.
pub(crate) unsafe fn report(f: &Failure, buf: &mut [u8], needed: *mut usize) -> tattler_status {
    copy_truncated(&f.message, buf);
    if !needed.is_null() {
        // SAFETY: non-NULL and writable, by the caller's promise.
        unsafe { crate::cast::write(needed, f.message.len() + 1) };
    }
    f.status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_utf8_whole_and_terminates() {
        let mut buf = [0xffu8; 6];
        copy_truncated("héllo wörld", &mut buf);
        assert_eq!(&buf, b"h\xc3\xa9ll\0");
        let mut buf = [0xffu8; 3];
        copy_truncated("hé", &mut buf);
        assert_eq!(&buf, b"h\0\xff");
        let mut buf = [0xffu8; 8];
        copy_truncated("ok", &mut buf);
        assert_eq!(&buf[..3], b"ok\0");
        copy_truncated("x", &mut []);
    }

    #[test]
    fn panics_become_a_status() {
        let r: Result<(), Failure> = guard(|| panic!("boom {}", 1));
        let f = r.unwrap_err();
        assert_eq!(
            (f.status, f.message.as_str()),
            (TATTLER_ERR_PANIC, "panic: boom 1")
        );
        assert_eq!(guard_value(7, || panic!("x")), 7);
    }

    #[test]
    fn the_text_carries_the_why_tattler_leaves_to_the_source() {
        let e = kube_tattler::Access::new("https://h")
            .ca_file("/nonexistent/ca-4b1d.crt")
            .unwrap_err();
        let f = Failure::from(e);
        assert_eq!(f.status, TATTLER_ERR_IO);
        assert!(
            f.message
                .starts_with("cannot read /nonexistent/ca-4b1d.crt: ")
                && f.message.len() > "cannot read /nonexistent/ca-4b1d.crt: ".len(),
            "{}",
            f.message
        );
    }
}
