//! `tattler_reader`: next with its timeouts, stop, wake, close, set_resources,
//! stats and metrics.

// The legacy calls are called here on purpose: C programs link them.
#![allow(deprecated)]

use std::ffi::{CStr, CString};
use std::ptr::{self, null_mut};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

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
    assert_eq!(stats[0].as_object().unwrap().len(), 15, "{stats}");
    assert_eq!(stats[0]["skipped"], 0);
    assert_eq!(stats[0]["other_shard_drops"], 0);
    assert_eq!(stats[0]["last_error"], serde_json::Value::Null);
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
            "tattler_other_shard_drops_total counter",
            "tattler_objects gauge",
            "tattler_synced gauge",
            "tattler_current gauge",
            "tattler_seconds_since_heard gauge",
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
    // 32 series: 15 per stream for 2 streams, 2 for the reader.
    assert_eq!(samples.len(), 15 * 2 + 2, "{text}");

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
