//! What tattler does to an object, pure: the one iterative pass that checks
//! it is JSON, finds its metadata and redacts secrets (`scrub`) as the
//! redaction policy says (`policy`, one short file), and the
//! consumer's shaping options, event filter and transform (`shape`). No
//! I/O, no clock, no log (`.ci/pure.sh` checks).

mod policy;
pub(crate) mod scrub;
pub(crate) mod shape;
