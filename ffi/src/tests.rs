//! The C ABI called from Rust as a C program would call it, misuse included:
//! NULL everywhere, bad strings, calls after stop, entries outliving their
//! reader, a close racing a blocked wait. Against the fake apiserver; every
//! wait is bounded so a hang fails the test.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{self, null, null_mut};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tattler_fakeapi::FakeApi;

use crate::entry::*;
use crate::logging::*;
use crate::reader::*;
use crate::status::tattler_status::{self, *};
use crate::status::*;

/// Long enough for any entry the fake has to arrive; a hang fails instead.
const WAIT_MS: i64 = 10_000;

fn config(api: &FakeApi, resources: &[&str]) -> String {
    serde_json::json!({"server": api.url(), "resources": resources}).to_string()
}

fn open(json: &str) -> Result<*mut tattler_reader, (tattler_status, String)> {
    let json = CString::new(json).unwrap();
    let mut r = null_mut();
    let mut err = [0u8; 512];
    // SAFETY: valid string, out-pointer and buffer.
    let st = unsafe { tattler_open(json.as_ptr(), &mut r, err.as_mut_ptr().cast(), err.len()) };
    if st == TATTLER_OK {
        assert!(!r.is_null());
        Ok(r)
    } else {
        assert!(r.is_null(), "*out written on failure");
        Err((st, text(&err)))
    }
}

fn text(buf: &[u8]) -> String {
    CStr::from_bytes_until_nul(buf)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

/// A borrowed C string as a Rust one.
fn s(p: *const c_char) -> String {
    assert!(!p.is_null(), "a string getter returned NULL");
    // SAFETY: getters return NUL-terminated strings valid while the entry lives.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

fn next(r: *mut tattler_reader, timeout_ms: i64) -> (tattler_status, *mut tattler_entry) {
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

/// `tattler_set_resources` with an error buffer: the status, `*changed`
/// (starting as `initial`, so that an unwritten one shows) and the error text.
fn set_resources(
    r: *mut tattler_reader,
    json: *const c_char,
    force: bool,
    initial: bool,
) -> (tattler_status, bool, String) {
    let mut changed = initial;
    let mut err = [0xffu8; 512];
    // SAFETY: a live reader (or NULL, on purpose), a string or NULL, a valid
    // out-pointer and buffer.
    let st = unsafe {
        tattler_set_resources(
            r,
            json,
            force,
            &mut changed,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    let msg = if st as c_int >= 100 {
        text(&err)
    } else {
        assert!(err.iter().all(|&b| b == 0xff), "err_buf written on {st:?}");
        String::new()
    };
    (st, changed, msg)
}

/// `Change namespace/name rv` or `Synced group/version/resource rv`, then frees the entry.
fn line(e: *mut tattler_entry) -> String {
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
fn until_synced(r: *mut tattler_reader, n: usize) -> Vec<String> {
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

fn close(r: *mut tattler_reader) {
    assert_eq!(tattler_close(r), TATTLER_OK);
}

#[test]
fn null_arguments_are_refused_not_followed() {
    let api = FakeApi::start();
    let cfg = CString::new(config(&api, &["pods"])).unwrap();
    let mut err = [0xffu8; 64];
    let mut r = null_mut();
    // SAFETY: every pointer is NULL or valid; NULL is what is under test.
    unsafe {
        assert_eq!(
            tattler_open(null(), &mut r, err.as_mut_ptr().cast(), err.len()),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(text(&err), "config_json is NULL");
        assert_eq!(
            tattler_open(cfg.as_ptr(), null_mut(), null_mut(), 0),
            TATTLER_ERR_NULL_ARG
        );
        // A NULL error buffer with a length is ignored, not written.
        assert_eq!(
            tattler_open(null(), &mut r, null_mut(), 100),
            TATTLER_ERR_NULL_ARG
        );
        assert!(r.is_null());

        let mut e = null_mut();
        assert_eq!(
            tattler_next_entry(null_mut(), 0, &mut e),
            TATTLER_ERR_NULL_ARG
        );
        tattler_stop(null_mut());
        tattler_wake(null_mut());
        assert_eq!(tattler_close(null_mut()), TATTLER_OK);
        assert_eq!(
            set_resources(null_mut(), c"[]".as_ptr(), false, true),
            (TATTLER_ERR_NULL_ARG, true, "r is NULL".into())
        );
        let mut changed = false;
        // No error buffer: the status alone.
        assert_eq!(
            tattler_set_resources(
                null_mut(),
                c"[]".as_ptr(),
                false,
                &mut changed,
                null_mut(),
                9
            ),
            TATTLER_ERR_NULL_ARG
        );
        let mut needed = 0;
        assert_eq!(
            tattler_stats_json(null_mut(), null_mut(), 0, &mut needed),
            TATTLER_ERR_NULL_ARG
        );

        let r = open(&config(&api, &["pods"])).unwrap();
        assert_eq!(tattler_next_entry(r, 0, null_mut()), TATTLER_ERR_NULL_ARG);
        assert_eq!(
            set_resources(r, null(), false, true),
            (TATTLER_ERR_NULL_ARG, true, "resources_json is NULL".into())
        );
        assert_eq!(
            tattler_stats_json(r, null_mut(), 10, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
        close(r);

        let e: *const tattler_entry = null();
        assert_eq!(tattler_entry_change(e), tattler_change::TATTLER_CHANGE_NONE);
        for getter in [
            tattler_entry_group,
            tattler_entry_version,
            tattler_entry_resource,
            tattler_entry_kind,
            tattler_entry_namespace,
            tattler_entry_name,
            tattler_entry_uid,
            tattler_entry_error_reason,
            tattler_entry_error_message,
        ] {
            assert_eq!(s(getter(e)), "");
        }
        assert_eq!(tattler_entry_resource_version(e), 0);
        assert!(!tattler_entry_inferred(e));
        assert_eq!(tattler_entry_error_code(e), 0);
        let mut len = 99;
        assert!(tattler_entry_object(e, &mut len).is_null());
        assert_eq!(len, 0);
        assert!(tattler_entry_object(e, null_mut()).is_null());
        tattler_entry_free(null_mut());
    }
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

#[test]
fn entries_carry_the_object_and_outlive_their_reader() {
    let api = FakeApi::start();
    let rv1 = api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, add) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    close(r);

    // SAFETY: live entries, read after their reader was closed, freed once.
    unsafe {
        assert_eq!(
            tattler_entry_change(add),
            tattler_change::TATTLER_CHANGE_ADD
        );
        assert_eq!(s(tattler_entry_group(add)), "");
        assert_eq!(s(tattler_entry_version(add)), "v1");
        assert_eq!(s(tattler_entry_resource(add)), "pods");
        assert_eq!(s(tattler_entry_kind(add)), "Pod");
        assert_eq!(s(tattler_entry_namespace(add)), "default");
        assert_eq!(s(tattler_entry_name(add)), "web-1");
        assert!(!s(tattler_entry_uid(add)).is_empty());
        assert_eq!(tattler_entry_resource_version(add), rv1);
        assert_eq!(
            CStr::from_ptr(tattler_entry_resource_version_str(add))
                .to_str()
                .unwrap(),
            rv1.to_string()
        );
        assert!(!tattler_entry_inferred(add));
        assert_eq!(
            (
                tattler_entry_error_code(add),
                s(tattler_entry_error_message(add))
            ),
            (0, String::new())
        );
        let mut len = 0;
        let obj = tattler_entry_object(add, &mut len);
        let obj: serde_json::Value =
            serde_json::from_slice(std::slice::from_raw_parts(obj, len)).unwrap();
        assert_eq!(obj["metadata"]["name"], "web-1");
        assert_eq!(
            obj["metadata"]["uid"].as_str().unwrap(),
            s(tattler_entry_uid(add))
        );
        tattler_entry_free(add);

        assert_eq!(
            tattler_entry_change(synced),
            tattler_change::TATTLER_CHANGE_SYNCED
        );
        assert_eq!(tattler_entry_resource_version(synced), rv1);
        assert_eq!(
            (
                s(tattler_entry_namespace(synced)),
                s(tattler_entry_name(synced))
            ),
            (String::new(), String::new())
        );
        let mut len = 99;
        assert!(tattler_entry_object(synced, &mut len).is_null());
        assert_eq!(len, 0);
        tattler_entry_free(synced);
    }
}

#[test]
fn updates_deletes_and_errors_come_through() {
    let api = FakeApi::start();
    api.forbid("nodes", true);
    let rv = api.apply("pods", FakeApi::pod("ns", "a"));
    let r = open(&config(&api, &["pods", "nodes"])).unwrap();
    let mut first: Vec<String> = (0..3).map(|_| line(next(r, WAIT_MS).1)).collect();
    first.sort();
    assert_eq!(
        first,
        [
            format!("Add ns/a {rv}"),
            "Error nodes 403 Forbidden".into(),
            format!("Synced v1/pods {rv}")
        ]
    );
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    let rv2 = api.apply("pods", FakeApi::pod("ns", "a"));
    assert_eq!(line(next(r, WAIT_MS).1), format!("Update ns/a {rv2}"));
    let rv3 = api.delete("pods", Some("ns"), "a").unwrap();
    assert_eq!(line(next(r, WAIT_MS).1), format!("Delete ns/a {rv3}"));
    close(r);
}

#[test]
fn stop_twice_then_next_says_closed_for_every_timeout() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    assert_eq!(
        until_synced(r, 1),
        [format!("Synced v1/pods {}", api.current_rv())]
    );
    tattler_stop(r);
    tattler_stop(r);
    for timeout in [0, 50, -1, i64::MAX, i64::MIN] {
        let sentinel = ptr::dangling_mut::<tattler_entry>();
        let mut e = sentinel;
        // SAFETY: a live reader and a valid out-pointer.
        let st = unsafe { tattler_next_entry(r, timeout, &mut e) };
        assert_eq!(st, TATTLER_CLOSED, "timeout {timeout}");
        assert_eq!(e, sentinel, "*out written without an entry");
    }
    assert_eq!(
        set_resources(r, c"[\"pods\"]".as_ptr(), true, true),
        (TATTLER_CLOSED, true, String::new())
    );
    close(r);
}

#[test]
fn timeouts_wait_as_long_as_asked() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let t = Instant::now();
    assert_eq!(next(r, 0).0, TATTLER_TIMEOUT);
    assert_eq!(next(r, 100).0, TATTLER_TIMEOUT);
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    close(r);
}

#[test]
fn stop_from_another_thread_wakes_a_forever_wait() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let addr = r as usize;
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let st = next(addr as *mut tattler_reader, -1).0;
        done_tx.send(st).unwrap();
    });
    assert!(
        done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "returned without an entry"
    );
    // tattler_stop may race with any call.
    tattler_stop(r);
    assert_eq!(
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        TATTLER_CLOSED
    );
    waiter.join().unwrap();
    close(r);
}

#[test]
fn wake_ends_one_wait_and_the_reader_runs_on() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let addr = r as usize;
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        for _ in 0..2 {
            let (st, e) = next(addr as *mut tattler_reader, -1);
            done_tx.send((st, e as usize)).unwrap();
        }
    });
    assert!(
        done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "returned without an entry"
    );
    // tattler_wake may race with any call.
    tattler_wake(r);
    let (st, _) = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(st, TATTLER_TIMEOUT);
    // The waiter waits again, and the stream still delivers.
    let rv = api.apply("pods", FakeApi::pod("ns", "after-wake"));
    let (st, e) = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(st, TATTLER_OK);
    assert_eq!(
        line(e as *mut tattler_entry),
        format!("Add ns/after-wake {rv}")
    );
    waiter.join().unwrap();
    close(r);
}

#[test]
fn a_wake_with_nobody_waiting_is_kept_once() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    tattler_wake(r);
    tattler_wake(r);
    // A take-if-ready call does not use the kept wake up.
    assert_eq!(next(r, 0).0, TATTLER_TIMEOUT);
    let t = Instant::now();
    assert_eq!(next(r, -1).0, TATTLER_TIMEOUT, "the kept wake");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // Two wakes with nobody waiting are one: this wait runs its course.
    let t = Instant::now();
    assert_eq!(next(r, 300).0, TATTLER_TIMEOUT);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    close(r);
}

#[test]
fn close_racing_a_blocked_wait_frees_after_it_returns() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let addr = r as usize;
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let st = next(addr as *mut tattler_reader, -1).0;
        done_tx.send(st).unwrap();
    });
    // Let the waiter get inside tattler_next_entry: the rule says close only
    // after it returned; the reference count makes this case safe anyway.
    assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
    close(r);
    assert_eq!(
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        TATTLER_CLOSED
    );
    waiter.join().unwrap();
    // The last reference went with the waiter's call: every stream ended.
    assert!(api.wait_open_watches(0, Duration::from_secs(10)));
}

#[test]
fn set_resources_changes_the_streams_or_says_why_not() {
    let api = FakeApi::start();
    let r = open(
        r#"{"server":"URL","resources":["pods"],"namespace":"ns"}"#
            .replace("URL", &api.url())
            .as_str(),
    )
    .unwrap();
    until_synced(r, 1);
    // `initial` is the opposite of the answer expected, so that an unwritten
    // `*changed` shows.
    let set = |json: &CStr, initial: bool| set_resources(r, json.as_ptr(), false, initial);
    assert_eq!(
        set(c"[\"pods\",\"nodes\"]", false),
        (TATTLER_OK, true, String::new())
    );
    assert_eq!(
        until_synced(r, 1),
        [format!("Synced v1/nodes {}", api.current_rv())]
    );
    assert_eq!(
        set(c"[\"nodes\",\"pods\"]", true),
        (TATTLER_OK, false, String::new())
    );

    for (json, status, needle) in [
        (
            c"{\"pods\":1}",
            TATTLER_ERR_INVALID_RESOURCE,
            "`resources` must be an array of resource names and objects",
        ),
        (
            c"[{\"resource\":\"pods\",\"nmespace\":\"x\"}]",
            TATTLER_ERR_INVALID_RESOURCE,
            "`resources[0].nmespace`",
        ),
        (c"[\"pods!\"]", TATTLER_ERR_INVALID_RESOURCE, "\"pods!\""),
        (c"[]", TATTLER_ERR_INVALID_CONFIG, "nothing to watch"),
        (c"[\"p\xffds\"]", TATTLER_ERR_INVALID_UTF8, "not UTF-8"),
    ] {
        let (st, changed, msg) = set(json, true);
        assert_eq!(st, status, "{json:?}");
        assert!(msg.contains(needle), "{json:?}: {msg}");
        assert!(changed, "*changed written on failure");
    }
    // The text is cut to the buffer, NUL-terminated.
    let mut small = [0xffu8; 6];
    let mut changed = false;
    // SAFETY: a live reader, a valid string, out-pointer and buffer.
    let st = unsafe {
        tattler_set_resources(
            r,
            c"[\"pods!\"]".as_ptr(),
            false,
            &mut changed,
            small.as_mut_ptr().cast(),
            small.len(),
        )
    };
    assert_eq!((st, text(&small).len()), (TATTLER_ERR_INVALID_RESOURCE, 5));
    // The namespace of the open configuration still applies.
    assert!(api.wait_open_watches(2, Duration::from_secs(10)));
    let pods_requests: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|q| q.contains("pods"))
        .collect();
    assert!(
        pods_requests
            .iter()
            .all(|q| q.contains("/namespaces/ns/pods")),
        "{pods_requests:?}"
    );
    // SAFETY: a live reader; NULL `changed` and error buffer are allowed.
    let st = unsafe {
        tattler_set_resources(r, c"[\"pods\"]".as_ptr(), true, null_mut(), null_mut(), 0)
    };
    assert_eq!(st, TATTLER_OK);
    close(r);
}

#[test]
fn stats_are_json_and_never_cut() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "a"));
    let r = open(&config(&api, &["pods", "apps/v1/deployments"])).unwrap();
    until_synced(r, 2);
    let mut needed = 0;
    // SAFETY: a live reader; NULL buffer with length 0 asks for the size.
    let st = unsafe { tattler_stats_json(r, null_mut(), 0, &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    let mut buf = vec![0xffu8; needed - 1];
    // SAFETY: a live reader and a buffer of buf.len() bytes.
    let st = unsafe { tattler_stats_json(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    assert!(buf.iter().all(|&b| b == 0xff), "buffer written on failure");
    let mut buf = vec![0xffu8; needed];
    // SAFETY: as above.
    let st = unsafe { tattler_stats_json(r, buf.as_mut_ptr().cast(), buf.len(), null_mut()) };
    assert_eq!(st, TATTLER_OK);
    let stats: serde_json::Value = serde_json::from_str(&text(&buf)).unwrap();
    assert_eq!(stats[0]["resource"], "v1/pods");
    assert_eq!(stats[0]["objects"], 1);
    assert_eq!(stats[0]["synced"], true);
    assert_eq!(stats[1]["resource"], "apps/v1/deployments");
    assert_eq!(stats.as_array().unwrap().len(), 2);
    assert_eq!(stats[0].as_object().unwrap().len(), 14, "{stats}");
    assert_eq!(stats[0]["skipped"], 0);
    assert_eq!(stats[0]["last_error"], serde_json::Value::Null);
    close(r);
}

#[test]
fn status_texts_and_version() {
    let mut seen = std::collections::HashSet::new();
    for n in (0..3).chain(100..114) {
        let t = s(tattler_status_str(n));
        assert!(tattler_status::from_int(n).is_some(), "{n} is a status");
        assert!(
            !t.is_empty() && t != "unknown status" && seen.insert(t.clone()),
            "{n}: {t}"
        );
    }
    for n in [-1, 3, 99, 114, c_int::MAX] {
        assert_eq!(s(tattler_status_str(n)), "unknown status");
    }
    assert_eq!(TATTLER_ERR_NULL_ARG as c_int, 100);
    assert_eq!(TATTLER_ERR_OTHER as c_int, 110);
    assert_eq!(TATTLER_ERR_REENTRANT as c_int, 111);
    assert_eq!(TATTLER_ERR_INVALID_CHECKPOINT as c_int, 112);
    assert_eq!(s(tattler_version()), env!("CARGO_PKG_VERSION"));
}

#[test]
fn change_numbers_are_the_rust_ones() {
    use kube_tattler::Change;
    for c in [
        Change::Add,
        Change::Update,
        Change::Delete,
        Change::Snapshot,
        Change::Synced,
        Change::Error,
    ] {
        assert_eq!(tattler_change::from(c) as u8, c as u8, "{c}");
    }
}

/// Log lines the callback received: (level, target, message).
type Lines = std::sync::Mutex<Vec<(c_int, String, String)>>;

unsafe extern "C" fn collect(
    user: *mut c_void,
    level: c_int,
    target: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: `user` is the Lines the test installed; the strings live during the call.
    let lines = unsafe { &*(user as *const Lines) };
    lines.lock().unwrap().push((level, s(target), s(msg)));
}

#[test]
fn log_lines_reach_the_callback_until_it_is_removed() {
    let lines: &'static Lines = Box::leak(Box::default());
    let user = lines as *const Lines as *mut c_void;
    assert_eq!(tattler_set_log_level(6), TATTLER_ERR_INVALID_ARG);
    assert_eq!(tattler_set_log_level(-1), TATTLER_ERR_INVALID_ARG);
    assert_eq!(
        tattler_set_log_level(tattler_log_level::TATTLER_LOG_INFO as c_int),
        TATTLER_OK
    );
    // SAFETY: `collect` may be called from any thread with `user` for ever (leaked).
    let st = unsafe { tattler_set_log_callback(Some(collect), user) };
    assert_eq!(st, TATTLER_OK);

    let api = FakeApi::start();
    let r = open(&config(&api, &["configmaps"])).unwrap();
    until_synced(r, 1);
    close(r);
    // SAFETY: removing the callback.
    let st = unsafe { tattler_set_log_callback(None, null_mut()) };
    assert_eq!(st, TATTLER_OK);
    let got = lines.lock().unwrap().clone();
    let ours: Vec<_> = got
        .iter()
        .filter(|(_, _, m)| m.contains(&api.url()))
        .collect();
    assert!(
        ours.iter()
            .any(|(level, target, _)| *level == 3 && target.starts_with("kube_tattler")),
        "{got:?}"
    );
    assert!(
        got.iter().all(|(level, _, _)| (1..=3).contains(level)),
        "a level above INFO passed: {got:?}"
    );

    let before = lines.lock().unwrap().len();
    let r = open(&config(&api, &["configmaps"])).unwrap();
    until_synced(r, 1);
    close(r);
    assert_eq!(lines.lock().unwrap().len(), before, "called after removal");
}

#[test]
fn close_only_drops_the_creators_reference() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    // What a call in progress on another thread holds.
    let in_call = crate::reader::lookup(r).unwrap();
    close(r);
    assert!(in_call.reader.is_stopped(), "close stops at once");
    assert!(
        in_call
            .reader
            .next_timeout(Duration::from_secs(10))
            .is_err(),
        "stopped and drained"
    );
    assert_eq!(
        std::sync::Arc::strong_count(&in_call),
        1,
        "only the call's reference is left"
    );
    drop(in_call);
    assert!(
        api.wait_open_watches(0, Duration::from_secs(10)),
        "the last reference ended the streams"
    );
}

/// A pod scheduled to `node`.
fn pod_on(namespace: &str, name: &str, node: &str) -> serde_json::Value {
    let mut p = FakeApi::pod(namespace, name);
    p["spec"]["nodeName"] = serde_json::json!(node);
    p
}

/// The object of an entry, parsed; frees the entry.
fn object_of(e: *mut tattler_entry) -> serde_json::Value {
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

#[test]
fn a_node_agent_configuration_streams_one_node_and_its_pods() {
    let api = FakeApi::start();
    let rv_a = api.apply("pods", pod_on("shop", "a", "n1"));
    api.apply("pods", pod_on("shop", "b", "n2"));
    let rv_n1 = api.apply("nodes", FakeApi::object(None, "n1"));
    api.apply("nodes", FakeApi::object(None, "n2"));
    let rv_cm = api.apply("configmaps", FakeApi::object(Some("a"), "cm"));
    api.apply("configmaps", FakeApi::object(Some("c"), "elsewhere"));
    let r = open(
        &serde_json::json!({
            "server": api.url(),
            "namespace": "ignored-by-objects",
            "resources": [
                {"resource": "pods", "field_selector": "spec.nodeName=n1"},
                {"resource": "nodes", "field_selector": "metadata.name=n1"},
                // Two namespaces: one stream each, one resource (one Synced).
                {"resource": "configmaps", "namespaces": ["a", "b"]},
            ]
        })
        .to_string(),
    )
    .unwrap();
    let mut lines = until_synced(r, 3);
    lines.sort();
    let cur = api.current_rv();
    assert_eq!(
        lines,
        [
            format!("Add /n1 {rv_n1}"),
            format!("Add a/cm {rv_cm}"),
            format!("Add shop/a {rv_a}"),
            format!("Synced v1/configmaps {cur}"),
            format!("Synced v1/nodes {cur}"),
            format!("Synced v1/pods {cur}"),
        ]
    );
    // A pod moving to n1 comes in; the other node never does.
    assert!(api.wait_open_watches(4, Duration::from_secs(10)));
    api.apply("nodes", FakeApi::object(None, "n2"));
    let rv_b = api.apply("pods", pod_on("shop", "b", "n1"));
    assert_eq!(line(next(r, WAIT_MS).1), format!("Add shop/b {rv_b}"));

    // set_resources takes objects too: the same two, and configmaps of one
    // namespace, metadata only, instead of the two namespaces.
    let json = CString::new(
        r#"[{"resource":"pods","field_selector":"spec.nodeName=n1"},
            {"resource":"nodes","field_selector":"metadata.name=n1"},
            {"resource":"configmaps","namespace":"a","metadata_only":true}]"#,
    )
    .unwrap();
    assert_eq!(
        set_resources(r, json.as_ptr(), false, false),
        (TATTLER_OK, true, String::new())
    );
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let obj = object_of(e);
    assert_eq!(
        (
            obj["kind"].as_str(),
            obj["apiVersion"].as_str(),
            obj["metadata"]["name"].as_str(),
            obj["metadata"]["resourceVersion"].as_str()
        ),
        (
            Some("PartialObjectMetadata"),
            Some("meta.k8s.io/v1"),
            Some("cm"),
            Some(rv_cm.to_string().as_str())
        ),
        "{obj}"
    );
    assert_eq!(obj.as_object().unwrap().len(), 3, "only metadata: {obj}");
    assert_eq!(
        line(next(r, WAIT_MS).1),
        format!("Synced v1/configmaps {}", api.current_rv())
    );
    // The same list again changes nothing; the two namespaces' streams went.
    assert_eq!(
        set_resources(r, json.as_ptr(), false, true),
        (TATTLER_OK, false, String::new())
    );
    assert!(api.wait_open_watches(3, Duration::from_secs(10)));
    close(r);
}

/// `tattler_metrics_text` into a buffer of exactly the size asked for.
fn metrics(r: *mut tattler_reader) -> String {
    let mut needed = 0;
    // SAFETY: a live reader; NULL buffer with length 0 asks for the size.
    let st = unsafe { tattler_metrics_text(r, null_mut(), 0, &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    // Values move between two calls: room for a few more digits.
    let mut buf = vec![0xffu8; needed + 64];
    let mut needed2 = 0;
    // SAFETY: a live reader and a buffer of buf.len() bytes.
    let st = unsafe { tattler_metrics_text(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed2) };
    assert_eq!(st, TATTLER_OK);
    assert_eq!(buf[needed2 - 1], 0, "NUL-terminated where *needed says");
    text(&buf)
}

#[test]
fn metrics_are_prometheus_text_and_never_cut() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "a"));
    api.apply("pods", FakeApi::pod("default", "b"));
    let r = open(
        &serde_json::json!({
            "server": api.url(),
            "resources": ["pods", {"resource": "nodes", "field_selector": "metadata.name=n1", "metadata_only": true}]
        })
        .to_string(),
    )
    .unwrap();
    until_synced(r, 2);
    // Too small: untouched, and *needed says how much.
    let mut needed = 0;
    let mut small = [0xffu8; 16];
    // SAFETY: a live reader and a buffer of small.len() bytes.
    let st =
        unsafe { tattler_metrics_text(r, small.as_mut_ptr().cast(), small.len(), &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    assert!(needed > 500, "{needed}");
    assert!(
        small.iter().all(|&b| b == 0xff),
        "buffer written on failure"
    );
    // SAFETY: NULL buffer with a length, and a NULL reader.
    unsafe {
        assert_eq!(
            tattler_metrics_text(r, null_mut(), 10, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(
            tattler_metrics_text(null_mut(), null_mut(), 0, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
    }

    let text = metrics(r);
    let mut types = Vec::new();
    let mut samples = std::collections::BTreeMap::new();
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("# TYPE ") {
            types.push(t.to_string());
        } else if !l.starts_with("# HELP ") {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l:?}"));
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("{l:?}"));
            samples.insert(series.to_string(), v);
        }
    }
    assert_eq!(
        types,
        [
            "tattler_events_total counter",
            "tattler_received_bytes_total counter",
            "tattler_reconnects_total counter",
            "tattler_resyncs_total counter",
            "tattler_relists_total counter",
            "tattler_stale_drops_total counter",
            "tattler_skipped_total counter",
            "tattler_objects gauge",
            "tattler_synced gauge",
            "tattler_failed gauge",
            "tattler_list_fallback gauge",
            "tattler_seconds_since_sync gauge",
            "tattler_channel_entries gauge",
            "tattler_channel_bytes gauge",
        ],
        "{text}"
    );
    let pods = r#"{resource="v1/pods"}"#;
    let nodes = r#"{resource="v1/nodes",field_selector="metadata.name=n1",metadata_only="true"}"#;
    for (series, want) in [
        (format!("tattler_objects{pods}"), 2.0),
        (format!("tattler_objects{nodes}"), 0.0),
        (format!("tattler_synced{pods}"), 1.0),
        (format!("tattler_synced{nodes}"), 1.0),
        (format!("tattler_failed{pods}"), 0.0),
        (format!("tattler_reconnects_total{pods}"), 0.0),
        ("tattler_channel_entries".to_string(), 0.0),
        ("tattler_channel_bytes".to_string(), 0.0),
    ] {
        assert_eq!(samples.get(&series), Some(&want), "{series} in\n{text}");
    }
    assert!(samples[&format!("tattler_received_bytes_total{pods}")] > 0.0);
    let since = samples[&format!("tattler_seconds_since_sync{pods}")];
    assert!((0.0..60.0).contains(&since), "{since}");
    // 14 series: 12 per stream for 2 streams, 2 for the reader.
    assert_eq!(samples.len(), 12 * 2 + 2, "{text}");

    // An entry waiting in the channel shows.
    assert!(api.wait_open_watches(2, Duration::from_secs(10)));
    api.apply("pods", FakeApi::pod("default", "c"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !metrics(r).contains("\ntattler_channel_entries 1\n") {
        assert!(Instant::now() < deadline, "{}", metrics(r));
        std::thread::sleep(Duration::from_millis(10));
    }
    close(r);
}

/// `tattler_checkpoint` into a buffer of exactly the size it asks for.
fn checkpoint(r: *mut tattler_reader) -> Vec<u8> {
    let mut needed = 0;
    // SAFETY: a live reader; NULL buffer with length 0 asks for the size.
    let st = unsafe { tattler_checkpoint(r, null_mut(), 0, &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    let mut small = vec![0xffu8; needed - 1];
    let mut again = 0;
    // SAFETY: a live reader and a buffer of small.len() bytes.
    let st = unsafe { tattler_checkpoint(r, small.as_mut_ptr(), small.len(), &mut again) };
    assert_eq!((st, again), (TATTLER_ERR_BUFFER_TOO_SMALL, needed));
    assert!(
        small.iter().all(|&b| b == 0xff),
        "buffer written on failure"
    );
    let mut buf = vec![0u8; needed];
    // SAFETY: as above, with room for it all.
    let st = unsafe { tattler_checkpoint(r, buf.as_mut_ptr(), buf.len(), &mut again) };
    assert_eq!(
        (st, again),
        (TATTLER_OK, needed),
        "the same size once drained"
    );
    buf
}

/// `tattler_open_resume`, which must succeed.
fn open_resume(json: &str, cp: &[u8]) -> *mut tattler_reader {
    let json = CString::new(json).unwrap();
    let mut r = null_mut();
    let mut err = [0u8; 512];
    // SAFETY: valid string, bytes, out-pointer and buffer.
    let st = unsafe {
        tattler_open_resume(
            json.as_ptr(),
            cp.as_ptr(),
            cp.len(),
            &mut r,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    assert_eq!(st, TATTLER_OK, "{}", text(&err));
    r
}

/// Stops the reader and takes every entry left, as a consumer shutting down does.
fn stop_and_drain(r: *mut tattler_reader) -> Vec<String> {
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
fn entries(r: *mut tattler_reader, n: usize) -> Vec<String> {
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

#[test]
fn a_checkpoint_resumes_with_only_what_changed_meanwhile() {
    for compacted in [false, true] {
        let api = FakeApi::start();
        api.apply("pods", FakeApi::pod("ns", "a"));
        let rv_b = api.apply("pods", FakeApi::pod("ns", "b"));
        let rv_c = api.apply("pods", FakeApi::pod("ns", "c"));
        let cfg = config(&api, &["pods"]);
        let r = open(&cfg).unwrap();
        until_synced(r, 1);
        assert_eq!(stop_and_drain(r), Vec::<String>::new());
        let cp = checkpoint(r);
        close(r);
        let doc: serde_json::Value = serde_json::from_slice(&cp).unwrap();
        assert_eq!(doc["tattler_checkpoint"], 1, "{doc}");
        let held = doc["resources"][0]["objects"].as_array().unwrap().len();
        assert_eq!((doc["resources"].as_array().unwrap().len(), held), (1, 3));

        // While no reader runs.
        let rv_a2 = api.apply("pods", FakeApi::pod("ns", "a"));
        let rv_del = api.delete("pods", Some("ns"), "b").unwrap();
        let rv_d = api.apply("pods", FakeApi::pod("ns", "d"));
        if compacted {
            api.compact();
        }
        let r = open_resume(&cfg, &cp);
        // One Synced, once what changed meanwhile came (by the replayed
        // watch, or by a re-sync against the restored state).
        let got = entries(r, 1);
        assert_eq!(
            got.last().unwrap(),
            &format!("Synced v1/pods {}", api.current_rv()),
            "{got:?}"
        );
        if compacted {
            let mut middle = got[..got.len() - 1].to_vec();
            middle.sort();
            assert_eq!(
                middle,
                [
                    format!("Add ns/d {rv_d}"),
                    format!("Delete ns/b {rv_b} (inferred)"),
                    format!("Snapshot ns/c {rv_c}"),
                    format!("Update ns/a {rv_a2}"),
                ],
                "{got:?}"
            );
        } else {
            assert_eq!(
                got[..got.len() - 1],
                [
                    format!("Update ns/a {rv_a2}"),
                    format!("Delete ns/b {rv_del}"),
                    format!("Add ns/d {rv_d}"),
                ]
            );
        }
        close(r);
    }
}

#[test]
fn a_checkpoint_applies_only_to_the_same_scope() {
    let api = FakeApi::start();
    let rv = api.apply("pods", FakeApi::pod("ns", "a"));
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    stop_and_drain(r);
    let cp = checkpoint(r);
    close(r);
    // The same pods metadata-only, and nodes: neither is in the checkpoint,
    // both sync in full.
    let cfg = serde_json::json!({
        "server": api.url(),
        "resources": [{"resource": "pods", "metadata_only": true}, "nodes"],
    })
    .to_string();
    let r = open_resume(&cfg, &cp);
    let mut got = entries(r, 2);
    got.sort();
    let cur = api.current_rv();
    assert_eq!(
        got,
        [
            format!("Add ns/a {rv}"),
            format!("Synced v1/nodes {cur}"),
            format!("Synced v1/pods {cur}")
        ]
    );
    close(r);
}

#[test]
fn bad_checkpoints_are_refused_and_none_is_an_open() {
    let api = FakeApi::start();
    let cfg = CString::new(config(&api, &["pods"])).unwrap();
    let cases: [(&[u8], &str); 4] = [
        // A part without a resume point is a re-sync against its objects;
        // an object without a resourceVersion is damaged.
        (b"not json", "checkpoint: not a tattler checkpoint (line 1, column"),
        (
            br#"{"tattler_checkpoint":9,"resources":[]}"#,
            "checkpoint: version 9",
        ),
        (br#"{"tattler_checkpoint":1,"resou"#, "checkpoint: not a tattler checkpoint"),
        (
            br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","resource_version":"","objects":[["ns","a","u",""]]}]}"#,
            "resources[0].objects[0]",
        ),
    ];
    for (bytes, needle) in cases {
        let sentinel = ptr::dangling_mut::<tattler_reader>();
        let mut r = sentinel;
        let mut err = [0u8; 512];
        // SAFETY: valid string, bytes, out-pointer and buffer.
        let st = unsafe {
            tattler_open_resume(
                cfg.as_ptr(),
                bytes.as_ptr(),
                bytes.len(),
                &mut r,
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        let msg = text(&err);
        assert_eq!(st, TATTLER_ERR_INVALID_CHECKPOINT, "{msg}");
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
        assert_eq!(r, sentinel, "*out written on failure");
    }
    let mut r = null_mut();
    let mut err = [0u8; 64];
    // SAFETY: NULL checkpoint with a length (refused), then with 0 (an open).
    unsafe {
        assert_eq!(
            tattler_open_resume(cfg.as_ptr(), null(), 5, &mut r, err.as_mut_ptr().cast(), 64),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(text(&err), "checkpoint is NULL");
        // A bad configuration is still the configuration's failure.
        assert_eq!(
            tattler_open_resume(c"{".as_ptr(), null(), 0, &mut r, null_mut(), 0),
            TATTLER_ERR_INVALID_CONFIG
        );
        assert!(r.is_null());
        assert_eq!(
            tattler_open_resume(cfg.as_ptr(), null(), 0, &mut r, null_mut(), 0),
            TATTLER_OK
        );
        let mut needed = 0;
        assert_eq!(
            tattler_checkpoint(r, null_mut(), 3, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(
            tattler_checkpoint(null_mut(), null_mut(), 0, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
    }
    assert_eq!(
        until_synced(r, 1),
        [format!("Synced v1/pods {}", api.current_rv())]
    );
    close(r);
}

// Misuse of handles: every case is refused with TATTLER_ERR_INVALID_HANDLE
// (or a getter's "no entry" value), the pointer never followed. Under ASan
// the same cases run from C (tests/programs/misuse.c).

/// Every call on a reader that takes a status, on `r`: all must refuse it.
fn every_reader_call(r: *mut tattler_reader) -> Vec<tattler_status> {
    let mut e = ptr::dangling_mut::<tattler_entry>();
    let mut needed = 7usize;
    let mut buf = [0xffu8; 64];
    // SAFETY: valid out-pointers and buffers; `r` is what is under test.
    let sts = unsafe {
        vec![
            tattler_next_entry(r, 0, &mut e),
            tattler_next_entry(r, -1, &mut e),
            tattler_stats_json(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed),
            tattler_metrics_text(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed),
            tattler_checkpoint(r, buf.as_mut_ptr(), buf.len(), &mut needed),
        ]
    };
    assert_eq!(e, ptr::dangling_mut(), "*out written");
    assert_eq!(needed, 7, "*needed written");
    assert!(buf.iter().all(|&b| b == 0xff), "buffer written");
    let (st, changed, msg) = set_resources(r, c"[\"pods\"]".as_ptr(), false, true);
    assert_eq!(
        (changed, msg.as_str()),
        (
            true,
            "r is not an open reader (closed already, or not from tattler_open)"
        )
    );
    // No status: nothing happens (a warning is logged).
    tattler_stop(r);
    tattler_wake(r);
    [sts, vec![st]].concat()
}

/// Every entry getter on `e`: all must give their "no entry" value.
fn assert_no_entry(e: *mut tattler_entry) {
    assert_eq!(tattler_entry_change(e), tattler_change::TATTLER_CHANGE_NONE);
    for getter in [
        tattler_entry_group,
        tattler_entry_version,
        tattler_entry_resource,
        tattler_entry_kind,
        tattler_entry_namespace,
        tattler_entry_name,
        tattler_entry_uid,
        tattler_entry_resource_version_str,
        tattler_entry_error_reason,
        tattler_entry_error_message,
    ] {
        assert_eq!(s(getter(e)), "");
    }
    assert_eq!(tattler_entry_resource_version(e), 0);
    assert!(!tattler_entry_inferred(e));
    assert!(!tattler_entry_error_ended(e));
    assert_eq!(tattler_entry_error_code(e), 0);
    let mut len = 99;
    // SAFETY: a valid out-pointer; `e` is what is under test.
    assert!(unsafe { tattler_entry_object(e, &mut len) }.is_null());
    assert_eq!(len, 0);
}

const REFUSED: [tattler_status; 6] = [TATTLER_ERR_INVALID_HANDLE; 6];

#[test]
fn a_second_close_is_refused_not_a_double_free() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    assert_eq!(tattler_close(r), TATTLER_OK);
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    assert!(api.wait_open_watches(0, Duration::from_secs(10)));
}

#[test]
fn calls_after_close_are_refused_at_once() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    close(r);
    let t = Instant::now();
    // The waiting next_entry among them: refused, not waited out.
    assert_eq!(every_reader_call(r), REFUSED);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // A new reader is not reached through the old pointer.
    let r2 = open(&config(&api, &["pods"])).unwrap();
    assert_ne!(r2, r, "a closed reader's handle came back at once");
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    until_synced(r2, 1);
    close(r2);
}

#[test]
fn a_second_entry_free_frees_nothing_and_getters_see_no_entry() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, add) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    assert!(crate::entry::is_live(add));
    assert_eq!(s(tattler_entry_name(add)), "web-1");
    tattler_entry_free(add);
    assert!(!crate::entry::is_live(add));
    assert_no_entry(add);
    tattler_entry_free(add);
    // The next entry is not reached through the freed one's pointer: its
    // allocation may well sit where the first one's was.
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    assert_ne!(synced, add);
    tattler_entry_free(add);
    assert!(crate::entry::is_live(synced));
    assert_eq!(
        tattler_entry_change(synced),
        tattler_change::TATTLER_CHANGE_SYNCED
    );
    tattler_entry_free(synced);
    assert_no_entry(synced);
    close(r);
}

#[test]
fn foreign_pointers_are_refused_not_followed() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    // Garbage behind them, and addresses no allocation has: none is read.
    let mut garbage = [0xa5u8; 64];
    let foreign = [
        garbage.as_mut_ptr(),
        ptr::dangling_mut::<u8>(),
        ptr::without_provenance_mut(1),
        ptr::without_provenance_mut(usize::MAX - 7),
        // The other kind's handle.
        e.cast::<u8>(),
        r.cast::<u8>(),
    ];
    for p in foreign {
        if p != r.cast() {
            assert_eq!(every_reader_call(p.cast()), REFUSED, "{p:?}");
            assert_eq!(tattler_close(p.cast()), TATTLER_ERR_INVALID_HANDLE);
        }
        if p != e.cast() {
            assert_no_entry(p.cast());
            tattler_entry_free(p.cast());
        }
    }
    assert!(garbage.iter().all(|&b| b == 0xa5));
    // Both handles work on.
    assert_eq!(s(tattler_entry_name(e)), "web-1");
    tattler_entry_free(e);
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    tattler_entry_free(synced);
    close(r);
}

#[test]
fn calls_racing_a_close_on_other_threads_are_memory_safe() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let addr = r as usize;
    let mut callers = Vec::new();
    for _ in 0..2 {
        callers.push(std::thread::spawn(move || {
            let r = addr as *mut tattler_reader;
            let mut seen: Vec<tattler_status> = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(20);
            // Calls until they are refused: whatever comes first is a
            // status of the reader alive or stopped, never anything else.
            loop {
                assert!(Instant::now() < deadline, "never refused: {seen:?}");
                let (st, e) = next(r, 1);
                tattler_entry_free(e);
                let mut needed = 0;
                // SAFETY: a valid out-pointer; `r` may be closed meanwhile.
                let stats = unsafe { tattler_stats_json(r, null_mut(), 0, &mut needed) };
                if !seen.contains(&st) {
                    seen.push(st);
                }
                assert!(
                    [
                        TATTLER_TIMEOUT,
                        TATTLER_CLOSED,
                        TATTLER_OK,
                        TATTLER_ERR_INVALID_HANDLE
                    ]
                    .contains(&st),
                    "{st:?}"
                );
                assert!(
                    [TATTLER_ERR_BUFFER_TOO_SMALL, TATTLER_ERR_INVALID_HANDLE].contains(&stats),
                    "{stats:?}"
                );
                if st == TATTLER_ERR_INVALID_HANDLE {
                    break;
                }
            }
            seen
        }));
    }
    // Two closes racing each other too: one of them closes.
    let closers: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || tattler_close(addr as *mut tattler_reader)))
        .collect();
    let mut sts: Vec<_> = closers.into_iter().map(|t| t.join().unwrap()).collect();
    sts.sort_by_key(|s| *s as c_int);
    assert_eq!(sts, [TATTLER_OK, TATTLER_ERR_INVALID_HANDLE]);
    for c in callers {
        let seen = c.join().unwrap();
        assert_eq!(seen.last(), Some(&TATTLER_ERR_INVALID_HANDLE), "{seen:?}");
    }
    // Every call is refused from now on, and the streams are gone.
    assert_eq!(every_reader_call(addr as *mut tattler_reader), REFUSED);
    assert!(api.wait_open_watches(0, Duration::from_secs(10)));
}

#[test]
fn getters_racing_a_free_on_another_thread_see_the_entry_or_none() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let addr = e as usize;
    let (started_tx, started_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let e = addr as *mut tattler_entry;
        let mut names = 0u64;
        loop {
            // Copied before the next call: what a getter lends dies with a
            // free, which may come between two calls.
            let change = tattler_entry_change(e);
            if names == 0 {
                started_tx.send(()).unwrap();
            }
            if change == tattler_change::TATTLER_CHANGE_NONE {
                return names;
            }
            assert_eq!(change, tattler_change::TATTLER_CHANGE_ADD);
            names += 1;
        }
    });
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    tattler_entry_free(e);
    assert!(reader.join().unwrap() > 0);
    assert_no_entry(e);
    close(r);
}

/// The cost of checking handles, in ns per call (run in release):
/// `cargo test --release -p tattler-ffi --lib bench_handle_checks -- --ignored --nocapture`
#[test]
#[ignore = "a micro benchmark; run it in release with --ignored --nocapture"]
fn bench_handle_checks() {
    const N: u64 = 5_000_000;
    let api = FakeApi::start();
    for i in 0..1030 {
        api.apply("pods", FakeApi::pod("default", &format!("web-{i}")));
    }
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let ns = |d: Duration| d.as_nanos() as f64 / N as f64;
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        for _ in 0..N {
            f();
        }
        ns(t.elapsed())
    };
    // Some entries live beside it, as in a consumer that holds a batch.
    let mut held = Vec::new();
    for live in [1usize, 64, 1024] {
        while held.len() + 1 < live {
            held.push(next(r, WAIT_MS).1);
        }
        let unchecked = ns(crate::entry::name_unchecked(e, N));
        let checked = time(&|| {
            std::hint::black_box(tattler_entry_name(std::hint::black_box(e)));
        });
        let change = time(&|| {
            std::hint::black_box(tattler_entry_change(std::hint::black_box(e)));
        });
        println!(
            "{live} live entries: tattler_entry_name {checked:.1} ns (unchecked {unchecked:.1} ns, +{:.1}), tattler_entry_change {change:.1} ns",
            checked - unchecked
        );
    }
    let null = time(&|| {
        std::hint::black_box(tattler_entry_name(std::hint::black_box(null())));
    });
    let reader = time(&|| {
        std::hint::black_box(crate::reader::lookup(std::hint::black_box(r)).ok());
    });
    println!("tattler_entry_name(NULL) {null:.1} ns; a reader lookup (lock, Arc clone and drop) {reader:.1} ns");
    // Two threads reading their own entries at once: the one lock is shared.
    let (st, e2) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let per_thread: Vec<f64> = [e as usize, e2 as usize]
        .map(|addr| {
            std::thread::spawn(move || {
                let e = addr as *mut tattler_entry;
                let t = Instant::now();
                for _ in 0..N {
                    std::hint::black_box(tattler_entry_name(std::hint::black_box(e)));
                }
                ns(t.elapsed())
            })
        })
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    println!("two threads at once: tattler_entry_name {per_thread:.1?} ns each");
    for h in held {
        tattler_entry_free(h);
    }
    tattler_entry_free(e);
    tattler_entry_free(e2);
    close(r);
}

/// Whether `fd` is readable within `ms`.
#[cfg(target_os = "linux")]
fn readable(fd: c_int, ms: u16) -> bool {
    use nix::poll::{poll, PollFd, PollFlags};
    // The fd stays open while the reader does: the tests close it after.
    let fd = unsafe_borrow(fd);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, ms).unwrap() == 1
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN))
}

#[cfg(target_os = "linux")]
fn unsafe_borrow(fd: c_int) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: the reader owns the fd and outlives every poll of these tests.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

#[test]
#[cfg(target_os = "linux")]
fn the_readiness_fd_is_readable_exactly_while_entries_wait() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("shop", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    assert_eq!(tattler_fd(null_mut()), -1);
    let fd = tattler_fd(r);
    assert!(fd >= 0);
    assert_eq!(tattler_fd(r), fd, "one fd per reader");
    // Readable until the Add and Synced are taken and a TIMEOUT seen.
    let mut got = Vec::new();
    while got.len() < 2 {
        assert!(readable(fd, 10_000), "readable while entries come");
        loop {
            let (st, e) = next(r, 0);
            if st == TATTLER_TIMEOUT {
                break;
            }
            assert_eq!(st, TATTLER_OK);
            got.push(line(e));
        }
    }
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(!readable(fd, 0), "cleared once the queue is empty");
    // A new object makes it readable; taking it clears it (the last one).
    api.apply("pods", FakeApi::pod("shop", "web-2"));
    assert!(readable(fd, 10_000), "readable for the new entry");
    let (st, e) = next(r, 0);
    assert_eq!(st, TATTLER_OK);
    let l = line(e);
    assert!(l.starts_with("Add shop/web-2"), "{l}");
    assert!(!readable(fd, 0), "taking the last entry clears it");
    // A wake does not touch it; a stop makes it readable for good.
    tattler_wake(r);
    assert!(!readable(fd, 0));
    tattler_stop(r);
    assert!(readable(fd, 10_000), "readable once stopped");
    assert_eq!(next(r, 0).0, TATTLER_CLOSED);
    assert!(readable(fd, 0), "still readable after CLOSED");
    close(r);
    assert_eq!(tattler_fd(r), -1, "closed");
}
