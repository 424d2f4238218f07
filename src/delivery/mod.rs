//! What leaves tattler: per resource, the per-object table and the one
//! owner of its lifecycle; the bounded channel every stream sends into; the
//! reader that starts, swaps (relists) and stops the streams; the threads.
//!
//! - `table`: what the consumer holds of each object, kept small; verdicts.
//! - `lifecycle`: which stream owns a resource, whether it is synced, where
//!   it resumes, the namespaces' Synced gate (pure, table-tested).
//! - `channel`: the way out, bounded in entries and bytes.
//! - `reader`: the public blocking API, the threads' handles, stop and close;
//!   `watchset`: which streams run; `relist`: swaps; `wildcard`: `"*"`;
//!   `stats`: counters and metrics.
//! - `threads`: every thread started one way.

pub(crate) mod channel;
pub(crate) mod lifecycle;
pub(crate) mod reader;
mod relist;
pub(crate) mod stats;
pub(crate) mod table;
pub(crate) mod threads;
mod watchset;
mod wildcard;
