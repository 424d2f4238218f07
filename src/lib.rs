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
