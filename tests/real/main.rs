//! Against a real kube-apiserver and etcd on loopback (tests/k8s builds them
//! from Go modules, cached, and brings a fresh cluster up per test; the tests
//! run one at a time): the stream's scenarios (`cluster`) and cluster access
//! where only the real server can produce the case (`access`), the APF
//! kit for a DaemonSet of agents (`apf`), leader election with the
//! checkpoint kept in a ConfigMap (`election`), and collectors of several
//! replicas, elected and sharded, killed one after the other, and whether
//! the server shards each stream (`replicas`); what Kubernetes 1.37 changed
//! on tattler's paths, against 1.37 and 1.36 whichever the suite runs on
//! (`k8s137`).
//! `cargo test --test real cluster::` runs one topic.

#[path = "../common/mod.rs"]
mod common;
#[path = "../k8s/fixture.rs"]
mod fixture;

mod access;
mod apf;
mod cluster;
mod election;
mod k8s137;
mod replicas;
mod restart;
mod told;
