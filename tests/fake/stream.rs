//! The core behaviours of a resource stream, against the scripted fake apiserver.

use std::time::{Duration, Instant};

use crate::common::*;
use kube_tattler::{Change, Reader};
use tattler_fakeapi::{FakeApi, Fault};

const WATCH_LIST: &str =
    "GET /api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// What `synced_pods`'s reader is told by a re-sync in which nothing changed.
const RESYNCED: [&str; 5] = [
    "Snapshot a/p1",
    "Snapshot a/p2",
    "Snapshot b/p3",
    "Stale pods Resyncing",
    "Synced pods",
];

fn watch_from(rv: u64) -> String {
    format!("GET /api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion={rv}")
}

/// Three pods in two namespaces, and a reader that has synced them.
fn synced_pods(api: &FakeApi) -> Reader {
    pod(api, "a", "p1");
    pod(api, "a", "p2");
    pod(api, "b", "p3");
    let r = open(api, &["pods"]);
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Add a/p2", "Add b/p3", "Synced pods"]
    );
    r
}

#[test]
fn initial_state_then_live_changes() {
    let _w = Watchdog::new("initial_state_then_live_changes", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    let rv = pod(&api, "a", "p1");
    let e = next(&r);
    assert_eq!(
        (show(&e), e.resource_version().unwrap_or(0)),
        ("Update a/p1".to_string(), rv)
    );
    let mut sent = api.get("pods", Some("a"), "p1").unwrap();
    let got: serde_json::Value = serde_json::from_slice(e.object().unwrap()).unwrap();
    // Scrubbing is on by default: env values are redacted, references stay.
    for var in sent["spec"]["containers"][0]["env"].as_array_mut().unwrap() {
        if var.get("value").is_some() {
            var["value"] = "REDACTED".into();
        }
    }
    assert_eq!(got, sent);
    assert_eq!(e.uid(), sent["metadata"]["uid"].as_str().unwrap());
    assert_eq!(
        (e.resource().kind.as_str(), e.resource().group.as_str()),
        ("Pod", "")
    );
    let rv = api.delete("pods", Some("b"), "p3").unwrap();
    let e = next(&r);
    assert_eq!(
        (show(&e), e.resource_version().unwrap_or(0), e.inferred()),
        ("Delete b/p3".into(), rv, false)
    );
    pod(&api, "b", "p4");
    assert_eq!(take(&r, 1), ["Add b/p4"]);
    assert_eq!(requests(&api), [WATCH_LIST]);
    let s = &r.stats()[0];
    assert_eq!(
        (s.resource.as_str(), s.synced, s.objects, s.reconnects),
        ("v1/pods", true, 3, 0)
    );
    assert!(s.events >= 7 && s.bytes > 0, "{s:?}");
}

#[test]
fn the_object_is_handed_out_byte_for_byte() {
    let _w = Watchdog::new(
        "the_object_is_handed_out_byte_for_byte",
        Duration::from_secs(30),
    );
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let mut c = config(&api, &["pods"]);
    c.shaping.scrub = false;
    let r = Reader::open(c).unwrap();
    let e = next(&r);
    let expected = serde_json::to_vec(&api.get("pods", Some("a"), "p1").unwrap()).unwrap();
    assert_eq!(e.object().unwrap(), &expected[..]);
    // Objects scrubbing leaves alone are handed out as received too.
    api.apply("configmaps", FakeApi::object(Some("a"), "cm"));
    let r = open(&api, &["configmaps"]);
    let e = next(&r);
    let expected = serde_json::to_vec(&api.get("configmaps", Some("a"), "cm").unwrap()).unwrap();
    assert_eq!(e.object().unwrap(), &expected[..]);
}

#[test]
fn a_normal_end_resumes_from_the_last_resource_version_without_replay() {
    let _w = Watchdog::new("normal_end_resumes", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    let rv = pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Update a/p2"]);
    api.end_watches();
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    pod(&api, "a", "p5");
    assert_eq!(take(&r, 1), ["Add a/p5"]);
    assert_eq!(requests(&api), [WATCH_LIST.to_string(), watch_from(rv)]);
    assert_quiet(&r, Duration::from_millis(200));
}

#[test]
fn bookmarks_move_the_resume_point() {
    let _w = Watchdog::new("bookmarks_move_the_resume_point", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    // Changes elsewhere move the global resourceVersion; a bookmark tells the watcher.
    api.apply("configmaps", FakeApi::object(Some("a"), "cm"));
    api.send_bookmarks();
    let rv = api.current_rv();
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.stats()[0].resource_version != rv.to_string() {
        assert!(Instant::now() < deadline, "bookmark not applied");
        std::thread::yield_now();
    }
    api.end_watches();
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    assert_eq!(requests(&api)[1], watch_from(rv));
    assert_quiet(&r, Duration::from_millis(200));
}

#[test]
fn expired_in_stream_resyncs_and_infers_deletes() {
    let _w = Watchdog::new("expired_in_stream_resyncs", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    let rv = api.current_rv();
    // Hold the client off for 2 s while the cluster changes behind its back.
    api.push_fault(
        "pods",
        Fault::Status {
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: "busy".into(),
            retry_after: Some(2),
        },
    );
    api.end_watches();
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    api.delete("pods", Some("a"), "p2");
    pod(&api, "b", "p3");
    pod(&api, "b", "p6");
    api.compact();
    assert_eq!(
        until_synced(&r),
        [
            "Add b/p6",
            "Delete(inferred) a/p2",
            "Snapshot a/p1",
            // The 503 while synced: told once; the re-sync's Synced ends it.
            "Stale pods Refused 503",
            "Update b/p3",
            "Synced pods"
        ]
    );
    assert_eq!(
        requests(&api),
        [
            WATCH_LIST.to_string(),
            watch_from(rv),
            // Told not current by the 503: the resumed watch catches up,
            // asking nothing first; its history has expired: the full
            // state reads the watch cache, not older than the resume point.
            watch_from(rv),
            format!("{WATCH_LIST}&resourceVersion={rv}")
        ]
    );
    let s = &r.stats()[0];
    assert_eq!((s.resyncs, s.objects), (1, 3));
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
}

#[test]
fn http_410_and_too_large_resource_version_resync() {
    let _w = Watchdog::new("http_410_resync", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    api.push_fault(
        "pods",
        Fault::Status {
            code: 410,
            reason: "Expired".into(),
            message: "gone".into(),
            retry_after: None,
        },
    );
    api.end_watches();
    assert_eq!(until_synced(&r), RESYNCED);
    api.push_fault("pods", Fault::TooLargeInStream);
    api.end_watches();
    assert_eq!(until_synced(&r), RESYNCED);
    assert_eq!(r.stats()[0].resyncs, 2);
}

/// After a watch's 410 the full state reads the watch cache not older than
/// the resume point (client-go's reflector does the same): no consistent
/// read, which waits for a cache that may lag. A server that has not reached
/// that point (restored from a backup) gets a consistent read next.
#[test]
fn after_a_410_the_full_state_reads_the_cache_and_a_too_large_answer_reads_consistently() {
    let _w = Watchdog::new("after_a_410_reads_the_cache", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    let rv = api.current_rv();
    let gone = Fault::Status {
        code: 410,
        reason: "Expired".into(),
        message: "gone".into(),
        retry_after: None,
    };
    api.push_fault("pods", gone.clone());
    api.end_watches();
    assert_eq!(until_synced(&r), RESYNCED);
    let cache_read = format!("{WATCH_LIST}&resourceVersion={rv}");
    assert_eq!(
        requests(&api),
        [WATCH_LIST.to_string(), watch_from(rv), cache_read.clone()]
    );
    let before = requests(&api).len();
    api.push_fault("pods", gone);
    api.push_fault("pods", Fault::TooLargeInStream);
    api.end_watches();
    assert_eq!(until_synced(&r), RESYNCED);
    assert_eq!(
        requests(&api)[before..],
        [watch_from(rv), cache_read, WATCH_LIST.to_string()]
    );
    // The too-large answer began that full state anew (no state was served).
    assert_eq!(r.stats()[0].resyncs, 3);
}

#[test]
fn without_watch_list_it_falls_back_to_paged_list_and_watch() {
    let _w = Watchdog::new("list_fallback", Duration::from_secs(30));
    let api = FakeApi::start();
    api.set_watchlist(false);
    for i in 1..=5 {
        pod(&api, "a", &format!("p{i}"));
    }
    let rv = api.current_rv();
    let mut c = config(&api, &["pods"]);
    c.tuning.page_size = 2;
    let r = Reader::open(c).unwrap();
    let first = next(&r);
    assert_eq!(
        until_synced(&r),
        [
            "Add a/p2",
            "Add a/p3",
            "Add a/p4",
            "Add a/p5",
            "Synced pods"
        ]
    );
    assert_eq!(show(&first), "Add a/p1");
    // LIST items come without kind/apiVersion; tattler restores them.
    let obj: serde_json::Value = serde_json::from_slice(first.object().unwrap()).unwrap();
    assert_eq!(
        (obj["kind"].as_str(), obj["apiVersion"].as_str()),
        (Some("Pod"), Some("v1"))
    );
    assert_eq!(obj["metadata"]["name"], "p1");
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
    let reqs = requests(&api);
    assert_eq!(reqs[0], WATCH_LIST);
    assert_eq!(reqs[1], "GET /api/v1/pods?limit=2");
    assert!(
        reqs[2].starts_with("GET /api/v1/pods?limit=2&continue="),
        "{}",
        reqs[2]
    );
    assert!(
        reqs[3].starts_with("GET /api/v1/pods?limit=2&continue="),
        "{}",
        reqs[3]
    );
    assert_eq!(reqs[4], watch_from(rv));
    assert_eq!(reqs.len(), 5);
    assert!(r.stats()[0].list_fallback);
}

#[test]
fn a_connection_cut_mid_frame_during_the_initial_state_loses_nothing() {
    let _w = Watchdog::new("cut_mid_frame", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    pod(&api, "a", "p2");
    pod(&api, "a", "p3");
    api.push_fault("pods", Fault::CutAfter(1));
    let r = open(&api, &["pods"]);
    // The second attempt at the initial state does not send again what the
    // first one delivered.
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Add a/p2", "Add a/p3", "Synced pods"]
    );
    assert_eq!(requests(&api), [WATCH_LIST, WATCH_LIST]);
    assert_eq!(r.stats()[0].reconnects, 1);
}

#[test]
fn a_cut_after_sync_resumes_from_the_last_event() {
    let _w = Watchdog::new("cut_after_sync", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api);
    api.push_fault("pods", Fault::CutAfter(1));
    api.end_watches();
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    pod(&api, "a", "p1");
    let rv = pod(&api, "a", "p2");
    pod(&api, "a", "p3");
    assert_eq!(take(&r, 3), ["Update a/p1", "Update a/p2", "Add a/p3"]);
    let reqs = requests(&api);
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    assert_eq!(reqs[2], watch_from(rv - 1));
}

#[test]
fn a_stalled_connection_is_dropped_after_the_idle_timeout() {
    let _w = Watchdog::new("idle_stall", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.push_fault("pods", Fault::Stall);
    let mut c = config(&api, &["pods"]);
    c.tuning.idle_timeout = Duration::from_secs(1);
    let start = Instant::now();
    let r = Reader::open(c).unwrap();
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Stale pods Silent", "Synced pods"]
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert_eq!(requests(&api), [WATCH_LIST, WATCH_LIST]);
    assert_eq!(r.stats()[0].reconnects, 1);
}

#[test]
fn retry_after_on_429_is_honoured() {
    let _w = Watchdog::new("retry_after", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.push_fault(
        "pods",
        Fault::Status {
            code: 429,
            reason: "TooManyRequests".into(),
            message: "slow down".into(),
            retry_after: Some(1),
        },
    );
    let start = Instant::now();
    let r = open(&api, &["pods"]);
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Stale pods Throttled 429", "Synced pods"]
    );
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(requests(&api), [WATCH_LIST, WATCH_LIST]);
}

#[test]
fn server_errors_are_retried_with_backoff() {
    let _w = Watchdog::new("server_errors", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    for _ in 0..3 {
        api.push_fault(
            "pods",
            Fault::Status {
                code: 500,
                reason: "InternalError".into(),
                message: "boom".into(),
                retry_after: None,
            },
        );
    }
    let r = open(&api, &["pods"]);
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Stale pods Refused 500", "Synced pods"]
    );
    assert_eq!(requests(&api).len(), 4);
    assert_eq!(r.stats()[0].reconnects, 3);
}

#[test]
fn unauthorized_and_forbidden_stop_one_stream_only() {
    let _w = Watchdog::new("auth_errors", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.apply("nodes", FakeApi::object(None, "n1"));
    api.forbid("nodes", true);
    let r = open(&api, &["pods", "nodes"]);
    let mut got = take(&r, 3);
    got.sort();
    assert_eq!(
        got,
        ["Add a/p1", "Error nodes 403 Forbidden", "Synced pods"]
    );
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
    let s = r.stats();
    assert_eq!((s[0].failed, s[1].failed), (false, true));
    // The failed stream is not retried.
    assert_quiet(&r, Duration::from_millis(300));
    assert_eq!(
        requests(&api)
            .iter()
            .filter(|q| q.contains("/nodes"))
            .count(),
        1
    );

    let api = FakeApi::start();
    api.require_token(Some("right"));
    let mut c = config(&api, &["pods"]);
    c.access.auth = kube_tattler::Auth::Token(kube_tattler::Token::new("wrong"));
    let r = Reader::open(c).unwrap();
    let e = next(&r);
    assert_eq!(show(&e), "Error pods 401 Unauthorized");
    assert!(!format!("{:?} {:?}", e, r.stats()).contains("wrong"));
    let mut c = config(&api, &["pods"]);
    c.access.auth = kube_tattler::Auth::Token(kube_tattler::Token::new("right"));
    let r = Reader::open(c).unwrap();
    assert_eq!(until_synced(&r), ["Synced pods"]);
}

#[test]
fn a_garbage_frame_is_reported_and_skipped_without_a_reconnect() {
    let _w = Watchdog::new("garbage", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.push_fault("pods", Fault::Garbage);
    let r = open(&api, &["pods"]);
    let e = next(&r);
    assert_eq!(show(&e), "Error pods 0 InvalidFrame");
    let err = e.error().unwrap();
    assert!(!err.ended, "the stream goes on");
    assert!(err.message.contains("not a watch event"), "{}", err.message);
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    assert_eq!(requests(&api), [WATCH_LIST]);
    assert_eq!((r.stats()[0].skipped, r.stats()[0].reconnects), (1, 0));
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
}

#[test]
fn an_oversized_object_is_reported_and_the_rest_flows() {
    let _w = Watchdog::new("oversized", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let mut big = FakeApi::pod("a", "big");
    big["metadata"]["annotations"]["blob"] = serde_json::Value::String("x".repeat(100_000));
    api.apply("pods", big);
    let mut c = config(&api, &["pods"]);
    c.tuning.max_frame_bytes = 50_000;
    let r = Reader::open(c).unwrap();
    let got = until_synced(&r);
    assert_eq!(
        got,
        ["Add a/p1", "Error pods 0 FrameTooLarge", "Synced pods"]
    );
}

#[test]
fn selectors_and_namespaces_reach_the_server() {
    let _w = Watchdog::new("selectors", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    pod(&api, "b", "p2");
    let mut c = config(&api, &[]);
    c.resources = vec![kube_tattler::ResourceSpec::parse("pods")
        .unwrap()
        .remove(0)
        .in_namespace("b")];
    let r = Reader::open(c).unwrap();
    assert_eq!(until_synced(&r), ["Add b/p2", "Synced pods"]);
    assert_eq!(
        requests(&api),
        ["GET /api/v1/namespaces/b/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"]
    );
}

#[test]
fn gzip_bodies_are_decoded() {
    let _w = Watchdog::new("gzip", Duration::from_secs(30));
    let api = FakeApi::start();
    api.set_gzip(true);
    pod(&api, "a", "p1");
    let mut c = config(&api, &["pods"]);
    c.tuning.gzip = true;
    let r = Reader::open(c).unwrap();
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
}

#[test]
fn a_slow_consumer_slows_the_stream_and_loses_nothing() {
    let _w = Watchdog::new("slow_consumer", Duration::from_secs(60));
    let api = FakeApi::start();
    for i in 0..200 {
        pod(&api, "a", &format!("p{i:03}"));
    }
    let mut c = config(&api, &["pods"]);
    c.tuning.channel_capacity = 1;
    let r = Reader::open(c).unwrap();
    let mut got = until_synced(&r);
    assert_eq!(got.pop().unwrap(), "Synced pods");
    let want: Vec<String> = (0..200).map(|i| format!("Add a/p{i:03}")).collect();
    assert_eq!(got, want);
}

#[test]
fn close_is_prompt_whatever_the_streams_are_doing() {
    let _w = Watchdog::new("close_is_prompt", Duration::from_secs(30));
    let api = FakeApi::start();
    for i in 0..20 {
        pod(&api, "a", &format!("p{i}"));
    }
    api.push_fault("nodes", Fault::Stall);
    let mut c = config(&api, &["pods", "nodes", "namespaces"]);
    c.tuning.channel_capacity = 1;
    let r = Reader::open(c).unwrap();
    next(&r);
    // pods is blocked on the full channel, nodes stalled, namespaces idle.
    assert!(api.wait_open_watches(3, Duration::from_secs(10)));
    let start = Instant::now();
    r.close();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "close took {:?}",
        start.elapsed()
    );
    assert!(api.wait_open_watches(0, Duration::from_secs(5)));
}

#[test]
fn stop_from_another_thread_wakes_a_blocked_next() {
    let _w = Watchdog::new("stop_wakes_next", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = std::sync::Arc::new(open(&api, &["pods"]));
    assert_eq!(until_synced(&r), ["Synced pods"]);
    let waiter = {
        let r = r.clone();
        std::thread::spawn(move || r.next().map(|e| show(&e)))
    };
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    r.stop();
    assert_eq!(waiter.join().unwrap(), Err(kube_tattler::Closed));
    assert!(r.is_stopped());
    assert_eq!(
        r.try_next().unwrap_err(),
        kube_tattler::TryNextError::Closed
    );
    assert_eq!(r.iter().count(), 0);
}

#[test]
fn custom_resources_learn_their_kind() {
    let _w = Watchdog::new("custom_resources", Duration::from_secs(30));
    let api = FakeApi::start();
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.apply("example.com/v1/widgets", FakeApi::object(Some("a"), "w1"));
    let r = open(&api, &["example.com/v1/widgets"]);
    let e = next(&r);
    assert_eq!(
        (show(&e), e.resource().kind.as_str()),
        ("Add a/w1".to_string(), "Widget")
    );
    assert_eq!(e.change(), Change::Add);
    assert_eq!(take(&r, 1), ["Synced widgets"]);
}

/// An apiserver that restarts answers 403 until its RBAC is loaded: a
/// stream that was allowed before says it is not current and retries, and
/// is current again once allowed (the fleet benchmark saw 231 of 400 streams
/// end for good on it). One that was never allowed ends at once (above).
#[test]
fn a_403_after_being_allowed_is_retried_and_told() {
    let _w = Watchdog::new("forbidden_after_allowed", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    api.forbid("pods", true);
    let n = requests(&api).len();
    api.end_watches();
    assert_eq!(take(&r, 1), ["Stale pods Refused 403"]);
    assert!(api.wait_requests(n + 3, Duration::from_secs(10)), "retried");
    api.forbid("pods", false);
    pod(&api, "a", "p2");
    let mut got = take(&r, 2);
    got.sort();
    assert_eq!(got, ["Add a/p2", "Synced pods"]);
    let s = &r.stats()[0];
    assert!(!s.failed && s.current, "{s:?}");
}
