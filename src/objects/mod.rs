//! What tattler does to an object, pure: the one iterative pass that checks
//! it is JSON, finds its metadata and redacts secrets (`scrub`), and the
//! consumer's shaping options, event filter and transform (`shape`). No
//! I/O, no clock, no log (`.ci/pure.sh` checks).

pub(crate) mod scrub;
pub(crate) mod shape;
