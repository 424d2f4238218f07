//! Every raw-pointer cast of the crate, and nothing else.
//!
//! Each function is `unsafe` and says what the C caller must have promised;
//! the extern functions check for NULL, then call these inside `unsafe` blocks
//! that point back here. Nothing outside this module turns a pointer into a
//! reference. Reader and entry handles never come here: they are not
//! followed but looked up (`handle.rs`), so no promise of the caller's
//! stands behind them.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::error::Failure;
use crate::logging::LogFn;
use crate::status::tattler_status::TATTLER_ERR_INVALID_UTF8;

/// The UTF-8 text of a NUL-terminated C string.
///
/// # Safety
/// `s` is non-NULL and points to a NUL-terminated string that stays unchanged
/// during the call.
pub(crate) unsafe fn str_arg<'a>(s: *const c_char, what: &str) -> Result<&'a str, Failure> {
    // SAFETY: the caller's promise above.
    let bytes = unsafe { CStr::from_ptr(s) };
    bytes.to_str().map_err(|e| {
        Failure::new(
            TATTLER_ERR_INVALID_UTF8,
            format!("{what} is not UTF-8: {e}"),
        )
    })
}

/// The caller's output buffer; empty when `buf` is NULL or `len` is 0.
///
/// # Safety
/// `buf` is NULL or points to `len` writable bytes that nothing else touches
/// during the call.
pub(crate) unsafe fn buf_arg<'a>(buf: *mut c_char, len: usize) -> &'a mut [u8] {
    if buf.is_null() || len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's promise above; `c_char` and `u8` have one layout.
    unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
}

/// The caller's input bytes; empty when `len` is 0 (`bytes` may then be NULL).
///
/// # Safety
/// `bytes` is non-NULL with `len` readable bytes that stay unchanged during
/// the call, or `len` is 0.
pub(crate) unsafe fn bytes_arg<'a>(bytes: *const u8, len: usize) -> &'a [u8] {
    if bytes.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's promise above.
    unsafe { std::slice::from_raw_parts(bytes, len) }
}

/// Writes an out-parameter.
///
/// # Safety
/// `out` is non-NULL, aligned and writable.
pub(crate) unsafe fn write<T: Copy>(out: *mut T, value: T) {
    // SAFETY: the caller's promise above; `T: Copy` has no destructor to skip.
    unsafe { out.write(value) }
}

/// The log callback's `user` pointer: tattler never dereferences it, it only
/// passes it back, from whichever thread logs.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the pointer is opaque to tattler; `tattler_set_log_callback`
// documents that the callback (and so its `user`) is called from any thread.
unsafe impl Send for UserData {}
// SAFETY: as for Send; tattler never reads or writes through it.
unsafe impl Sync for UserData {}

/// Calls the C log callback.
///
/// # Safety
/// `cb` and `user` are what the caller installed with
/// `tattler_set_log_callback`, which has not been replaced since.
pub(crate) unsafe fn call_log(cb: LogFn, user: UserData, level: c_int, target: &CStr, msg: &CStr) {
    // SAFETY: the caller's promise above; the strings outlive the call.
    unsafe { cb(user.0, level, target.as_ptr(), msg.as_ptr()) }
}
