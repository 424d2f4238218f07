//! Sequences of answers that have wedged, hammered or confused stream
//! lifecycles: re-syncs that never stop, resourceVersions that go back,
//! relists racing re-syncs, namespaces re-syncing together, checkpoints
//! taken at awkward moments, servers that never finish an initial state,
//! gzip members, loggers that call back in. Each case states the behaviour
//! the library must have and asserts it exactly: the entries, the requests
//! and their pacing.
//!
//! Budgets are asserted against the default [`Backoff`] (0.8 s initial,
//! 30 s max, reset after 120 s): full syncs of one resource (watch-lists,
//! first LIST pages) back off with "equal jitter", so the k-th further one
//! waits at least half of min(30 s, 0.8 s · 2^(k-1)), and three seconds hold
//! at most four of them.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use common::scripted::{end_bookmark, frame, list_body, uid, Reply, Scripted, Taps, Then};
use common::*;
use kube_tattler::{Access, Backoff, Change, Checkpoint, Config, Entry, Reader, ResourceSpec};
use tattler_fakeapi::FakeApi;

// ---------------------------------------------------------------------------
// Helpers

/// The defaults, pacing included: budgets are asserted against them.
fn defaults(server: &str) -> Config {
    Config::new(Access::new(server)).watch(["pods"]).unwrap()
}

/// Fast retries, where the case is about entries, not pacing.
fn fast(server: &str) -> Config {
    let mut c = defaults(server);
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(200),
        reset_after: Duration::from_secs(120),
    };
    c
}

/// `pods` in one namespace.
fn pods_in(ns: &str) -> ResourceSpec {
    ResourceSpec::parse("pods")
        .unwrap()
        .remove(0)
        .in_namespace(ns)
}

/// A pod as the apiserver writes it; `i` picks its uid.
fn pod(ns: &str, name: &str, i: u32, rv: &str, extra: &str) -> String {
    format!(
        "{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{ns}\",\"uid\":\"{}\",\"resourceVersion\":\"{rv}\"}}{extra}}}",
        uid(i)
    )
}

fn added(o: &str) -> Vec<u8> {
    frame("ADDED", o)
}

/// The in-stream 410 a real apiserver sends (wire/c2-watch-compacted-rv).
fn expired(rv: &str) -> Vec<u8> {
    frame(
        "ERROR",
        &format!("{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"too old resource version: {rv} (315)\",\"reason\":\"Expired\",\"code\":410}}"),
    )
}

/// A periodic BOOKMARK (no annotation).
fn bookmark(rv: &str) -> Vec<u8> {
    frame(
        "BOOKMARK",
        &format!("{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}}}}"),
    )
}

/// A LIST body of the objects, each without its kind and apiVersion.
fn listed(objects: &[String], rv: &str) -> Vec<u8> {
    let items: Vec<String> = objects
        .iter()
        .map(|o| o.replace("\"kind\":\"Pod\",\"apiVersion\":\"v1\",", ""))
        .collect();
    list_body(&items, rv)
}

/// Kubernetes 1.26's answer to `sendInitialEvents` (wire/e-sendinitialevents-no-rvmatch).
fn refused_422() -> Reply {
    let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan","field":"resourceVersionMatch"}]},"code":422}"#;
    let mut r = Reply::json(vec![body.as_bytes().to_vec()], Then::Close);
    r.status = 422;
    r
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A watch-list (`sendInitialEvents=true`).
    WatchList,
    /// A LIST's first page.
    List,
    /// A LIST's later page.
    ListMore,
    /// A watch from a resourceVersion.
    Watch(String),
}

fn kind(path: &str) -> Kind {
    let rv = || {
        path.split("resourceVersion=")
            .nth(1)
            .unwrap_or("")
            .split('&')
            .next()
            .unwrap_or("")
            .to_string()
    };
    if path.contains("sendInitialEvents=true") {
        Kind::WatchList
    } else if path.contains("watch=true") {
        Kind::Watch(rv())
    } else if path.contains("continue=") {
        Kind::ListMore
    } else {
        Kind::List
    }
}

fn short(k: &Kind) -> String {
    match k {
        Kind::WatchList => "WL".into(),
        Kind::List => "L".into(),
        Kind::ListMore => "L+".into(),
        Kind::Watch(rv) => format!("W {rv}"),
    }
}

/// The requests so far: `WL`, `L`, `W rv`.
fn kinds(s: &Scripted) -> Vec<String> {
    s.requests().iter().map(|p| short(&kind(p))).collect()
}

/// The requests so far, runs shortened: `["WL", "L x40", "W 3"]`.
fn trail(s: &Scripted) -> Vec<String> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for k in kinds(s) {
        match out.last_mut() {
            Some((last, n)) if *last == k => *n += 1,
            _ => out.push((k, 1)),
        }
    }
    out.into_iter()
        .map(|(k, n)| if n == 1 { k } else { format!("{k} x{n}") })
        .collect()
}

/// Runs the server for three seconds from `t0`, then checks the budget of
/// contract A: at most `max_syncs` full syncs (as `is_sync` counts them),
/// at least `min_syncs`, each further one at least half its backoff cap after
/// the one before, and at most `max_requests` requests in all.
fn assert_backs_off(
    what: &str,
    s: &Scripted,
    t0: Instant,
    is_sync: impl Fn(&Kind) -> bool,
    (min_syncs, max_syncs, max_requests): (usize, usize, usize),
) {
    let window = Duration::from_secs(3);
    std::thread::sleep((t0 + window).saturating_duration_since(Instant::now()));
    let seen: Vec<(Duration, Kind)> = s
        .times()
        .into_iter()
        .zip(s.requests())
        .filter(|(t, _)| *t < t0 + window)
        .map(|(t, p)| (t.saturating_duration_since(t0), kind(&p)))
        .collect();
    let mut log: Vec<String> = seen
        .iter()
        .map(|(t, k)| format!("{:.3}s {}", t.as_secs_f64(), short(k)))
        .collect();
    if log.len() > 30 {
        let n = log.len();
        log.splice(20..n - 5, [format!("... {} more ...", n - 25)]);
    }
    eprintln!("{what}: {log:?}");
    let syncs: Vec<Duration> = seen
        .iter()
        .filter(|(_, k)| is_sync(k))
        .map(|(t, _)| *t)
        .collect();
    assert!(
        syncs.len() >= min_syncs,
        "{what}: {} full syncs in 3 s, expected at least {min_syncs}: {log:?}",
        syncs.len()
    );
    assert!(
        syncs.len() <= max_syncs,
        "{what}: {} full syncs in 3 s (at most {max_syncs}): {log:?}",
        syncs.len()
    );
    for k in 1..syncs.len() {
        let cap = Duration::from_millis(800)
            .saturating_mul(1 << (k - 1).min(10))
            .min(Duration::from_secs(30));
        // Timer and scheduling slack.
        let least = (cap / 2).saturating_sub(Duration::from_millis(30));
        let gap = syncs[k] - syncs[k - 1];
        assert!(
            gap >= least,
            "{what}: full sync {} came {gap:?} after the one before, less than half of its cap {cap:?}: {log:?}",
            k + 1
        );
    }
    assert!(
        seen.len() <= max_requests,
        "{what}: {} requests in 3 s (at most {max_requests}): {log:?}",
        seen.len()
    );
}

/// Entries up to and including the next Synced, in order; fails when an entry takes 30 s.
fn sync_entries(r: &Reader) -> Vec<Entry> {
    let mut got = Vec::new();
    loop {
        let e = next(r);
        let done = e.change() == Change::Synced;
        got.push(e);
        if done {
            return got;
        }
    }
}

/// Every entry until none comes for `quiet`.
fn drain(r: &Reader, quiet: Duration) -> Vec<Entry> {
    let mut got = Vec::new();
    while let Ok(e) = r.next_timeout(quiet) {
        got.push(e);
    }
    got
}

fn shown(entries: &[Entry]) -> Vec<String> {
    entries.iter().map(show).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// A consumer keyed by namespace/name, as client-go's store is: an Add for
/// a name it holds, or an Update/Snapshot/Delete for one it does not, is a
/// broken sequence.
#[derive(Default)]
struct Store(HashMap<String, String>);

impl Store {
    fn apply(&mut self, e: &Entry) -> Result<(), String> {
        let key = format!("{}/{}", e.namespace().unwrap_or(""), e.name());
        match e.change() {
            Change::Add => {
                if self.0.contains_key(&key) {
                    return Err(format!("a second Add for {key} without a Delete"));
                }
                self.0.insert(key, e.resource_version_str().to_string());
            }
            Change::Update | Change::Snapshot => {
                if !self.0.contains_key(&key) {
                    return Err(format!(
                        "{} for {key}, which the consumer does not hold",
                        e.change()
                    ));
                }
                self.0.insert(key, e.resource_version_str().to_string());
            }
            Change::Delete => {
                if self.0.remove(&key).is_none() {
                    return Err(format!(
                        "Delete for {key}, which the consumer does not hold"
                    ));
                }
            }
            Change::Synced | Change::Error | Change::Stale => {}
            other => return Err(format!("a change of an unknown kind: {other}")),
        }
        Ok(())
    }

    fn names(&self) -> Vec<String> {
        sorted(self.0.keys().cloned().collect())
    }
}

/// Runs `f` on a thread of its own; its result, or None after `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

// ---------------------------------------------------------------------------
// A. Request budgets

fn p1() -> String {
    pod("a", "p1", 1, "1", ",\"spec\":{}")
}

/// The entries of a resource that syncs, then re-syncs unchanged: the first
/// sync's Add, then only Snapshots and Synced.
fn assert_resyncs_unchanged(what: &str, r: &Reader) {
    assert_eq!(
        until_synced(r),
        ["Add a/p1", "Synced pods"],
        "{what}: the first sync"
    );
    for e in drain(r, Duration::from_millis(100)) {
        let s = show(&e);
        assert!(
            s == "Snapshot a/p1" || s == "Synced pods" || s == "Stale pods Resyncing",
            "{what}: unexpected {s}"
        );
    }
}

#[test]
fn a_watch_answered_410_after_every_sync_backs_off() {
    let _w = Watchdog::new("watch_410_backs_off", Duration::from_secs(60));
    for http in [true, false] {
        let what = if http {
            "HTTP 410"
        } else {
            "200 then ERROR 410"
        };
        let s = Scripted::start(move |_, path| match kind(path) {
            Kind::WatchList => Reply::json(vec![added(&p1()), end_bookmark("5")], Then::Close),
            Kind::Watch(_) if http => Reply::status(410, "Expired", &[]),
            Kind::Watch(rv) => Reply::json(vec![expired(&rv)], Then::Close),
            _ => Reply::json(vec![listed(&[p1()], "5")], Then::Close),
        });
        let t0 = Instant::now();
        let r = Reader::open(defaults(&s.url())).unwrap();
        assert_backs_off(
            what,
            &s,
            t0,
            |k| matches!(k, Kind::WatchList | Kind::List),
            (2, 4, 12),
        );
        assert_resyncs_unchanged(what, &r);
    }
}

#[test]
fn a_bookmark_then_410_on_every_live_watch_backs_off() {
    let _w = Watchdog::new("bookmark_then_410", Duration::from_secs(60));
    let s = Scripted::start(move |_, path| match kind(path) {
        // The live part of the watch-list: a bookmark, then at once the 410.
        Kind::WatchList => Reply::json(
            vec![added(&p1()), end_bookmark("5"), bookmark("6"), expired("6")],
            Then::Close,
        ),
        Kind::Watch(rv) => {
            let next = rv.parse::<u64>().unwrap_or(5) + 1;
            Reply::json(
                vec![bookmark(&next.to_string()), expired(&next.to_string())],
                Then::Close,
            )
        }
        _ => Reply::json(vec![listed(&[p1()], "5")], Then::Close),
    });
    let t0 = Instant::now();
    let r = Reader::open(defaults(&s.url())).unwrap();
    assert_backs_off(
        "bookmark then ERROR 410",
        &s,
        t0,
        |k| matches!(k, Kind::WatchList | Kind::List),
        (2, 4, 12),
    );
    assert_resyncs_unchanged("bookmark then ERROR 410", &r);
}

#[test]
fn list_and_watch_with_every_watch_answered_410_backs_off() {
    let _w = Watchdog::new("list_watch_410", Duration::from_secs(60));
    for refusal in [422, 400] {
        let what = format!("watch-list refused with {refusal}");
        let s = Scripted::start(move |_, path| match kind(path) {
            Kind::WatchList if refusal == 422 => refused_422(),
            Kind::WatchList => Reply::status(400, "BadRequest", &[]),
            Kind::Watch(rv) => Reply::json(vec![expired(&rv)], Then::Close),
            Kind::List | Kind::ListMore => Reply::json(vec![listed(&[p1()], "5")], Then::Close),
        });
        let t0 = Instant::now();
        let r = Reader::open(defaults(&s.url())).unwrap();
        assert_backs_off(&what, &s, t0, |k| *k == Kind::List, (2, 4, 12));
        assert_resyncs_unchanged(&what, &r);
        assert!(r.stats()[0].list_fallback, "{what}");
    }
}

#[test]
fn watches_whose_only_bookmark_goes_back_and_forth_back_off() {
    let _w = Watchdog::new("bookmark_back_and_forth", Duration::from_secs(60));
    let watches = Arc::new(AtomicUsize::new(0));
    let s = {
        let watches = watches.clone();
        Scripted::start(move |_, path| match kind(path) {
            Kind::WatchList => Reply::json(vec![added(&p1()), end_bookmark("8")], Then::Close),
            // 9, 8, 9, 8: a resourceVersion going back is not progress.
            Kind::Watch(_) => {
                let rv = if watches.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                    "9"
                } else {
                    "8"
                };
                Reply::json(vec![bookmark(rv)], Then::Close)
            }
            _ => Reply::json(vec![listed(&[p1()], "8")], Then::Close),
        })
    };
    let t0 = Instant::now();
    let r = Reader::open(defaults(&s.url())).unwrap();
    assert_backs_off(
        "bookmarks 9, 8, 9, 8",
        &s,
        t0,
        |k| matches!(k, Kind::WatchList | Kind::List),
        (1, 4, 12),
    );
    assert_resyncs_unchanged("bookmarks 9, 8, 9, 8", &r);
}

// ---------------------------------------------------------------------------
// B. Full states are authoritative

/// An etcd restore: resourceVersions go back. The new full state is the
/// truth (p1 changed at a lower resourceVersion, p2 new, p3 gone), and live
/// events after it are delivered, not dropped as older than what was held.
#[test]
fn a_full_state_after_an_etcd_restore_is_authoritative_after_a_410() {
    let _w = Watchdog::new("etcd_restore_410", Duration::from_secs(60));
    etcd_restore("410");
}

/// The same, the restored server ending every watch from the old
/// resourceVersion at once, empty, until tattler re-syncs.
#[test]
fn a_full_state_after_an_etcd_restore_is_authoritative_after_watches_that_end() {
    let _w = Watchdog::new("etcd_restore_ended", Duration::from_secs(60));
    etcd_restore("ended");
}

fn etcd_restore(how: &'static str) {
    {
        let wl = Arc::new(AtomicUsize::new(0));
        let s = {
            let wl = wl.clone();
            Scripted::start(move |_, path| {
                let p = |name: &str, i: u32, rv: &str, v: u32| {
                    pod("a", name, i, rv, &format!(",\"spec\":{{\"v\":{v}}}"))
                };
                match kind(path) {
                    Kind::WatchList => match wl.fetch_add(1, Ordering::SeqCst) {
                        0 => Reply::json(
                            vec![
                                added(&p("p1", 1, "90", 1)),
                                added(&p("p3", 3, "95", 1)),
                                end_bookmark("100"),
                            ],
                            Then::Close,
                        ),
                        // The restored state, then live changes.
                        1 => Reply::json(
                            vec![
                                added(&p("p1", 1, "20", 2)),
                                added(&p("p2", 2, "21", 1)),
                                end_bookmark("21"),
                                frame("MODIFIED", &p("p1", 1, "22", 3)),
                                frame("DELETED", &p("p2", 2, "23", 1)),
                                added(&p("p4", 4, "24", 1)),
                            ],
                            Then::Hang,
                        ),
                        _ => Reply::json(
                            vec![
                                added(&p("p1", 1, "22", 3)),
                                added(&p("p4", 4, "24", 1)),
                                end_bookmark("24"),
                            ],
                            Then::Hang,
                        ),
                    },
                    Kind::Watch(rv) if rv == "100" && how == "410" => {
                        Reply::json(vec![expired("100")], Then::Close)
                    }
                    // The restored server has nothing after 100 and ends the watch.
                    Kind::Watch(rv) if rv == "100" => Reply::json(vec![], Then::Close),
                    Kind::Watch(_) => Reply::json(vec![], Then::Hang),
                    _ => Reply::status(404, "NotFound", &[]),
                }
            })
        };
        let r = Reader::open(fast(&s.url())).unwrap();
        assert_eq!(
            until_synced(&r),
            ["Add a/p1", "Add a/p3", "Synced pods"],
            "{how}"
        );
        let resync = sync_entries(&r);
        assert_eq!(
            sorted(shown(&resync)[..resync.len() - 1].to_vec())
                .into_iter()
                .chain([show(resync.last().unwrap())])
                .collect::<Vec<_>>(),
            [
                "Add a/p2",
                "Delete(inferred) a/p3",
                "Stale pods Resyncing",
                "Update a/p1",
                "Synced pods"
            ],
            "{how}: the restored state, as it is"
        );
        let update = resync.iter().find(|e| show(e) == "Update a/p1").unwrap();
        assert_eq!(update.resource_version_str(), "20", "{how}");
        let live = take(&r, 3);
        assert_eq!(
            live,
            ["Update a/p1", "Delete a/p2", "Add a/p4"],
            "{how}: live events after the restore"
        );
        assert_quiet(&r, Duration::from_millis(500));
        assert_eq!(r.stats()[0].stale_drops, 0, "{how}");
    }
}

// ---------------------------------------------------------------------------
// C, D. Relists racing the running stream

/// A scripted server whose every watch stays open as a tap; the k-th
/// watch-list (from 0) gets `state(k)` at once, or, for None, nothing until
/// the test writes it.
fn tapped_server(
    taps: &Taps,
    state: impl Fn(usize) -> Option<Vec<Vec<u8>>> + Send + Sync + 'static,
) -> Scripted {
    let taps = taps.clone();
    let wl = AtomicUsize::new(0);
    Scripted::start(move |n, path| match kind(path) {
        Kind::WatchList => {
            let chunks = state(wl.fetch_add(1, Ordering::SeqCst)).unwrap_or_default();
            taps.reply(n, path, Reply::json(chunks, Then::Close))
        }
        Kind::Watch(_) => taps.reply(n, path, Reply::json(vec![], Then::Close)),
        _ => Reply::status(404, "NotFound", &[]),
    })
}

/// Runs `r.relist()` on another thread; its result comes on the channel.
fn relist_in_background(r: &Arc<Reader>) -> crossbeam_channel::Receiver<bool> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let r = r.clone();
    std::thread::spawn(move || {
        let _ = tx.send(r.relist());
    });
    rx
}

/// The primary stream is synced; a relist starts a replacement whose
/// initial state is slow; meanwhile the primary's watch gets a 410 and it
/// re-syncs. Afterwards one stream watches, synced, and sees what is new.
#[test]
fn a_relist_racing_a_resync_ends_with_one_synced_watch() {
    let _w = Watchdog::new("relist_vs_resync", Duration::from_secs(60));
    let o1 = pod("a", "p1", 1, "2", ",\"spec\":{}");
    let o2 = pod("a", "p2", 2, "3", ",\"spec\":{}");
    let taps = Taps::new();
    let s = {
        let (o1, o2) = (o1.clone(), o2.clone());
        // The relist's watch-list (the second) is slow.
        tapped_server(&taps, move |k| {
            (k != 1).then(|| vec![added(&o1), added(&o2), end_bookmark("10")])
        })
    };
    let r = Arc::new(Reader::open(fast(&s.url())).unwrap());
    assert_eq!(until_synced(&r), ["Add a/p1", "Add a/p2", "Synced pods"]);
    let relist = relist_in_background(&r);
    assert!(taps.wait(1, Duration::from_secs(10)), "no relist request");
    assert_eq!(kind(&s.requests()[1]), Kind::WatchList);
    // The replacement's initial state begins, slowly.
    taps.send(1, added(&o1));
    // The primary's live watch expires: it re-syncs meanwhile.
    taps.send(0, expired("10"));
    taps.end(0);
    let _ = s.wait_requests(3, Duration::from_secs(1));
    taps.send(1, added(&o2));
    taps.send(1, end_bookmark("10"));
    let done = relist.recv_timeout(Duration::from_secs(10));
    assert_eq!(done, Ok(true), "the relist did not complete");
    let one = taps.wait_open(1, Duration::from_secs(5));
    let open = taps.open();
    // Whichever stream watches now must see a new object.
    let to = taps.send_open(&added(&pod("a", "p3", 3, "11", ",\"spec\":{}")));
    assert!(
        !to.is_empty(),
        "no watch open after the relist; requests {:?}",
        trail(&s)
    );
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !got.iter().any(|g| g == "Add a/p3") {
        match r.next_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(e) => got.push(show(&e)),
            Err(_) => panic!(
                "no Add a/p3 after the relist (sent on {to:?}); entries {got:?}; requests {:?}",
                trail(&s)
            ),
        }
    }
    got.extend(shown(&drain(&r, Duration::from_millis(500))));
    for g in &got {
        assert!(
            g == "Add a/p3"
                || g == "Snapshot a/p1"
                || g == "Snapshot a/p2"
                || g == "Synced pods"
                || g == "Stale pods Resyncing",
            "unexpected {g} in {got:?}"
        );
    }
    assert_eq!(
        got.iter().filter(|g| *g == "Add a/p3").count(),
        1,
        "{got:?}"
    );
    assert_eq!(got.last().map(String::as_str), Some("Add a/p3"), "{got:?}");
    eprintln!("entries {got:?}; requests {:?}; open {open:?}", trail(&s));
    let st = &r.stats()[0];
    assert!(st.synced, "not synced after the relist: {st:?}");
    assert!(
        one,
        "open watches after the relist: {open:?}; requests {:?}",
        trail(&s)
    );
}

/// Opaque resourceVersions have no order, so a relist's snapshot read by a
/// second stream while the first delivers live events could bring back an
/// object deleted meanwhile: a relist of such a resource is the running
/// stream's own re-sync instead (its connection ended for it), and the
/// object deleted meanwhile is gone from it, with no stream delivering
/// beside it.
#[test]
fn an_object_deleted_during_a_relist_with_opaque_versions_does_not_come_back() {
    let _w = Watchdog::new("relist_opaque_delete", Duration::from_secs(60));
    let o1 = pod("a", "p1", 1, "x-a", ",\"spec\":{}");
    let o2 = pod("a", "p2", 2, "x-b", ",\"spec\":{}");
    let taps = Taps::new();
    let s = {
        let (o1, o2) = (o1.clone(), o2.clone());
        tapped_server(&taps, move |k| match k {
            0 => Some(vec![added(&o1), added(&o2), end_bookmark("x-c")]),
            // The relist's full state, after p2's delete: the test writes it.
            _ => None,
        })
    };
    let r = Arc::new(Reader::open(fast(&s.url())).unwrap());
    let mut store = Store::default();
    let first = sync_entries(&r);
    for e in &first {
        store.apply(e).unwrap();
    }
    assert_eq!(
        sorted(shown(&first)),
        ["Add a/p1", "Add a/p2", "Synced pods"]
    );

    let relist = relist_in_background(&r);
    assert!(taps.wait(1, Duration::from_secs(10)), "no relist request");
    assert!(
        trail(&s).last().is_some_and(|q| q.starts_with("WL")),
        "the relist is a watch-list of the running stream: {:?}",
        trail(&s)
    );
    // The old connection was ended: a delete written to it goes nowhere.
    taps.send(0, frame("DELETED", &o2));
    taps.send(1, added(&o1));
    taps.send(1, end_bookmark("x-e"));
    assert_eq!(
        relist.recv_timeout(Duration::from_secs(10)),
        Ok(true),
        "the relist did not complete"
    );
    let rest = drain(&r, Duration::from_millis(700));
    for e in &rest {
        store
            .apply(e)
            .unwrap_or_else(|why| panic!("{why}; after the delete: {:?}", shown(&rest)));
    }
    assert_eq!(
        sorted(shown(&rest)),
        [
            "Delete(inferred) a/p2",
            "Snapshot a/p1",
            "Stale pods Resyncing",
            "Synced pods"
        ],
        "after the delete"
    );
    assert_eq!(store.names(), ["a/p1"]);
}

// ---------------------------------------------------------------------------
// E. One resource in two namespaces

fn two_namespaces(server: &str) -> Config {
    let mut c = fast(server);
    c.resources = vec![pods_in("a"), pods_in("b")];
    c
}

/// The namespace a request is for.
fn ns_of(path: &str) -> &'static str {
    if path.contains("/namespaces/a/") {
        "a"
    } else if path.contains("/namespaces/b/") {
        "b"
    } else {
        "?"
    }
}

#[test]
fn two_namespaces_expired_together_are_synced_once_after_both_resync() {
    let _w = Watchdog::new("namespaces_resync", Duration::from_secs(60));
    let taps = Taps::new();
    let (wl_a, wl_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let b_resyncing = Arc::new(AtomicBool::new(false));
    let s = {
        let taps = taps.clone();
        Scripted::start(move |n, path| {
            let ns = ns_of(path);
            match kind(path) {
                Kind::WatchList => {
                    let k = if ns == "a" { &wl_a } else { &wl_b }.fetch_add(1, Ordering::SeqCst);
                    let o = pod(
                        ns,
                        &format!("p{ns}"),
                        if ns == "a" { 1 } else { 2 },
                        "2",
                        "",
                    );
                    if ns == "b" && k == 1 {
                        b_resyncing.store(true, Ordering::SeqCst);
                    }
                    // a's re-sync is answered once b's has begun: both
                    // namespaces are re-syncing when a's completes.
                    let deadline = Instant::now() + Duration::from_secs(5);
                    while ns == "a" && k == 1 && !b_resyncing.load(Ordering::SeqCst) {
                        if Instant::now() > deadline {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    // b's re-sync is slow: the test writes it.
                    let chunks = if ns == "b" && k == 1 {
                        vec![]
                    } else {
                        vec![added(&o), end_bookmark("10")]
                    };
                    taps.reply(n, path, Reply::json(chunks, Then::Close))
                }
                Kind::Watch(_) => taps.reply(n, path, Reply::json(vec![], Then::Close)),
                _ => Reply::status(404, "NotFound", &[]),
            }
        })
    };
    let r = Reader::open(two_namespaces(&s.url())).unwrap();
    assert_eq!(until_synced(&r), ["Add a/pa", "Add b/pb", "Synced pods"]);
    assert_quiet(&r, Duration::from_millis(200));
    let live = taps.open();
    assert_eq!(live.len(), 2, "{live:?}");
    for (n, _) in &live {
        taps.send(*n, expired("10"));
    }
    for (n, _) in &live {
        taps.end(*n);
    }
    // b's re-sync starts and hangs; a's completes.
    let deadline = Instant::now() + Duration::from_secs(10);
    let b_resync = loop {
        let found = taps.open().into_iter().find(|(n, p)| {
            ns_of(p) == "b" && kind(p) == Kind::WatchList && !live.iter().any(|l| l.0 == *n)
        });
        if let Some((n, _)) = found {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "no re-sync for b: {:?}",
            trail(&s)
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let before = sorted(shown(&drain(&r, Duration::from_millis(1000))));
    assert_eq!(
        before,
        [
            "Snapshot a/pa",
            "Stale pods@a Resyncing",
            "Stale pods@b Resyncing"
        ],
        "before b's re-sync is complete: each namespace says it is not current, no Synced"
    );
    taps.send(b_resync, added(&pod("b", "pb", 2, "2", "")));
    taps.send(b_resync, end_bookmark("12"));
    assert_eq!(take(&r, 2), ["Snapshot b/pb", "Synced pods"]);
    assert_quiet(&r, Duration::from_millis(500));
}

#[test]
fn removing_a_namespace_whose_sync_is_pending_lets_the_resource_sync() {
    let _w = Watchdog::new("namespace_removed", Duration::from_secs(60));
    let taps = Taps::new();
    let s = {
        let taps = taps.clone();
        Scripted::start(move |n, path| match (kind(path), ns_of(path)) {
            (Kind::WatchList, "a") => taps.reply(
                n,
                path,
                Reply::json(
                    vec![added(&pod("a", "pa", 1, "2", "")), end_bookmark("10")],
                    Then::Close,
                ),
            ),
            // b's initial state never ends.
            (Kind::WatchList, _) => taps.reply(n, path, Reply::json(vec![], Then::Close)),
            (Kind::Watch(_), _) => taps.reply(n, path, Reply::json(vec![], Then::Close)),
            _ => Reply::status(404, "NotFound", &[]),
        })
    };
    let r = Reader::open(two_namespaces(&s.url())).unwrap();
    assert_eq!(take(&r, 1), ["Add a/pa"]);
    assert_quiet(&r, Duration::from_millis(500));
    assert!(r.set_resources(&[pods_in("a")]).unwrap());
    let e = r
        .next_timeout(Duration::from_secs(5))
        .map(|e| show(&e))
        .unwrap_or_else(|e| panic!("no Synced within 5 s of removing b: {e}"));
    assert_eq!(e, "Synced pods");
    assert_quiet(&r, Duration::from_millis(300));
    assert_eq!(r.stats().len(), 1);
    assert!(r.stats()[0].synced);
    assert!(
        taps.wait_open(1, Duration::from_secs(5)),
        "b's watch-list is still open: {:?}",
        taps.open()
    );
}

// ---------------------------------------------------------------------------
// F. Checkpoints

/// The consumer stops reading (its thread calls `checkpoint()`) while the
/// channel is full of a synced resource's live changes: the call must
/// return, not wait for the consumer.
#[test]
fn a_checkpoint_taken_while_the_channel_is_full_returns() {
    let _w = Watchdog::new("checkpoint_full_channel", Duration::from_secs(60));
    let s = Scripted::start(move |_, path| match kind(path) {
        Kind::WatchList => {
            let mut b = vec![added(&pod("a", "p1", 1, "1", "")), end_bookmark("1")];
            b.extend((2..=21).map(|i| added(&pod("a", &format!("p{i}"), i, &i.to_string(), ""))));
            Reply::json(b, Then::Hang)
        }
        _ => Reply::json(vec![], Then::Hang),
    });
    let mut c = fast(&s.url());
    c.tuning.channel_capacity = 2;
    let r = Arc::new(Reader::open(c).unwrap());
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    // The live changes fill the channel; the stream waits for the consumer.
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.receiver_without_byte_budget().len() < 2 {
        assert!(Instant::now() < deadline, "the channel never filled");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    // On a thread of its own only so that a deadlock fails this test
    // instead of hanging the binary: the consumer is not reading meanwhile.
    let (tx, rx) = crossbeam_channel::bounded(1);
    let t = {
        let r = r.clone();
        std::thread::spawn(move || {
            let cp = r.checkpoint();
            let _ = tx.send((cp.resources(), cp.objects()));
        })
    };
    let got = rx.recv_timeout(Duration::from_secs(1));
    if got.is_err() {
        // Unblock it before failing.
        let _ = drain(&r, Duration::from_millis(300));
        let _ = t.join();
        panic!("checkpoint() did not return within 1 s while the channel was full");
    }
    t.join().unwrap();
    let (resources, objects) = got.unwrap();
    assert_eq!(resources, 1);
    assert!((1..=21).contains(&objects), "{objects}");
    let rest = shown(&drain(&r, Duration::from_millis(500)));
    let want: Vec<String> = (2..=21).map(|i| format!("Add a/p{i}")).collect();
    assert_eq!(rest, want);
}

/// Takes a checkpoint after `r` stops, everything drained.
fn stopped_checkpoint(r: &Reader) -> Vec<u8> {
    r.stop();
    while r.next().is_ok() {}
    r.checkpoint().to_bytes()
}

/// A checkpoint taken while a resource re-syncs keeps the resource and the
/// objects the consumer holds: resumed, no Add for a held name, and the
/// delete made while stopped comes.
#[test]
fn a_checkpoint_taken_during_a_resync_keeps_the_resource() {
    let _w = Watchdog::new("checkpoint_during_resync", Duration::from_secs(60));
    let objects: Vec<String> = (1..=3)
        .map(|i| pod("a", &format!("p{i}"), i, &i.to_string(), ""))
        .collect();
    let bytes = {
        let taps = Taps::new();
        let wl = AtomicUsize::new(0);
        let s = {
            let (taps, objects) = (taps.clone(), objects.clone());
            Scripted::start(move |n, path| match kind(path) {
                Kind::WatchList if wl.fetch_add(1, Ordering::SeqCst) == 0 => {
                    let mut b: Vec<Vec<u8>> = objects.iter().map(|o| added(o)).collect();
                    b.push(end_bookmark("10"));
                    taps.reply(n, path, Reply::json(b, Then::Close))
                }
                // The re-sync's watch-list: in progress for as long as the test runs.
                _ => taps.reply(n, path, Reply::json(vec![], Then::Close)),
            })
        };
        let r = Reader::open(fast(&s.url())).unwrap();
        assert_eq!(
            until_synced(&r),
            ["Add a/p1", "Add a/p2", "Add a/p3", "Synced pods"]
        );
        taps.send(0, expired("10"));
        taps.end(0);
        assert!(taps.wait(1, Duration::from_secs(10)), "no re-sync");
        assert_eq!(kinds(&s)[1], "WL");
        let bytes = stopped_checkpoint(&r);
        let cp = Checkpoint::from_bytes(&bytes).unwrap();
        assert_eq!(
            (cp.resources(), cp.objects()),
            (1, 3),
            "the checkpoint taken during the re-sync lost the resource"
        );
        bytes
    };
    for expired_rv in [false, true] {
        let what = if expired_rv { "expired" } else { "served" };
        // While stopped: p2 deleted at 11.
        let s = {
            let objects = objects.clone();
            Scripted::start(move |_, path| match kind(path) {
                Kind::Watch(rv) if rv == "10" && !expired_rv => Reply::json(
                    vec![frame("DELETED", &pod("a", "p2", 2, "11", ""))],
                    Then::Hang,
                ),
                Kind::Watch(rv) if rv == "10" => Reply::json(vec![expired("10")], Then::Close),
                Kind::Watch(_) => Reply::json(vec![], Then::Hang),
                Kind::WatchList => Reply::json(
                    vec![added(&objects[0]), added(&objects[2]), end_bookmark("11")],
                    Then::Hang,
                ),
                _ => Reply::json(
                    vec![listed(&[objects[0].clone(), objects[2].clone()], "11")],
                    Then::Close,
                ),
            })
        };
        let mut c = fast(&s.url());
        c.resume = Some(Checkpoint::from_bytes(&bytes).unwrap());
        let r = Reader::open(c).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got: Vec<String> = Vec::new();
        // Resumed by a watch from 10 (the delete as the server sent it) or
        // by a re-sync (the delete inferred): either way, the delete.
        let is_delete = |g: &String| g == "Delete a/p2" || g == "Delete(inferred) a/p2";
        while !(got.iter().any(is_delete) && got.iter().any(|g| g == "Synced pods")) {
            match r.next_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(e) => got.push(show(&e)),
                Err(e) => panic!("{what}: {e}; entries {got:?}; requests {:?}", trail(&s)),
            }
        }
        got.extend(shown(&drain(&r, Duration::from_millis(500))));
        assert!(
            !got.iter().any(|g| g.starts_with("Add ")),
            "{what}: an Add for a name the consumer holds: {got:?}"
        );
        assert_eq!(
            got.iter().filter(|g| is_delete(g)).count(),
            1,
            "{what}: {got:?}"
        );
        assert!(
            !got.iter().any(|g| g.starts_with("Error")),
            "{what}: {got:?}"
        );
    }
}

/// Synced after a resume means caught up with the server as of the resume:
/// the create, update and delete made while stopped come before it.
#[test]
fn a_resume_is_synced_only_after_what_changed_while_stopped() {
    let _w = Watchdog::new("resume_synced_after_changes", Duration::from_secs(60));
    let api = FakeApi::start();
    for i in 1..=3 {
        common::pod(&api, "a", &format!("p{i}"));
    }
    let r = common::open(&api, &["pods"]);
    assert_eq!(
        until_synced(&r),
        ["Add a/p1", "Add a/p2", "Add a/p3", "Synced pods"]
    );
    let bytes = stopped_checkpoint(&r);
    drop(r);
    api.delete("pods", Some("a"), "p2");
    common::pod(&api, "a", "p3");
    common::pod(&api, "a", "p4");
    let mut c = common::config(&api, &["pods"]);
    c.resume = Some(Checkpoint::from_bytes(&bytes).unwrap());
    let r = Reader::open(c).unwrap();
    assert_eq!(
        until_synced(&r),
        ["Add a/p4", "Delete a/p2", "Update a/p3", "Synced pods"]
    );
    assert_quiet(&r, Duration::from_millis(500));
}

/// A resume asks the server nothing before its watch (issue 36): the replay
/// ends at its quiet, so a role that may watch but not list resumes, and an
/// apiserver restart's 410 is the first answer. Only a replay that runs
/// past its patience asks the server's resourceVersion.
#[test]
fn a_resume_asks_nothing_before_its_watch() {
    let _w = Watchdog::new("resume_asks_nothing", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
    let r = common::open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    let bytes = stopped_checkpoint(&r);
    drop(r);
    common::pod(&api, "a", "p2");
    let before = requests(&api).len();
    let mut c = common::config(&api, &["pods"]);
    c.resume = Some(Checkpoint::from_bytes(&bytes).unwrap());
    let r = Reader::open(c).unwrap();
    assert_eq!(until_synced(&r), ["Add a/p2", "Synced pods"]);
    let after = requests(&api).split_off(before);
    assert!(
        after
            .iter()
            .all(|q| q.contains("watch=true&allowWatchBookmarks=true&resourceVersion=")),
        "{after:?}"
    );
    assert!(!r.stats()[0].failed);
    assert_quiet(&r, Duration::from_millis(500));
}

/// A checkpoint whose resourceVersion was damaged is refused with a clear
/// error, or resumed by a re-sync: never a resource that ends on the 400.
#[test]
fn a_checkpoint_with_a_damaged_resource_version_is_refused_or_resynced() {
    let _w = Watchdog::new("checkpoint_damaged_rv", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
    common::pod(&api, "a", "p2");
    let r = common::open(&api, &["pods"]);
    assert_eq!(until_synced(&r), ["Add a/p1", "Add a/p2", "Synced pods"]);
    let bytes = stopped_checkpoint(&r);
    drop(r);
    for damage in ["12abc", "-1"] {
        let mut doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        doc["resources"][0]["resource_version"] = damage.into();
        let bad = serde_json::to_vec(&doc).unwrap();
        let cp = match Checkpoint::from_bytes(&bad) {
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("resourceVersion"), "{damage}: unclear: {e}");
                continue;
            }
            Ok(cp) => cp,
        };
        let mut c = common::config(&api, &["pods"]);
        c.resume = Some(cp);
        let r = match Reader::open(c) {
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("resourceVersion"), "{damage}: unclear: {e}");
                continue;
            }
            Ok(r) => r,
        };
        let got = shown(&drain(&r, Duration::from_secs(2)));
        eprintln!("{damage}: {got:?}; {:?}", r.stats()[0]);
        assert!(
            !got.iter()
                .any(|g| g.starts_with("Error") || g.starts_with("Add")),
            "{damage}: {got:?}"
        );
        assert_eq!(
            got.iter().filter(|g| g.starts_with("Snapshot")).count(),
            2,
            "{damage}: a re-sync against the restored state: {got:?}"
        );
        assert_eq!(
            got.last().map(String::as_str),
            Some("Synced pods"),
            "{damage}"
        );
        let st = &r.stats()[0];
        assert!(st.synced && !st.failed, "{damage}: {st:?}");
    }
}

// ---------------------------------------------------------------------------
// G. Time limits

/// A server that ignores `sendInitialEvents` (its objects as ADDED, never
/// the end bookmark) but keeps talking — a MODIFIED, or a plain bookmark,
/// every 0.5 s: the objects come at once, and `Synced` within
/// `initial_events_timeout` and a little, by LIST + WATCH.
#[test]
fn a_server_that_ignores_send_initial_events_but_sends_modified_events_is_synced_in_time() {
    let _w = Watchdog::new("ignores_but_modifies", Duration::from_secs(60));
    ignores_send_initial_events_but_talks(true);
}

#[test]
fn a_server_that_ignores_send_initial_events_but_sends_bookmarks_is_synced_in_time() {
    let _w = Watchdog::new("ignores_but_bookmarks", Duration::from_secs(60));
    ignores_send_initial_events_but_talks(false);
}

fn ignores_send_initial_events_but_talks(modified: bool) {
    {
        let what = if modified { "MODIFIED" } else { "BOOKMARK" };
        let taps = Taps::new();
        let rv = Arc::new(AtomicU64::new(2));
        let p = |name: &str, i: u32, rv: u64| pod("a", name, i, &rv.to_string(), ",\"spec\":{}");
        let s = {
            let (taps, rv) = (taps.clone(), rv.clone());
            Scripted::start(move |n, path| match kind(path) {
                Kind::WatchList => taps.reply(
                    n,
                    path,
                    Reply::json(
                        vec![added(&p("p1", 1, 1)), added(&p("p2", 2, 2))],
                        Then::Close,
                    ),
                ),
                Kind::List | Kind::ListMore => {
                    let now = rv.load(Ordering::SeqCst);
                    let p1_rv = if modified { now } else { 1 };
                    Reply::json(
                        vec![listed(
                            &[p("p1", 1, p1_rv), p("p2", 2, 2)],
                            &now.to_string(),
                        )],
                        Then::Close,
                    )
                }
                Kind::Watch(_) => Reply::json(vec![], Then::Hang),
            })
        };
        let done = Arc::new(AtomicBool::new(false));
        let talker = {
            let (taps, rv, done) = (taps.clone(), rv.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(500));
                    let v = rv.fetch_add(1, Ordering::SeqCst) + 1;
                    let chunk = if modified {
                        frame("MODIFIED", &p("p1", 1, v))
                    } else {
                        bookmark(&v.to_string())
                    };
                    for (n, _) in taps.open() {
                        taps.send(n, chunk.clone());
                    }
                }
            })
        };
        let mut c = defaults(&s.url());
        c.tuning.initial_events_timeout = Duration::from_secs(2);
        let t0 = Instant::now();
        let r = Reader::open(c).unwrap();
        let mut first = Vec::new();
        for _ in 0..2 {
            match r.next_timeout(
                (t0 + Duration::from_secs(2)).saturating_duration_since(Instant::now()),
            ) {
                Ok(e) => first.push(show(&e)),
                Err(e) => panic!("{what}: no Add within 2 s ({e}); got {first:?}"),
            }
        }
        assert_eq!(sorted(first), ["Add a/p1", "Add a/p2"], "{what}");
        let limit = t0 + Duration::from_secs(2 + 3);
        let mut got = Vec::new();
        loop {
            match r.next_timeout(limit.saturating_duration_since(Instant::now())) {
                Ok(e) if e.change() == Change::Synced => break,
                Ok(e) => got.push(show(&e)),
                Err(e) => panic!(
                    "{what}: no Synced within 5 s ({e}); got {got:?}; requests {:?}",
                    trail(&s)
                ),
            }
        }
        for g in &got {
            let ok =
                g == "Snapshot a/p1" || g == "Snapshot a/p2" || (modified && g == "Update a/p1");
            assert!(ok, "{what}: unexpected {g} in {got:?}");
        }
        assert!(r.stats()[0].list_fallback, "{what}");
        done.store(true, Ordering::SeqCst);
        talker.join().unwrap();
    }
}

/// A LIST page's continue token expires (the pages took longer than etcd
/// keeps history): the same full state goes on in one unpaged answer, as
/// client-go's pager does; no re-sync, nothing delivered twice.
#[test]
fn an_expired_continue_token_lists_again_unpaged() {
    let _w = Watchdog::new("continue_token_expired", Duration::from_secs(60));
    let p = |name: &str, i: u32| pod("a", name, i, &(i + 1).to_string(), "");
    let s = Scripted::start(move |_, path| match kind(path) {
        Kind::WatchList => Reply::status(400, "BadRequest", &[]),
        Kind::List if path.contains("limit=") => {
            let mut body = String::from_utf8(listed(&[p("p1", 1), p("p2", 2)], "9")).unwrap();
            body = body.replacen(
                "\"resourceVersion\":\"9\"}",
                "\"resourceVersion\":\"9\",\"continue\":\"c1\"}",
                1,
            );
            Reply::json(vec![body.into_bytes()], Then::Close)
        }
        Kind::ListMore => Reply::status(410, "Expired", &[]),
        Kind::List => Reply::json(
            vec![listed(&[p("p1", 1), p("p2", 2), p("p3", 3)], "12")],
            Then::Close,
        ),
        Kind::Watch(_) => Reply::json(vec![], Then::Hang),
    });
    let mut c = fast(&s.url());
    c.tuning.page_size = 2;
    let r = Reader::open(c).unwrap();
    let got = shown(&sync_entries(&r));
    assert_eq!(
        got,
        ["Add a/p1", "Add a/p2", "Add a/p3", "Synced pods"],
        "requests {:?}",
        s.requests()
    );
    assert!(drain(&r, Duration::from_millis(500)).is_empty());
    let asked: Vec<String> = s
        .requests()
        .iter()
        .map(|q| q.split('?').nth(1).unwrap_or("").to_string())
        .collect();
    assert_eq!(kinds(&s), ["WL", "L", "L+", "L", "W 12"], "{asked:?}");
    assert_eq!(
        asked[1..4],
        ["limit=2", "limit=2&continue=c1", ""],
        "{asked:?}"
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// gzip asked for; the server compresses each event as a gzip member of its
/// own (members concatenated are one valid gzip stream): every event is read.
#[test]
fn gzip_with_one_member_per_event_is_read_whole() {
    let _w = Watchdog::new("gzip_members_watch", Duration::from_secs(60));
    gzip_members(false);
}

/// The same for a LIST body in three gzip members.
#[test]
fn gzip_list_body_in_several_members_is_read_whole() {
    let _w = Watchdog::new("gzip_members_list", Duration::from_secs(60));
    gzip_members(true);
}

fn gzip_members(list: bool) {
    let objects: Vec<String> = (1..=3)
        .map(|i| pod("a", &format!("p{i}"), i, &i.to_string(), ",\"spec\":{}"))
        .collect();
    {
        let what = if list { "LIST" } else { "watch-list" };
        let s = {
            let objects = objects.clone();
            Scripted::start(move |_, path| {
                let gz = |r: Reply| r.header("Content-Encoding", "gzip");
                match kind(path) {
                    Kind::WatchList if list => refused_422(),
                    Kind::WatchList => {
                        let mut frames: Vec<Vec<u8>> = objects.iter().map(|o| added(o)).collect();
                        frames.push(end_bookmark("3"));
                        gz(Reply::json(
                            frames.iter().map(|f| gzip(f)).collect(),
                            Then::Hang,
                        ))
                    }
                    Kind::List | Kind::ListMore => {
                        let body = listed(&objects, "3");
                        let third = body.len() / 3;
                        let members = vec![
                            gzip(&body[..third]),
                            gzip(&body[third..2 * third]),
                            gzip(&body[2 * third..]),
                        ];
                        gz(Reply::json(members, Then::Close))
                    }
                    Kind::Watch(_) => Reply::json(vec![], Then::Hang),
                }
            })
        };
        let mut c = fast(&s.url());
        c.tuning.gzip = true;
        let r = Reader::open(c).unwrap();
        let mut got = Vec::new();
        while got.last().map(String::as_str) != Some("Synced pods") {
            match r.next_timeout(Duration::from_secs(10)) {
                Ok(e) => got.push(show(&e)),
                Err(e) => panic!(
                    "{what}: {e}; got {got:?}; requests {:?}; last error {:?}",
                    trail(&s),
                    r.stats()[0].last_error
                ),
            }
        }
        assert_eq!(
            got,
            ["Add a/p1", "Add a/p2", "Add a/p3", "Synced pods"],
            "{what}"
        );
        assert_quiet(&r, Duration::from_millis(300));
        let want: &[&str] = if list { &["WL", "L", "W 3"] } else { &["WL"] };
        assert!(s.wait_requests(want.len(), Duration::from_secs(5)));
        assert_eq!(kinds(&s), want, "{what}");
        let st = &r.stats()[0];
        assert_eq!(st.last_error, None, "{what}");
        assert_eq!(st.reconnects, 0, "{what}");
    }
}

// ---------------------------------------------------------------------------
// H. Hosts calling back in

/// A host's logger that calls into the reader from every tattler log line
/// of the configmaps streams (only this test watches configmaps), and stops
/// it on a warning.
struct Host {
    reader: Mutex<Option<Arc<Reader>>>,
    calls: AtomicUsize,
    stops: AtomicUsize,
    /// A reader the logger owns alone, dropped (closed) from inside the log
    /// call on the token file's warning.
    owned: Mutex<Option<Reader>>,
    closed: AtomicUsize,
}

static HOST: Host = Host {
    reader: Mutex::new(None),
    calls: AtomicUsize::new(0),
    stops: AtomicUsize::new(0),
    owned: Mutex::new(None),
    closed: AtomicUsize::new(0),
};

thread_local! {
    static IN_LOG: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl log::Log for Host {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, record: &log::Record) {
        if IN_LOG.with(|c| c.replace(true)) {
            return;
        }
        if record
            .args()
            .to_string()
            .contains("using the token read before")
        {
            // The log callback closes the reader: it joins the other streams,
            // which must not be waiting for a lock this thread holds.
            let owned = self.owned.lock().unwrap().take();
            if let Some(r) = owned {
                drop(r);
                self.closed.fetch_add(1, Ordering::SeqCst);
            }
        }
        let thread = std::thread::current();
        let ours = thread.name().unwrap_or("").contains("configmaps")
            || record.args().to_string().contains("configmaps");
        let reader = if ours {
            self.reader.lock().unwrap().clone()
        } else {
            None
        };
        if let Some(reader) = reader {
            let _ = reader.stats();
            let _ = reader.metrics_text();
            let _ = reader.checkpoint();
            self.calls.fetch_add(1, Ordering::SeqCst);
            if record.level() <= log::Level::Warn {
                reader.stop();
                self.stops.fetch_add(1, Ordering::SeqCst);
            }
        }
        IN_LOG.with(|c| c.set(false));
    }

    fn flush(&self) {}
}

/// Installs `HOST` as the binary's logger, once for all the tests that use it.
fn install_host() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&HOST).expect("the only logger in this binary");
        log::set_max_level(log::LevelFilter::Debug);
    });
}

#[test]
fn a_logger_that_calls_into_the_reader_never_hangs_close() {
    let _w = Watchdog::new("reentrant_logger", Duration::from_secs(60));
    install_host();
    let cm = |name: &str, i: u32, rv: u32| {
        format!(
            "{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"a\",\"uid\":\"{}\",\"resourceVersion\":\"{rv}\"}},\"data\":{{}}}}",
            uid(i)
        )
    };
    for case in ["skipped object", "503", "410"] {
        let s = Scripted::start(move |_, path| {
            match (case, kind(path)) {
            ("skipped object", Kind::WatchList) => Reply::json(
                vec![
                    added(&cm("c1", 1, 1)),
                    // No uid: reported with a warning, skipped.
                    added("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bad\",\"namespace\":\"a\",\"resourceVersion\":\"2\"}}"),
                    added(&cm("c3", 3, 3)),
                    end_bookmark("3"),
                ],
                Then::Hang,
            ),
            ("503", _) => Reply::status(503, "ServiceUnavailable", &[]),
            (_, Kind::WatchList) => Reply::json(vec![added(&cm("c1", 1, 1)), end_bookmark("3")], Then::Close),
            (_, Kind::Watch(rv)) => Reply::json(vec![expired(&rv)], Then::Close),
            _ => Reply::status(404, "NotFound", &[]),
        }
        });
        let mut c = fast(&s.url());
        c.resources = ResourceSpec::parse("configmaps").unwrap();
        let r = Arc::new(Reader::open(c).unwrap());
        let stops = HOST.stops.load(Ordering::SeqCst);
        *HOST.reader.lock().unwrap() = Some(r.clone());
        let calls = HOST.calls.load(Ordering::SeqCst);
        // Entries flow meanwhile; the logger stops the reader on its first
        // warning, or the test does after 3 s (what is logged at which level
        // is not the point: close() must not hang either way).
        let deadline = Instant::now() + Duration::from_secs(3);
        while HOST.stops.load(Ordering::SeqCst) == stops && Instant::now() < deadline {
            let _ = r.next_timeout(Duration::from_millis(20));
        }
        assert!(
            HOST.calls.load(Ordering::SeqCst) > calls,
            "{case}: the logger never called into the reader; requests {:?}",
            trail(&s)
        );
        r.stop();
        *HOST.reader.lock().unwrap() = None;
        assert!(r.is_stopped(), "{case}");
        let drained = within(Duration::from_secs(5), {
            let r = r.clone();
            move || while r.next().is_ok() {}
        });
        assert!(drained.is_some(), "{case}: next() did not end after stop()");
        // The logger may still hold a clone for a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&r) > 1 {
            assert!(
                Instant::now() < deadline,
                "{case}: the logger kept the reader"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = Arc::try_unwrap(r).ok().unwrap();
        let closed = within(Duration::from_secs(10), move || r.close());
        assert!(closed.is_some(), "{case}: close() hung");
    }
}

/// The token file's warning ("using the token read before") was logged with
/// the credentials lock held: a log callback that closed the reader then
/// waited forever for the streams parked on that lock.
#[test]
fn a_log_callback_that_closes_the_reader_on_a_credentials_warning_returns() {
    let _w = Watchdog::new("close_in_log", Duration::from_secs(60));
    install_host();
    let dir = std::env::temp_dir().join(format!("tattler-seq-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "secret-token\n").unwrap();
    let path = token.clone();
    // Every request is refused as unauthorized, and the token file goes away
    // with the first: each stream reloads its credentials at once, and the
    // file can no longer be read. No answer comes before the logger owns
    // the reader: the warning (logged once) must find it there, however
    // late this thread runs on a loaded machine.
    let armed = Arc::new(AtomicBool::new(false));
    let gate = armed.clone();
    let s = Scripted::start(move |_, _| {
        while !gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = std::fs::remove_file(&path);
        Reply::status(401, "Unauthorized", &[])
    });
    let mut c = fast(&s.url());
    c.access = c.access.token_file(token.to_str().unwrap()).unwrap();
    c.resources = ResourceSpec::parse("pods").unwrap();
    c.resources.extend(ResourceSpec::parse("nodes").unwrap());
    c.resources.extend(ResourceSpec::parse("services").unwrap());
    let closed = HOST.closed.load(Ordering::SeqCst);
    *HOST.owned.lock().unwrap() = Some(Reader::open(c).unwrap());
    armed.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(20);
    while HOST.closed.load(Ordering::SeqCst) == closed && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        HOST.closed.load(Ordering::SeqCst) > closed,
        "no credentials warning came, or the close from the log callback hung; requests {:?}",
        s.requests()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------
// E. A watch cache that lags (kubernetes#139766)

/// A consistent read (`resourceVersion` unset) waits for a watch cache that
/// lags etcd, and the server answers 429 after about 3 s, every time; a read
/// of what the cache holds is served at once. After three 429s the full
/// state asks for that (not older than the last resourceVersion seen, `0`
/// before any), syncs within the stated bound, and the consumer was told
/// the resource was not current meanwhile. Then a re-sync asks for a
/// consistent read again. The same for LIST + WATCH.
#[test]
fn a_lagging_watch_cache_ends_in_a_read_it_can_serve() {
    let _w = Watchdog::new("lagging_cache", Duration::from_secs(120));
    for list_mode in [false, true] {
        let s = Scripted::start(move |_, path| {
            let consistent = !path.contains("resourceVersion=");
            match kind(path) {
                Kind::WatchList if list_mode => Reply::status(400, "BadRequest", &[]),
                Kind::WatchList | Kind::List if consistent => {
                    Reply::status(429, "TooManyRequests", &[("Retry-After", "1")])
                }
                Kind::WatchList => Reply::json(vec![added(&p1()), end_bookmark("5")], Then::Hang),
                Kind::List => Reply::json(vec![listed(&[p1()], "5")], Then::Close),
                Kind::Watch(_) => Reply::json(vec![], Then::Hang),
                _ => Reply::status(404, "NotFound", &[]),
            }
        });
        let what = if list_mode {
            "LIST + WATCH"
        } else {
            "watch-list"
        };
        let start = Instant::now();
        // The defaults' pacing: the bound is what a user gets.
        let r = Reader::open(defaults(&s.url())).unwrap();
        let got = until_synced(&r);
        let took = start.elapsed();
        assert_eq!(
            got,
            ["Add a/p1", "Stale pods Throttled 429", "Synced pods"],
            "{what}"
        );
        assert!(
            took < Duration::from_secs(30),
            "{what}: synced after {took:?}, over the bound in docs/limits.md"
        );
        let full: Vec<String> = s
            .requests()
            .into_iter()
            .filter(|p| matches!(kind(p), Kind::WatchList | Kind::List))
            .filter(|p| !(list_mode && kind(p) == Kind::WatchList))
            .collect();
        assert_eq!(
            full.len(),
            4,
            "{what}: three 429s, then the cache read: {full:?}"
        );
        assert!(
            full[..3].iter().all(|p| !p.contains("resourceVersion=")),
            "{what}: {full:?}"
        );
        assert!(
            full[3].contains("resourceVersion=0")
                && full[3].contains("resourceVersionMatch=NotOlderThan"),
            "{what}: {full:?}"
        );
        let st = &r.stats()[0];
        assert!(
            st.current && st.current_at.as_deref() == Some("5"),
            "{st:?}"
        );
    }
}

/// A watch-list whose initial state is in, on a quiet cluster: its reads
/// wait the idle timeout from then on, not the initial-events timeout, so a
/// healthy, quiet watch is not ended and resumed (a fleet's connections all
/// coming back 30 s after start, for nothing).
#[test]
fn a_synced_watch_list_waits_the_idle_timeout_not_the_initial_events_one() {
    let _w = Watchdog::new("quiet_after_sync", Duration::from_secs(60));
    let s = Scripted::start(|_, path| match kind(path) {
        Kind::WatchList => Reply::json(vec![added(&p1()), end_bookmark("5")], Then::Hang),
        Kind::Watch(_) => Reply::json(vec![], Then::Hang),
        _ => Reply::status(404, "NotFound", &[]),
    });
    let mut c = fast(&s.url());
    c.tuning.initial_events_timeout = Duration::from_secs(1);
    c.tuning.idle_timeout = Duration::from_secs(30);
    let r = Reader::open(c).unwrap();
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    // Three initial-events timeouts of silence.
    assert_quiet(&r, Duration::from_secs(3));
    assert_eq!(
        kinds(&s),
        ["WL"],
        "the quiet watch-list was ended: {:?}",
        trail(&s)
    );
    assert!(r.stats()[0].current);
}
