//! Asking the apiserver: what the streams, the elector and the reader's
//! discovery share to make a request and judge its answer. The [`Client`](client::Client)
//! (`client`) makes one request at a time over a connection slot and opens
//! a 200's body (watch frames, LIST items, a document); `answer` turns any
//! other status into how the request ended ([`End`](end::End), `end`); `settings`
//! holds what every stream of a reader asks with. Below it: `access` (the
//! HTTP exchange, TLS, credentials) and `wire` (the bytes).

pub(crate) mod answer;
pub(crate) mod client;
pub(crate) mod end;
pub(crate) mod settings;
