//! The typed setters of `tattler_config`: one function per key of the
//! configuration document, so that the C compiler checks the key's name and
//! its value's type (a mistyped `tattler_config_set_sever` does not
//! compile). Each is `tattler_config_set_string`, `_int` or `_bool` with its
//! key; a test holds the list equal to the document's keys.

use std::ffi::c_char;
use std::ptr::null_mut;

use serde_json::Value;

use crate::config_builder::{required, set_key, tattler_config, with_config};
use crate::error::Failure;
use crate::status::tattler_status;

/// Sets `key` to what `value` gives, reporting by status alone.
fn set(
    cfg: *mut tattler_config,
    key: &str,
    value: impl FnOnce() -> Result<Value, Failure>,
) -> tattler_status {
    // SAFETY: no error buffer to write (NULL and 0); `cfg` is looked up, not
    // followed.
    unsafe {
        with_config(cfg, null_mut(), 0, null_mut(), |doc| {
            set_key(doc, key, value()?)
        })
    }
}

/// Every typed setter's key, in the header's order (for the test that
/// they are the document's keys).
#[cfg(test)]
pub(crate) const TYPED: &[&str] = &[
    "server",
    "ca_file",
    "ca_data",
    "token",
    "token_file",
    "namespace",
    "label_selector",
    "field_selector",
    "kubeconfig",
    "context",
    "tls_server_name",
    "proxy",
    "client_cert_file",
    "client_key_file",
    "username",
    "password",
    "channel_capacity",
    "idle_timeout_secs",
    "connect_timeout_secs",
    "page_size",
    "max_frame_bytes",
    "initial_events_timeout_secs",
    "discovery_interval_secs",
    "max_buffered_bytes",
    "relist_interval_secs",
    "insecure",
    "gzip",
    "in_cluster",
    "scrub",
    "scrub_secret_data",
    "metadata_only",
    "drop_managed_fields",
];

/// Sets `server`: the apiserver's URL, `https://host:port` (not with
/// `kubeconfig`, `context` or `in_cluster`). None of the four set: the
/// cluster is found as kubectl finds it.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_server(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "server", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `ca_file`: a PEM file of the CA certificates the server's certificate
/// must chain to (not with `ca_data`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_ca_file(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "ca_file", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `ca_data`: the PEM text of those CA certificates (not with
/// `ca_file`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_ca_data(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "ca_data", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `token`: a bearer token (not with `token_file`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_token(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "token", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `token_file`: a file holding the bearer token, read again as it
/// rotates.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_token_file(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "token_file", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `namespace`: the namespace of the resources added by name; none:
/// every namespace.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_namespace(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "namespace", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `label_selector`: a label selector for the resources added by name
/// (`app=web`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_label_selector(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "label_selector", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `field_selector`: a field selector for the resources added by name
/// (`spec.nodeName=n1`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_field_selector(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "field_selector", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `kubeconfig`: a kubeconfig file to take the cluster and the
/// credentials from (not with `server`).
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_kubeconfig(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "kubeconfig", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `context`: the kubeconfig's context to use; none: its current one.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_context(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "context", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `tls_server_name`: the name the server's certificate must carry,
/// instead of the URL's host.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_tls_server_name(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "tls_server_name", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `proxy`: `env` (the default: `HTTPS_PROXY`, `HTTP_PROXY`,
/// `ALL_PROXY`, `NO_PROXY`), `none`, or an HTTP CONNECT proxy's URL,
/// `http://[user:password@]host:port`.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_proxy(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "proxy", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `client_cert_file`: a PEM client certificate to authenticate with,
/// beside `client_key_file`.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_client_cert_file(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "client_cert_file", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `client_key_file`: the client certificate's PEM private key.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_client_key_file(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "client_key_file", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `username`: the user of basic authentication, beside `password`.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_username(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "username", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `password`: the password of basic authentication.
///
/// Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
/// again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
/// `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
/// fits the rest of the configuration is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
///
/// # Safety
/// `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
#[no_mangle]
pub unsafe extern "C" fn tattler_config_set_password(
    cfg: *mut tattler_config,
    value: *const c_char,
) -> tattler_status {
    set(cfg, "password", || {
        // SAFETY: NULL or NUL-terminated, by the caller's promise.
        unsafe { required(value, "value") }.map(Value::from)
    })
}

/// Sets `channel_capacity`: the entries the output channel holds before the
/// streams wait (none is dropped). Default 64.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_channel_capacity(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "channel_capacity", || Ok(value.into()))
}

/// Sets `idle_timeout_secs`: a stream that receives no byte for this many
/// seconds (bookmarks included) is reconnected. Default 150.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_idle_timeout_secs(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "idle_timeout_secs", || Ok(value.into()))
}

/// Sets `connect_timeout_secs`: the limit on reaching the server, in total
/// (not per read): the TCP connect, over the host's addresses as Go's dialer
/// tries them, and a proxy's answer (CONNECT, or the SOCKS5 negotiation)
/// within the same time; the TLS handshake then has as long again.
/// Default 5. `0`: no limit of tattler's own on the TCP connect, which lasts until
/// the server answers, the system gives up (about two minutes on Linux) or
/// `tattler_close`; 10 s for a proxy's answer and for the handshake.
/// `tattler_close` ends every phase at once (a TCP connect within 0.1 s on
/// Linux; elsewhere it runs to its end, bounded by this).
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_connect_timeout_secs(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "connect_timeout_secs", || Ok(value.into()))
}

/// Sets `page_size`: the objects a page asks for when the server has no
/// watch-list and paged LIST + WATCH is used. Default 500.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_page_size(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "page_size", || Ok(value.into()))
}

/// Sets `max_frame_bytes`: an object larger than this many bytes is reported
/// as an Error entry and skipped. Default 67108864 (64 MiB).
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_max_frame_bytes(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "max_frame_bytes", || Ok(value.into()))
}

/// Sets `initial_events_timeout_secs`: the seconds of silence during a
/// watch-list's initial state after which a stream falls back to LIST +
/// WATCH. Default 30.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_initial_events_timeout_secs(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "initial_events_timeout_secs", || Ok(value.into()))
}

/// Sets `discovery_interval_secs`: how often, in seconds, wildcards (`*`,
/// `*.apps`) look again for resources established or deleted. Default 300.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_discovery_interval_secs(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "discovery_interval_secs", || Ok(value.into()))
}

/// Sets `max_buffered_bytes`: the bytes of objects queued for the consumer
/// before the streams wait. Default 67108864 (64 MiB).
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_max_buffered_bytes(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "max_buffered_bytes", || Ok(value.into()))
}

/// Sets `relist_interval_secs`: a fresh sync this often, in seconds (60 to
/// 604800), unchanged objects as Snapshot, vanished ones as inferred Delete.
/// Default 0: never.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything). Its range is checked by `tattler_open_config`.
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_relist_interval_secs(
    cfg: *mut tattler_config,
    value: u64,
) -> tattler_status {
    set(cfg, "relist_interval_secs", || Ok(value.into()))
}

/// Sets `insecure`: check nothing of the server's certificate (never beside a
/// CA). Default false.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_insecure(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "insecure", || Ok(value.into()))
}

/// Sets `gzip`: ask the server for gzip-compressed bodies (it costs the
/// apiserver CPU, saves bandwidth only off-host). Default false.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_gzip(cfg: *mut tattler_config, value: bool) -> tattler_status {
    set(cfg, "gzip", || Ok(value.into()))
}

/// Sets `in_cluster`: reach the cluster as the pod's service account (not
/// with `server`, `kubeconfig` or `context`). Default false.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_in_cluster(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "in_cluster", || Ok(value.into()))
}

/// Sets `scrub`: replace container env values with `REDACTED` in pods and
/// everything that embeds a pod spec. Default true.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_scrub(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "scrub", || Ok(value.into()))
}

/// Sets `scrub_secret_data`: replace the values of Secrets' `data` and
/// `stringData` with `REDACTED`. Default true.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_scrub_secret_data(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "scrub_secret_data", || Ok(value.into()))
}

/// Sets `metadata_only`: stream the resources added by name as
/// `PartialObjectMetadata` (only their `metadata`). Default false.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_metadata_only(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "metadata_only", || Ok(value.into()))
}

/// Sets `drop_managed_fields`: remove `metadata.managedFields` from every
/// object. Default false.
///
/// Parameters: `cfg`; `value`. Setting it again replaces it.
///
/// Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
/// everything).
///
/// Thread safety: as `tattler_config_new`.
#[no_mangle]
pub extern "C" fn tattler_config_set_drop_managed_fields(
    cfg: *mut tattler_config,
    value: bool,
) -> tattler_status {
    set(cfg, "drop_managed_fields", || Ok(value.into()))
}

#[cfg(test)]
mod tests {
    use crate::config_keys::{Kind, KEYS};

    #[test]
    fn one_typed_setter_per_key_that_takes_a_string_a_number_or_a_flag() {
        let mut want: Vec<&str> = KEYS
            .iter()
            .filter(|k| k.alias_of.is_none())
            .filter(|k| matches!(k.kind, Kind::Text | Kind::Integer | Kind::Boolean))
            .map(|k| k.name)
            .collect();
        let mut got = super::TYPED.to_vec();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want);
        // And each is declared: its name is in this file as a function.
        let src = include_str!("config_options.rs");
        for key in super::TYPED {
            assert!(
                src.contains(&format!("fn tattler_config_set_{key}(")),
                "no tattler_config_set_{key}"
            );
        }
    }
}
