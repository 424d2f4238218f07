//! Issue 36: an apiserver restart under running streams, counted from the
//! apiserver's own audit log. Each stream asks for at most one full state
//! for the event (a watch-list, or a LIST's first page, answered 200), and
//! every stream is current again soon after `/readyz`.
//!
//! `cargo test -p kube-tattler --test real restart:: -- --nocapture` prints
//! every request tattler made after the stop, with its answer.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube_tattler::{Access, Change, Config, Reader};

use crate::common::show;
use crate::fixture::{Cluster, SERIAL};

/// Every request at Metadata level (tattler's are told apart by their
/// User-Agent).
const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [\"RequestReceived\"]
rules:
- level: Metadata
";

/// One request of tattler's, as the audit log tells it.
#[derive(Debug, Default)]
struct Asked {
    received: String,
    verb: String,
    uri: String,
    code: Option<u64>,
}

impl Asked {
    /// A full state as the fleet benchmark counts it (bench/fleet/fleet.py):
    /// a watch-list, or a LIST without `continue` (a LIST of one object
    /// included).
    fn full_state(&self) -> bool {
        let q = self.uri.split_once('?').map_or("", |(_, q)| q);
        match self.verb.as_str() {
            "watch" => q.split('&').any(|p| p == "sendInitialEvents=true"),
            "list" => !q.split('&').any(|p| p.starts_with("continue=")),
            _ => false,
        }
    }

    fn resource(&self) -> String {
        let path = self.uri.split('?').next().unwrap_or("");
        path.rsplit('/').next().unwrap_or("").to_string()
    }
}

/// tattler's requests in the audit log from byte `from` on, one per auditID.
fn tattlers_requests(log: &std::path::Path, from: usize) -> Vec<Asked> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut by_id: BTreeMap<String, Asked> = BTreeMap::new();
    let mut order = Vec::new();
    for line in text.get(from..).unwrap_or("").lines() {
        let Ok(ev) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if !ev["userAgent"]
            .as_str()
            .unwrap_or("")
            .starts_with("tattler/")
        {
            continue;
        }
        let id = ev["auditID"].as_str().unwrap_or("").to_string();
        let a = by_id.entry(id.clone()).or_insert_with(|| {
            order.push(id.clone());
            Asked {
                received: ev["requestReceivedTimestamp"].as_str().unwrap_or("").into(),
                verb: ev["verb"].as_str().unwrap_or("").into(),
                uri: ev["requestURI"].as_str().unwrap_or("").into(),
                code: None,
            }
        });
        if let Some(code) = ev["responseStatus"]["code"].as_u64() {
            a.code = Some(code);
        }
    }
    let mut asked: Vec<Asked> = order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect();
    asked.sort_by(|a, b| a.received.cmp(&b.received));
    asked
}

#[test]
fn a_restart_costs_each_stream_one_full_state_at_most() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let audit_dir = std::env::temp_dir().join(format!("tattler-audit-{}", std::process::id()));
    std::fs::create_dir_all(&audit_dir).unwrap();
    let policy = audit_dir.join("policy.yaml");
    let log = audit_dir.join("audit.log");
    std::fs::write(&policy, POLICY).unwrap();
    let _ = std::fs::remove_file(&log);
    let c = Cluster::up(
        Duration::from_secs(240),
        &[
            &format!("--audit-policy-file={}", policy.display()),
            &format!("--audit-log-path={}", log.display()),
        ],
    );
    c.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wire-r}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-1, namespace: wire-r}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {name: svc-1, namespace: wire-r}\nspec:\n  ports: [{port: 80}]\n",
    );
    // What a node agent watches, with the library's default tuning.
    let names = ["namespaces", "services", "configmaps", "pods"];
    let cfg = Access::from_kubeconfig(Some(c.kubeconfig().as_ref()), None)
        .map(Config::new)
        .unwrap()
        .watch(names)
        .unwrap();
    let r = Reader::open(cfg).unwrap();
    let mut synced = std::collections::BTreeSet::new();
    while synced.len() < names.len() {
        let e = r.next_timeout(Duration::from_secs(60)).unwrap();
        if e.change() == Change::Synced {
            synced.insert(e.resource().resource.clone());
        }
    }
    let from = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);

    // Down for a while, as an upgrade's restart is: the streams back off.
    let stopped = Instant::now();
    c.script("stop-apiserver");
    std::thread::sleep(Duration::from_secs(10));
    c.script("start-apiserver");
    let ready = Instant::now();
    c.kubectl(&["create", "configmap", "after", "-n", "wire-r"]);

    // Current again: the marker seen, and every stream Synced after its Stale.
    let mut told = Vec::new();
    let mut stale = std::collections::BTreeSet::new();
    let mut marker = false;
    let current = loop {
        let e = r.next_timeout(Duration::from_secs(120)).unwrap();
        told.push(format!(
            "{:>6.2} s {}",
            stopped.elapsed().as_secs_f64(),
            show(&e)
        ));
        match e.change() {
            Change::Stale => {
                stale.insert(e.resource().resource.clone());
            }
            Change::Synced => {
                stale.remove(&e.resource().resource);
            }
            Change::Add if e.name() == "after" => marker = true,
            Change::Error => panic!("{told:?}"),
            _ => {}
        }
        if marker && stale.is_empty() {
            break ready.elapsed();
        }
    };
    let asked = tattlers_requests(&log, from);
    println!(
        "down {:.1} s; current {:.2} s after /readyz; the consumer was told:",
        (ready - stopped).as_secs_f64(),
        current.as_secs_f64()
    );
    for t in &told {
        println!("  {t}");
    }
    println!("tattler's requests after the stop ({}):", asked.len());
    for a in &asked {
        println!(
            "  {} {} {} {}",
            a.received,
            a.code.map_or("-".into(), |c| c.to_string()),
            a.verb,
            a.uri
        );
    }
    let mut full_states: BTreeMap<String, usize> = BTreeMap::new();
    for a in asked
        .iter()
        .filter(|a| a.full_state() && a.code == Some(200))
    {
        *full_states.entry(a.resource()).or_default() += 1;
    }
    println!("full states served, by resource: {full_states:?}");
    assert!(
        full_states.values().all(|n| *n <= 1),
        "more than one full state for a stream: {full_states:?}"
    );
    let _ = std::fs::remove_dir_all(&audit_dir);
}
