//! The legacy calls: each is one line over the documented one, kept because
//! C programs link them. `tattler_open`, `tattler_open_resume` and
//! `tattler_open_ex` are `tattler_config_set_json` on a new configuration,
//! then `tattler_open_config`; `tattler_set_resources` is
//! `tattler_set_resources_ex` without `err_needed`. New code calls those.
//! With `TATTLER_WARN_LEGACY` defined, the compiler points at every use.

use std::ffi::c_char;
use std::ptr::{null, null_mut};

use crate::config_builder::open_json;
use crate::reader::{tattler_reader, tattler_set_resources_ex};
use crate::status::tattler_status;

/// Legacy: opens a reader from a JSON configuration. The same as
/// `tattler_config_new`, `tattler_config_set_json(cfg, config_json, ...)`,
/// `tattler_open_config(cfg, NULL, 0, out, ...)`, `tattler_config_free`,
/// with the failures of those calls (`config_json` NULL is
/// `TATTLER_ERR_NULL_ARG`).
///
/// Ownership: the caller owns `*out` and must free it with `tattler_close`.
///
/// Thread safety: as `tattler_open_config`.
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `out` is NULL or
/// writable; `err_buf` is NULL or has `err_len` writable bytes.
#[deprecated(note = "use tattler_config_set_json and tattler_open_config")]
#[no_mangle]
pub unsafe extern "C" fn tattler_open(
    config_json: *const c_char,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe { open_json(config_json, null(), 0, out, err_buf, err_len, null_mut()) }
}

/// Legacy: `tattler_open` that resumes from a checkpoint. The same as
/// `tattler_config_set_json` on a new configuration, then
/// `tattler_open_config(cfg, checkpoint, checkpoint_len, out, ...)`.
///
/// Ownership: the caller owns `*out` and must free it with `tattler_close`.
///
/// Thread safety: as `tattler_open_config`.
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `checkpoint` is NULL
/// or has `checkpoint_len` readable bytes; `out` is NULL or writable;
/// `err_buf` is NULL or has `err_len` writable bytes.
#[deprecated(note = "use tattler_config_set_json and tattler_open_config")]
#[no_mangle]
pub unsafe extern "C" fn tattler_open_resume(
    config_json: *const c_char,
    checkpoint: *const u8,
    checkpoint_len: usize,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        open_json(
            config_json,
            checkpoint,
            checkpoint_len,
            out,
            err_buf,
            err_len,
            null_mut(),
        )
    }
}

/// Legacy: `tattler_open_resume` with `err_needed`. The same as
/// `tattler_config_set_json` on a new configuration, then
/// `tattler_open_config(cfg, checkpoint, checkpoint_len, out, err_buf,
/// err_len, err_needed)`.
///
/// Ownership: the caller owns `*out` and must free it with `tattler_close`.
///
/// Thread safety: as `tattler_open_config`.
///
/// # Safety
/// As `tattler_open_resume`; `err_needed` is NULL or writable.
#[deprecated(note = "use tattler_config_set_json and tattler_open_config")]
#[no_mangle]
pub unsafe extern "C" fn tattler_open_ex(
    config_json: *const c_char,
    checkpoint: *const u8,
    checkpoint_len: usize,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        open_json(
            config_json,
            checkpoint,
            checkpoint_len,
            out,
            err_buf,
            err_len,
            err_needed,
        )
    }
}

/// Legacy: `tattler_set_resources_ex(r, resources_json, force, changed,
/// err_buf, err_len, NULL)`, with its statuses.
///
/// Ownership: `resources_json` is only read during the call.
///
/// Thread safety: as `tattler_set_resources_ex`.
///
/// # Safety
/// `resources_json` is NULL or NUL-terminated; `changed` is NULL or writable;
/// `err_buf` is NULL or has `err_len` writable bytes (`r` may be any
/// pointer: it is checked).
#[deprecated(note = "use tattler_set_resources_ex")]
#[no_mangle]
pub unsafe extern "C" fn tattler_set_resources(
    r: *mut tattler_reader,
    resources_json: *const c_char,
    force: bool,
    changed: *mut bool,
    err_buf: *mut c_char,
    err_len: usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        tattler_set_resources_ex(
            r,
            resources_json,
            force,
            changed,
            err_buf,
            err_len,
            null_mut(),
        )
    }
}
