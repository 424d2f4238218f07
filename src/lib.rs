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
//! let mut config = Config::new(access).watch(&["pods", "apps/v1/deployments"])?;
//! config.tuning.channel_capacity = 4096;
//! let reader = Reader::open(config)?;
//! for entry in reader.iter() {
//!     match entry.change() {
//!         Change::Synced => println!("{} complete", entry.resource().resource),
//!         Change::Error => eprintln!("{:?}", entry.error()),
//!         c => println!("{c} {}/{}", entry.namespace().unwrap_or(""), entry.name()),
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
//! stream threads, and the send honours stop.
//!
//! # Configuration
//!
//! A [`Config`] says what to stream — [`ResourceSpec`]s, [`Shaping`], a
//! relist interval, a [`Checkpoint`] to resume from — and holds how to reach
//! the cluster ([`Access`]: from a kubeconfig, the pod's service account, or
//! by hand) and [`Tuning`] (timeouts, bounds, retry pacing) apart. C and Go
//! users give the same settings as one flat JSON document
//! ([`Config::from_json`]).
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
//!   (README, "Protobuf on the wire for built-in kinds").
//!
//! # Logging
//!
//! Through the `log` crate, under the `kube_tattler::…` targets (`kube_tattler::stream`
//! for a stream's retries and re-syncs, `kube_tattler::stream::sink` for syncs,
//! `kube_tattler::delivery::reader` for the reader). Tokens, keys, proxy
//! credentials, exec output and scrubbed values never reach a log line, an
//! error or `Debug` output. No library under tattler logs them either:
//! tattler writes its HTTP requests and reads the responses itself (no HTTP
//! library sees a credential or a response byte; rustls, under it, is built
//! without logging), so a host logging every target at trace gets only
//! tattler's own lines (README, "Security").
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

mod access;
mod checkpoint;
mod config;
mod config_json;
mod delivery;
mod entry;
mod error;
mod objects;
mod resource;
mod stream;
mod util;
mod wire;

pub use access::auth::{Auth, ExecConfig};
pub use access::cluster::Access;
pub use access::proxy::ProxyConfig;
pub use access::secret::{ClientIdentity, Token};
pub use checkpoint::Checkpoint;
pub use config::{Backoff, Config, Tuning};
pub use delivery::reader::{Iter, Reader, ReaderInfo};
pub use delivery::stats::StreamStats;
pub use entry::{Change, Entry, ErrorInfo, Reason, Resource};
pub use error::{Closed, Error, NextTimeoutError, TryNextError};
pub use objects::shape::{Shaping, Transform, REDACTED};
pub use resource::{Encoding, ResourceSpec};

/// Entry points for the fuzz targets in `fuzz/`; not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod __fuzz {
    use crate::objects::scrub::Edits;

    const ALL: Edits = Edits {
        scrub: true,
        secret_data: true,
        drop_managed_fields: true,
    };

    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1.max(1)).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Splits `body` into frames (arriving `chunk` bytes at a time) and
    /// decodes each one, as a stream does.
    pub fn frames(body: &[u8], chunk: usize, max_frame: usize) {
        let mut r = crate::wire::frames::FrameReader::new(Trickle(body, chunk), max_frame.max(1));
        loop {
            match r.next_frame() {
                Ok(Some(frame)) => {
                    let _ = crate::wire::decode::event(frame, Edits::NONE);
                }
                Err(crate::wire::frames::FrameError::TooLarge(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Decodes one watch frame.
    pub fn event(frame: &[u8]) {
        let _ = crate::wire::decode::event(frame, ALL);
    }

    /// Reads a LIST body (arriving `chunk` bytes at a time) item by item,
    /// and each item's metadata.
    pub fn list(body: &[u8], chunk: usize) {
        let mut r = crate::wire::frames::ListReader::new(Trickle(body, chunk), 1 << 16);
        while let Ok(Some(item)) = r.next_item() {
            if let crate::wire::frames::ListItem::Item(b) = item {
                if let Ok(text) = std::str::from_utf8(b) {
                    let _ = crate::wire::decode::object_walk(text, ALL);
                }
            }
        }
    }

    /// Reads a protobuf body (arriving `chunk` bytes at a time) both as a
    /// watch body and as a LIST body: each JSON piece handed out must be
    /// JSON when it is UTF-8 (FieldsV1 is copied as Go copies it, unchecked
    /// UTF-8 included), and is then decoded as the stream would.
    pub fn protobuf(body: &[u8], chunk: usize, max_frame: usize) {
        fn check(json: &[u8]) {
            if std::str::from_utf8(json).is_ok() {
                if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(json) {
                    panic!("protobuf gave invalid JSON: {e}");
                }
            }
        }
        let max = max_frame.max(1);
        let mut r = crate::wire::proto_frames::ProtoFrameReader::new(Trickle(body, chunk), max);
        loop {
            match r.next_frame() {
                Ok(Some(frame)) => {
                    check(frame);
                    let _ = crate::wire::decode::event(frame, ALL);
                }
                Err(
                    crate::wire::frames::FrameError::TooLarge(_)
                    | crate::wire::frames::FrameError::Invalid(_),
                ) => {}
                Ok(None) | Err(_) => break,
            }
        }
        let mut r = crate::wire::proto_frames::ProtoListReader::new(Trickle(body, chunk), max);
        while let Ok(Some(item)) = r.next_item() {
            if let crate::wire::frames::ListItem::Item(b) = item {
                check(b);
                if let Ok(text) = std::str::from_utf8(b) {
                    let _ = crate::wire::decode::object_walk(text, ALL);
                }
            }
        }
    }

    /// Scrubs an object; when the walk accepts it, the output must be JSON
    /// (as serde_json reads it, when within its nesting limit). UTF-8 is the
    /// caller's check, as in the decoder.
    pub fn scrub(obj: &[u8]) {
        if std::str::from_utf8(obj).is_err() {
            return;
        }
        if let Ok(Some(out)) = crate::objects::scrub::edit(obj, ALL) {
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&out) {
                assert!(
                    e.to_string().contains("recursion"),
                    "scrub produced invalid JSON: {e}"
                );
            }
        }
    }

    /// An object nested `depth` levels deep (objects and arrays as `shape`
    /// says), with `tail` inside: the walk must neither recurse nor accept
    /// more than its limit, whatever the shape.
    pub fn depth(shape: &[u8], depth: usize, tail: &[u8]) {
        let depth = depth % (2 * crate::objects::scrub::MAX_DEPTH);
        let mut obj = b"{\"spec\":".to_vec();
        let mut close = Vec::with_capacity(depth);
        for i in 0..depth {
            let b = shape.get(i % shape.len().max(1)).copied().unwrap_or(0);
            if b % 2 == 0 {
                obj.extend_from_slice(b"[");
                close.push(b']');
            } else {
                obj.extend_from_slice(b"{\"containers\":");
                close.push(b'}');
            }
        }
        obj.extend_from_slice(if tail.is_empty() { b"1" } else { tail });
        close.reverse();
        obj.extend_from_slice(&close);
        obj.push(b'}');
        let result = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || crate::objects::scrub::walk(&obj, ALL).0)
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        if depth + 1 > crate::objects::scrub::MAX_DEPTH
            && tail.iter().all(|b| b.is_ascii_digit())
            && !tail.is_empty()
        {
            assert_eq!(result.err(), Some(crate::objects::scrub::Bad::TooDeep));
        }
    }

    /// Reads one HTTP response (head, interim answers skipped, body by its
    /// framing) from `data` as tattler's client reads a server's bytes:
    /// whole, arriving in pieces of 1 to 7 bytes (read 3 bytes at a time),
    /// and cut once at every byte (every 31st past the first 1,024 of a
    /// long input). Every way must give the same head, body or error, and
    /// the read buffer must stay within its bound.
    pub fn http_response(data: &[u8]) {
        use crate::wire::http_read::{read_response, Input};
        let bound = crate::wire::http::MAX_HEAD.max(16 << 10);
        let (whole, most) = read_response(Input::new(Trickle(data, usize::MAX)), 64 << 10);
        assert!(most <= bound, "the read buffer grew to {most} bytes");
        if let Ok((head, body)) = &whole {
            assert!(body.len() <= data.len(), "a body longer than its input");
            assert!((100..1000).contains(&head.status));
            for (name, _) in head.fields() {
                assert!(
                    !name.is_empty() && name.is_ascii(),
                    "a header name {name:?}"
                );
            }
        }
        for piece in 1..=7 {
            let (got, most) = read_response(Input::new(Trickle(data, piece)), 3);
            assert_eq!(got, whole, "arriving {piece} bytes at a time");
            assert!(most <= bound, "the read buffer grew to {most} bytes");
        }
        for at in (1..data.len()).filter(|at| *at < 1024 || at % 31 == 0) {
            let (got, _) = read_response(Input::new(Cut(data, at)), 64 << 10);
            assert_eq!(got, whole, "cut at byte {at}");
        }
    }

    /// A source whose bytes come in two reads, cut at one place.
    struct Cut<'a>(&'a [u8], usize);
    impl std::io::Read for Cut<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let limit = if self.1 > 0 { self.1 } else { self.0.len() };
            let n = self.0.len().min(limit).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            self.1 = self.1.saturating_sub(n);
            Ok(n)
        }
    }

    /// Reads a kubeconfig file's text (through a temporary file).
    pub fn kubeconfig(text: &[u8]) {
        let path =
            std::env::temp_dir().join(format!("tattler-fuzz-kubeconfig-{}", std::process::id()));
        if std::fs::write(&path, text).is_ok() {
            let _ = crate::Access::from_kubeconfig(path.to_str(), None);
        }
    }
}
