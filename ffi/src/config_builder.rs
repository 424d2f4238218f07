//! `tattler_config`: a configuration built call by call, so that no C
//! caller writes JSON. It builds the document `tattler_open` reads (the same
//! keys, checked by the same code, with the same messages) and opens through
//! the same path.

use std::ffi::{c_char, CString};

use kube_tattler::{Config, ResourceSpec};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::cast;
use crate::error::{guard, guard_value, report, Failure};
use crate::handle::Registry;
use crate::reader::{self, tattler_reader};
use crate::status::tattler_status::{self, *};

/// A configuration being built. Opaque; made by `tattler_config_new`, freed
/// by `tattler_config_free`, used by `tattler_open_config` (any number of
/// times).
///
/// The pointer is a handle, checked on every call: a freed or foreign
/// pointer gets `TATTLER_ERR_INVALID_HANDLE` and is not followed.
#[derive(Default)]
pub struct tattler_config {
    /// Never read: the address is the handle (see `handle.rs`).
    _shell: u8,
}

/// What a `tattler_config` holds: the keys set, and the resources added in
/// order.
#[derive(Default)]
struct Doc {
    keys: Map<String, Value>,
    resources: Vec<Value>,
}

impl Doc {
    fn to_json(&self) -> String {
        let mut doc = self.keys.clone();
        if !self.resources.is_empty() {
            doc.insert("resources".into(), Value::Array(self.resources.clone()));
        }
        Value::Object(doc).to_string()
    }
}

/// Every configuration made and not yet freed. The lock is held for whole
/// calls: none blocks or logs while holding it.
static CONFIGS: Mutex<Registry<tattler_config, Doc>> = Mutex::new(Registry::new(64));

fn not_live() -> Failure {
    Failure::new(
        TATTLER_ERR_INVALID_HANDLE,
        "cfg is not a live configuration (freed already, or not from tattler_config_new)",
    )
}

/// Runs `body` on the configuration behind `cfg`, reporting a failure into
/// the caller's buffer.
///
/// # Safety
/// `err_buf` is NULL or has `err_len` writable bytes; `err_needed` is NULL
/// or writable.
unsafe fn with_config(
    cfg: *mut tattler_config,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
    body: impl FnOnce(&mut Doc) -> Result<(), Failure>,
) -> tattler_status {
    // SAFETY: NULL or `err_len` writable bytes, by the caller's promise.
    let buf = unsafe { cast::buf_arg(err_buf, err_len) };
    let result = guard(|| {
        if cfg.is_null() {
            return Err(Failure::null("cfg"));
        }
        let mut configs = CONFIGS.lock();
        let doc = configs.get_mut(cfg).ok_or_else(not_live)?;
        body(doc)
    });
    match result {
        Ok(()) => TATTLER_OK,
        // SAFETY: NULL or writable, by the caller's promise.
        Err(f) => unsafe { report(&f, buf, err_needed) },
    }
}

/// A NUL-terminated argument, required.
///
/// # Safety
/// `s` is NULL or NUL-terminated.
unsafe fn required<'a>(s: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if s.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-NULL and NUL-terminated, by the caller's promise.
    unsafe { cast::str_arg(s, what) }
}

/// A NUL-terminated argument that may be NULL (left out).
///
/// # Safety
/// `s` is NULL or NUL-terminated.
unsafe fn optional<'a>(s: *const c_char, what: &str) -> Result<Option<&'a str>, Failure> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated, by the caller's promise.
    unsafe { cast::str_arg(s, what) }.map(Some)
}

/// Sets `key` to `value` after the JSON reader's own check of that key.
fn set_key(doc: &mut Doc, key: &str, value: Value) -> Result<(), Failure> {
    match key {
        "resources" => {
            return Err(Failure::new(
                TATTLER_ERR_INVALID_CONFIG,
                "`resources` is built with tattler_config_add_resource and tattler_config_add_resource_spec",
            ))
        }
        "exec" => {
            return Err(Failure::new(
                TATTLER_ERR_INVALID_CONFIG,
                "`exec` (an object) has no setter: use a kubeconfig, or tattler_open with JSON",
            ))
        }
        _ => {}
    }
    let mut one = Map::new();
    one.insert(key.to_string(), value.clone());
    Config::check_json_keys(&Value::Object(one).to_string())?;
    doc.keys.insert(key.to_string(), value);
    Ok(())
}

/// Adds a resource after checking it as the JSON reader checks a
/// `resources` item.
fn add_resource(doc: &mut Doc, item: Value) -> Result<(), Failure> {
    let list = Value::Array(vec![item.clone()]).to_string();
    ResourceSpec::list_from_json(&list, None, None, None, false)
        .map_err(|e| Failure::new(TATTLER_ERR_INVALID_RESOURCE, e.to_string()))?;
    doc.resources.push(item);
    Ok(())
}

/// Makes an empty configuration: set its keys and add its resources, then
/// open it with `tattler_open_config`.
///
/// Returns: the new configuration; NULL only if tattler failed internally
/// (a caught panic, logged).
///
/// Ownership: the caller owns it and must free it with
/// `tattler_config_free`; a reader opened from it does not need it.
///
/// Thread safety: any thread. Calls on one configuration take turns (a
/// lock); calls on different ones are independent.
#[no_mangle]
pub extern "C" fn tattler_config_new() -> *mut tattler_config {
    guard_value(std::ptr::null_mut(), || {
        CONFIGS.lock().insert(Doc::default())
    })
}

/// Frees a configuration. Readers opened from it run on.
///
/// Parameters: `cfg`, or NULL (then nothing happens). A configuration freed
/// already, or a pointer not from `tattler_config_new`, is not followed:
/// nothing happens but a logged warning.
///
/// Ownership: `cfg` is invalid afterwards. The values set in it (a token,
/// a password) are dropped with it.
///
/// Thread safety: any thread, once no other call on `cfg` runs.
#[no_mangle]
pub extern "C" fn tattler_config_free(cfg: *mut tattler_config) {
    if cfg.is_null() {
        return;
    }
    let freed = guard_value(None, || CONFIGS.lock().remove(cfg).map(drop));
    if freed.is_none() {
        log::warn!("tattler_config_free: not a live configuration (freed already?); ignored");
    }
}

/// Sets a string key of the configuration, as the JSON form's
/// `"key":"value"`: `server`, `ca_file`, `ca_data`, `token`, `token_file`,
/// `namespace`, `label_selector`, `field_selector`, `kubeconfig`, `context`,
/// `tls_server_name`, `proxy`, `client_cert_file`, `client_key_file`,
/// `username`, `password`. Setting a key again replaces its value.
///
/// Parameters:
/// - `cfg`: the configuration.
/// - `key`, `value`: NUL-terminated UTF-8.
/// - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
///   and 0. The text is NUL-terminated and cut to fit.
/// - `err_needed`: NULL, or where to store, on failure, the size of the
///   whole error text with its NUL.
///
/// Returns: `TATTLER_OK`; or `TATTLER_ERR_INVALID_CONFIG` for an unknown
/// key or one that does not take a string (the text is what `tattler_open`
/// would say: "unknown key `tokn` (known: ...)"), or for `resources` and
/// `exec`, which have their own calls or none;
/// `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE`. A refused key changes nothing.
///
/// Ownership: `key` and `value` are copied; they are only read during the
/// call. Files named are read by `tattler_open_config`, not here.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `key` and `value` are NULL or NUL-terminated; `err_buf` is NULL or has
/// `err_len` writable bytes; `err_needed` is NULL or writable (`cfg` may be
/// any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_string(
    cfg: *mut tattler_config,
    key: *const c_char,
    value: *const c_char,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            let key = required(key, "key")?;
            let value = required(value, "value")?;
            set_key(doc, key, Value::String(value.to_string()))
        })
    }
}

/// Sets an integer key, as the JSON form's `"key":123`:
/// `channel_capacity`, `idle_timeout_secs`, `connect_timeout_secs`,
/// `page_size`, `max_frame_bytes`, `initial_events_timeout_secs`,
/// `discovery_interval_secs`, `max_buffered_bytes`,
/// `relist_interval_secs`.
///
/// Parameters, Returns, Ownership, Thread safety: as
/// `tattler_config_set_string` (a negative value is refused as the JSON
/// reader refuses it).
///
/// # Safety
/// As `tattler_config_set_string`.
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_int(
    cfg: *mut tattler_config,
    key: *const c_char,
    value: i64,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            let key = required(key, "key")?;
            set_key(doc, key, Value::from(value))
        })
    }
}

/// Sets a boolean key, as the JSON form's `"key":true`: `insecure`, `gzip`,
/// `in_cluster`, `scrub`, `scrub_secret_data`, `metadata_only`,
/// `drop_managed_fields`.
///
/// Parameters, Returns, Ownership, Thread safety: as
/// `tattler_config_set_string`.
///
/// # Safety
/// As `tattler_config_set_string`.
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_bool(
    cfg: *mut tattler_config,
    key: *const c_char,
    value: bool,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            let key = required(key, "key")?;
            set_key(doc, key, Value::Bool(value))
        })
    }
}

/// Adds a resource by name, as an item `"pods"` of the JSON form's
/// `resources`: `pods`, `nodes`, `rbac`, `v1/pods`, `apps/v1/deployments`,
/// `example.com/v1/widgets`, ... It takes the configuration's
/// `namespace`, `label_selector`, `field_selector` and `metadata_only`.
/// Resources stream in the order added.
///
/// Parameters: `cfg`; `name`, NUL-terminated UTF-8; `err_buf`, `err_len`,
/// `err_needed` as for `tattler_config_set_string`.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_RESOURCE` for a name that
/// cannot be one (the text says why); `TATTLER_ERR_NULL_ARG`,
/// `TATTLER_ERR_INVALID_UTF8`, `TATTLER_ERR_INVALID_HANDLE`.
///
/// Ownership: `name` is copied.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `err_buf` is NULL or has `err_len`
/// writable bytes; `err_needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tattler_config_add_resource(
    cfg: *mut tattler_config,
    name: *const c_char,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            let name = required(name, "name")?;
            add_resource(doc, Value::String(name.to_string()))
        })
    }
}

/// Adds a resource with a scope of its own, as an object
/// `{"resource":"pods","namespace":"a","label_selector":"app=web","field_selector":"spec.nodeName=n1","metadata_only":true}`
/// of the JSON form's `resources`: it takes only these, not the
/// configuration's.
///
/// Parameters:
/// - `cfg`: the configuration.
/// - `resource`: the name, as for `tattler_config_add_resource`.
/// - `namespace`, `label_selector`, `field_selector`: NULL to leave out
///   (all namespaces, no selector).
/// - `metadata_only`: the objects as `PartialObjectMetadata` (only their
///   `metadata`).
/// - `err_buf`, `err_len`, `err_needed`: as for `tattler_config_set_string`.
///
/// Returns: as `tattler_config_add_resource`.
///
/// Ownership: the strings are copied.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// The strings are NULL or NUL-terminated; `err_buf` is NULL or has
/// `err_len` writable bytes; `err_needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tattler_config_add_resource_spec(
    cfg: *mut tattler_config,
    resource: *const c_char,
    namespace: *const c_char,
    label_selector: *const c_char,
    field_selector: *const c_char,
    metadata_only: bool,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            let mut item = Map::new();
            item.insert(
                "resource".into(),
                required(resource, "resource")?.to_string().into(),
            );
            for (key, v) in [
                ("namespace", namespace),
                ("label_selector", label_selector),
                ("field_selector", field_selector),
            ] {
                if let Some(v) = optional(v, key)? {
                    item.insert(key.into(), v.to_string().into());
                }
            }
            if metadata_only {
                item.insert("metadata_only".into(), true.into());
            }
            add_resource(doc, Value::Object(item))
        })
    }
}

/// Opens a reader from a configuration built with the calls above:
/// `tattler_open_ex` on the JSON document they built.
///
/// Parameters:
/// - `cfg`: the configuration; it stays the caller's and may be changed,
///   opened again or freed afterwards.
/// - `checkpoint`, `checkpoint_len`: as `tattler_open_resume`; NULL and 0
///   for none.
/// - `out`: where to store the new reader.
/// - `err_buf`, `err_len`, `err_needed`: as `tattler_open_ex`.
///
/// Returns: what `tattler_open_ex` returns (`TATTLER_ERR_INVALID_CONFIG`
/// for no resources, say), and `TATTLER_ERR_INVALID_HANDLE` when `cfg` is
/// not a live configuration. `*out` is written only on success.
///
/// Ownership: the caller owns `*out` and must free it with `tattler_close`.
///
/// Thread safety: as `tattler_open`.
///
/// # Safety
/// `checkpoint` is NULL or has `checkpoint_len` readable bytes; `out` is
/// NULL or writable; `err_buf` is NULL or has `err_len` writable bytes;
/// `err_needed` is NULL or writable (`cfg` may be any pointer: it is
/// checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_open_config(
    cfg: *mut tattler_config,
    checkpoint: *const u8,
    checkpoint_len: usize,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    let mut json = None;
    // SAFETY: the caller's promises, passed on.
    let st = unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            // JSON escapes NUL, so this cannot fail.
            json = CString::new(doc.to_json()).ok();
            Ok(())
        })
    };
    let Some(json) = json.filter(|_| st == TATTLER_OK) else {
        return st;
    };
    // SAFETY: a NUL-terminated string of ours; the rest is the caller's
    // promise, passed on. The lock is not held: opening reads files.
    unsafe {
        reader::open(
            json.as_ptr(),
            Some((checkpoint, checkpoint_len)),
            out,
            err_buf,
            err_len,
            err_needed,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_as_the_json_reader_checks_them() {
        let mut doc = Doc::default();
        set_key(&mut doc, "server", "https://10.0.0.1:6443".into()).unwrap();
        set_key(&mut doc, "channel_capacity", 8.into()).unwrap();
        set_key(&mut doc, "insecure", true.into()).unwrap();
        let json_err = Config::from_json(r#"{"tokn":"x"}"#)
            .unwrap_err()
            .to_string();
        let e = set_key(&mut doc, "tokn", "x".into()).unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (TATTLER_ERR_INVALID_CONFIG, json_err.as_str())
        );
        assert!(e.message.len() > 500, "{}", e.message);
        let e = set_key(&mut doc, "insecure", "yes".into()).unwrap_err();
        assert!(e.message.contains("`insecure`"), "{}", e.message);
        let e = set_key(&mut doc, "channel_capacity", (-1).into()).unwrap_err();
        assert!(e.message.contains("`channel_capacity`"), "{}", e.message);
        for key in ["resources", "exec"] {
            let e = set_key(&mut doc, key, "x".into()).unwrap_err();
            assert_eq!(e.status, TATTLER_ERR_INVALID_CONFIG);
        }
        add_resource(&mut doc, "pods".into()).unwrap();
        let e = add_resource(&mut doc, "pods!".into()).unwrap_err();
        assert_eq!(e.status, TATTLER_ERR_INVALID_RESOURCE);
        add_resource(
            &mut doc,
            serde_json::json!({"resource":"nodes","field_selector":"metadata.name=n1"}),
        )
        .unwrap();
        assert_eq!(
            doc.to_json(),
            r#"{"server":"https://10.0.0.1:6443","channel_capacity":8,"insecure":true,"resources":["pods",{"resource":"nodes","field_selector":"metadata.name=n1"}]}"#
        );
        Config::from_json(&doc.to_json()).unwrap();
    }
}
