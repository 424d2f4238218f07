//! `tattler_config`, the way in: the typed setters, the string setters and
//! the JSON document, each key checked when set (a mistyped one gets the key
//! it meant), the keys and defaults the library reports, and the legacy
//! opens, which are the same path on a JSON document.

// The legacy calls are called here on purpose: C programs link them.
#![allow(deprecated)]

use std::ffi::{c_char, CStr, CString};
use std::ptr::{self, null, null_mut};

use serde_json::{json, Value};
use tattler::__for_tests::config_json;
use tattler::tattler_status::*;
use tattler::*;
use tattler_fakeapi::FakeApi;

use crate::support::*;

/// `tattler_config_keys()`, parsed.
fn keys() -> serde_json::Map<String, Value> {
    // SAFETY: a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(tattler_config_keys()) };
    let doc: Value = serde_json::from_str(text.to_str().unwrap()).unwrap();
    doc.as_object().unwrap().clone()
}

type TextSetter = unsafe extern "C" fn(*mut tattler_config, *const c_char) -> tattler_status;
type IntSetter = extern "C" fn(*mut tattler_config, u64) -> tattler_status;
type BoolSetter = extern "C" fn(*mut tattler_config, bool) -> tattler_status;

/// The typed setter of a key, called with a value of its type.
fn set_typed(cfg: *mut tattler_config, key: &str) -> (tattler_status, Value) {
    let text: Option<TextSetter> = match key {
        "server" => Some(tattler_config_set_server),
        "ca_file" => Some(tattler_config_set_ca_file),
        "ca_data" => Some(tattler_config_set_ca_data),
        "token" => Some(tattler_config_set_token),
        "token_file" => Some(tattler_config_set_token_file),
        "namespace" => Some(tattler_config_set_namespace),
        "label_selector" => Some(tattler_config_set_label_selector),
        "field_selector" => Some(tattler_config_set_field_selector),
        "kubeconfig" => Some(tattler_config_set_kubeconfig),
        "context" => Some(tattler_config_set_context),
        "tls_server_name" => Some(tattler_config_set_tls_server_name),
        "proxy" => Some(tattler_config_set_proxy),
        "client_cert_file" => Some(tattler_config_set_client_cert_file),
        "client_key_file" => Some(tattler_config_set_client_key_file),
        "username" => Some(tattler_config_set_username),
        "password" => Some(tattler_config_set_password),
        _ => None,
    };
    if let Some(set) = text {
        let v = format!("{key}-value");
        let c = CString::new(v.clone()).unwrap();
        // SAFETY: a valid string; `cfg` is checked.
        return (unsafe { set(cfg, c.as_ptr()) }, Value::String(v));
    }
    let integer: Option<IntSetter> = match key {
        "channel_capacity" => Some(tattler_config_set_channel_capacity),
        "idle_timeout_secs" => Some(tattler_config_set_idle_timeout_secs),
        "connect_timeout_secs" => Some(tattler_config_set_connect_timeout_secs),
        "page_size" => Some(tattler_config_set_page_size),
        "max_frame_bytes" => Some(tattler_config_set_max_frame_bytes),
        "initial_events_timeout_secs" => Some(tattler_config_set_initial_events_timeout_secs),
        "discovery_interval_secs" => Some(tattler_config_set_discovery_interval_secs),
        "max_buffered_bytes" => Some(tattler_config_set_max_buffered_bytes),
        "relist_interval_secs" => Some(tattler_config_set_relist_interval_secs),
        _ => None,
    };
    if let Some(set) = integer {
        return (set(cfg, 77), json!(77));
    }
    let boolean: Option<BoolSetter> = match key {
        "insecure" => Some(tattler_config_set_insecure),
        "gzip" => Some(tattler_config_set_gzip),
        "in_cluster" => Some(tattler_config_set_in_cluster),
        "scrub" => Some(tattler_config_set_scrub),
        "scrub_secret_data" => Some(tattler_config_set_scrub_secret_data),
        "metadata_only" => Some(tattler_config_set_metadata_only),
        "drop_managed_fields" => Some(tattler_config_set_drop_managed_fields),
        _ => None,
    };
    match boolean {
        Some(set) => (set(cfg, true), json!(true)),
        None => panic!("no typed setter for {key}"),
    }
}

#[test]
fn every_key_of_a_string_number_or_flag_has_a_typed_setter_of_its_type() {
    let cfg = tattler_config_new();
    let mut want = serde_json::Map::new();
    for (key, about) in keys() {
        let kind = about["type"].as_str().unwrap();
        if about.get("alias_of").is_some() || !["string", "integer", "boolean"].contains(&kind) {
            continue;
        }
        let (st, value) = set_typed(cfg, &key);
        assert_eq!(st, TATTLER_OK, "{key}");
        assert_eq!(value.is_string(), kind == "string", "{key}");
        assert_eq!(value.is_u64(), kind == "integer", "{key}");
        want.insert(key, value);
    }
    assert_eq!(want.len(), 32);
    let got: Value = serde_json::from_str(&config_json(cfg).unwrap()).unwrap();
    assert_eq!(got, Value::Object(want));
    // The status says what went wrong; nothing is set.
    // SAFETY: NULL, a bad string, a freed configuration: under test.
    unsafe {
        assert_eq!(tattler_config_set_server(cfg, null()), TATTLER_ERR_NULL_ARG);
        assert_eq!(
            tattler_config_set_server(cfg, c"\xff".as_ptr()),
            TATTLER_ERR_INVALID_UTF8
        );
        assert_eq!(
            tattler_config_set_server(null_mut(), c"x".as_ptr()),
            TATTLER_ERR_NULL_ARG
        );
    }
    assert_eq!(
        serde_json::from_str::<Value>(&config_json(cfg).unwrap()).unwrap()["server"],
        "server-value"
    );
    tattler_config_free(cfg);
    assert_eq!(
        tattler_config_set_page_size(cfg, 1),
        TATTLER_ERR_INVALID_HANDLE
    );
    assert_eq!(
        tattler_config_set_gzip(cfg, true),
        TATTLER_ERR_INVALID_HANDLE
    );
}

#[test]
fn a_reader_opens_from_typed_setters_and_event_kinds() {
    let api = FakeApi::start();
    let rv = api.apply("pods", FakeApi::pod("shop", "web-1"));
    let cfg = tattler_config_new();
    let url = CString::new(api.url()).unwrap();
    let mut err = [0u8; 256];
    let mut r = null_mut();
    // SAFETY: a live configuration, valid strings, out-pointer and buffer.
    unsafe {
        assert_eq!(tattler_config_set_server(cfg, url.as_ptr()), TATTLER_OK);
        assert_eq!(
            tattler_config_set_namespace(cfg, c"shop".as_ptr()),
            TATTLER_OK
        );
        assert_eq!(tattler_config_set_channel_capacity(cfg, 8), TATTLER_OK);
        assert_eq!(tattler_config_set_scrub(cfg, false), TATTLER_OK);
        assert_eq!(
            tattler_config_add_event_kind(cfg, c"Pod".as_ptr()),
            TATTLER_OK
        );
        assert_eq!(
            tattler_config_add_event_kind(cfg, c"Node".as_ptr()),
            TATTLER_OK
        );
        assert_eq!(
            tattler_config_add_event_kind(cfg, null()),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(
            tattler_config_add_resource(cfg, c"pods".as_ptr(), null_mut(), 0, null_mut()),
            TATTLER_OK
        );
        let doc: Value = serde_json::from_str(&config_json(cfg).unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"server": api.url(), "namespace": "shop", "channel_capacity": 8,
                   "scrub": false, "event_kinds": ["Pod", "Node"], "resources": ["pods"]})
        );
        let st = tattler_open_config(
            cfg,
            null(),
            0,
            &mut r,
            err.as_mut_ptr().cast(),
            err.len(),
            null_mut(),
        );
        assert_eq!(st, TATTLER_OK, "{}", text(&err));
    }
    tattler_config_free(cfg);
    assert_eq!(
        until_synced(r, 1),
        [
            format!("Add shop/web-1 {rv}"),
            format!("Synced v1/pods {rv}")
        ]
    );
    close(r);
}

/// `tattler_config_set_string` on a new configuration: the status, the
/// text and `*err_needed`.
fn set_string(key: &CStr) -> (tattler_status, String, usize) {
    let cfg = tattler_config_new();
    let mut err = [0u8; 256];
    let mut needed = 0;
    // SAFETY: a live configuration, valid strings and buffer.
    let st = unsafe {
        tattler_config_set_string(
            cfg,
            key.as_ptr(),
            c"x".as_ptr(),
            err.as_mut_ptr().cast(),
            err.len(),
            &mut needed,
        )
    };
    tattler_config_free(cfg);
    (st, text(&err), needed)
}

#[test]
fn a_mistyped_key_says_which_key_it_meant_wherever_it_is_set() {
    let meant = "invalid configuration: JSON: unknown key `sever` (did you mean `server`?)";
    let (st, msg, needed) = set_string(c"sever");
    assert_eq!(
        (st, msg.as_str(), needed),
        (TATTLER_ERR_INVALID_CONFIG, meant, meant.len() + 1)
    );
    // The same through a JSON document, and the legacy open.
    let (st, msg) = open(r#"{"sever":"http://127.0.0.1:1","resources":["pods"]}"#).unwrap_err();
    assert_eq!((st, msg.as_str()), (TATTLER_ERR_INVALID_CONFIG, meant));
    let mut err = [0u8; 256];
    let mut r = null_mut();
    // SAFETY: valid string, out-pointer and buffer.
    let st = unsafe {
        tattler_open(
            c"{\"sever\":\"x\",\"resources\":[\"pods\"]}".as_ptr(),
            &mut r,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    assert_eq!(
        (st, text(&err).as_str()),
        (TATTLER_ERR_INVALID_CONFIG, meant)
    );
    // A key far from every other: where the list is, not the list.
    let (st, msg, _) = set_string(c"bogus");
    assert_eq!(
        (st, msg.as_str()),
        (
            TATTLER_ERR_INVALID_CONFIG,
            "invalid configuration: JSON: unknown key `bogus` (tattler_config_keys() lists every key)"
        )
    );
    // The string setter still takes a known key; a key of another type is
    // the JSON reader's refusal.
    assert_eq!(set_string(c"server").0, TATTLER_OK);
    let (st, msg, _) = set_string(c"channel_capacity");
    assert_eq!(st, TATTLER_ERR_INVALID_CONFIG);
    assert!(
        msg.contains("`channel_capacity` must be a non-negative integer"),
        "{msg}"
    );
}

#[test]
fn the_keys_and_defaults_are_the_library_s_and_the_header_documents_each_default() {
    let keys = keys();
    assert_eq!(
        keys["channel_capacity"],
        json!({"type": "integer", "default": 64})
    );
    assert_eq!(keys["resources"], json!({"type": "array"}));
    assert_eq!(keys["exec"], json!({"type": "object"}));
    // Each typed setter's doc in tattler.h ends its description with the
    // library's default, when there is one ("Default 64.").
    let header = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/tattler.h"),
    )
    .unwrap();
    let mut documented = 0;
    for (key, about) in &keys {
        let Some(default) = about.get("default") else {
            continue;
        };
        if about.get("alias_of").is_some() {
            continue;
        }
        let decl = format!("tattler_config_set_{key}(");
        let at = header.find(&decl).unwrap_or_else(|| panic!("no {decl}"));
        let doc_start = header[..at].rfind("/**").unwrap();
        let doc = &header[doc_start..at];
        let said = doc
            .split("Default ")
            .nth(1)
            .and_then(|d| d.split(['.', ' ', ':']).next())
            .unwrap_or_else(|| panic!("{key}: no default in {doc}"));
        assert_eq!(
            said,
            default.to_string(),
            "{key}: the header says {said}, the library {default}"
        );
        documented += 1;
    }
    assert_eq!(documented, 16);
}

/// A legacy open of `json` (with `checkpoint`): the status, the text, `*err_needed`.
fn legacy_open(json: &CStr, checkpoint: &[u8]) -> (tattler_status, String, usize) {
    let mut r = null_mut();
    let mut err = [0u8; 512];
    let mut needed = 0;
    // SAFETY: valid string, bytes, out-pointer and buffer.
    let st = unsafe {
        tattler_open_ex(
            json.as_ptr(),
            checkpoint.as_ptr(),
            checkpoint.len(),
            &mut r,
            err.as_mut_ptr().cast(),
            err.len(),
            &mut needed,
        )
    };
    let msg = text(&err);
    if st == TATTLER_OK {
        close(r);
    }
    // tattler_open and tattler_open_resume say the same.
    for resume in [false, true] {
        let mut r2 = null_mut();
        let mut err2 = [0u8; 512];
        // SAFETY: as above.
        let st2 = unsafe {
            if resume {
                tattler_open_resume(
                    json.as_ptr(),
                    checkpoint.as_ptr(),
                    checkpoint.len(),
                    &mut r2,
                    err2.as_mut_ptr().cast(),
                    err2.len(),
                )
            } else if checkpoint.is_empty() {
                tattler_open(json.as_ptr(), &mut r2, err2.as_mut_ptr().cast(), err2.len())
            } else {
                continue;
            }
        };
        assert_eq!((st2, text(&err2)), (st, msg.clone()), "{json:?}");
        if st2 == TATTLER_OK {
            close(r2);
        }
    }
    (st, msg, needed)
}

#[test]
fn the_legacy_opens_are_the_documented_path_on_a_json_document() {
    let api = FakeApi::start();
    let good = config(&api, &["pods"]);
    let cp = {
        let r = open(&good).unwrap();
        until_synced(r, 1);
        stop_and_drain(r);
        let mut needed = 0;
        // SAFETY: a live reader; size, then the bytes.
        let cp = unsafe {
            assert_eq!(
                tattler_checkpoint(r, null_mut(), 0, &mut needed),
                TATTLER_ERR_BUFFER_TOO_SMALL
            );
            let mut cp = vec![0u8; needed];
            assert_eq!(
                tattler_checkpoint(r, cp.as_mut_ptr(), cp.len(), &mut needed),
                TATTLER_OK
            );
            cp
        };
        close(r);
        cp
    };
    for (json, checkpoint) in [
        (good.clone(), vec![]),
        (good.clone(), cp.clone()),
        (good.clone(), b"not a checkpoint".to_vec()),
        ("{not json".to_string(), vec![]),
        ("[]".to_string(), vec![]),
        (r#"{"server":5,"resources":["pods"]}"#.to_string(), vec![]),
        (r#"{"sever":"x","resources":["pods"]}"#.to_string(), vec![]),
        (r#"{"server":"http://127.0.0.1:1","resources":["pods!"]}"#.to_string(), vec![]),
        (r#"{"server":"http://127.0.0.1:1","resources":[]}"#.to_string(), vec![]),
        (r#"{"server":"http://127.0.0.1:1","resources":["pods"],"token_file":"/no/such"}"#.to_string(), vec![]),
        (r#"{"server":"http://127.0.0.1:1","resources":["pods"],"token":"t","username":"u","password":"p"}"#.to_string(), vec![]),
    ] {
        let c = CString::new(json.clone()).unwrap();
        let (st, msg, needed) = legacy_open(&c, &checkpoint);
        match open_from(&json, &checkpoint) {
            Ok(r) => {
                assert_eq!((st, msg.as_str(), needed), (TATTLER_OK, "", 0), "{json}");
                close(r);
            }
            Err((want, want_msg)) => {
                assert_eq!((st, &msg), (want, &want_msg), "{json}");
                assert_eq!(needed, msg.len() + 1, "{json}");
            }
        }
    }
    // NULL where the documented path has none: the legacy names.
    // SAFETY: NULL under test.
    unsafe {
        let mut r = null_mut();
        let mut err = [0u8; 64];
        assert_eq!(
            tattler_open_ex(
                null(),
                null(),
                0,
                &mut r,
                err.as_mut_ptr().cast(),
                64,
                null_mut()
            ),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(text(&err), "config_json is NULL");
    }
}

#[test]
fn set_json_merges_into_what_the_setters_built() {
    let api = FakeApi::start();
    let cfg = tattler_config_new();
    let url = CString::new(api.url()).unwrap();
    let mut err = [0u8; 256];
    let mut needed = 0;
    // SAFETY: a live configuration, valid strings and buffers.
    unsafe {
        assert_eq!(
            tattler_config_set_server(cfg, c"https://replaced:6443".as_ptr()),
            TATTLER_OK
        );
        assert_eq!(
            tattler_config_add_resource(cfg, c"pods".as_ptr(), null_mut(), 0, null_mut()),
            TATTLER_OK
        );
        let json =
            CString::new(json!({"server": api.url(), "resources": ["nodes"]}).to_string()).unwrap();
        assert_eq!(
            tattler_config_set_json(
                cfg,
                json.as_ptr(),
                err.as_mut_ptr().cast(),
                err.len(),
                &mut needed
            ),
            TATTLER_OK
        );
        assert_eq!(
            serde_json::from_str::<Value>(&config_json(cfg).unwrap()).unwrap(),
            json!({"server": api.url(), "resources": ["pods", "nodes"]})
        );
        // A refused document changes nothing, and says why.
        let before = config_json(cfg);
        assert_eq!(
            tattler_config_set_json(
                cfg,
                c"{\"resources\":[\"pods!\"]}".as_ptr(),
                err.as_mut_ptr().cast(),
                err.len(),
                &mut needed
            ),
            TATTLER_ERR_INVALID_RESOURCE
        );
        assert!(text(&err).contains("\"pods!\""), "{}", text(&err));
        assert_eq!(needed, text(&err).len() + 1);
        assert_eq!(config_json(cfg), before);
        assert_eq!(
            tattler_config_set_json(cfg, null(), null_mut(), 0, null_mut()),
            TATTLER_ERR_NULL_ARG
        );
        let _ = url;
    }
    let mut r = null_mut();
    // SAFETY: a live configuration and a valid out-pointer.
    let st = unsafe { tattler_open_config(cfg, null(), 0, &mut r, null_mut(), 0, null_mut()) };
    assert_eq!(st, TATTLER_OK);
    tattler_config_free(cfg);
    let mut lines = until_synced(r, 2);
    lines.sort();
    let rv = api.current_rv();
    assert_eq!(
        lines,
        [
            format!("Synced v1/nodes {rv}"),
            format!("Synced v1/pods {rv}")
        ]
    );
    close(r);
}

#[test]
fn bad_configurations_say_what_is_wrong() {
    let cases: [(&[u8], tattler_status, &str); 6] = [
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"p\xffds\"]}",
            TATTLER_ERR_INVALID_UTF8,
            "not UTF-8",
        ),
        (b"{not json", TATTLER_ERR_INVALID_CONFIG, "JSON"),
        (b"[]", TATTLER_ERR_INVALID_CONFIG, "JSON"),
        (
            b"{\"server\":5,\"resources\":[\"pods\"]}",
            TATTLER_ERR_INVALID_CONFIG,
            "`server`",
        ),
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"pods\"],\"tokn\":\"x\"}",
            TATTLER_ERR_INVALID_CONFIG,
            "`tokn`",
        ),
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"pods!\"]}",
            TATTLER_ERR_INVALID_RESOURCE,
            "\"pods!\"",
        ),
    ];
    for (json, status, needle) in cases {
        let json = CString::new(json).unwrap();
        let sentinel = ptr::dangling_mut::<tattler_reader>();
        let mut r = sentinel;
        let mut err = [0u8; 512];
        // SAFETY: valid string, out-pointer and buffer.
        let st = unsafe { tattler_open(json.as_ptr(), &mut r, err.as_mut_ptr().cast(), err.len()) };
        let msg = text(&err);
        assert_eq!(st, status, "{json:?}: {msg}");
        assert!(msg.contains(needle), "{json:?}: {msg:?} lacks {needle:?}");
        assert_eq!(r, sentinel, "*out written on failure");
    }
    let (st, msg) = open(
        r#"{"server":"http://127.0.0.1:1","resources":["pods"],"token_file":"/no/such/token"}"#,
    )
    .unwrap_err();
    assert_eq!(st, TATTLER_ERR_IO);
    assert!(msg.contains("/no/such/token"), "{msg}");
}

#[test]
fn error_text_is_cut_to_the_buffer() {
    let json = c"{not json";
    let mut r = null_mut();
    let mut err = [0xffu8; 8];
    // SAFETY: valid string, out-pointer and buffer.
    let st = unsafe { tattler_open(json.as_ptr(), &mut r, err.as_mut_ptr().cast(), err.len()) };
    assert_eq!(st, TATTLER_ERR_INVALID_CONFIG);
    assert_eq!(&err, b"invalid\0");
    let mut one = [0xffu8; 1];
    // SAFETY: as above.
    unsafe { tattler_open(json.as_ptr(), &mut r, one.as_mut_ptr().cast(), one.len()) };
    assert_eq!(one, [0]);
}
