//! The apiserver's bytes, both ways, and nothing else: request URLs
//! (`request`), bodies split as they arrive into watch frames and LIST items
//! (`frames`; protobuf ones, turned into the same JSON, `proto_frames` over
//! `protobuf`: the envelopes in `envelope`, metav1 types in `metav1`, built-in
//! objects by `proto_json` from `schema`, all written with Go's JSON rules
//! from `go_json`, the leaf), frames and objects decoded into events and
//! metadata, Status bodies (`decode`), discovery documents (`discovery`),
//! resourceVersions (`rv`), dates (`dates`), the shards of a collection as the
//! apiserver's `shardRange` places objects (`shard`) and what the server's answers
//! prove about who shards (`sharding`), and HTTP/1.1 itself: the heads
//! tattler writes and reads and how bodies are framed (`http`), one response
//! read by those rules from any `Read` (`http_read`); all of these readers hold
//! what they have read in one buffered reader (`buffered`). Pure: no I/O beyond
//! reading from a given `Read`, no clock, no log (`.ci/pure.sh` checks).

pub(crate) mod buffered;
pub(crate) mod dates;
pub(crate) mod decode;
pub(crate) mod discovery;
pub(crate) mod envelope;
pub(crate) mod frames;
pub(crate) mod go_json;
pub(crate) mod http;
pub(crate) mod http_read;
pub(crate) mod metav1;
pub(crate) mod names;
pub(crate) mod proto_frames;
pub(crate) mod proto_json;
pub(crate) mod protobuf;
pub(crate) mod request;
pub(crate) mod schema;
pub(crate) mod shard;
pub(crate) mod sharding;
