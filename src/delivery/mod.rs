//! Per resource, what the consumer holds and who may add to it, and the way
//! out: the layer under the streams (`stream/`), shared by a resource's
//! streams and read by the reader (`reader/`).
//!
//! - `state`: one resource's state — its [`state::Ledger`] (lifecycle and
//!   table under one lock), the turn to deliver, the counters, the gate of
//!   a resource watched in several namespaces.
//! - `lifecycle`: which stream owns a resource, whether it is synced, where
//!   it resumes, the namespaces' Synced gate (pure, table-tested).
//! - `table`: what the consumer holds of each object, and the verdicts;
//!   `store`: the compact bytes under it.
//! - `channel`: the way out, bounded in entries and bytes.

pub(crate) mod channel;
pub(crate) mod lifecycle;
pub(crate) mod state;
mod store;
pub(crate) mod table;
