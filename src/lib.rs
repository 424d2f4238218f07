//! tattler streams the full state of chosen Kubernetes objects, and then every
//! change to them, out of a kube-apiserver: a blocking, thread-based library
//! (no async runtime) with a C ABI beside it (the `tattler-ffi` crate).
//!
//! ```no_run
//! use kube_tattler::{Access, Change, Config, Reader};
//!
//! let access = Access::new("https://127.0.0.1:6443")
//!     .ca_file("/etc/kubernetes/ca.crt")?
//!     .token_file("/var/run/secrets/token")?;
//! // Or `Access::infer()?`: the kubeconfig kubectl would use, else in-cluster.
//! let mut config = Config::new(access).watch(["pods", "apps/v1/deployments"])?;
//! config.tuning.channel_capacity = 4096;
//! let reader = Reader::open(config)?;
//! for entry in &reader {
//!     match (entry.change(), entry.error()) {
//!         (Change::Synced, _) => println!("{} complete", entry.resource()),
//!         (Change::Error | Change::Stale, Some(e)) => eprintln!("{}: {e}", entry.resource()),
//!         _ => println!("{entry}"), // Add v1/pods shop/web-1 at 4711
//!     }
//! }
//! # Ok::<(), kube_tattler::Error>(())
//! ```
//!
//! # Design
//!
//! One OS thread per resource (per namespace, when a resource is watched in
//! several) runs a raw HTTP watch-list stream
//! (`?watch=true&sendInitialEvents=true`), decoding frames as they arrive; a
//! small per-object table (namespace/name, uid, resourceVersion: no object is
//! kept) dedupes and reconciles full states; one bounded crossbeam channel
//! carries [`Entry`] values to the blocking API of [`Reader`]. Each
//! resource's lifecycle (which stream owns it, whether it is synced, where it
//! resumes) has one owner, a pure state machine; each stream's course (what to
//! request next, and when) another. Servers without watch-list get paged LIST
//! + WATCH with the same entries.
//!
//! # Receiving
//!
//! Per resource: the initial objects as [`Change::Add`], [`Change::Synced`],
//! then live `Add`/`Update`/`Delete`; after a re-sync or relist,
//! `Snapshot`/`Update`/`Add` for what is there, inferred `Delete` for what is
//! gone, then `Synced` again, once per resource however many namespaces it
//! spans. [`Reader::next`] blocks; [`Reader::next_timeout`] returns
//! [`NextTimeoutError::Timeout`] when nothing came in time (or
//! [`Reader::wake`] was called) and [`NextTimeoutError::Closed`] once the
//! reader is stopped and drained; [`Reader::try_next`] never blocks. A slow
//! consumer slows the streams down; no entry is ever dropped.
//!
//! # Threads
//!
//! `Reader` is `Send + Sync`. [`Reader::stop`] and [`Reader::wake`] may be
//! called from any thread at any time; [`Reader::close`] (or drop) stops and
//! joins every thread tattler started. Calls that wait for tattler's own
//! threads ([`Reader::set_resources`], [`Reader::relist`]) refuse to run on
//! them (from a log callback). Every thread is named `tattler-…`, and a panic
//! in one becomes an `Error` entry (reason `InternalError`). No lock tattler
//! holds is held across a log call, a join or a child process; the one held
//! across a send (a resource's turn to deliver) is only ever taken by its
//! stream threads, and the send honours stop. Changes that stop and start
//! streams (set_resources, relists, leader election) take turns instead of
//! a lock: one may wait for another's joins, and a stop ends that wait.
//!
//! # Configuration
//!
//! A [`Config`] says what to stream — [`ResourceSpec`]s, [`Shaping`], a
//! relist interval, a [`Checkpoint`] to resume from — and holds how to reach
//! the cluster ([`Access`]: from a kubeconfig, the pod's service account, or
//! by hand) and [`Tuning`] (timeouts, bounds, retry pacing) apart. C and Go
//! users give the same settings as one flat JSON document
//! ([`Config::from_json`]). Replicas of one collector share the work
//! through the cluster: one streams while it holds a Lease
//! ([`LeaderElection`]), and keeps its checkpoint in a ConfigMap
//! ([`InClusterCheckpoint`]) for the next.
//!
//! # Errors
//!
//! [`Reader::open`] fails only on what can be judged without the network
//! ([`Error`]). Everything the server says arrives later: retries (with
//! backoff, see [`Backoff`]), and [`Change::Error`] entries whose
//! [`ErrorInfo::ended`] says whether the resource failed for good (403, a
//! request the server rejects) or one piece was skipped (an object too deep,
//! not JSON, over `max_frame_bytes`).
//!
//! # What it costs
//!
//! - Memory: per object about 70 bytes of table; in flight, at most
//!   `max_buffered_bytes` of objects in the channel, one frame
//!   (`max_frame_bytes`) and a batch of 1 MiB per stream.
//! - The apiserver: per resource, full states back off whatever the server
//!   answers (the first at once; each further one the server answered, with
//!   no healthy watching in between, waits at least half of
//!   `0.8 s · 2^(n-1)`, up to 30 s), and a
//!   resume from a [`Checkpoint`] asks for one object, not the whole state.
//!   Built-in kinds travel as protobuf ([`Encoding::Auto`]): a full sync of
//!   30,000 pods cost the apiserver 23% of the CPU of JSON, and tattler
//!   about 21 µs per pod to write the JSON the server would have sent
//!   (docs/agents.md, "Protobuf on the wire for built-in kinds").
//!
//! # Logging
//!
//! Through the `log` crate, under the `kube_tattler::…` targets (`kube_tattler::stream`
//! for a stream's retries and re-syncs, `kube_tattler::stream::sink` for syncs,
//! `kube_tattler::reader` for the reader). Tokens, keys, proxy
//! credentials, exec output and scrubbed values never reach a log line, an
//! error or `Debug` output. No library under tattler logs them either:
//! tattler writes its HTTP requests and reads the responses itself (no HTTP
//! library sees a credential or a response byte; rustls, under it, is built
//! without logging), so a host logging every target at trace gets only
//! tattler's own lines (docs/security.md).
//!
//! # Words
//!
//! | tattler | meaning | client-go |
//! |---|---|---|
//! | full state | every object of a resource at one resourceVersion (a watch-list's initial events, or a paged LIST) | list |
//! | re-sync | a new full state a stream needs (410 Expired, a resourceVersion too large, watches that end at once), reconciled against what the consumer holds | relist after a watch error |
//! | relist | a periodic fresh full state by a second stream, swapped in once complete ([`Config::relist_interval`]) | `ListAndWatch` again |
//! | `Snapshot` | an object unchanged since the consumer got it, seen again in a full state | — (client-go's *resync* replays its cache: not this) |
//! | inferred `Delete` | an object the last full state lacks | `DeletedFinalStateUnknown` |
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Every fallible public function says when it fails (C-FAILURE); none panics.
#![deny(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod access;
mod api;
mod checkpoint;
mod config;
mod config_json;
mod coordination;
mod delivery;
mod entry;
mod error;
mod objects;
mod reader;
mod resource;
mod resource_version;
mod stream;
#[doc(hidden)]
pub mod sync;
mod wire;

pub use access::auth::{Auth, ExecConfig};
pub use access::cluster::Access;
pub use access::proxy::ProxyConfig;
pub use access::secret::{ClientIdentity, Token};
pub use checkpoint::Checkpoint;
pub use config::{Backoff, Config, InClusterCheckpoint, LeaderElection, Tuning};
pub use entry::{Change, Entry, ErrorInfo, Reason, Resource};
pub use error::{Closed, Error, NextTimeoutError, TryNextError};
pub use objects::shape::{Shaping, Transform, REDACTED};
pub use reader::stats::StreamStats;
pub use reader::{Iter, Reader, ReaderInfo};
pub use resource::{Encoding, ResourceSpec};
pub use wire::shard::Shard;
pub use wire::sharding::Sharding;

/// The crossbeam-channel whose `Receiver` [`Reader::receiver_without_byte_budget`]
/// returns: `select!` over it and the host's own channels, with the very
/// version tattler was built with, whatever version the host's other
/// dependencies hold.
pub use crossbeam_channel;

/// Entry points for the fuzz targets in `fuzz/`; not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
#[path = "fuzz_hooks.rs"]
pub mod __fuzz;

/// The README's Rust blocks, compiled by `cargo test --doc` so that none a
/// user copies can rot (the C, C++, Go and Python ones have
/// `ffi/check_snippets.py` and `python/test.sh`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust guide's blocks (`docs/rust.md`), compiled as the README's are.
#[cfg(doctest)]
#[doc = include_str!("../docs/rust.md")]
pub struct RustGuideDoctests;

/// The agents guide's Rust blocks (`docs/agents.md`: metadata-only, `"*"`),
/// compiled as the README's are.
#[cfg(doctest)]
#[doc = include_str!("../docs/agents.md")]
pub struct AgentsGuideDoctests;
