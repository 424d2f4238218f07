//! Every raw-pointer cast of the crate, and nothing else.
//!
//! Each function is `unsafe` and says what the C caller must have promised;
//! the extern functions check for NULL, then call these inside `unsafe` blocks
//! that point back here. Nothing outside this module turns a pointer into a
//! reference. Reader and entry handles never come here: they are not
//! followed but looked up (`handle.rs`), so no promise of the caller's
//! stands behind them.
//!
//! The bottom layer: it imports nothing of the crate. What a cast yields is
//! judged above it (`error::utf8` checks a string's UTF-8).

use std::ffi::{c_char, c_int, c_void, CStr};

/// A NUL-terminated C string, not yet checked for UTF-8.
///
/// # Safety
/// `s` is non-NULL and points to a NUL-terminated string that stays unchanged
/// during the call.
pub(crate) unsafe fn c_str<'a>(s: *const c_char) -> &'a CStr {
    // SAFETY: the caller's promise above.
    unsafe { CStr::from_ptr(s) }
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

/// The C log callback, never NULL (`tattler_log_fn` is the nullable one).
pub(crate) type LogFn = unsafe extern "C" fn(
    user: *mut c_void,
    level: c_int,
    target: *const c_char,
    msg: *const c_char,
);

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
