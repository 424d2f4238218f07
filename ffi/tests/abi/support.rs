//! What every file of these tests shares: the fake apiserver's configuration,
//! and the C calls wrapped as a C program makes them, each checking that
//! out-parameters are written exactly on success.

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr::null_mut;

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::{self, *};
use tattler::*;

/// Long enough for any entry the fake has to arrive; a hang fails instead.
pub(crate) const WAIT_MS: i64 = 10_000;

pub(crate) fn config(api: &FakeApi, resources: &[&str]) -> String {
    serde_json::json!({"server": api.url(), "resources": resources}).to_string()
}

/// Opens a reader the documented way: a configuration given the JSON
/// document (`tattler_config_set_json`), then `tattler_open_config`.
pub(crate) fn open(json: &str) -> Result<*mut tattler_reader, (tattler_status, String)> {
    open_from(json, &[])
}

/// `open` with a checkpoint's bytes (none: empty).
pub(crate) fn open_from(
    json: &str,
    checkpoint: &[u8],
) -> Result<*mut tattler_reader, (tattler_status, String)> {
    let json = CString::new(json).unwrap();
    let cfg = tattler_config_new();
    assert!(!cfg.is_null());
    let mut r = null_mut();
    let mut err = [0u8; 512];
    let mut needed = 0;
    // SAFETY: a live configuration, a valid string, bytes, out-pointers and buffer.
    let st = unsafe {
        match tattler_config_set_json(
            cfg,
            json.as_ptr(),
            err.as_mut_ptr().cast(),
            err.len(),
            &mut needed,
        ) {
            TATTLER_OK => tattler_open_config(
                cfg,
                checkpoint.as_ptr(),
                checkpoint.len(),
                &mut r,
                err.as_mut_ptr().cast(),
                err.len(),
                &mut needed,
            ),
            failed => failed,
        }
    };
    tattler_config_free(cfg);
    if st == TATTLER_OK {
        assert!(!r.is_null());
        assert_eq!(needed, 0, "*err_needed written on success");
        Ok(r)
    } else {
        assert!(r.is_null(), "*out written on failure");
        let msg = text(&err);
        assert!(needed > msg.len(), "*err_needed is the whole text's size");
        Err((st, msg))
    }
}

pub(crate) fn text(buf: &[u8]) -> String {
    CStr::from_bytes_until_nul(buf)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

/// A borrowed C string as a Rust one.
pub(crate) fn s(p: *const c_char) -> String {
    assert!(!p.is_null(), "a string getter returned NULL");
    // SAFETY: getters return NUL-terminated strings valid while the entry lives.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

pub(crate) fn next(
    r: *mut tattler_reader,
    timeout_ms: i64,
) -> (tattler_status, *mut tattler_entry) {
    let mut e = null_mut();
    // SAFETY: a live reader (or NULL, tested on purpose) and a valid out-pointer.
    let st = unsafe { tattler_next_entry(r, timeout_ms, &mut e) };
    assert_eq!(
        st == TATTLER_OK,
        !e.is_null(),
        "*out written exactly on OK ({st:?})"
    );
    (st, e)
}

/// `tattler_set_resources_ex` with an error buffer and size: the status, `*changed`
/// (starting as `initial`, so that an unwritten one shows) and the error text.
pub(crate) fn set_resources(
    r: *mut tattler_reader,
    json: *const c_char,
    force: bool,
    initial: bool,
) -> (tattler_status, bool, String) {
    let mut changed = initial;
    let mut err = [0xffu8; 512];
    let mut needed = 0;
    // SAFETY: a live reader (or NULL, on purpose), a string or NULL, a valid
    // out-pointer and buffer.
    let st = unsafe {
        tattler_set_resources_ex(
            r,
            json,
            force,
            &mut changed,
            err.as_mut_ptr().cast(),
            err.len(),
            &mut needed,
        )
    };
    let msg = if st as c_int >= 100 {
        let msg = text(&err);
        assert_eq!(needed, msg.len() + 1, "*err_needed on {st:?}");
        msg
    } else {
        assert!(err.iter().all(|&b| b == 0xff), "err_buf written on {st:?}");
        assert_eq!(needed, 0, "*err_needed written on {st:?}");
        String::new()
    };
    (st, changed, msg)
}

/// `Change namespace/name rv` or `Synced group/version/resource rv`, then frees the entry.
pub(crate) fn line(e: *mut tattler_entry) -> String {
    let change = tattler_entry_change(e);
    let rv = tattler_entry_resource_version(e);
    let l = match change {
        tattler_change::TATTLER_CHANGE_SYNCED => {
            format!(
                "Synced {}/{} {rv}",
                s(tattler_entry_version(e)),
                s(tattler_entry_resource(e))
            )
        }
        tattler_change::TATTLER_CHANGE_ERROR => format!(
            "Error {} {} {}",
            s(tattler_entry_resource(e)),
            tattler_entry_error_code(e),
            s(tattler_entry_error_reason(e))
        ),
        tattler_change::TATTLER_CHANGE_STALE => format!(
            "Stale {} {}",
            s(tattler_entry_resource(e)),
            s(tattler_entry_error_reason(e))
        ),
        c => {
            let names = ["None", "Add", "Update", "Delete", "Snapshot"];
            format!(
                "{} {}/{} {rv}",
                names[c as usize],
                s(tattler_entry_namespace(e)),
                s(tattler_entry_name(e))
            )
        }
    };
    tattler_entry_free(e);
    l
}

/// Reads entries up to and including the `n`th Synced.
pub(crate) fn until_synced(r: *mut tattler_reader, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut synced = 0;
    while synced < n {
        let (st, e) = next(r, WAIT_MS);
        assert_eq!(st, TATTLER_OK, "after {lines:?}");
        let l = line(e);
        synced += usize::from(l.starts_with("Synced"));
        lines.push(l);
    }
    lines
}

pub(crate) fn close(r: *mut tattler_reader) {
    assert_eq!(tattler_close(r), TATTLER_OK);
}

/// A pod scheduled to `node`.
pub(crate) fn pod_on(namespace: &str, name: &str, node: &str) -> serde_json::Value {
    let mut p = FakeApi::pod(namespace, name);
    p["spec"]["nodeName"] = serde_json::json!(node);
    p
}

/// The object of an entry, parsed; frees the entry.
pub(crate) fn object_of(e: *mut tattler_entry) -> serde_json::Value {
    // SAFETY: a live entry from tattler_next_entry, freed once here.
    unsafe {
        let mut len = 0;
        let p = tattler_entry_object(e, &mut len);
        assert!(!p.is_null(), "no object");
        let v = serde_json::from_slice(std::slice::from_raw_parts(p, len)).unwrap();
        tattler_entry_free(e);
        v
    }
}

/// Stops the reader and takes every entry left, as a consumer shutting down does.
pub(crate) fn stop_and_drain(r: *mut tattler_reader) -> Vec<String> {
    tattler_stop(r);
    let mut rest = Vec::new();
    loop {
        match next(r, WAIT_MS) {
            (TATTLER_OK, e) => rest.push(line(e)),
            (TATTLER_CLOSED, _) => return rest,
            (st, _) => panic!("{st:?} after {rest:?}"),
        }
    }
}

/// Entries until `n` Synced, then whatever else comes within 300 ms, each
/// with `(inferred)` on inferred deletes.
pub(crate) fn entries(r: *mut tattler_reader, n: usize) -> Vec<String> {
    let mut got = Vec::new();
    let mut synced = 0;
    loop {
        let (st, e) = next(r, if synced < n { WAIT_MS } else { 300 });
        if st == TATTLER_TIMEOUT && synced >= n {
            return got;
        }
        assert_eq!(st, TATTLER_OK, "after {got:?}");
        let inferred = tattler_entry_inferred(e);
        let l = line(e);
        synced += usize::from(l.starts_with("Synced"));
        got.push(if inferred {
            format!("{l} (inferred)")
        } else {
            l
        });
    }
}
