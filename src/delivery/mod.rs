//! What leaves tattler: per resource, the per-object table and the one
//! owner of its lifecycle; the bounded channel every stream sends into; the
//! reader that starts, swaps (relists) and stops the streams; the threads.
//!
//! - `table`: what the consumer holds of each object, kept small; verdicts.
//! - `lifecycle`: which stream owns a resource, whether it is synced, where
//!   it resumes, the namespaces' Synced gate (pure, table-tested).
//! - `channel`: the way out, bounded in entries and bytes.
//! - `reader`: the public blocking API, relists, the watch set, stats.
//! - `threads`: every thread started one way.

pub(crate) mod channel;
pub(crate) mod lifecycle;
pub(crate) mod reader;
pub(crate) mod table;
pub(crate) mod threads;
