//! One agent of the fleet benchmark: a tattler reader with the node-agent
//! recipe of docs/agents.md (bench/fleet/run.sh writes its configuration).
//!
//! usage: tattler-fleet-agent CONFIG.json NAME [--reopen-ended]
//!
//! Prints one JSON line (stdout) per non-object entry: `Synced`, `Error`, and
//! any change kind this build does not know (a `Stale` kind is coming: its
//! name via `Change::as_str`, and its number), each with `t`, the
//! CLOCK_MONOTONIC seconds the harness compares across processes. Object
//! entries are only counted, per change kind, except that an object carrying
//! a newer `fleet.bench/marker` annotation than seen before prints a
//! `marker` line (the harness's "is every agent current?" probe).
//! With `--reopen-ended`, a resource that ended for good (an `Error` entry
//! with `ended`: a 403 while a restarted apiserver's RBAC cache is still
//! empty ends a stream today) is removed and added again with
//! `set_resources` after 1 s, doubling to 30 s, as a careful agent would; a
//! `reopen` line says so. Without it the resource stays ended.
//! On stdin, `stats` prints the reader's per-stream counters; `quit` or
//! end of input closes the reader and exits.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Arc;

use kube_tattler::{Change, Config, Entry, Reader, ResourceSpec};
use serde_json::{json, Value};

const MARKER: &[u8] = br#""fleet.bench/marker":""#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(name)) = (args.first(), args.get(1)) else {
        die("usage: tattler-fleet-agent CONFIG.json NAME");
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let config = Config::from_json(&text).unwrap_or_else(|e| die(&e.to_string()));
    let reopen = args.iter().any(|a| a == "--reopen-ended");
    let specs = config.resources.clone();
    let mut ended: HashMap<String, u32> = HashMap::new();
    let out = Out::new(name);
    out.line(json!({"ev": "open"}));
    let reader = Arc::new(Reader::open(config).unwrap_or_else(|e| die(&e.to_string())));

    // The harness asks for counters at phase boundaries; Reader is Sync.
    {
        let reader = Arc::clone(&reader);
        let out = out.clone();
        std::thread::Builder::new()
            .name("fleet-agent-stdin".into())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    match line.as_deref().map(str::trim) {
                        Ok("stats") => out.line(stats(&reader)),
                        Ok("quit") | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                reader.stop();
            })
            .expect("spawn the stdin thread");
    }

    let mut counts: HashMap<&'static str, u64> = HashMap::new();
    let mut markers: HashMap<String, u64> = HashMap::new();
    for e in reader.iter() {
        let resource = e.resource().resource.clone();
        match e.change() {
            Change::Add | Change::Update | Change::Delete | Change::Snapshot => {
                *counts.entry(e.change().as_str()).or_default() += 1;
                if let Some(v) = marker(&e) {
                    let seen = markers.entry(resource.clone()).or_default();
                    if v > *seen {
                        *seen = v;
                        out.line(json!({"ev": "marker", "resource": resource, "value": v,
                                        "object": e.name()}));
                    }
                }
            }
            Change::Synced => out.line(json!({"ev": "Synced", "resource": resource,
                                               "counts": counts})),
            Change::Error => {
                let err = e.error();
                out.line(json!({"ev": "Error", "resource": resource,
                    "code": err.map(|x| x.code), "reason": err.map(|x| x.reason.clone()),
                    "message": err.map(|x| x.message.clone()), "ended": err.map(|x| x.ended)}));
                if reopen && err.is_some_and(|x| x.ended) {
                    let n = ended.entry(resource.clone()).or_default();
                    *n += 1;
                    reopen_later(&reader, &specs, &resource, *n, &out);
                }
            }
            // A kind newer than this agent (Stale, 7, is being added): by name and number.
            #[allow(unreachable_patterns)]
            other => out.line(json!({"ev": other.as_str(), "change": other as u8,
                                      "resource": resource})),
        }
    }
    out.line(json!({"ev": "closed", "counts": counts}));
    if let Ok(r) = Arc::try_unwrap(reader) {
        r.close();
    }
}

/// Removes `resource` and adds it back after a backoff (1 s doubling to 30 s
/// over its endings), on a thread of its own so that entries keep flowing.
fn reopen_later(reader: &Arc<Reader>, specs: &[ResourceSpec], resource: &str, n: u32, out: &Out) {
    let (reader, specs, resource, out) = (
        Arc::clone(reader),
        specs.to_vec(),
        resource.to_string(),
        out.clone(),
    );
    let wait = std::time::Duration::from_secs((1u64 << (n - 1).min(5)).min(30));
    let _ = std::thread::Builder::new()
        .name("fleet-agent-reopen".into())
        .spawn(move || {
            std::thread::sleep(wait);
            let without: Vec<ResourceSpec> = specs
                .iter()
                .filter(|s| s.resource != resource)
                .cloned()
                .collect();
            let ok = reader
                .set_resources(&without)
                .and_then(|_| reader.set_resources(&specs));
            out.line(
                json!({"ev": "reopen", "resource": resource, "after_s": wait.as_secs(),
                            "ok": ok.is_ok()}),
            );
        });
}

/// The `fleet.bench/marker` annotation's value, if the object has one.
fn marker(e: &Entry) -> Option<u64> {
    let obj = e.object()?;
    let at = memfind(obj, MARKER)? + MARKER.len();
    let end = obj[at..].iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&obj[at..at + end]).ok()?.parse().ok()
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn stats(reader: &Reader) -> Value {
    let streams: Vec<Value> = reader
        .stats()
        .iter()
        .map(|s| {
            json!({"resource": s.resource, "events": s.events, "reconnects": s.reconnects,
                   "resyncs": s.resyncs, "synced": s.synced, "objects": s.objects,
                   "resource_version": s.resource_version, "last_error": s.last_error})
        })
        .collect();
    json!({"ev": "stats", "streams": streams})
}

/// stdout, one whole line per write, each stamped with the agent and the time.
#[derive(Clone)]
struct Out {
    name: Arc<str>,
}

impl Out {
    fn new(name: &str) -> Out {
        Out { name: name.into() }
    }

    fn line(&self, mut v: Value) {
        if let Value::Object(m) = &mut v {
            m.insert("t".into(), json!(monotonic()));
            m.insert("agent".into(), json!(&*self.name));
        }
        let mut s = v.to_string();
        s.push('\n');
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }
}

/// CLOCK_MONOTONIC in seconds: the same clock in every process of the run
/// (Python's time.monotonic(), Go's unix.ClockGettime).
fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn die(msg: &str) -> ! {
    eprintln!("tattler-fleet-agent: {msg}");
    std::process::exit(1)
}
