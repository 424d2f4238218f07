//! tattler streams the full state of chosen Kubernetes objects, and then every
//! change to them, out of a kube-apiserver.
//!
//! The design in three lines: one OS thread per resource runs a raw HTTP
//! watch-list stream (`?watch=true&sendInitialEvents=true`), decoding frames as
//! they arrive; a small per-object state dedupes and reconciles re-syncs; a
//! bounded crossbeam channel carries [`Entry`] values to a blocking API.
//!
//! ```no_run
//! use tattler::{Change, Config, Reader};
//!
//! let mut config = Config::new("https://127.0.0.1:6443")
//!     .watch(&["pods", "apps/v1/deployments"])?
//!     .ca_file("/etc/kubernetes/ca.crt")?
//!     .token_file("/var/run/secrets/token")?;
//! config.channel_capacity = 4096;
//! let reader = Reader::open(config)?;
//! for entry in reader.iter() {
//!     match entry.change() {
//!         Change::Synced => println!("{} complete", entry.resource().resource),
//!         Change::Error => eprintln!("{:?}", entry.error()),
//!         c => println!("{c} {}/{}", entry.namespace().unwrap_or(""), entry.name()),
//!     }
//! }
//! # Ok::<(), tattler::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod auth;
mod config;
mod config_json;
mod decode;
mod entry;
mod error;
mod exec;
mod kubeconfig;
mod reader;
mod request;
mod resource;
mod scrub;
mod shape;
mod state;
mod transport;
mod util;
mod watch;

pub use auth::{Auth, ClientIdentity, ExecConfig};
pub use config::{Backoff, Config, ProxyConfig, Token};
pub use entry::{Change, Entry, ErrorInfo, Resource};
pub use error::{Closed, Error, NextTimeoutError, TryNextError};
pub use reader::{Iter, Reader, ReaderInfo, StreamStats};
pub use resource::ResourceSpec;
pub use shape::{Shaping, Transform, REDACTED};

/// Entry points for the fuzz targets in `fuzz/`; not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod __fuzz {
    /// Splits `body` into frames (arriving `chunk` bytes at a time) and
    /// decodes each one, as a stream does.
    pub fn frames(body: &[u8], chunk: usize, max_frame: usize) {
        struct Trickle<'a>(&'a [u8], usize);
        impl std::io::Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(self.1.max(1)).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = crate::decode::FrameReader::new(Trickle(body, chunk), max_frame.max(1));
        loop {
            match r.next_frame() {
                Ok(Some(frame)) => {
                    let _ = crate::decode::event(frame, crate::decode::NO_EDITS);
                }
                Err(crate::decode::FrameError::TooLarge(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Decodes one watch frame.
    pub fn event(frame: &[u8]) {
        let _ = crate::decode::event(
            frame,
            crate::scrub::Edits {
                scrub: true,
                drop_managed_fields: true,
            },
        );
    }

    /// Decodes a LIST body and each item's metadata.
    pub fn list(body: &[u8]) {
        if let Ok(page) = crate::decode::list_page(body) {
            for item in page.items {
                let _ = crate::decode::object_meta(item);
            }
        }
    }

    /// Scrubs an object; when the walk accepts it, the output must be JSON.
    /// (UTF-8 is the caller's check, as in the decoder.)
    pub fn scrub(obj: &[u8]) {
        if std::str::from_utf8(obj).is_err() {
            return;
        }
        let edits = crate::scrub::Edits {
            scrub: true,
            drop_managed_fields: true,
        };
        if let Ok(Some(out)) = crate::scrub::edit(obj, edits) {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&out).is_ok(),
                "scrub produced invalid JSON"
            );
        }
    }

    /// Reads a kubeconfig file's text (through a temporary file).
    pub fn kubeconfig(text: &[u8]) {
        let path =
            std::env::temp_dir().join(format!("tattler-fuzz-kubeconfig-{}", std::process::id()));
        if std::fs::write(&path, text).is_ok() {
            let _ = crate::Config::from_kubeconfig(path.to_str(), None);
        }
    }
}
