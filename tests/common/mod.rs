//! Shared helpers for the integration tests against the fake apiserver.
#![allow(dead_code)]

/// Certificates, the TLS front, the CONNECT proxy and the capturing logger of the cluster-access tests.
pub mod tls;

/// The fault-injecting TCP proxy and the consumer's view of the reliability tests.
pub mod proxy;

/// A scripted SOCKS5 proxy that records what clients send.
pub mod socks;

/// A server answering each request with the test's raw bytes.
pub mod scripted;

/// A failing seed's trace: the library's log and the test's own lines.
pub mod trace;

/// Programs of the workspace built for a test, before any time limit.
pub mod cargo_build;

/// A time limit that catches a hang and says so on the terminal.
pub mod watchdog;
#[allow(unused_imports)]
pub use watchdog::Watchdog;

use std::time::Duration;

use kube_tattler::{Access, Backoff, Change, Config, Entry, Reader};
use tattler_fakeapi::FakeApi;

/// A config for the fake server with fast retries.
pub fn config(api: &FakeApi, names: &[&str]) -> Config {
    let mut c = Config::new(Access::new(api.url())).watch(names).unwrap();
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(200),
        reset_after: Duration::from_secs(120),
    };
    c
}

pub fn open(api: &FakeApi, names: &[&str]) -> Reader {
    Reader::open(config(api, names)).unwrap()
}

/// The next entry, or a test failure after 30 s: a hang, not a slow run
/// (loopback entries come in milliseconds, on a loaded machine in seconds).
pub fn next(r: &Reader) -> Entry {
    r.next_timeout(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("no entry within 30 s: {e}"))
}

/// A short description of an entry: `Add a/p1`, `Delete(inferred) a/p2`,
/// `Synced pods`, `Stale pods Refused 500`, `Stale pods@a Unreachable`.
pub fn show(e: &Entry) -> String {
    match e.change() {
        Change::Synced => format!("Synced {}", e.resource().resource),
        Change::Stale => {
            let err = e.error().unwrap();
            let ns = e.namespace().map(|n| format!("@{n}")).unwrap_or_default();
            let code = if err.code == 0 {
                String::new()
            } else {
                format!(" {}", err.code)
            };
            format!("Stale {}{ns} {}{code}", e.resource().resource, err.reason)
        }
        Change::Error => {
            let err = e.error().unwrap();
            let what = match (e.namespace(), e.name()) {
                (_, "") => String::new(),
                (Some(ns), n) => format!(" {ns}/{n}"),
                (None, n) => format!(" {n}"),
            };
            format!(
                "Error {} {} {}{what}",
                e.resource().resource,
                err.code,
                err.reason
            )
        }
        c => {
            let inferred = if e.inferred() { "(inferred)" } else { "" };
            match e.namespace() {
                Some(ns) => format!("{c}{inferred} {ns}/{}", e.name()),
                None => format!("{c}{inferred} {}", e.name()),
            }
        }
    }
}

/// The next `n` entries, described.
pub fn take(r: &Reader, n: usize) -> Vec<String> {
    (0..n).map(|_| show(&next(r))).collect()
}

/// Entries up to and including the next Synced, described and sorted
/// (initial events come in no particular order), Synced last.
pub fn until_synced(r: &Reader) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let e = next(r);
        if e.change() == Change::Synced {
            got.sort();
            got.push(show(&e));
            return got;
        }
        got.push(show(&e));
    }
}

/// Asserts that nothing more arrives within a short while.
pub fn assert_quiet(r: &Reader, within: Duration) {
    if let Ok(e) = r.next_timeout(within) {
        panic!("unexpected entry {}", show(&e));
    }
}

/// Requests the fake received, without the random timeoutSeconds value.
pub fn requests(api: &FakeApi) -> Vec<String> {
    api.requests()
        .into_iter()
        .map(|r| match r.find("&timeoutSeconds=") {
            Some(i) => {
                let secs: u32 = r[i + 16..].split('&').next().unwrap().parse().unwrap();
                assert!(
                    (290..=600).contains(&secs),
                    "timeoutSeconds {secs} out of range in {r}"
                );
                r[..i].to_string()
            }
            None => r,
        })
        .collect()
}

pub fn pod(api: &FakeApi, ns: &str, name: &str) -> u64 {
    api.apply("pods", FakeApi::pod(ns, name))
}
