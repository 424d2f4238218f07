//! Leader election and the checkpoint kept in the cluster against a real
//! kube-apiserver: two readers of one Lease, the leader closed, the standby
//! resuming from the ConfigMap with the handover's changes before Synced.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::fixture::{Cluster, SERIAL};
use kube_tattler::{
    Access, Change, Checkpoint, Config, InClusterCheckpoint, LeaderElection, Reader, ResourceSpec,
};

/// configmaps of wire-e under the Lease default/tattler-e as `identity`,
/// the checkpoint in default/tattler-e-checkpoint every second (not in the
/// namespace streamed: each write would be an entry, and the next
/// checkpoint another write).
fn elected(c: &Cluster, identity: &str) -> Config {
    let mut cfg = Access::from_kubeconfig(Some(c.kubeconfig().as_ref()), None)
        .map(Config::new)
        .unwrap();
    cfg.resources = vec![ResourceSpec::parse("configmaps")
        .unwrap()
        .remove(0)
        .in_namespace("wire-e")];
    cfg.tuning.backoff.initial = Duration::from_millis(100);
    cfg.tuning.backoff.max = Duration::from_secs(2);
    let mut e = LeaderElection::new("default", "tattler-e");
    e.identity = identity.into();
    e.lease_duration = Duration::from_secs(3);
    e.renew_deadline = Duration::from_secs(2);
    e.retry_period = Duration::from_millis(500);
    cfg.leader_election = Some(e);
    let mut k = InClusterCheckpoint::new("default", "tattler-e-checkpoint");
    k.interval = Duration::from_secs(1);
    cfg.checkpoint_in_cluster = Some(k);
    cfg
}

/// The objects of the kept checkpoint, as kubectl reads it.
fn kept(c: &Cluster) -> Option<usize> {
    let text = c.kubectl(&[
        "get",
        "configmap",
        "tattler-e-checkpoint",
        "-n",
        "default",
        "--ignore-not-found",
        "-o",
        "jsonpath={.data.checkpoint}",
    ]);
    Checkpoint::from_bytes(text.trim().as_bytes())
        .ok()
        .map(|c| c.objects())
}

/// Entries up to Synced, about the test's configmaps (cm-*), sorted.
fn synced_cms(r: &Reader) -> Vec<String> {
    until_synced(r)
        .into_iter()
        .filter(|s| s.contains("/cm-") || s.starts_with("Synced"))
        .collect()
}

#[test]
fn two_replicas_share_a_lease_and_the_standby_resumes_from_the_configmap() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wire-e}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-0, namespace: wire-e}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-1, namespace: wire-e}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-2, namespace: wire-e}\n",
    );
    let a = Reader::open(elected(&c, "a")).unwrap();
    let e = next(&a);
    assert_eq!((e.change(), e.identity()), (Change::Following, Some("a")));
    let e = next(&a);
    assert_eq!((e.change(), e.identity()), (Change::Leading, Some("a")));
    assert_eq!((e.term(), e.holder()), (Some(0), Some("a")));
    assert_eq!(
        synced_cms(&a),
        [
            "Add wire-e/cm-0",
            "Add wire-e/cm-1",
            "Add wire-e/cm-2",
            "Synced configmaps"
        ]
    );
    let b = Reader::open(elected(&c, "b")).unwrap();
    assert_eq!(next(&b).change(), Change::Following);
    let deadline = Instant::now() + Duration::from_secs(60);
    while kept(&c).is_none_or(|n| n < 3) {
        // a's consumer asks for more (nothing of the test's comes): it is
        // done with what it took, which a checkpoint holds from then on.
        while let Ok(e) = a.next_timeout(Duration::ZERO) {
            assert!(!show(&e).contains("/cm-"), "{}", show(&e));
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint kept: {:?}",
            kept(&c)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let holder = |c: &Cluster| {
        c.kubectl(&[
            "get",
            "lease",
            "tattler-e",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
    };
    assert_eq!(holder(&c).trim(), "a");
    a.stop();
    assert!(a.next_timeout(Duration::from_secs(30)).is_err(), "drained");
    c.kubectl(&["label", "configmap", "cm-1", "-n", "wire-e", "x=y"]);
    c.kubectl(&["delete", "configmap", "cm-2", "-n", "wire-e"]);
    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-3, namespace: wire-e}\n");
    let closed = Instant::now();
    drop(a);
    let e = next(&b);
    assert_eq!((e.change(), e.identity()), (Change::Leading, Some("b")));
    assert_eq!(e.term(), Some(1), "the next term");
    eprintln!(
        "takeover on a real apiserver: {:?} after a's close began",
        closed.elapsed()
    );
    // Watched from a's checkpoint: the server replays the handover's
    // changes, its own Delete among them; nothing a's consumer holds is
    // added again.
    assert_eq!(
        synced_cms(&b),
        [
            "Add wire-e/cm-3",
            "Delete wire-e/cm-2",
            "Update wire-e/cm-1",
            "Synced configmaps"
        ]
    );
    eprintln!(
        "a real apiserver: b Synced {:?} after a's close began",
        closed.elapsed()
    );
    assert_eq!(holder(&c).trim(), "b");
}
