//! Issue 36: an apiserver restart under running streams costs each stream at
//! most one full state, counted from the requests the server received. The
//! restart, as a real one goes: every connection cut, new ones refused for
//! a while, and the new apiserver's watch cache starting at the current
//! revision (an older resourceVersion has expired); then, in the variants,
//! 403s while its RBAC cache fills and 429s while its watch cache lags.
//! The consumer is told Stale, then gets what changed and Synced, and holds
//! exactly the server's objects.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::proxy::{Fault as Net, FaultProxy, Model};
use crate::common::*;
use kube_tattler::{Change, Reader};
use tattler_fakeapi::{FakeApi, Fault};

/// Requests from `since` on that asked for a full state, by collection: a
/// watch-list, or a LIST without `continue` (one of `limit=1` included, as
/// the fleet benchmark's audit count has it).
fn full_states(api: &FakeApi, since: usize) -> Vec<String> {
    api.request_log()
        .into_iter()
        .skip(since)
        .filter(|r| {
            let q = r.line.split_once('?').map_or("", |(_, q)| q);
            let watch_list = q.split('&').any(|p| p == "sendInitialEvents=true");
            let first_page = r.collection().is_some()
                && !r.is_watch()
                && !q.split('&').any(|p| p.starts_with("continue="));
            watch_list || first_page
        })
        .map(|r| r.line)
        .collect()
}

/// How long the server is down: a while (every connection refused until it
/// is back), or one refused reconnect (a quick restart: the stream's next
/// attempt finds it serving).
#[derive(Clone, Copy, Debug)]
enum Down {
    AWhile,
    OneRefusal,
}

/// What the restart's variants add once the server accepts connections again.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// Nothing: it serves at once.
    Serves,
    /// 403 while its RBAC cache fills.
    Forbids,
    /// 429 while its watch cache lags (kubernetes#139766).
    Throttles,
}

fn restart(down: Down, then: Then) {
    let _w = Watchdog::new("restart", Duration::from_secs(60));
    let api = FakeApi::start();
    let proxy = FaultProxy::start(&api.url());
    for i in 1..=3 {
        pod(&api, "a", &format!("p{i}"));
    }
    let mut c = config(&api, &["pods"]);
    c.access.server = proxy.url();
    let r = Reader::open(c).unwrap();
    let mut model = Model::new();
    let mut held = BTreeSet::new();
    read_until_synced(&r, &mut model, &mut held);
    let since = api.request_log().len();

    // The restart: cut, refused meanwhile, changes made, history gone.
    match down {
        Down::AWhile => proxy.set_outage(true),
        Down::OneRefusal => proxy.push(Net::Refuse),
    }
    proxy.cut_all();
    pod(&api, "a", "p4");
    api.delete("pods", Some("a"), "p1");
    api.compact();
    if let Down::AWhile = down {
        std::thread::sleep(Duration::from_millis(300));
    }
    match then {
        Then::Serves => {}
        Then::Forbids => api.forbid("pods", true),
        Then::Throttles => {
            for _ in 0..2 {
                api.push_fault(
                    "pods",
                    Fault::Status {
                        code: 429,
                        reason: "TooManyRequests".into(),
                        message: "storage is (re)initializing".into(),
                        retry_after: Some(0),
                    },
                );
            }
        }
    }
    proxy.set_outage(false);
    if let Then::Forbids = then {
        std::thread::sleep(Duration::from_millis(300));
        api.forbid("pods", false);
    }
    let told = read_until_synced(&r, &mut model, &mut held);
    assert!(
        told.first().is_some_and(|t| t.starts_with("Stale pods")),
        "{down:?} {then:?}: the outage is told first: {told:?}"
    );
    let want: BTreeSet<String> = ["a/p2", "a/p3", "a/p4"].map(String::from).into();
    assert_eq!(held, want, "{down:?} {then:?}: {told:?}");
    let full = full_states(&api, since);
    assert!(
        full.len() <= 1,
        "{down:?} {then:?}: one full state at most for the restart, got {full:?}\nafter: {:?}",
        requests(&api)[since..].to_vec()
    );
}

/// Reads entries until a Synced, each checked against `model` and folded
/// into `held` (namespace/name); what came, described.
fn read_until_synced(r: &Reader, model: &mut Model, held: &mut BTreeSet<String>) -> Vec<String> {
    let mut told = Vec::new();
    loop {
        let e = next(r);
        told.push(show(&e));
        if let Err(why) = model.apply(&e) {
            panic!("{why}: {told:?}");
        }
        let key = format!("{}/{}", e.namespace().unwrap_or(""), e.name());
        match e.change() {
            Change::Add | Change::Update | Change::Snapshot => {
                held.insert(key);
            }
            Change::Delete => {
                held.remove(&key);
            }
            Change::Synced => return told,
            _ => {}
        }
    }
}

#[test]
fn a_restart_makes_one_full_state_per_stream() {
    restart(Down::AWhile, Then::Serves);
    restart(Down::OneRefusal, Then::Serves);
}

#[test]
fn a_restart_forbidding_while_its_rbac_loads_makes_one_full_state() {
    restart(Down::AWhile, Then::Forbids);
    restart(Down::OneRefusal, Then::Forbids);
}

#[test]
fn a_restart_throttling_while_its_cache_lags_makes_one_full_state() {
    restart(Down::AWhile, Then::Throttles);
    restart(Down::OneRefusal, Then::Throttles);
}

/// Issue 36 item 5: the server ends a watch right after a 410 in its 200
/// (the last chunk in a write of its own, as the apiserver sends it); the
/// stream reads to the end, so the full state that follows goes on the
/// same connection: no new TCP and TLS handshake per stream per event.
#[test]
fn the_full_state_after_a_410_in_the_stream_goes_on_the_same_connection() {
    let _w = Watchdog::new("restart_same_connection", Duration::from_secs(120));
    let api = FakeApi::start();
    pod(&api, "a", "p0");
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p0", "Synced pods"]);
    let before = api.connections_accepted();
    api.push_fault("pods", Fault::ExpiredInStream);
    api.end_watches();
    let mut got = Vec::new();
    while !got.iter().any(|s: &String| s == "Synced pods") {
        got.push(show(&next(&r)));
    }
    assert_eq!(
        got,
        ["Stale pods Resyncing", "Snapshot a/p0", "Synced pods"]
    );
    assert_eq!(
        api.connections_accepted(),
        before,
        "the resume, its 410 and the full state on the connection already open"
    );
}

/// Issue 36 item 5: a refusal (403 while RBAC loads, 429) has its body read
/// to its end, so the retry goes on the same connection: no new TCP and TLS
/// handshake per refusal.
#[test]
fn a_refused_resume_is_retried_on_the_same_connection() {
    let _w = Watchdog::new("refusal_same_connection", Duration::from_secs(120));
    let api = FakeApi::start();
    pod(&api, "a", "p0");
    let r = open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p0", "Synced pods"]);
    let before = api.connections_accepted();
    for (code, reason) in [(403, "Forbidden"), (429, "TooManyRequests")] {
        api.push_fault(
            "pods",
            Fault::Status {
                code,
                reason: reason.into(),
                message: format!("refused with {code}"),
                retry_after: None,
            },
        );
    }
    api.end_watches();
    pod(&api, "a", "p1");
    let mut got = Vec::new();
    while !got.iter().any(|s: &String| s == "Add a/p1") {
        got.push(show(&next(&r)));
    }
    assert_eq!(got.last().map(String::as_str), Some("Add a/p1"), "{got:?}");
    assert_eq!(
        api.connections_accepted(),
        before,
        "the resume, its two refusals and the resume that was answered on one connection: {got:?}"
    );
}
