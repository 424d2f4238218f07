//! What every request of a reader's streams is asked with: page size,
//! frame bound, backoff, timeouts, shaping, gzip.

use std::time::Duration;

use crate::config::Backoff;

/// Settings a stream needs, shared by all streams of a reader.
pub(crate) struct StreamSettings {
    pub page_size: u32,
    pub max_frame_bytes: usize,
    pub backoff: Backoff,
    pub shaping: crate::objects::shape::Shaping,
    pub idle_timeout: Duration,
    pub initial_events_timeout: Duration,
    pub gzip: bool,
    pub short_watch: Duration,
}
