//! Everything against the scripted fake apiserver (tests/fakeapi) and small
//! HTTP servers of our own, in one binary: the stream's behaviour
//! (`stream`), the lifecycle of resources and readers (`lifecycle`), hostile
//! objects and servers (`hostile`), and faults on the way with the security
//! checks (`faults`, which installs the process's capturing logger), and shards
//! (`shards`).
//! `cargo test --test fake faults::` runs one topic.

#[path = "../common/mod.rs"]
mod common;

mod election;
mod faults;
mod handover;
mod hostile;
mod lifecycle;
mod restart;
mod shards;
mod stream;
