//! `tattler_config`: the way into the C API. A configuration is built call
//! by call (the typed setters of `config_options.rs`, or the string setters
//! bindings use), or from a JSON document, then opened by
//! `tattler_open_config`, the one call that makes a reader. Each key is
//! checked when it is set, by the JSON reader's own code; an unknown one
//! gets the known key it most likely meant.

use std::ffi::c_char;

use kube_tattler::{Config, ResourceSpec};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::cast;
use crate::config_keys::{self, Kind};
use crate::error::{guard, guard_value, report, utf8, Failure};
use crate::handle::Registry;
use crate::reader::{self, tattler_reader};
use crate::status::tattler_status::{self, *};

/// A configuration being built. Opaque; made by `tattler_config_new`, freed
/// by `tattler_config_free`, opened by `tattler_open_config` (any number of
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
pub(crate) struct Doc {
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

/// The document behind `cfg`, if it is a live configuration.
pub(crate) fn document(cfg: *const tattler_config) -> Option<String> {
    CONFIGS.lock().get(cfg).map(Doc::to_json)
}

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
pub(crate) unsafe fn with_config(
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
pub(crate) unsafe fn required<'a>(s: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if s.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-NULL and NUL-terminated, by the caller's promise.
    utf8(unsafe { cast::c_str(s) }, what)
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
    utf8(unsafe { cast::c_str(s) }, what).map(Some)
}

/// Sets `key` to `value` after the JSON reader's own check of that key (an
/// unknown key gets the one it most likely meant).
pub(crate) fn set_key(doc: &mut Doc, key: &str, value: Value) -> Result<(), Failure> {
    let refuse = |why: &str| Err(Failure::new(TATTLER_ERR_INVALID_CONFIG, why));
    match config_keys::find(key)?.kind {
        Kind::Resources => {
            return refuse(
                "`resources` is built with tattler_config_add_resource and tattler_config_add_resource_spec",
            )
        }
        Kind::Exec => {
            return refuse(
                "`exec` (an object) has no setter: use a kubeconfig, or tattler_config_set_json",
            )
        }
        Kind::TextList => {
            return refuse("`event_kinds` is built with tattler_config_add_event_kind")
        }
        Kind::Shard => {
            return refuse(
                "`shard` (an object, {\"count\": N, \"index\": i}) has no setter: use tattler_config_set_json",
            )
        }
        Kind::Object => {
            return refuse(&format!(
                "`{key}` (an object) has no setter: use tattler_config_set_json"
            ))
        }
        Kind::Text | Kind::Integer | Kind::Boolean => {}
    }
    let mut one = Map::new();
    one.insert(key.to_string(), value.clone());
    Config::check_json_keys(&Value::Object(one).to_string())?;
    doc.keys.insert(key.to_string(), value);
    Ok(())
}

/// Merges a JSON document into `doc`: its keys replace those set before,
/// its `resources` and `event_kinds` are added after those added before.
/// Checked as `tattler_open` checked a whole document, before anything is
/// merged: the same failures with the same texts (an unknown key gets the
/// one it most likely meant), resources included; what needs the network or
/// the files (a server, a token file) is checked at the open.
pub(crate) fn set_json(doc: &mut Doc, json: &str) -> Result<(), Failure> {
    let map = match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => map,
        // Not JSON, or not an object: the JSON reader says so in its words.
        _ => {
            Config::check_json_keys(json)?;
            return Err(Failure::new(
                TATTLER_ERR_INVALID_CONFIG,
                "invalid configuration: JSON: the configuration must be an object",
            ));
        }
    };
    for key in map.keys() {
        config_keys::find(key)?;
    }
    Config::check_json_keys(json)?;
    if let Some(list) = map.get("resources") {
        ResourceSpec::list_from_json(&list.to_string(), None, None, None, false)?;
    }
    for (key, value) in map {
        match (key.as_str(), value) {
            ("resources", Value::Array(items)) => doc.resources.extend(items),
            ("event_kinds", Value::Array(kinds)) => match doc.keys.get_mut("event_kinds") {
                Some(Value::Array(old)) => old.extend(kinds),
                _ => {
                    doc.keys.insert(key, Value::Array(kinds));
                }
            },
            (_, value) => {
                doc.keys.insert(key, value);
            }
        }
    }
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

/// Sets a string key by its name, as the JSON form's `"key":"value"`: for
/// bindings that have the key as a string. C and C++ code has a typed
/// setter per key instead (`tattler_config_set_server`, ...), which the
/// compiler checks. Setting a key again replaces its value.
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
/// key, with the known key it most likely meant ("unknown key `sever`
/// (did you mean `server`?)"), for a key that does not take a string (the
/// JSON reader's text), or for `resources`, `exec` and `event_kinds`, which
/// have their own calls; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
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

/// Sets an integer key by its name, as the JSON form's `"key":123`, for
/// bindings (C has `tattler_config_set_channel_capacity`, ...).
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

/// Sets a boolean key by its name, as the JSON form's `"key":true`, for
/// bindings (C has `tattler_config_set_insecure`, ...).
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

/// Sets every key of a JSON document, the configuration `tattler_open` used
/// to take, e.g.
/// `{"server":"https://10.0.0.1:6443","ca_file":"/etc/k8s/ca.crt","token_file":"/var/run/token","resources":["pods","apps/v1/deployments"]}`:
/// its keys replace those set before, its `resources` and `event_kinds`
/// are added after those added before. For bindings that hold a document
/// (the Go `Config`, a file), and for the keys without a setter (`exec`, `shard`).
/// `tattler_config_keys()` lists the keys; `resources` takes names and
/// objects as `tattler_set_resources_ex` does.
///
/// Parameters:
/// - `cfg`: the configuration.
/// - `json`: NUL-terminated UTF-8, a JSON object.
/// - `err_buf`, `err_len`, `err_needed`: as for `tattler_config_set_string`.
///
/// Returns: `TATTLER_OK`; or, with nothing changed, what `tattler_open`
/// returned for the same document: `TATTLER_ERR_INVALID_CONFIG` (not JSON,
/// not an object, an unknown key with the one it most likely meant, a value
/// of the wrong type), `TATTLER_ERR_INVALID_RESOURCE` (a resource name that
/// cannot be one), `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE`. What needs the files or the whole
/// configuration (a token file to read, two ways to authenticate) is
/// checked by `tattler_open_config`.
///
/// Ownership: `json` is only read during the call.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `json` is NULL or NUL-terminated; `err_buf` is NULL or has `err_len`
/// writable bytes; `err_needed` is NULL or writable (`cfg` may be any
/// pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_json(
    cfg: *mut tattler_config,
    json: *const c_char,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        with_config(cfg, err_buf, err_len, err_needed, |doc| {
            set_json(doc, required(json, "json")?)
        })
    }
}

/// Adds a kind to `event_kinds`, as an item of the JSON form's
/// `"event_kinds":["Pod"]`: Event resources then deliver only the events
/// about objects of the kinds added (`"Pod"`, `"Node"`, ...). None added:
/// every event.
///
/// Parameters: `cfg`; `kind`, NUL-terminated UTF-8.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything: no error text).
///
/// Ownership: `kind` is copied.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `kind` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_add_event_kind(
    cfg: *mut tattler_config,
    kind: *const c_char,
) -> tattler_status {
    // SAFETY: the caller's promise, passed on; no error buffer.
    unsafe {
        with_config(cfg, std::ptr::null_mut(), 0, std::ptr::null_mut(), |doc| {
            let kind = Value::String(required(kind, "kind")?.to_string());
            match doc.keys.get_mut("event_kinds") {
                Some(Value::Array(kinds)) => kinds.push(kind),
                _ => {
                    doc.keys
                        .insert("event_kinds".into(), Value::Array(vec![kind]));
                }
            }
            Ok(())
        })
    }
}

/// Opens a reader from a configuration: checks it and starts one thread per
/// resource; entries start arriving at once. The one way to open a reader
/// (the `tattler_open*` calls of the LEGACY section are this one on a JSON
/// document).
///
/// With a checkpoint (`tattler_checkpoint`'s bytes from an earlier reader,
/// typically kept in a file across a restart), each resource of the
/// configuration that the checkpoint holds (the same group, version,
/// resource, namespace, selectors and `metadata_only`) starts from it
/// instead of a full sync: its Synced entry comes at once, at the
/// checkpoint's resourceVersion, then only what changed while no reader ran
/// (deletes included). When the server no longer has that resourceVersion
/// (compacted), the resource re-syncs against what the checkpoint says the
/// consumer holds: unchanged objects as Snapshot, changed ones as Update,
/// new ones as Add, vanished ones as inferred Delete, then Synced. Resources
/// the checkpoint lacks sync in full; what it holds for resources no longer
/// configured is ignored.
///
/// Parameters:
/// - `cfg`: the configuration; it stays the caller's and may be changed,
///   opened again or freed afterwards.
/// - `checkpoint`, `checkpoint_len`: the checkpoint's bytes; NULL and 0 for
///   none (a full sync).
/// - `out`: where to store the new reader.
/// - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
///   and 0. The text is NUL-terminated and cut to fit.
/// - `err_needed`: NULL, or where to store, on failure, the size of the
///   whole error text with its NUL (more than `err_len` when the text in
///   `err_buf` was cut).
///
/// Returns: `TATTLER_OK` and `*out` set; or a failure with the reason in
/// `err_buf` and `*out` untouched: `TATTLER_ERR_INVALID_CONFIG` (nothing to
/// watch, two ways to authenticate, a bad server URL, ...),
/// `TATTLER_ERR_INVALID_RESOURCE`, `TATTLER_ERR_IO` (a file named could not
/// be read, a thread not started), `TATTLER_ERR_TLS`,
/// `TATTLER_ERR_INVALID_CHECKPOINT` (bytes that are not a checkpoint this
/// library reads; the text says where and never quotes them: open without
/// it, a full sync, and drop the stored one), `TATTLER_ERR_NULL_ARG` (also
/// for a NULL `checkpoint` with a length), `TATTLER_ERR_INVALID_HANDLE` when
/// `cfg` is not a live configuration. Only what can be judged without the
/// network fails here; an unreachable or refusing server shows up later as
/// retries (logged) and as Error entries.
///
/// Ownership: the caller owns `*out` and must free it with `tattler_close`.
/// `checkpoint` is only read during the call; files named are read now.
///
/// Thread safety: any thread; readers are independent of each other. Works
/// from inside the log callback too.
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
    let document = || {
        if cfg.is_null() {
            return Err(Failure::null("cfg"));
        }
        let configs = CONFIGS.lock();
        let doc = configs.get(cfg).ok_or_else(not_live)?;
        Ok(doc.to_json())
    };
    // SAFETY: the caller's promises, passed on.
    unsafe {
        open_document(
            document,
            checkpoint,
            checkpoint_len,
            out,
            err_buf,
            err_len,
            err_needed,
        )
    }
}

/// The legacy `tattler_open*`: a configuration made from `config_json` (as
/// `tattler_config_set_json` makes it) and opened as `tattler_open_config`
/// opens it, the configuration never handed out.
///
/// # Safety
/// `config_json` is NULL or NUL-terminated; the rest as `tattler_open_config`.
pub(crate) unsafe fn open_json(
    config_json: *const c_char,
    checkpoint: *const u8,
    checkpoint_len: usize,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    let document = || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        let json = unsafe { required(config_json, "config_json") }?;
        let mut doc = Doc::default();
        set_json(&mut doc, json)?;
        Ok(doc.to_json())
    };
    // SAFETY: the caller's promises, passed on.
    unsafe {
        open_document(
            document,
            checkpoint,
            checkpoint_len,
            out,
            err_buf,
            err_len,
            err_needed,
        )
    }
}

/// Opens the document `document` makes: the caller's arguments checked, the
/// reader opened, `*out` written on success and the failure reported
/// otherwise. The registry's lock is not held while opening: it reads files.
///
/// # Safety
/// As `tattler_open_config`.
unsafe fn open_document(
    document: impl FnOnce() -> Result<String, Failure>,
    checkpoint: *const u8,
    checkpoint_len: usize,
    out: *mut *mut tattler_reader,
    err_buf: *mut c_char,
    err_len: usize,
    err_needed: *mut usize,
) -> tattler_status {
    // SAFETY: NULL or `err_len` writable bytes, by the caller's promise.
    let err_buf = unsafe { cast::buf_arg(err_buf, err_len) };
    let result = guard(|| {
        let json = document()?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        if checkpoint.is_null() && checkpoint_len != 0 {
            return Err(Failure::null("checkpoint"));
        }
        // SAFETY: `checkpoint_len` readable bytes (or none), by the caller's promise.
        let checkpoint = unsafe { cast::bytes_arg(checkpoint, checkpoint_len) };
        let handle = reader::open(&json, checkpoint)?;
        // SAFETY: non-NULL and writable, by the caller's promise.
        unsafe { cast::write(out, handle) };
        Ok(TATTLER_OK)
    });
    // SAFETY: NULL or writable, by the caller's promise.
    result.unwrap_or_else(|f| unsafe { report(&f, err_buf, err_needed) })
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
        // An unknown key: the key it most likely meant, not the JSON
        // reader's list of every key (548 bytes).
        let e = set_key(&mut doc, "tokn", "x".into()).unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (
                TATTLER_ERR_INVALID_CONFIG,
                "invalid configuration: JSON: unknown key `tokn` (did you mean `token`?)"
            )
        );
        assert!(e.message.len() < 100, "{}", e.message);
        let e = set_key(&mut doc, "insecure", "yes".into()).unwrap_err();
        assert!(e.message.contains("`insecure`"), "{}", e.message);
        let e = set_key(&mut doc, "channel_capacity", (-1).into()).unwrap_err();
        assert!(e.message.contains("`channel_capacity`"), "{}", e.message);
        for key in ["resources", "exec", "event_kinds"] {
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

    #[test]
    fn a_json_document_merges_in_and_fails_as_tattler_open_did() {
        let mut doc = Doc::default();
        set_key(&mut doc, "server", "https://a:6443".into()).unwrap();
        add_resource(&mut doc, "pods".into()).unwrap();
        set_json(
            &mut doc,
            r#"{"server":"https://b:6443","resources":["nodes"],"event_kinds":["Pod"],"exec":{"command":"p"}}"#,
        )
        .unwrap();
        set_json(&mut doc, r#"{"event_kinds":["Node"],"channel_capacity":8}"#).unwrap();
        set_json(&mut doc, r#"{"shard":{"count":2,"index":1}}"#).unwrap();
        assert_eq!(
            doc.to_json(),
            r#"{"server":"https://b:6443","event_kinds":["Pod","Node"],"exec":{"command":"p"},"channel_capacity":8,"shard":{"count":2,"index":1},"resources":["pods","nodes"]}"#
        );
        // What tattler_open said of these documents, set_json says, and
        // changes nothing.
        let before = doc.to_json();
        for json in [
            "{not json",
            "[]",
            r#"{"server":5}"#,
            r#"{"insecure":"yes"}"#,
            r#"{"resources":{"pods":1}}"#,
            r#"{"resources":["pods!"]}"#,
            r#"{"resources":[{"resource":"pods","nmespace":"x"}]}"#,
            r#"{"shard":{"count":2,"index":2}}"#,
            r#"{"resources":[{"resource":"pods","shard":{"count":0,"index":0}}]}"#,
        ] {
            // The same document as tattler_open had it, with what it needs
            // beside the mistake.
            let whole = match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(mut m)) => {
                    m.entry("server").or_insert("http://127.0.0.1:1".into());
                    m.entry("resources").or_insert(serde_json::json!(["pods"]));
                    Value::Object(m).to_string()
                }
                _ => json.to_string(),
            };
            let e = set_json(&mut doc, json).unwrap_err();
            let core = Failure::from(Config::from_json(&whole).unwrap_err());
            assert_eq!(
                (e.status, e.message.as_str()),
                (core.status, core.message.as_str()),
                "{json}"
            );
            assert_eq!(doc.to_json(), before, "{json} changed the document");
        }
        let e = set_json(&mut doc, r#"{"sever":"x"}"#).unwrap_err();
        assert!(
            e.message.ends_with("(did you mean `server`?)"),
            "{}",
            e.message
        );
        assert_eq!(doc.to_json(), before);
    }
}
