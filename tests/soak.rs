//! A bounded soak (issue 8), loopback only: sustained churn across three
//! resources for `TATTLER_SOAK_SECS` (default 120, at most 150) while the
//! proxy cuts every connection every few seconds (and some at random bytes),
//! history is compacted (so reconnects re-sync), and every resource is
//! relisted periodically. Resident memory (VmRSS) and the thread count are
//! sampled every few seconds and must stay flat after a warm-up; at the end
//! the consumer's objects must be exactly the server's (no entry lost), with
//! every entry checked on arrival as in the convergence test.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::proxy::{
    process_figures, tattler_threads, tattler_threads_after_close, thread_names, FaultProxy, Mix,
    Model, Rng,
};
use common::*;
use kube_tattler::Reader;
use parking_lot::Mutex;
use tattler_fakeapi::FakeApi;

/// `(path for the fake, resource name in entries)`.
const RESOURCES: [(&str, &str); 3] = [
    ("pods", "pods"),
    ("configmaps", "configmaps"),
    ("nodes", "nodes"),
];
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
const CUT_EVERY: Duration = Duration::from_secs(3);
const RELIST_EVERY: Duration = Duration::from_secs(20);
const COMPACT_EVERY: Duration = Duration::from_secs(10);
/// Memory may end this much above its level after the warm-up (allocator noise).
const RSS_SLACK_KB: u64 = 8 << 10;
const RSS_SLACK_PERCENT: u64 = 15;
const THREAD_SLACK: usize = 6;

#[derive(Debug, Clone)]
struct Sample {
    secs: f64,
    rss_kb: u64,
    threads: usize,
    tattler_threads: usize,
    entries: u64,
    reconnects: u64,
}

/// One create, update or delete, keeping each resource's population about steady.
fn churn_once(api: &FakeApi, rng: &mut Rng) {
    let ns = *rng.pick(&["a", "b", "c"]);
    match rng.below(10) {
        0..=4 => {
            let name = format!("p{}", rng.below(150));
            if rng.chance(250) {
                api.delete("pods", Some(ns), &name);
            } else {
                pod(api, ns, &name);
            }
        }
        5..=8 => {
            let name = format!("c{}", rng.below(80));
            if rng.chance(250) {
                api.delete("configmaps", Some(ns), &name);
            } else {
                let mut o = FakeApi::object(Some(ns), &name);
                o["data"] = serde_json::json!({ "v": rng.next_u64().to_string() });
                api.apply("configmaps", o);
            }
        }
        _ => {
            let name = format!("n{}", rng.below(20));
            if rng.chance(200) {
                api.delete("nodes", None, &name);
            } else {
                api.apply("nodes", FakeApi::object(None, &name));
            }
        }
    }
}

#[test]
fn sustained_churn_with_reconnects_keeps_memory_and_threads_flat_and_loses_nothing() {
    let secs: u64 = std::env::var("TATTLER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120)
        .clamp(30, 150);
    let run = Duration::from_secs(secs);
    // The fake's history, the allocator and the populations level off within about 30 s.
    let warmup = Duration::from_secs((secs / 4).max(20));
    let _w = Watchdog::new("soak", run + Duration::from_secs(60));
    let api = Arc::new(FakeApi::start());
    let proxy = FaultProxy::start(&api.url());
    // Besides the timed cuts, a few connections are cut at a random byte or trickle.
    proxy.set_mix(
        Some(Mix {
            pass: 90,
            stall: 0,
            refuse: 1,
            max_offset: 256 << 10,
            ..Mix::default()
        }),
        7,
    );
    let mut rng = Rng::new(7);
    for _ in 0..400 {
        churn_once(&api, &mut rng);
    }
    let names: Vec<&str> = RESOURCES.iter().map(|(p, _)| *p).collect();
    let mut c = config(&api, &names);
    c.access.server = proxy.url();
    c.tuning.idle_timeout = Duration::from_secs(5);
    let r = Arc::new(Reader::open(c).unwrap());

    let model = Arc::new(Mutex::new(Model::default()));
    let violation = Arc::new(Mutex::new(None::<String>));
    let stop = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (r, model, violation) = (r.clone(), model.clone(), violation.clone());
        std::thread::spawn(move || {
            while let Ok(e) = r.next() {
                if let Err(why) = model.lock().apply(&e) {
                    violation.lock().get_or_insert(why);
                }
            }
        })
    };
    let churn = {
        let (api, stop) = (api.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut rng = Rng::new(8);
            let mut ops = 0u64;
            while !stop.load(Ordering::Relaxed) {
                churn_once(&api, &mut rng);
                ops += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            ops
        })
    };

    let start = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let (mut last_cut, mut last_relist, mut last_compact, mut last_sample) =
        (start, start, start, start - SAMPLE_EVERY);
    let mut relist: Option<std::thread::JoinHandle<bool>> = None;
    let (mut cuts, mut relists, mut compactions) = (0u64, 0u64, 0u64);
    while start.elapsed() < run {
        if let Some(v) = violation.lock().clone() {
            panic!("{v}");
        }
        let now = Instant::now();
        if now - last_cut >= CUT_EVERY {
            cuts += proxy.cut_all() as u64;
            last_cut = now;
        }
        if now - last_compact >= COMPACT_EVERY {
            api.compact();
            compactions += 1;
            last_compact = now;
        }
        if now - last_relist >= RELIST_EVERY && relist.as_ref().is_none_or(|t| t.is_finished()) {
            if let Some(t) = relist.take() {
                assert!(t.join().unwrap(), "a relist found the reader stopped");
            }
            let r = r.clone();
            relist = Some(std::thread::spawn(move || r.relist()));
            relists += 1;
            last_relist = now;
        }
        if now - last_sample >= SAMPLE_EVERY {
            let (_, rss_kb, threads) = process_figures();
            samples.push(Sample {
                secs: start.elapsed().as_secs_f64(),
                rss_kb,
                threads,
                tattler_threads: tattler_threads(),
                entries: model.lock().tally.entries,
                reconnects: r.stats().iter().map(|s| s.reconnects).sum(),
            });
            last_sample = now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let ops = churn.join().unwrap();
    if let Some(t) = relist.take() {
        assert!(t.join().unwrap());
    }
    // Calm: no more faults; the consumer must end up with exactly the server's objects.
    proxy.set_mix(None, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    let objects = loop {
        if let Some(v) = violation.lock().clone() {
            panic!("{v}");
        }
        let diffs: Vec<String> = {
            let m = model.lock();
            RESOURCES
                .iter()
                .filter_map(|(path, res)| m.differs(&api, path, res))
                .collect()
        };
        if diffs.is_empty() {
            let m = model.lock();
            break RESOURCES
                .iter()
                .map(|(_, res)| m.state(res).len())
                .sum::<usize>();
        }
        assert!(Instant::now() < deadline, "entries lost: {diffs:#?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let stats = r.stats();
    r.stop();
    consumer.join().unwrap();
    let tally = model.lock().tally.clone();
    let errors = model.lock().errors.clone();
    let counts = proxy.counts();
    Arc::try_unwrap(r).expect("all clones dropped").close();
    let after_close = tattler_threads_after_close();

    eprintln!("soak: {secs} s, {ops} operations, {cuts} connections cut by time, {relists} relists, {compactions} compactions");
    eprintln!("soak: proxy {counts}");
    eprintln!(
        "soak: entries {tally:?}; objects at the end {objects}, differing 0; Error entries {}",
        errors.len()
    );
    eprintln!("soak: stats {stats:?}");
    eprintln!(
        "{:>7} {:>9} {:>8} {:>8} {:>9} {:>10}",
        "secs", "rss_kB", "threads", "tattler", "entries", "reconnects"
    );
    for s in &samples {
        eprintln!(
            "{:>7.1} {:>9} {:>8} {:>8} {:>9} {:>10}",
            s.secs, s.rss_kb, s.threads, s.tattler_threads, s.entries, s.reconnects
        );
    }

    assert!(errors.is_empty(), "{errors:?}");
    assert!(stats.iter().all(|s| !s.failed), "{stats:?}");
    assert_eq!(
        after_close,
        0,
        "tattler threads left after close: {:?}",
        thread_names()
    );
    // Flat: the level reached after the warm-up, against the end.
    let early: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.secs >= warmup.as_secs_f64() && s.secs < warmup.as_secs_f64() + 20.0)
        .collect();
    let late: Vec<&Sample> = samples.iter().rev().take(3).collect();
    assert!(
        !early.is_empty() && late.len() == 3,
        "too few samples: {samples:?}"
    );
    let early_rss = early.iter().map(|s| s.rss_kb).max().unwrap();
    let late_rss = late.iter().map(|s| s.rss_kb).max().unwrap();
    let allowed = early_rss + (early_rss * RSS_SLACK_PERCENT / 100).max(RSS_SLACK_KB);
    assert!(
        late_rss <= allowed,
        "memory grew: {early_rss} kB after the warm-up, {late_rss} kB at the end (allowed {allowed})"
    );
    let early_threads = early.iter().map(|s| s.threads).max().unwrap();
    let late_threads = late.iter().map(|s| s.threads).max().unwrap();
    assert!(
        late_threads <= early_threads + THREAD_SLACK,
        "threads grew: {early_threads} after the warm-up, {late_threads} at the end"
    );
    // Three streams, plus a relist's fresh stream while one runs.
    assert!(
        samples.iter().all(|s| s.tattler_threads <= 4),
        "{samples:?}"
    );
    assert!(
        tally.entries > 1000 && cuts > 10,
        "the soak did little: {tally:?}, {cuts} cuts"
    );
    eprintln!(
        "soak: flat: rss {early_rss} -> {late_rss} kB (allowed {allowed}), threads {early_threads} -> {late_threads} (allowed +{THREAD_SLACK})"
    );
}
