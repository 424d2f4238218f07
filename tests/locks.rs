//! The crate's promise ("# Threads"): no lock tattler holds is held across
//! a join or a log call. tattler's debug build records every join made
//! with one of its guards held (`kube_tattler::sync`); this binary's logger
//! reports every log call to it as well, and one test drives every change
//! that stops and joins threads against the fake apiserver: set_resources,
//! a restart, the wildcards' discovery, relists, a namespace leaving a
//! resource, a leader's start and stop, and close. Its own binary: the
//! logger and the violations are the process's.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kube_tattler::{Change, Config, InClusterCheckpoint, LeaderElection, Reader, ResourceSpec};
use tattler_fakeapi::FakeApi;

/// Tells tattler of every log call, and counts tattler's own.
struct Checking;

static LOGGED: AtomicUsize = AtomicUsize::new(0);

impl log::Log for Checking {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, r: &log::Record) {
        kube_tattler::sync::log_call(r.file(), r.line());
        if r.target().starts_with("kube_tattler") {
            LOGGED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush(&self) {}
}

static LOGGER: Checking = Checking;

/// Waits until `r`'s stats count `n` streams.
fn streams(r: &Reader, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.stats().len() != n {
        assert!(Instant::now() < deadline, "{:?}", r.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Relists on another thread while this one takes the entries it brings.
fn relist(r: &Arc<Reader>, resources: usize) {
    let relisting = {
        let r = r.clone();
        std::thread::spawn(move || r.relist())
    };
    for _ in 0..resources {
        let got = until_synced(r);
        assert!(
            got.iter()
                .all(|g| g.starts_with("Snapshot ") || g.starts_with("Synced ")),
            "{got:?}"
        );
    }
    assert!(relisting.join().unwrap());
}

#[test]
fn no_lock_is_held_across_a_join_or_a_log_call() {
    let _w = Watchdog::new("locks", Duration::from_secs(120));
    assert!(
        kube_tattler::sync::checking(),
        "a release build checks nothing: run this test in a debug build"
    );
    log::set_logger(&LOGGER).expect("the only logger in this binary");
    log::set_max_level(log::LevelFilter::Trace);

    let api = FakeApi::start();
    for ns in ["a", "b"] {
        pod(&api, ns, "p1");
    }
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.apply("example.com/v1/widgets", FakeApi::object(Some("a"), "w1"));
    let mut c = config(&api, &["pods"]);
    c.tuning.discovery_interval = Duration::from_secs(1);
    let r = Arc::new(Reader::open(c).unwrap());
    assert_eq!(until_synced(&r), ["Add a/p1", "Add b/p1", "Synced pods"]);
    // Started, relisted (a swap and the old stream's join), restarted.
    let pods = ResourceSpec::parse("pods").unwrap().remove(0);
    let configmaps = ResourceSpec::parse("configmaps").unwrap().remove(0);
    assert!(r
        .set_resources(&[pods.clone(), configmaps.clone()])
        .unwrap());
    assert_eq!(until_synced(&r), ["Synced configmaps"]);
    relist(&r, 2);
    assert!(r
        .restart_resources(&[pods.clone(), configmaps.clone()])
        .unwrap());
    let mut got = take(&r, 4);
    got.sort();
    assert_eq!(
        got,
        [
            "Snapshot a/p1",
            "Snapshot b/p1",
            "Synced configmaps",
            "Synced pods"
        ]
    );
    // One resource in two namespaces, then one: the gone one's join, and
    // the helper that sends the Synced the other waited for.
    let two = [
        pods.clone().in_namespace("a"),
        pods.clone().in_namespace("b"),
    ];
    assert!(r.set_resources(&two).unwrap());
    streams(&r, 2);
    assert!(r.set_resources(&two[..1]).unwrap());
    streams(&r, 1);
    // The wildcards' discovery thread starts and stops found streams.
    let wild = [
        pods.clone(),
        ResourceSpec::parse("*.example.com").unwrap().remove(0),
    ];
    assert!(r.set_resources(&wild).unwrap());
    streams(&r, 2);
    assert!(r.set_resources(std::slice::from_ref(&pods)).unwrap());
    streams(&r, 1);
    while r.try_next().is_ok() {}
    drop(r);

    // A leader: its streams start once it holds the Lease, relist, and stop
    // (and are joined) when it cannot renew; then close.
    api.add_resource("coordination.k8s.io", "v1", "leases", "Lease", true);
    let mut c: Config = config(&api, &["pods"]);
    let mut e = LeaderElection::new("kube-system", "collector");
    e.identity = "a".into();
    e.lease_duration = Duration::from_secs(3);
    e.renew_deadline = Duration::from_secs(2);
    e.retry_period = Duration::from_millis(500);
    c.leader_election = Some(e);
    c.checkpoint_in_cluster = Some(InClusterCheckpoint::new("kube-system", "collector-kept"));
    let r = Arc::new(Reader::open(c).unwrap());
    assert_eq!(next(&r).change(), Change::Following);
    assert_eq!(next(&r).change(), Change::Leading);
    assert_eq!(until_synced(&r), ["Add a/p1", "Add b/p1", "Synced pods"]);
    relist(&r, 1);
    api.refuse_writes("coordination.k8s.io/v1/leases", Some(""));
    loop {
        let e = next(&r);
        if e.change() == Change::Following {
            break;
        }
    }
    assert!(r.stats().is_empty(), "the leader's streams stopped");
    drop(r);

    assert!(
        LOGGED.load(Ordering::Relaxed) > 10,
        "tattler logged {} lines: the log calls were not checked",
        LOGGED.load(Ordering::Relaxed)
    );
    let violations = kube_tattler::sync::take_violations();
    assert!(
        violations.is_empty(),
        "a lock held across a join or a log call:\n{}",
        violations.join("\n")
    );
}
