//! What the Rust tests in `ffi/tests` look at beyond the C ABI: a reader as
//! a call in progress holds it, whether an entry is live, the getter's cost
//! without the registry, and the document a configuration holds. Hidden, not a Rust API, and not exported to C
//! (no extern function): the installed archive keeps only `tattler_*`.

use std::sync::Arc;
use std::time::Duration;

use crate::config_builder::{self, tattler_config};
use crate::entry::{self, tattler_entry};
use crate::reader::{self, tattler_reader, OpenReader};

/// A reference to an open reader, as a call in progress holds one.
pub struct HeldReader(Arc<OpenReader>);

impl HeldReader {
    /// The Rust reader behind the handle.
    pub fn reader(&self) -> &kube_tattler::Reader {
        &self.0.reader
    }

    /// How many references there are, this one included.
    pub fn references(&self) -> usize {
        Arc::strong_count(&self.0)
    }
}

/// The reader behind `r` with a reference of the caller's (what every call
/// takes first); `None` for a pointer that is not an open reader.
pub fn held_reader(r: *const tattler_reader) -> Option<HeldReader> {
    reader::lookup(r).ok().map(HeldReader)
}

/// Whether `e` is an entry handed out and not yet freed.
pub fn entry_is_live(e: *const tattler_entry) -> bool {
    entry::is_live(e)
}

/// `tattler_entry_name`'s body `n` times without the registry: the micro
/// benchmark's baseline.
pub fn entry_name_unchecked(e: *const tattler_entry, n: u64) -> Duration {
    entry::name_unchecked(e, n)
}

/// The JSON document a live configuration holds, as `tattler_open_config`
/// would open it; `None` for a pointer that is not a live configuration.
pub fn config_json(cfg: *const tattler_config) -> Option<String> {
    config_builder::document(cfg)
}
