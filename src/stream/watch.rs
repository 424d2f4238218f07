//! Reading one watch (or watch-list) response: frames decoded as they
//! arrive, object events batched for delivery, bookmarks and error events
//! turned into progress or into how the request ended. A frame that cannot be
//! decoded is reported and skipped; the stream reads on.

use std::io::Read;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::access::client::Response;
use crate::objects::shape::Shaped;
use crate::stream::machine::End;
use crate::stream::sink::{Batch, Decoded};
use crate::stream::{Asking, Stream};
use crate::wire::decode::{self, Event};
use crate::wire::frames::{FrameError, ListError};
use crate::wire::request;
use crate::wire::rv::Rv;

impl Stream {
    /// The full state by watch-list; the same connection goes on with live
    /// events. Its reads wait at most `initial_events_timeout`: a server that
    /// ignores `sendInitialEvents` never sends the bookmark that ends them.
    pub(crate) fn watch_list(&mut self) -> End {
        if !self.claim_sync() {
            return End::Stopped;
        }
        let timeout = self.jitter.timeout_secs();
        let path = request::watch_list(&self.spec, None, timeout);
        let quiet = self
            .settings
            .initial_events_timeout
            .min(self.settings.idle_timeout);
        self.read_watch(&path, Some(quiet))
    }

    /// Live changes from the resume point. Resumed from a checkpoint, the
    /// watch first replays what changed while tattler was stopped: the
    /// resource's Synced waits until it has reached the server's
    /// resourceVersion of when the resume started, or until the replay is
    /// over (the connection silent for `CATCH_UP_QUIET`: the server sends
    /// its history at once).
    pub(crate) fn watch_live(&mut self) -> End {
        let mut short_reads = None;
        if let Some(c) = &self.catch_up {
            if c.target.is_none() {
                let target = match self.probe_version() {
                    Ok(target) => target,
                    Err(End::Stopped) => return End::Stopped,
                    // Best effort: without it, the replay's end is the
                    // second of silence (an empty target is never reached).
                    Err(end) => {
                        log::debug!(
                            "{}: the server's resourceVersion is unknown ({end:?}); catching up by silence",
                            self.spec.gvr()
                        );
                        Rv::empty()
                    }
                };
                if let Some(c) = &mut self.catch_up {
                    c.target = Some(target);
                }
            }
            if !self.check_caught_up() {
                return End::Stopped;
            }
            if self.catch_up.is_some() {
                short_reads = Some(CATCH_UP_QUIET);
            }
        }
        let timeout = self.jitter.timeout_secs();
        let path = request::watch_from(&self.spec, self.rv.as_str(), timeout);
        self.read_watch(&path, short_reads)
    }

    /// The server's resourceVersion now: a LIST of at most one object (no
    /// selectors, so the server stops at the first), its metadata's.
    fn probe_version(&mut self) -> Result<Rv, End> {
        let path = format!("{}?limit=1", request::collection_path(&self.spec));
        let resp = self.get(&path, Asking::List, None)?;
        let mut items = self.items(resp)?;
        loop {
            match items.next_item() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) if self.stop.is_set() => return Err(End::Stopped),
                Err(ListError::Io(e)) => {
                    return Err(End::Broke(format!("reading a list page failed: {e}")))
                }
                Err(ListError::Invalid(m)) => {
                    return Err(End::Retry(format!("bad list page: {m}"), None))
                }
            }
        }
        let rv = items
            .meta()
            .map(|m| m.resource_version.clone())
            .unwrap_or_default();
        decode::checked_rv(rv.as_str()).map_err(|m| End::Retry(format!("bad list page: {m}"), None))
    }

    /// Sends a resumed resource's Synced once its watch has reached the
    /// target; false when stopping.
    fn check_caught_up(&mut self) -> bool {
        // Opaque versions have no order: only the target itself says so.
        let reached = match self.catch_up.as_ref().and_then(|c| c.target.as_ref()) {
            Some(t) if t.as_str().is_empty() => false,
            Some(t) => {
                self.rv == *t
                    || matches!(
                        self.rv.key().order(t.key()),
                        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                    )
            }
            None => false,
        };
        !reached || self.caught_up()
    }

    fn read_watch(&mut self, path: &str, short_reads: Option<Duration>) -> End {
        let initial = !self.synced;
        // A watch-list's initial events have a total limit too: a server that
        // ignores sendInitialEvents but keeps sending never goes quiet.
        let deadline = (initial && self.machine.phase == crate::stream::machine::Phase::WatchList)
            .then(|| Instant::now() + self.settings.initial_events_timeout * INITIAL_EVENTS_TOTAL);
        let resp = match self.get(path, Asking::Objects, short_reads) {
            Ok(r) => r,
            Err(end) => return end,
        };
        let mut frames = match self.frames(resp) {
            Ok(f) => f,
            Err(end) => return end,
        };
        let mut batch = Batch::default();
        let mut counted = 0;
        let mut objects = 0u64;
        let end = loop {
            self.counters
                .bytes
                .fetch_add(frames.bytes() - counted, Ordering::Relaxed);
            counted = frames.bytes();
            if batch.full() || (!batch.is_empty() && !frames.buffered() && batch.due(self.synced)) {
                if let Some(end) = self.deliver(&mut batch, initial) {
                    break end;
                }
                if !self.check_caught_up() {
                    break End::Stopped;
                }
            }
            if deadline.is_some_and(|d| !self.synced && Instant::now() >= d) {
                break self.ignored_initial_events("no initial-events-end bookmark in time");
            }
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break End::Ended,
                Err(_) if self.stop.is_set() => break End::Stopped,
                Err(FrameError::Io(e)) if is_timeout(&e) => {
                    // Only the initial-events timeout (shorter than the idle
                    // one), between frames, says "no bookmark is coming".
                    let quiet = short_reads
                        .filter(|t| *t < self.settings.idle_timeout && !frames.partial());
                    if quiet.is_some() && self.catch_up.is_some() {
                        // The replay after a resume is over.
                        if let Some(end) = self.deliver(&mut batch, initial) {
                            break end;
                        }
                        break if self.caught_up() {
                            End::Ended
                        } else {
                            End::Stopped
                        };
                    }
                    break match quiet {
                        // The watch-list's connection, quiet after its sync: resume.
                        Some(_) if self.synced => End::Ended,
                        Some(t) if objects > 0 => {
                            log::info!(
                                "{}: {objects} initial objects, then nothing for {t:?} and no initial-events-end bookmark",
                                self.spec.gvr()
                            );
                            End::Quiet
                        }
                        Some(t) => End::Broke(format!(
                            "no initial events within {t:?} (initial_events_timeout)"
                        )),
                        None => End::Broke(
                            "no data within idle_timeout: connection taken as dead".into(),
                        ),
                    };
                }
                Err(FrameError::Io(e)) => break End::Broke(format!("stream broke: {e}")),
                Err(FrameError::Truncated(n)) => {
                    break End::Broke(format!("stream ended in the middle of a frame ({n} bytes)"))
                }
                Err(FrameError::Invalid(message)) => {
                    if let Some(end) = self.deliver(&mut batch, initial) {
                        break end;
                    }
                    if let Some(end) = self.schema_miss(&message) {
                        break end;
                    }
                    self.skip(
                        decode::DecodeError {
                            reason: crate::Reason::InvalidProtobuf,
                            message,
                            namespace: None,
                            name: None,
                            meta: None,
                        },
                        &[],
                    );
                    continue;
                }
                Err(FrameError::TooLarge(n)) => {
                    if let Some(end) = self.deliver(&mut batch, initial) {
                        break end;
                    }
                    let limit = self.settings.max_frame_bytes;
                    self.skip(
                        decode::DecodeError {
                            reason: crate::Reason::FrameTooLarge,
                            message: format!(
                            "a watch frame of {n} bytes exceeds max_frame_bytes ({limit}); skipped"
                        ),
                            namespace: None,
                            name: None,
                            meta: None,
                        },
                        &[],
                    );
                    continue;
                }
            };
            self.counters.events.fetch_add(1, Ordering::Relaxed);
            match self.on_frame(frame, initial, &mut batch) {
                Ok(true) => objects += 1,
                Ok(false) => {}
                Err(end) => break end,
            }
        };
        self.counters
            .bytes
            .fetch_add(frames.bytes() - counted, Ordering::Relaxed);
        match end {
            End::Stopped => End::Stopped,
            // What came before the end is delivered first.
            end => self.deliver(&mut batch, initial).unwrap_or(end),
        }
    }

    /// Handles one frame: an object event joins `batch` (true). `Err` ends
    /// the connection.
    fn on_frame(&mut self, frame: &[u8], initial: bool, batch: &mut Batch) -> Result<bool, End> {
        let event = match decode::event(frame, self.edits) {
            Ok(e) => e,
            Err(e) => {
                if let Some(end) = self.deliver(batch, initial) {
                    return Err(end);
                }
                self.skip(e, frame);
                return Ok(false);
            }
        };
        match event {
            Event::Object {
                kind,
                meta,
                object,
                edited,
            } => {
                if initial && !self.synced && kind != decode::EventType::Added {
                    // A watch-list's initial events are all ADDED: this is
                    // a plain watch.
                    if let Some(end) = self.deliver(batch, initial) {
                        return Err(end);
                    }
                    return Err(self.ignored_initial_events(
                        "a change before the initial-events-end bookmark",
                    ));
                }
                let bytes = edited.unwrap_or_else(|| frame[object.0..object.1].to_vec());
                let object = self.shaped(bytes, &meta, batch, initial)?;
                let mut meta = meta.into_owned();
                if !self.resource.kind.is_empty() {
                    meta.kind = None; // only read to learn the kind
                }
                batch.push(Decoded { kind, meta, object });
                Ok(true)
            }
            Event::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                if let Some(end) = self.deliver(batch, initial) {
                    return Err(end);
                }
                if self.synced {
                    self.set_rv(resource_version);
                    self.publish_rv();
                    if !self.check_caught_up() {
                        return Err(End::Stopped);
                    }
                } else if initial_events_end {
                    self.set_rv(resource_version);
                    if !self.finish_sync() {
                        return Err(End::Stopped);
                    }
                } else {
                    self.seen.plain_bookmarks += 1;
                    if self.seen.plain_bookmarks > PLAIN_BOOKMARKS {
                        return Err(self.ignored_initial_events(
                            "bookmarks without the initial-events-end one",
                        ));
                    }
                }
                Ok(false)
            }
            Event::Error(s) => {
                let why = format!(
                    "the server sent an error event: {} {} {}",
                    s.code, s.reason, s.message
                );
                let hint = s
                    .retry_after_secs
                    .map(|s| Duration::from_secs(u64::from(s)));
                Err(match s.code {
                    410 => End::Expired,
                    504 if s.rv_too_large => End::TooLarge(hint),
                    _ if initial && !self.synced => End::InitialError(why),
                    _ => End::Retry(why, hint.map(|h| h.min(crate::stream::answer::MAX_HINT))),
                })
            }
        }
    }

    /// A response body, decoded: gzip only when tattler asked for it.
    pub(crate) fn body(&self, resp: Response) -> Result<Box<dyn Read + Send>, End> {
        let encoding = resp
            .header("Content-Encoding")
            .map(|v| v.trim().to_ascii_lowercase());
        let reader = resp.into_body();
        match encoding.as_deref() {
            None | Some("" | "identity") => Ok(Box::new(reader)),
            // Any number of members: a 1.37 apiserver (WatchListCompression)
            // gzips each event of a watch-list as a member of its own.
            Some("gzip") if self.settings.gzip => {
                Ok(Box::new(flate2::read::MultiGzDecoder::new(reader)))
            }
            Some(other) => {
                let shown: String = other.chars().take(32).collect();
                Err(End::Retry(
                    format!("the server sent a {shown:?} body, which tattler did not ask for"),
                    None,
                ))
            }
        }
    }

    /// The event filter and the transform, for an object already checked
    /// and edited by the decoder: its bytes to deliver, or `None` when it is
    /// not delivered (dropped, or failed and reported).
    pub(crate) fn shaped(
        &mut self,
        bytes: Vec<u8>,
        meta: &decode::ObjectMeta,
        batch: &mut Batch,
        initial: bool,
    ) -> Result<Option<Vec<u8>>, End> {
        if !self.needs_value {
            return Ok(Some(bytes));
        }
        Ok(match self.settings.shaping.apply(&self.resource, &bytes) {
            Shaped::Keep => Some(bytes),
            Shaped::Replace(v) => Some(v),
            Shaped::Drop => None,
            Shaped::Failed(why) => {
                if let Some(end) = self.deliver(batch, initial) {
                    return Err(end);
                }
                self.skip(
                    decode::DecodeError {
                        reason: crate::Reason::TransformFailed,
                        message: format!("the object {why}; skipped"),
                        namespace: meta.namespace.as_deref().map(String::from),
                        name: Some(meta.name.to_string()),
                        meta: None,
                    },
                    &[],
                );
                None
            }
        })
    }
}

/// How long a resumed watch must be silent to have replayed its history.
const CATCH_UP_QUIET: Duration = Duration::from_secs(1);
/// A watch-list's initial events end within this many initial_events_timeouts.
const INITIAL_EVENTS_TOTAL: u32 = 10;
/// Periodic bookmarks before the initial-events-end one that a real
/// watch-list may carry (the server bookmarks about once a minute); more,
/// and the server ignores sendInitialEvents.
const PLAIN_BOOKMARKS: u32 = 2;

impl Stream {
    /// The watch-list was answered as a plain watch (`why`): the state goes
    /// on by LIST.
    fn ignored_initial_events(&self, why: &str) -> End {
        log::info!(
            "{}: {why}: the server ignores sendInitialEvents",
            self.spec.gvr()
        );
        End::Quiet
    }
}

/// A read that waited past its timeout (the client says so by its kind).
fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}
