//! Relist by reader swap, a watch set that changes at runtime, and shaping,
//! against the scripted fake apiserver.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use kube_tattler::{Change, Entry, Reader, ResourceSpec};
use tattler_fakeapi::{FakeApi, Fault};

/// Runs `r.relist()` on another thread; join it to learn whether it finished.
fn relist_in_background(r: &Arc<Reader>) -> std::thread::JoinHandle<bool> {
    let r = r.clone();
    std::thread::spawn(move || r.relist())
}

fn synced_pods(api: &FakeApi, n: usize) -> Arc<Reader> {
    for i in 1..=n {
        pod(api, "a", &format!("p{i}"));
    }
    let r = Arc::new(open(api, &["pods"]));
    let got = until_synced(&r);
    assert_eq!(got.len(), n + 1);
    r
}

#[test]
fn a_relist_swaps_in_a_fresh_stream_without_loss_or_doubles() {
    let _w = Watchdog::new("relist_swap", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api, 3);
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
    let relist = relist_in_background(&r);
    assert_eq!(
        until_synced(&r),
        [
            "Snapshot a/p1",
            "Snapshot a/p2",
            "Snapshot a/p3",
            "Synced pods"
        ]
    );
    assert!(relist.join().unwrap());
    // The old stream is closed, the new one carries on; one update, once.
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Update a/p2"]);
    assert_quiet(&r, Duration::from_millis(300));
    let s = &r.stats()[0];
    assert_eq!((s.relists, s.objects, s.resyncs), (1, 3, 0));
    let wl = requests(&api)
        .iter()
        .filter(|q| q.contains("sendInitialEvents=true"))
        .count();
    assert_eq!(wl, 2);
}

#[test]
fn a_relist_finds_objects_the_running_stream_missed() {
    let _w = Watchdog::new("relist_missed", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api, 3);
    // The running stream reconnects into a stall: it sees nothing from here on.
    api.push_fault("pods", Fault::Stall);
    api.end_watches();
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    api.delete("pods", Some("a"), "p2");
    pod(&api, "a", "p3");
    let relist = relist_in_background(&r);
    let got = until_synced(&r);
    assert_eq!(
        got,
        [
            "Delete(inferred) a/p2",
            "Snapshot a/p1",
            "Update a/p3",
            "Synced pods"
        ]
    );
    assert!(relist.join().unwrap());
    pod(&api, "a", "p4");
    assert_eq!(take(&r, 1), ["Add a/p4"]);
}

#[test]
fn a_relist_that_fails_to_start_retries_while_the_old_stream_runs() {
    let _w = Watchdog::new("relist_retry", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api, 1);
    for _ in 0..2 {
        let f = Fault::Status {
            code: 500,
            reason: "InternalError".into(),
            message: "etcd".into(),
            retry_after: None,
        };
        api.push_fault("pods", f);
    }
    let relist = relist_in_background(&r);
    // The first watch-list, then the re-sync's.
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    // Meanwhile the running stream delivers live changes.
    pod(&api, "a", "p9");
    let mut got = Vec::new();
    loop {
        let e = next(&r);
        got.push(show(&e));
        if e.change() == Change::Synced {
            break;
        }
    }
    assert_eq!(got[0], "Add a/p9", "{got:?}");
    got.sort();
    assert_eq!(
        got,
        ["Add a/p9", "Snapshot a/p1", "Snapshot a/p9", "Synced pods"]
    );
    assert!(relist.join().unwrap());
    assert_eq!(requests(&api).len(), 4);
}

/// What a consumer builds from entries: uid -> (namespace/name, resourceVersion).
fn apply(state: &mut HashMap<String, (String, u64)>, e: &Entry) {
    let key = format!("{}/{}", e.namespace().unwrap_or(""), e.name());
    match e.change() {
        Change::Add => {
            assert!(!state.contains_key(e.uid()), "duplicate Add for {key}");
            state.insert(
                e.uid().to_string(),
                (key, e.resource_version().unwrap_or(0)),
            );
        }
        Change::Update | Change::Snapshot => {
            let old = state
                .get(e.uid())
                .unwrap_or_else(|| panic!("{:?} for unknown {key}", e.change()));
            assert!(
                e.resource_version().unwrap_or(0) >= old.1,
                "{key} went back in time"
            );
            state.insert(
                e.uid().to_string(),
                (key, e.resource_version().unwrap_or(0)),
            );
        }
        Change::Delete => {
            assert!(state.remove(e.uid()).is_some(), "Delete for unknown {key}");
        }
        _ => {}
    }
}

fn server_state(api: &FakeApi) -> HashMap<String, (String, u64)> {
    api.objects("pods")
        .into_iter()
        .map(|o| {
            let m = &o["metadata"];
            let key = format!(
                "{}/{}",
                m["namespace"].as_str().unwrap(),
                m["name"].as_str().unwrap()
            );
            let rv = m["resourceVersion"].as_str().unwrap().parse().unwrap();
            (m["uid"].as_str().unwrap().to_string(), (key, rv))
        })
        .collect()
}

#[test]
fn relists_racing_creates_updates_and_deletes_converge() {
    let _w = Watchdog::new("relist_race", Duration::from_secs(60));
    let api = Arc::new(FakeApi::start());
    for i in 0..30 {
        pod(&api, "a", &format!("p{i}"));
    }
    let r = Arc::new(open(&api, &["pods"]));
    let mut state = HashMap::new();
    loop {
        let e = next(&r);
        apply(&mut state, &e);
        if e.change() == Change::Synced {
            break;
        }
    }
    let churn = {
        let api = api.clone();
        std::thread::spawn(move || {
            for round in 0..300u32 {
                let i = round * 7 % 40;
                match round % 3 {
                    0 | 1 => {
                        pod(&api, "a", &format!("p{i}"));
                    }
                    _ => {
                        api.delete("pods", Some("a"), &format!("p{i}"));
                    }
                }
            }
        })
    };
    let relister = {
        let r = r.clone();
        std::thread::spawn(move || (0..3).all(|_| r.relist()))
    };
    let mut log: Vec<String> = Vec::new();
    while !(churn.is_finished() && relister.is_finished()) {
        if let Ok(e) = r.next_timeout(Duration::from_millis(50)) {
            log.push(format!(
                "{} {} {} {}",
                show(&e),
                e.uid(),
                e.resource_version().unwrap_or(0),
                e.inferred()
            ));
            apply(&mut state, &e);
        }
    }
    assert!(relister.join().unwrap());
    churn.join().unwrap();
    // Drain until the consumer's view equals the server's.
    let want = server_state(&api);
    while state != want {
        match r.next_timeout(Duration::from_secs(5)) {
            Ok(e) => {
                log.push(format!(
                    "{} {} {} {}",
                    show(&e),
                    e.uid(),
                    e.resource_version().unwrap_or(0),
                    e.inferred()
                ));
                apply(&mut state, &e)
            }
            Err(_) => {
                let first = state
                    .keys()
                    .find(|k| !want.contains_key(*k))
                    .cloned()
                    .unwrap_or_default();
                let name = state.get(&first).map(|v| v.0.clone()).unwrap_or_default();
                for l in &log {
                    if l.contains(&name) || l.starts_with("Synced") {
                        eprintln!("LOG {l}");
                    }
                }
                eprintln!("uid {first}");
                let missing: Vec<_> = want
                    .iter()
                    .filter(|(k, v)| state.get(*k) != Some(v))
                    .collect();
                let extra: Vec<_> = state
                    .iter()
                    .filter(|(k, v)| want.get(*k) != Some(v))
                    .collect();
                panic!("consumer diverged: missing or different {missing:?}; extra or different {extra:?}");
            }
        }
    }
    // What may still be queued changes nothing: a relist's last Snapshots
    // and Synced (the state can be equal before they are read).
    while let Ok(e) = r.next_timeout(Duration::from_millis(300)) {
        assert!(
            matches!(e.change(), Change::Snapshot | Change::Synced),
            "unexpected {}",
            show(&e)
        );
    }
    assert_eq!(r.stats()[0].relists, 3);
}

#[test]
fn the_watch_set_changes_while_entries_flow() {
    let _w = Watchdog::new("set_resources", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.apply("nodes", FakeApi::object(None, "n1"));
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    let pods = ResourceSpec::parse("pods").unwrap();
    let nodes = ResourceSpec::parse("nodes").unwrap();
    let both: Vec<ResourceSpec> = pods.iter().chain(&nodes).cloned().collect();
    assert!(r.set_resources(&both).unwrap());
    assert_eq!(until_synced(&r), ["Add n1", "Synced nodes"]);
    assert!(
        !r.set_resources(&both).unwrap(),
        "unchanged set: nothing happens"
    );
    let pod_requests = || {
        requests(&api)
            .iter()
            .filter(|q| q.contains("/pods"))
            .count()
    };
    assert_eq!(pod_requests(), 1, "pods kept streaming without a reconnect");
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);

    assert!(r.set_resources(&nodes).unwrap());
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    pod(&api, "a", "p3");
    api.apply("nodes", FakeApi::object(None, "n2"));
    assert_eq!(take(&r, 1), ["Add n2"], "pods stopped");
    assert_eq!(r.stats().len(), 1);

    assert!(r.restart_resources(&nodes).unwrap(), "force restarts");
    assert_eq!(
        until_synced(&r),
        ["Snapshot n1", "Snapshot n2", "Synced nodes"]
    );
    assert!(r.set_resources(&[]).is_err());
}

#[test]
fn a_custom_resource_that_appears_after_start_is_picked_up() {
    let _w = Watchdog::new("crd_later", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let mut c = config(&api, &["pods"]);
    c.resources
        .extend(ResourceSpec::parse("example.com/v1 Widget").unwrap());
    let r = Reader::open(c).unwrap();
    // The kind's group is not served yet (404): widgets say they are not
    // current, in any order with the pods' initial state.
    let mut pods = Vec::new();
    let mut told = false;
    while !(told && pods.last().is_some_and(|p| p == "Synced pods")) {
        let e = show(&next(&r));
        if e == "Stale widget Refused 404" && !told {
            told = true;
        } else {
            pods.push(e);
        }
    }
    assert_eq!(pods, ["Add a/p1", "Synced pods"]);
    // Discovery does not know the kind yet: the stream retries, pods are unaffected.
    assert!(api.wait_requests(3, Duration::from_secs(10)));
    api.add_resource("example.com", "v1", "widgets", "Widget", false);
    api.apply("example.com/v1/widgets", FakeApi::object(None, "w1"));
    // w1 is in the first full state, or (discovered in between) a live Add
    // after an empty one.
    let (a, b) = (next(&r), next(&r));
    let shown = [show(&a), show(&b)];
    assert!(
        shown == ["Add w1", "Synced widgets"] || shown == ["Synced widgets", "Add w1"],
        "{shown:?}"
    );
    let e = if a.change() == Change::Add { a } else { b };
    assert_eq!(
        (e.resource().resource.as_str(), e.resource().kind.as_str()),
        ("widgets", "Widget")
    );
    assert!(requests(&api)
        .iter()
        .any(|q| q == "GET /apis/example.com/v1"));
}

#[test]
fn a_resource_named_by_gvr_that_is_not_served_yet_is_retried() {
    let _w = Watchdog::new("gvr_404", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = open(&api, &["example.com/v1/gadgets"]);
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    api.add_resource("example.com", "v1", "gadgets", "Gadget", true);
    api.apply("example.com/v1/gadgets", FakeApi::object(Some("a"), "g1"));
    // The object may land in the initial state or just after it; the 404s
    // before said the resource is not current.
    let mut got = take(&r, 3);
    got.sort();
    assert_eq!(
        got,
        ["Add a/g1", "Stale gadgets Refused 404", "Synced gadgets"]
    );
    assert!(!r.stats()[0].failed);
}

#[test]
fn secrets_are_scrubbed_on_every_path() {
    let _w = Watchdog::new("scrub_paths", Duration::from_secs(30));
    let api = FakeApi::start();
    let secret_pod = || {
        let mut p = FakeApi::pod("a", "p1");
        p["spec"]["containers"][0]["env"] = serde_json::json!([{"name":"PW","value":"hunter2"}]);
        p
    };
    api.apply("pods", secret_pod());
    let check = |e: &Entry| {
        let text = String::from_utf8_lossy(e.object().unwrap()).into_owned();
        assert!(!text.contains("hunter2"), "leak in {:?}", e.change());
        assert!(text.contains("REDACTED"));
    };
    // watch-list
    let r = Arc::new(open(&api, &["pods"]));
    check(&next(&r));
    assert_eq!(take(&r, 1), ["Synced pods"]);
    // live update and delete
    api.apply("pods", secret_pod());
    check(&next(&r));
    // relist
    let relist = relist_in_background(&r);
    check(&next(&r));
    assert_eq!(take(&r, 1), ["Synced pods"]);
    assert!(relist.join().unwrap());
    // re-sync after 410
    api.push_fault("pods", Fault::ExpiredInStream);
    api.end_watches();
    assert_eq!(take(&r, 1), ["Stale pods Resyncing"]);
    check(&next(&r));
    assert_eq!(take(&r, 1), ["Synced pods"]);
    api.delete("pods", Some("a"), "p1");
    check(&next(&r));
    // LIST fallback
    api.set_watchlist(false);
    api.apply("pods", secret_pod());
    let r = open(&api, &["pods"]);
    check(&next(&r));
}

#[test]
fn shaping_options_apply_before_the_channel() {
    let _w = Watchdog::new("shaping", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let mut c = config(&api, &["pods"]);
    c.shaping.drop_managed_fields = true;
    c.shaping.transform = Some(Arc::new(|_, v| v["metadata"]["name"] != "p2"));
    let r = Reader::open(c).unwrap();
    let e = next(&r);
    let obj: serde_json::Value = serde_json::from_slice(e.object().unwrap()).unwrap();
    assert!(obj["metadata"].get("managedFields").is_none());
    assert_eq!(obj["metadata"]["name"], "p1");
    assert_eq!(take(&r, 1), ["Synced pods"]);
    pod(&api, "a", "p2");
    pod(&api, "a", "p3");
    assert_eq!(take(&r, 1), ["Add a/p3"], "the transform dropped p2");
    // The server is asked to leave them out too (KEP-5958), in either
    // encoding (pods: protobuf first; this server answers JSON).
    assert_eq!(
        api.accepts()[0],
        "application/vnd.kubernetes.protobuf;drop=metadata.managedFields,application/json;drop=metadata.managedFields"
    );
}

#[test]
fn wake_ends_a_wait_without_stopping_the_reader() {
    let _w = Watchdog::new("wake", Duration::from_secs(30));
    let api = FakeApi::start();
    let r = synced_pods(&api, 1);
    let waiter = {
        let r = r.clone();
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            let got = r.next_timeout(Duration::from_secs(20));
            (got.map(|e| show(&e)), t.elapsed())
        })
    };
    // Whether the wake comes before or during the wait, the wait ends at once.
    r.wake();
    let (got, took) = waiter.join().unwrap();
    assert_eq!(got, Err(kube_tattler::NextTimeoutError::Timeout));
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Wakes do not add up, and the reader runs on.
    r.wake();
    r.wake();
    assert_eq!(
        r.next_timeout(Duration::from_secs(5)).map(|e| show(&e)),
        Err(kube_tattler::NextTimeoutError::Timeout)
    );
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
    assert!(!r.is_stopped());
}

/// The transform runs on the stream's thread, as a log callback does: calls
/// that wait for tattler's threads refuse to run there, and dropping the
/// reader there joins every other thread and not itself.
#[test]
fn calls_from_a_stream_thread_neither_deadlock_nor_join_themselves() {
    let _w = Watchdog::new("reentrant", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.apply("configmaps", FakeApi::object(Some("a"), "c1"));
    let slot: Arc<parking_lot::Mutex<Option<Reader>>> = Arc::default();
    let (said_tx, said) = crossbeam_channel::unbounded();
    let mut c = config(&api, &["pods", "configmaps"]);
    {
        let slot = slot.clone();
        c.shaping.transform = Some(Arc::new(move |res, v| {
            if res.resource != "configmaps" || v["metadata"]["name"] != "c2" {
                return true;
            }
            let reader = slot.lock().take().expect("the reader is there");
            let set = reader.restart_resources(&ResourceSpec::parse("pods").unwrap());
            let relist = reader.relist();
            let stats = reader.stats().len();
            let _ = said_tx.send((set.map_err(|e| e.to_string()), relist, stats));
            drop(reader); // a close from the stream's own thread
            let _ = said_tx.send((Ok(true), true, 0));
            true
        }));
    }
    *slot.lock() = Some(Reader::open(c).unwrap());
    {
        let g = slot.lock();
        let r = g.as_ref().unwrap();
        let mut synced = 0;
        while synced < 2 {
            if next(r).change() == Change::Synced {
                synced += 1;
            }
        }
    }
    api.apply("configmaps", FakeApi::object(Some("a"), "c2"));
    let (set, relist, stats) = said.recv_timeout(Duration::from_secs(10)).unwrap();
    let set = set.unwrap_err();
    assert!(
        set.contains("set_resources cannot be called on a tattler thread"),
        "{set}"
    );
    assert!(!relist);
    assert_eq!(stats, 2, "stats() works from a stream thread");
    assert_eq!(
        said.recv_timeout(Duration::from_secs(10)).unwrap(),
        (Ok(true), true, 0),
        "the close returned"
    );
    assert!(slot.lock().is_none());
}

#[test]
fn metrics_come_in_the_prometheus_text_format() {
    let _w = Watchdog::new("metrics", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    pod(&api, "a", "p2");
    let mut c = config(&api, &[]);
    c.resources = vec![
        ResourceSpec::parse("pods").unwrap().remove(0),
        ResourceSpec::parse("configmaps")
            .unwrap()
            .remove(0)
            .in_namespace("a")
            .with_label_selector("app in (x,y)"),
    ];
    let r = Reader::open(c).unwrap();
    let mut synced = 0;
    while synced < 2 {
        synced += usize::from(next(&r).change() == Change::Synced);
    }
    let text = r.metrics_text();
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        "# TYPE tattler_events_total counter",
        // Two objects and the bookmark.
        "tattler_events_total{resource=\"v1/pods\"} 3",
        "tattler_events_total{resource=\"v1/configmaps\",namespace=\"a\",label_selector=\"app in (x,y)\"} 1",
        "tattler_objects{resource=\"v1/pods\"} 2",
        "tattler_synced{resource=\"v1/pods\"} 1",
        "tattler_current{resource=\"v1/pods\"} 1",
        "tattler_failed{resource=\"v1/pods\"} 0",
        "tattler_reconnects_total{resource=\"v1/pods\"} 0",
        "# TYPE tattler_channel_entries gauge",
        "tattler_channel_entries 0",
        "tattler_channel_bytes 0",
    ] {
        assert!(lines.contains(&want), "{want:?} not in:\n{text}");
    }
    let since: f64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("tattler_seconds_since_sync{resource=\"v1/pods\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0..10.0).contains(&since), "{since}");
    let heard: f64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("tattler_seconds_since_heard{resource=\"v1/pods\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0..10.0).contains(&heard), "{heard}");
    // Every sample line is NAME{LABELS} VALUE, every family has HELP and TYPE.
    for l in lines.iter().filter(|l| !l.starts_with('#')) {
        let (name, value) = l.rsplit_once(' ').unwrap();
        assert!(name.starts_with("tattler_"), "{l}");
        value.parse::<f64>().unwrap_or_else(|_| panic!("{l}"));
    }
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("# HELP")).count(),
        lines.iter().filter(|l| l.starts_with("# TYPE")).count()
    );
}

/// Names kubectl resolves: the built-in ones without a request, the others
/// through the server's discovery; an unknown one is reported once and
/// looked for again, until its CRD comes.
#[test]
fn kubectl_names_are_resolved_through_discovery() {
    let _w = Watchdog::new("kubectl_names", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.add_resource("example.com", "v1", "widgets", "Widget", false);
    api.apply("example.com/v1/widgets", FakeApi::object(None, "w1"));
    let r = open(&api, &["po", "widget", "widgets.example.com", "gadget"]);
    let mut got = take(&r, 7);
    got.sort();
    assert_eq!(
        got,
        [
            "Add a/p1",
            "Add w1",
            "Add w1",
            "Error gadget 0 NotFound",
            "Synced pods",
            "Synced widgets",
            "Synced widgets"
        ]
    );
    let s = r.stats();
    assert_eq!(s[0].resource, "v1/pods", "po needs no discovery");
    assert!(!requests(&api)
        .iter()
        .any(|q| q.contains("pods") && !q.contains("watch=true")));
    // The CRD comes: the name is found on the next look.
    api.add_resource("example.com", "v1", "gadgets", "Gadget", true);
    api.apply("example.com/v1/gadgets", FakeApi::object(Some("a"), "g1"));
    assert_eq!(until_synced(&r), ["Add a/g1", "Synced gadgets"]);
    assert_quiet(&r, Duration::from_millis(300));
}

/// A restart that resumes from a checkpoint delivers only what changed
/// while it was down, deletes included; after a compaction it re-syncs
/// against the restored state.
#[test]
fn a_reader_resumed_from_a_checkpoint_delivers_only_what_changed() {
    let _w = Watchdog::new("resume", Duration::from_secs(30));
    for compacted in [false, true] {
        let api = FakeApi::start();
        for i in 1..=3 {
            pod(&api, "a", &format!("p{i}"));
        }
        let r = open(&api, &["pods", "configmaps"]);
        let mut synced = 0;
        while synced < 2 {
            synced += usize::from(next(&r).change() == Change::Synced);
        }
        pod(&api, "a", "p1");
        assert_eq!(take(&r, 1), ["Update a/p1"]);
        // Stopped and drained: the checkpoint is exactly what the consumer has.
        r.stop();
        while r.next().is_ok() {}
        let bytes = r.checkpoint().to_bytes();
        drop(r);
        let cp = kube_tattler::Checkpoint::from_bytes(&bytes).unwrap();
        assert_eq!((cp.resources(), cp.objects()), (2, 3));
        // While it was down.
        api.delete("pods", Some("a"), "p2");
        pod(&api, "a", "p3");
        pod(&api, "a", "p4");
        if compacted {
            api.compact();
        }
        let before = requests(&api).len();
        let mut c = config(&api, &["pods", "configmaps", "services"]);
        c.resume = Some(cp);
        let r = Reader::open(c).unwrap();
        let mut got = Vec::new();
        // One Synced per resource: a resumed one's once it has caught up
        // (after a compaction, by its re-sync).
        let want_synced = 3;
        while got
            .iter()
            .filter(|g: &&String| g.starts_with("Synced"))
            .count()
            < want_synced
        {
            match r.next_timeout(Duration::from_secs(10)) {
                Ok(e) => got.push(show(&e)),
                Err(e) => panic!(
                    "compacted={compacted}: {e}; got {got:?}; requests {:#?}",
                    requests(&api)
                ),
            }
        }
        // Everything else that comes (live changes may come before the last Synced).
        while let Ok(e) = r.next_timeout(Duration::from_millis(500)) {
            got.push(show(&e));
        }
        got.sort();
        if compacted {
            assert_eq!(
                got,
                [
                    "Add a/p4",
                    "Delete(inferred) a/p2",
                    "Snapshot a/p1",
                    // Resumed from a compacted resourceVersion: a re-sync,
                    // told as such; configmaps' is compacted away too.
                    "Stale configmaps Resyncing",
                    "Stale pods Resyncing",
                    "Synced configmaps",
                    "Synced pods",
                    "Synced services",
                    "Update a/p3"
                ]
            );
        } else {
            // The changes made meanwhile, each resumed resource's Synced
            // after them; the new one syncs.
            assert_eq!(
                got,
                [
                    "Add a/p4",
                    "Delete a/p2",
                    "Synced configmaps",
                    "Synced pods",
                    "Synced services",
                    "Update a/p3"
                ]
            );
            let after: Vec<String> = requests(&api).split_off(before);
            // Watches from the checkpoint's resourceVersion, nothing asked
            // first: no full state.
            let pods: Vec<&String> = after.iter().filter(|q| q.contains("/pods")).collect();
            assert!(!pods.is_empty(), "{pods:?}");
            for q in &pods {
                assert!(
                    q.contains("watch=true&allowWatchBookmarks=true&resourceVersion="),
                    "{pods:?}"
                );
            }
        }
    }
}

/// `"*.GROUP"` (and `"*"`): every resource discovery finds, picked up as
/// CRDs come; found streams sit beside the named ones.
#[test]
fn wildcards_follow_what_discovery_finds() {
    let _w = Watchdog::new("wildcards", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.apply("example.com/v1/widgets", FakeApi::object(Some("a"), "w1"));
    let mut c = config(&api, &["pods", "*.example.com"]);
    c.tuning.discovery_interval = Duration::from_secs(1);
    let r = Reader::open(c).unwrap();
    let mut got = take(&r, 4);
    got.sort();
    assert_eq!(
        got,
        ["Add a/p1", "Add a/w1", "Synced pods", "Synced widgets"]
    );
    api.add_resource("example.com", "v1", "gadgets", "Gadget", false);
    api.apply("example.com/v1/gadgets", FakeApi::object(None, "g1"));
    assert_eq!(until_synced(&r), ["Add g1", "Synced gadgets"]);
    let mut names: Vec<String> = r.stats().iter().map(|s| s.resource.clone()).collect();
    assert_eq!(names[0], "v1/pods", "the named ones first");
    names[1..].sort();
    assert_eq!(
        names,
        [
            "v1/pods",
            "example.com/v1/gadgets",
            "example.com/v1/widgets"
        ]
    );
    // The wildcard goes: so do its streams; the named one stays.
    assert!(r
        .set_resources(&ResourceSpec::parse("pods").unwrap())
        .unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while r.stats().len() > 1 {
        assert!(std::time::Instant::now() < deadline, "{:?}", r.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    pod(&api, "a", "p1");
    assert_eq!(take(&r, 1), ["Update a/p1"]);
    drop(r);

    // Everything: one stream per resource the fake serves, each synced.
    let served = requests(&api).len();
    let r = open(&api, &["*"]);
    let mut synced = std::collections::BTreeSet::new();
    // The fake serves 14 resources of its own, and the two CRDs.
    let want = 16;
    while synced.len() < want {
        let e = r
            .next_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}: synced {synced:?}"));
        if e.change() == Change::Synced {
            synced.insert(e.resource().resource.clone());
        }
        assert_ne!(e.change(), Change::Error, "{e:?}");
    }
    assert!(
        synced.contains("pods") && synced.contains("gadgets") && synced.contains("clusterroles"),
        "{synced:?}"
    );
    assert!(requests(&api)[served..].iter().any(|q| q == "GET /apis"));
}

/// One resource in several namespaces (one stream each) is one resource to
/// the consumer: one Synced, once every namespace is in.
#[test]
fn a_resource_in_several_namespaces_is_synced_once() {
    let _w = Watchdog::new("namespaces", Duration::from_secs(30));
    let api = FakeApi::start();
    for ns in ["a", "b", "c"] {
        pod(&api, ns, "p1");
    }
    let json = format!(
        r#"{{"server":"{}","resources":[{{"resource":"pods","namespaces":["a","b","c"]}},"configmaps"]}}"#,
        api.url()
    );
    let r = Reader::open(kube_tattler::Config::from_json(&json).unwrap()).unwrap();
    let mut got = take(&r, 5);
    let pods_synced = got.iter().position(|g| g == "Synced pods").unwrap();
    assert_eq!(
        got[..pods_synced]
            .iter()
            .filter(|g| g.starts_with("Add"))
            .count(),
        3,
        "every namespace before the one Synced: {got:?}"
    );
    got.sort();
    assert_eq!(
        got,
        [
            "Add a/p1",
            "Add b/p1",
            "Add c/p1",
            "Synced configmaps",
            "Synced pods"
        ]
    );
    assert_quiet(&r, Duration::from_millis(300));
    assert_eq!(r.stats().len(), 4);
}

#[test]
fn several_namespaces_added_later_are_synced_once_too() {
    let _w = Watchdog::new("namespaces_later", Duration::from_secs(30));
    let api = FakeApi::start();
    for ns in ["a", "b"] {
        api.apply("configmaps", FakeApi::object(Some(ns), "c1"));
    }
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Synced pods"]);
    let specs = ResourceSpec::list_from_json(
        r#"["pods", {"resource":"cm","namespaces":["a","b"]}]"#,
        None,
        None,
        None,
        false,
    )
    .unwrap();
    assert!(r.set_resources(&specs).unwrap());
    let got = take(&r, 3);
    assert_eq!(got[2], "Synced configmaps", "{got:?}");
    assert_quiet(&r, Duration::from_millis(300));
}

/// A resource's scope changed (all namespaces to two of them): the new
/// streams re-sync against what the consumer holds, so nothing outside the
/// new scope is kept and no delete made meanwhile is lost.
#[test]
fn a_scope_change_hands_the_consumers_objects_to_the_new_streams() {
    let _w = Watchdog::new("scope_change", Duration::from_secs(30));
    let api = FakeApi::start();
    for ns in ["a", "b", "c"] {
        pod(&api, ns, "p1");
    }
    pod(&api, "a", "p2");
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r).len(), 5);
    // Deleted while the scope changes: no stream of the new scope sees it.
    api.delete("pods", Some("a"), "p2");
    let pods = ResourceSpec::parse("pods").unwrap().remove(0);
    let specs = [pods.clone().in_namespace("a"), pods.in_namespace("b")];
    assert!(r.set_resources(&specs).unwrap());
    let mut got = until_synced(&r);
    got.sort();
    // The old stream may have delivered the delete before it stopped.
    got.retain(|g| g != "Delete a/p2");
    let p2 = if got.contains(&"Delete(inferred) a/p2".to_string()) {
        1
    } else {
        0
    };
    assert_eq!(got.len(), 4 + p2, "{got:?}");
    for want in [
        "Delete(inferred) c/p1",
        "Snapshot a/p1",
        "Snapshot b/p1",
        "Synced pods",
    ] {
        assert!(got.iter().any(|g| g == want), "{want}: {got:?}");
    }
    assert_quiet(&r, Duration::from_millis(300));
}

/// A relist of a resource whose resourceVersions are opaque is the running
/// stream's own re-sync: with no order, a second stream's snapshot could not
/// be judged against the live events delivered meanwhile.
#[test]
fn an_opaque_resource_is_relisted_by_a_resync_of_its_own() {
    let _w = Watchdog::new("opaque_relist", Duration::from_secs(30));
    let api = FakeApi::start();
    api.set_opaque_rvs(true);
    let r = synced_pods(&api, 2);
    let before = requests(&api).len();
    let relist = relist_in_background(&r);
    assert_eq!(
        until_synced(&r),
        [
            "Snapshot a/p1",
            "Snapshot a/p2",
            "Stale pods Resyncing",
            "Synced pods"
        ]
    );
    assert!(relist.join().unwrap());
    let after: Vec<String> = requests(&api).split_off(before);
    let watch_lists = after
        .iter()
        .filter(|q| q.contains("sendInitialEvents=true"))
        .count();
    assert_eq!(watch_lists, 1, "{after:#?}");
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    pod(&api, "a", "p3");
    assert_eq!(take(&r, 1), ["Add a/p3"]);
    assert_quiet(&r, Duration::from_millis(300));
    let s = &r.stats()[0];
    assert_eq!((s.relists, s.objects, s.synced), (1, 3, true));
}

/// Stop, drain, checkpoint, while changes stream in: the checkpoint holds
/// exactly what the consumer got. (A stream could still put an entry into
/// the channel after `next()` had found it empty and returned `Closed`: the
/// checkpoint then held a version the consumer never saw, and a reader
/// resumed from it skipped that change.)
#[test]
fn a_checkpoint_after_stop_and_drain_is_exactly_what_the_consumer_got() {
    let _w = Watchdog::new("checkpoint_exact", Duration::from_secs(120));
    let api = FakeApi::start();
    api.start_churn(2, 60, Duration::from_micros(300));
    for round in 0..40 {
        let r = open(&api, &["pods"]);
        let mut held: HashMap<(String, String), String> = HashMap::new();
        let mut apply = |e: &Entry| {
            let key = (
                e.namespace().unwrap_or("").to_string(),
                e.name().to_string(),
            );
            match e.change() {
                Change::Add | Change::Update | Change::Snapshot => {
                    held.insert(key, e.resource_version_str().to_string());
                }
                Change::Delete => {
                    held.remove(&key);
                }
                _ => {}
            }
        };
        // Read for a while, then stop in the middle of the flow.
        let until = std::time::Instant::now() + Duration::from_millis(20 + round * 7);
        while std::time::Instant::now() < until {
            if let Ok(e) = r.next_timeout(Duration::from_millis(5)) {
                apply(&e);
            }
        }
        r.stop();
        while let Ok(e) = r.next() {
            apply(&e);
        }
        let cp = r.checkpoint().to_bytes();
        let doc: serde_json::Value = serde_json::from_slice(&cp).unwrap();
        let objects = doc["resources"][0]["objects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let exported: HashMap<(String, String), String> = objects
            .iter()
            .map(|o| {
                let s = |i: usize| o[i].as_str().unwrap().to_string();
                ((s(0), s(1)), s(3))
            })
            .collect();
        assert_eq!(exported, held, "round {round}");
        r.close();
    }
}

/// A relist waiting for an opaque resource's own re-sync returns once the
/// resource leaves the watch set (its re-sync will never complete).
#[test]
fn an_opaque_relist_ends_when_its_resource_is_no_longer_watched() {
    let _w = Watchdog::new("opaque_relist_gone", Duration::from_secs(30));
    let api = FakeApi::start();
    api.set_opaque_rvs(true);
    let r = synced_pods(&api, 1);
    // The re-sync's watch-list stalls: it never completes.
    api.push_fault("pods", Fault::Stall);
    let relist = relist_in_background(&r);
    // The first watch-list, then the re-sync's.
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    let pods = ResourceSpec::parse("pods").unwrap().remove(0);
    assert!(r.set_resources(&[pods.in_namespace("a")]).unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !relist.is_finished() {
        assert!(std::time::Instant::now() < deadline, "relist() still waits");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(relist.join().unwrap());
}

/// An object left by a scope change to a stream whose first full state has
/// not deleted it yet belongs to a new stream of its own namespace as soon as
/// one is added: one stream holds it, never two (the old one's full state
/// would delete what the new one just delivered).
#[test]
fn a_namespace_added_later_takes_its_objects_from_a_stream_still_syncing() {
    let _w = Watchdog::new("scope_leftovers", Duration::from_secs(30));
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    pod(&api, "b", "p1");
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r).len(), 3);
    let pods = ResourceSpec::parse("pods").unwrap().remove(0);
    // pods in "a" only: its full state stalls, b/p1 waits in its table.
    api.push_fault("pods", Fault::Stall);
    assert!(r.set_resources(&[pods.clone().in_namespace("a")]).unwrap());
    assert!(api.wait_requests(2, Duration::from_secs(10)));
    while api.pending_faults("pods") > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // "b" is added: b/p1 is its stream's.
    let both = [pods.clone().in_namespace("a"), pods.in_namespace("b")];
    assert!(r.set_resources(&both).unwrap());
    assert_eq!(until_synced(&r), ["Snapshot b/p1", "Synced pods"]);
    assert_quiet(&r, Duration::from_millis(300));
    let cp: serde_json::Value = serde_json::from_slice(&r.checkpoint().to_bytes()).unwrap();
    let held: Vec<(String, usize)> = cp["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["namespace"].as_str().unwrap_or("").to_string(),
                p["objects"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(held, [("a".to_string(), 1), ("b".to_string(), 1)]);
}
