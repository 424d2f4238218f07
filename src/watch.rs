//! One resource stream on one OS thread: watch-list (or LIST + WATCH), dedupe,
//! reconnect, re-sync; entries out through the shared channel.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver, Sender, TryRecvError, TrySendError};

use crate::config::Backoff;
use crate::decode::{self, Event, EventType, FrameError, FrameReader, ObjectMeta, Status};
use crate::shape::Shaped;
use crate::state::{Tracker, Verdict};
use crate::transport::{AgentSlot, Transport};
use crate::{request, Change, Entry, ErrorInfo, Resource, ResourceSpec};
use parking_lot::Mutex;

/// Settings a stream needs, shared by all streams of a reader.
pub(crate) struct StreamSettings {
    pub page_size: u32,
    pub max_frame_bytes: usize,
    pub backoff: Backoff,
    pub shaping: crate::Shaping,
}

/// Live counters of one stream, read by [`crate::Reader::stats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub events: AtomicU64,
    pub bytes: AtomicU64,
    pub reconnects: AtomicU64,
    pub resyncs: AtomicU64,
    pub relists: AtomicU64,
    pub stale_drops: AtomicU64,
    pub resource_version: AtomicU64,
    pub objects: AtomicU64,
    pub synced: AtomicBool,
    pub list_fallback: AtomicBool,
    pub failed: AtomicBool,
    /// Why the stream last had to retry or give up; cleared by a completed sync.
    pub last_error: Mutex<Option<String>>,
}

/// Tells a stream to stop: either receiver disconnecting means stop.
#[derive(Clone)]
pub(crate) struct Stop {
    pub all: Receiver<()>,
    pub own: Receiver<()>,
}

impl Stop {
    pub(crate) fn is_set(&self) -> bool {
        matches!(self.all.try_recv(), Err(TryRecvError::Disconnected))
            || matches!(self.own.try_recv(), Err(TryRecvError::Disconnected))
    }

    /// Sleeps up to `d`; true when woken by a stop.
    fn sleep(&self, d: Duration) -> bool {
        select! {
            recv(self.all) -> _ => true,
            recv(self.own) -> _ => true,
            default(d) => false,
        }
    }

    /// Blocks until the entry is queued (true) or a stop comes (false).
    fn send(&self, out: &Sender<Entry>, entry: Entry) -> bool {
        // Room in the channel (the common case): no select needed.
        let entry = match out.try_send(entry) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(e)) => e,
        };
        select! {
            send(out, entry) -> r => r.is_ok(),
            recv(self.all) -> _ => false,
            recv(self.own) -> _ => false,
        }
    }
}

/// How one connection ended.
#[derive(Debug)]
enum Outcome {
    /// The server ended the body normally (timeoutSeconds); `Listed` after a
    /// completed LIST.
    Ended,
    Listed,
    /// 410: history is gone; re-sync.
    Expired,
    /// The resourceVersion asked for is ahead of the server; re-sync.
    TooLarge(Option<u32>),
    /// 400/422: the server refused the request as asked.
    Rejected(Status),
    /// A failure retrying cannot fix.
    Fatal(ErrorInfo),
    /// A failure worth retrying after a pause (`Some`: the server said how long).
    Retry(String, Option<Duration>),
    /// An ERROR event before a watch-list's initial state was complete: what
    /// an etcd too old for watch-list (< 3.5.13) produces. Twice in a row
    /// means LIST + WATCH.
    InitialError(String),
    /// The reader is stopping.
    Stopped,
}

/// At most this many object events are decoded before they are judged and
/// sent. Sending them together (rather than one per decode) lets a waiting
/// consumer wake once per batch, not once per entry. Once synced, a batch
/// ends early whenever the next frame is not yet buffered, so a live event
/// never waits for the next one; during the initial state (which ends with a
/// bookmark that sends the rest) batches stay full. Measured at 100,000
/// pods: ending batches at every read instead cost 8% more time to Synced;
/// 256 instead of 64 gained nothing.
const BATCH: usize = 64;

/// A relist's replacement that fails this many times in a row gives up, so
/// that one stuck relist cannot hold up the relists of other resources.
const REPLACEMENT_FAILURES: u32 = 3;

/// An object event decoded ahead of its verdict.
struct Decoded {
    kind: EventType,
    meta: ObjectMeta<'static>,
    /// `None`: shaping dropped it; only its resourceVersion counts.
    object: Option<Vec<u8>>,
}

/// State one resource's streams share: the primary, and during a relist its
/// replacement. Entries are judged and sent under the tracker's lock, so the
/// two cannot reorder or double an object's changes.
#[derive(Default)]
pub(crate) struct Shared {
    /// One full state at a time (Tracker::claim_sync): a primary that must
    /// re-sync during a relist ends and leaves the state to the relist.
    pub tracker: Mutex<Tracker>,
}

/// What a stream is for.
pub(crate) enum Role {
    /// The resource's stream.
    Primary,
    /// A relist: a fresh stream that syncs while the primary runs on, and
    /// says so on this channel once synced, to be swapped in.
    Replacement(Sender<()>),
}

/// Everything a stream thread starts with.
pub(crate) struct StreamInit {
    pub spec: ResourceSpec,
    pub transport: Arc<Transport>,
    pub slot: Arc<AgentSlot>,
    pub settings: Arc<StreamSettings>,
    pub out: Sender<Entry>,
    pub stop: Stop,
    pub counters: Arc<Counters>,
    pub shared: Arc<Shared>,
    pub role: Role,
}

pub(crate) struct Stream {
    spec: ResourceSpec,
    resource: Arc<Resource>,
    transport: Arc<Transport>,
    slot: Arc<AgentSlot>,
    settings: Arc<StreamSettings>,
    out: Sender<Entry>,
    stop: Stop,
    counters: Arc<Counters>,
    shared: Arc<Shared>,
    role: Role,
    /// Last resourceVersion seen (event or bookmark) once synced.
    rv: u64,
    synced: bool,
    list_fallback: bool,
    /// A 401 was answered by reloading credentials once; a second one is final.
    reloaded_after_401: bool,
    /// The byte-level edits the decoder makes, and whether they are all the
    /// shaping there is (no transform, no event filter).
    edits: crate::scrub::Edits,
    edits_only: bool,
    /// Unique among a reader's streams; see `Tracker::owner`.
    id: u64,
    /// Another stream owns the live events now: this one ends.
    superseded: bool,
    rng: u64,
}

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

impl Stream {
    pub(crate) fn new(init: StreamInit) -> Stream {
        let spec = init.spec;
        let resource = Arc::new(Resource {
            group: spec.group.clone(),
            version: spec.version.clone(),
            resource: spec.resource.clone(),
            kind: spec.kind.clone(),
        });
        let rng = seed(&spec.gvr());
        let shaping = &init.settings.shaping;
        let is_event =
            spec.resource == "events" && matches!(spec.group.as_str(), "" | "events.k8s.io");
        let edits_only =
            shaping.transform.is_none() && !(is_event && shaping.event_kinds.is_some());
        let edits = if edits_only {
            crate::scrub::Edits {
                scrub: shaping.scrub,
                drop_managed_fields: shaping.drop_managed_fields,
            }
        } else {
            decode::NO_EDITS
        };
        Stream {
            spec,
            resource,
            transport: init.transport,
            slot: init.slot,
            settings: init.settings,
            out: init.out,
            stop: init.stop,
            counters: init.counters,
            shared: init.shared,
            role: init.role,
            rv: 0,
            synced: false,
            list_fallback: false,
            reloaded_after_401: false,
            edits,
            edits_only,
            id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
            superseded: false,
            rng,
        }
    }

    fn is_replacement(&self) -> bool {
        matches!(self.role, Role::Replacement(_))
    }

    /// Runs until stopped or failed for good.
    pub(crate) fn run(mut self) {
        self.run_loop();
        self.shared.tracker.lock().release_sync(self.id);
    }

    /// Starts a full state. While another stream of this resource delivers
    /// one (a relist's replacement), a primary waits: once the replacement
    /// has synced it owns the resource and this stream ends; if it gives up,
    /// this one syncs. A replacement never waits for a primary.
    fn claim_sync(&mut self) -> bool {
        let mut logged = false;
        loop {
            let owned = {
                let mut t = self.shared.tracker.lock();
                if t.claim_sync(self.id) {
                    return true;
                }
                !self.is_replacement() && t.owner() == self.id
            };
            if !owned {
                log::info!(
                    "{}: another stream is syncing this resource; this one ends",
                    self.spec.gvr()
                );
                self.superseded = true;
                return false;
            }
            if !logged {
                log::info!(
                    "{}: a relist is syncing this resource; waiting for it",
                    self.spec.gvr()
                );
                logged = true;
            }
            if self.stop.sleep(Duration::from_millis(100)) {
                return false;
            }
        }
    }

    fn run_loop(&mut self) {
        let name = self.spec.gvr();
        if !self.is_replacement() {
            // A (re)started primary delivers from now on; a replacement waits
            // for its snapshot (finish_sync).
            self.shared.tracker.lock().set_owner(self.id);
        }
        let mut failures: u32 = 0;
        let mut initial_errors: u32 = 0;
        loop {
            if self.stop.is_set() {
                return;
            }
            let started = Instant::now();
            let outcome = if self.spec.needs_discovery() {
                self.discover()
            } else if self.synced {
                let timeout = self.timeout_secs();
                let url = request::watch_from(&self.spec, &self.rv.to_string(), timeout);
                self.watch(&url)
            } else if self.list_fallback {
                self.list()
            } else {
                let timeout = self.timeout_secs();
                let url = request::watch_list(&self.spec, None, timeout);
                self.watch(&url)
            };
            if started.elapsed() >= self.settings.backoff.reset_after {
                failures = 0;
            }
            let pause = match outcome {
                Outcome::Stopped => return,
                Outcome::Listed => {
                    failures = 0;
                    None
                }
                Outcome::Ended if started.elapsed() >= Duration::from_secs(1) => {
                    log::debug!(
                        "{name}: watch ended; resuming from resourceVersion {}",
                        self.rv
                    );
                    None
                }
                Outcome::Ended => Some((String::from("watch ended at once"), None)),
                Outcome::Expired => {
                    log::info!("{name}: resourceVersion {} expired; re-syncing", self.rv);
                    self.resync();
                    (failures > 0).then(|| (String::from("expired again"), None))
                }
                Outcome::TooLarge(after) => {
                    log::info!(
                        "{name}: resourceVersion {} is ahead of the server; re-syncing",
                        self.rv
                    );
                    self.resync();
                    Some((String::from("resourceVersion too large"), after.map(secs)))
                }
                Outcome::Rejected(s) if !self.list_fallback && !self.synced => {
                    log::info!(
                        "{name}: server refused watch-list ({} {}); falling back to LIST + WATCH",
                        s.code,
                        s.message
                    );
                    self.use_list_fallback();
                    None
                }
                Outcome::Rejected(s) => {
                    self.fail(ErrorInfo {
                        code: s.code,
                        reason: s.reason,
                        message: s.message,
                    });
                    return;
                }
                Outcome::Fatal(info) => {
                    self.fail(info);
                    return;
                }
                Outcome::Retry(why, after) => Some((why, after)),
                Outcome::InitialError(why) => {
                    initial_errors += 1;
                    if initial_errors >= 2 {
                        log::warn!("{name}: watch-list failed twice in its initial state ({why}); falling back to LIST + WATCH");
                        self.use_list_fallback();
                        None
                    } else {
                        Some((why, None))
                    }
                }
            };
            if self.synced {
                initial_errors = 0;
            }
            if let Some((why, after)) = pause {
                failures = failures.saturating_add(1);
                if self.is_replacement() && failures >= REPLACEMENT_FAILURES {
                    // The running stream goes on; the next relist tries again.
                    log::warn!("{name}: relist failed {failures} times ({why}); giving up");
                    return;
                }
                let delay = after.unwrap_or_else(|| self.backoff(failures));
                log::warn!("{name}: {why}; retrying in {delay:?}");
                *self.counters.last_error.lock() = Some(why);
                self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
                if self.stop.sleep(delay) {
                    return;
                }
            }
        }
    }

    fn use_list_fallback(&mut self) {
        self.list_fallback = true;
        self.counters.list_fallback.store(true, Ordering::Relaxed);
    }

    fn resync(&mut self) {
        self.synced = false;
        self.counters.synced.store(false, Ordering::Relaxed);
        self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
    }

    fn fail(&mut self, info: ErrorInfo) {
        if self.is_replacement() {
            // The primary runs on; the next relist tries again.
            log::warn!(
                "{}: relist failed ({} {} {}); keeping the running stream",
                self.spec.gvr(),
                info.code,
                info.reason,
                info.message
            );
            return;
        }
        log::error!(
            "{}: giving up: {} {} {}",
            self.spec.gvr(),
            info.code,
            info.reason,
            info.message
        );
        self.counters.failed.store(true, Ordering::Relaxed);
        *self.counters.last_error.lock() =
            Some(format!("{} {}: {}", info.code, info.reason, info.message));
        let entry = Entry::failure(self.resource.clone(), info);
        self.stop.send(&self.out, entry);
    }

    /// One GET; a non-200 answer is turned into the outcome it calls for.
    fn get(&mut self, path: &str) -> Result<ureq::http::Response<ureq::Body>, Outcome> {
        let creds = &self.transport.credentials;
        let current = creds
            .current()
            .map_err(|e| Outcome::Retry(format!("credentials: {e}"), None))?;
        let agent = match self.slot.get(&self.transport, &current) {
            None => return Err(Outcome::Stopped),
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                return Err(Outcome::Fatal(ErrorInfo {
                    code: 0,
                    reason: "TlsIdentity".into(),
                    message: e,
                }))
            }
        };
        let url = format!("{}{}", self.transport.base, path);
        let mut req = agent.get(&url).header("Accept", "application/json");
        if let Some(h) = &current.header {
            req = req.header("Authorization", h);
        }
        log::debug!("GET {path}");
        let resp = match req.call() {
            Ok(r) => r,
            Err(_) if self.stop.is_set() => return Err(Outcome::Stopped),
            Err(e) => return Err(Outcome::Retry(format!("request failed: {e}"), None)),
        };
        let code = resp.status().as_u16();
        if code == 200 {
            self.reloaded_after_401 = false;
            return Ok(resp);
        }
        if code == 401 && creds.reloadable() && !self.reloaded_after_401 {
            // A rotated token or an expired exec credential: reload once, retry at once.
            self.reloaded_after_401 = true;
            creds.invalidate();
            return Err(Outcome::Retry(
                "401 Unauthorized; reloading credentials".into(),
                Some(Duration::ZERO),
            ));
        }
        let retry_after = resp
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok());
        let mut body = Vec::new();
        let _ = resp
            .into_body()
            .into_reader()
            .take(64 << 10)
            .read_to_end(&mut body);
        let mut status = decode::status(&body);
        if status.code == 0 {
            status.code = code;
        }
        Err(match code {
            410 => Outcome::Expired,
            400 | 422 => Outcome::Rejected(status),
            429 | 503 => Outcome::Retry(
                format!("server busy ({code} {})", status.message),
                retry_after.map(|s| secs(s.min(300))),
            ),
            500..=599 => Outcome::Retry(format!("server error {code}: {}", status.message), None),
            // Not served (yet): a CRD being established, an API being added.
            404 => Outcome::Retry(format!("not served (404 {})", status.message), None),
            _ => Outcome::Fatal(ErrorInfo {
                code,
                reason: if status.reason.is_empty() {
                    format!("HTTP {code}")
                } else {
                    status.reason
                },
                message: status.message,
            }),
        })
    }

    /// Finds the resource name and scope of a kind through discovery
    /// (`/api/v1`, `/apis/group/version`), asked afresh on every attempt.
    fn discover(&mut self) -> Outcome {
        let path = if self.spec.group.is_empty() {
            format!("/api/{}", self.spec.version)
        } else {
            format!("/apis/{}/{}", self.spec.group, self.spec.version)
        };
        let resp = match self.get(&path) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let mut body = Vec::new();
        if let Err(e) = resp
            .into_body()
            .into_reader()
            .take(16 << 20)
            .read_to_end(&mut body)
        {
            return Outcome::Retry(format!("discovery: {e}"), None);
        }
        #[derive(serde::Deserialize)]
        struct List {
            resources: Vec<Res>,
        }
        #[derive(serde::Deserialize)]
        struct Res {
            name: String,
            kind: String,
            namespaced: bool,
        }
        let list: List = match serde_json::from_slice(&body) {
            Ok(l) => l,
            Err(e) => return Outcome::Retry(format!("discovery {path}: {e}"), None),
        };
        let found = list
            .resources
            .into_iter()
            .find(|r| r.kind == self.spec.kind && !r.name.contains('/'));
        let Some(r) = found else {
            return Outcome::Retry(
                format!("{path} does not serve kind {} (yet)", self.spec.kind),
                None,
            );
        };
        log::info!(
            "{}: served as {} ({})",
            self.spec.gvr(),
            r.name,
            if r.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
        self.spec.resource = r.name;
        self.spec.namespaced = r.namespaced;
        if !r.namespaced {
            self.spec.namespace = None;
        }
        let mut res = (*self.resource).clone();
        res.resource = self.spec.resource.clone();
        self.resource = Arc::new(res);
        Outcome::Listed
    }

    /// Reads one watch (or watch-list) response to its end.
    fn watch(&mut self, path: &str) -> Outcome {
        let initial = !self.synced;
        if initial && !self.claim_sync() {
            return Outcome::Stopped;
        }
        let resp = match self.get(path) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let mut frames = FrameReader::new(
            resp.into_body().into_reader(),
            self.settings.max_frame_bytes,
        );
        let mut batch = Vec::new();
        let mut counted = 0;
        let outcome = loop {
            self.counters
                .bytes
                .fetch_add(frames.bytes - counted, Ordering::Relaxed);
            counted = frames.bytes;
            if !batch.is_empty() && (batch.len() >= BATCH || (self.synced && !frames.buffered())) {
                if let Some(o) = self.deliver(&mut batch, initial) {
                    break o;
                }
            }
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) if self.synced => break Outcome::Ended,
                Ok(None) => {
                    break Outcome::Retry(
                        "stream ended before the initial state was complete".into(),
                        None,
                    )
                }
                Err(_) if self.stop.is_set() => break Outcome::Stopped,
                Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
                    break Outcome::Retry(
                        "no data within idle_timeout: connection taken as dead".into(),
                        None,
                    )
                }
                Err(FrameError::Io(e)) => break Outcome::Retry(format!("stream broke: {e}"), None),
                Err(FrameError::Truncated(n)) => {
                    break Outcome::Retry(
                        format!("stream ended in the middle of a frame ({n} bytes)"),
                        None,
                    )
                }
                Err(FrameError::TooLarge(n)) => {
                    if let Some(o) = self.deliver(&mut batch, initial) {
                        break o;
                    }
                    // Skipping it would lose the object silently; report and re-read.
                    let limit = self.settings.max_frame_bytes;
                    self.report(
                        0,
                        "FrameTooLarge",
                        format!(
                            "a watch frame of {n} bytes exceeds max_frame_bytes ({limit}); skipped"
                        ),
                    );
                    continue;
                }
            };
            self.counters.events.fetch_add(1, Ordering::Relaxed);
            if let Some(outcome) = self.on_frame(frame, initial, &mut batch) {
                break outcome;
            }
        };
        self.counters
            .bytes
            .fetch_add(frames.bytes - counted, Ordering::Relaxed);
        match outcome {
            Outcome::Stopped => Outcome::Stopped,
            // What came before the end is delivered first.
            o => self.deliver(&mut batch, initial).unwrap_or(o),
        }
    }

    /// Handles one frame: an object event joins `batch`; `Some` ends the connection.
    fn on_frame(
        &mut self,
        frame: &[u8],
        initial: bool,
        batch: &mut Vec<Decoded>,
    ) -> Option<Outcome> {
        let event = match decode::event(frame, self.edits) {
            Ok(e) => e,
            Err(e) => return Some(Outcome::Retry(format!("bad frame: {}", e.0), None)),
        };
        match event {
            Event::Object {
                kind,
                meta,
                object,
                edited,
            } => {
                let bytes = &frame[object.0..object.1];
                let shaped = match edited {
                    // The decoder made the edits in its pass over the object.
                    Some(v) => Shaped::Replace(v),
                    None if self.edits_only => Shaped::Keep,
                    None => self.shape(bytes),
                };
                let object = match shaped {
                    Shaped::Drop => None,
                    Shaped::Replace(v) => Some(v),
                    Shaped::Keep => Some(bytes.to_vec()),
                };
                let mut meta = meta;
                if !self.resource.kind.is_empty() {
                    meta.kind = None; // only read to learn the kind
                }
                batch.push(Decoded {
                    kind,
                    meta: meta.into_owned(),
                    object,
                });
                None
            }
            Event::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                if let Some(o) = self.deliver(batch, initial) {
                    return Some(o);
                }
                if self.synced {
                    self.set_rv(resource_version);
                } else if initial_events_end {
                    self.set_rv(resource_version);
                    if !self.finish_sync() {
                        return Some(Outcome::Stopped);
                    }
                }
                None
            }
            Event::Error(s) => Some(match s.code {
                410 => Outcome::Expired,
                504 if s.rv_too_large => Outcome::TooLarge(s.retry_after_secs),
                _ if initial && !self.synced && !self.list_fallback => {
                    Outcome::InitialError(format!(
                        "server sent an error event: {} {} {}",
                        s.code, s.reason, s.message
                    ))
                }
                _ => Outcome::Retry(
                    format!(
                        "server sent an error event: {} {} {}",
                        s.code, s.reason, s.message
                    ),
                    s.retry_after_secs.map(secs),
                ),
            }),
        }
    }

    /// Judges and sends a batch of decoded object events, in order; `Some`
    /// ends the connection. The tracker stays locked over the batch, as over
    /// each send: another stream of the resource cannot slip in between.
    fn deliver(&mut self, batch: &mut Vec<Decoded>, initial: bool) -> Option<Outcome> {
        if batch.is_empty() {
            return None;
        }
        let shared = self.shared.clone();
        let mut tracker = shared.tracker.lock();
        for d in batch.drain(..) {
            let rv = d.meta.resource_version;
            if let Some(object) = d.object {
                if let Some(mut entry) = self.judge(&mut tracker, d.kind, d.meta) {
                    entry.object = Some(object);
                    if !self.stop.send(&self.out, entry) {
                        tracker.undo_last();
                        return Some(Outcome::Stopped);
                    }
                }
            }
            if self.superseded {
                return Some(Outcome::Stopped);
            }
            if !initial || self.synced {
                self.set_rv(rv);
            }
        }
        None
    }

    /// Pages through a LIST as the initial state (fallback when the server has no watch-list).
    fn list(&mut self) -> Outcome {
        if !self.claim_sync() {
            return Outcome::Stopped;
        }
        let mut token: Option<String> = None;
        let max = self.settings.max_frame_bytes;
        let mut page_size = self.settings.page_size;
        loop {
            let path = request::list_page(&self.spec, page_size, token.as_deref());
            let resp = match self.get(&path) {
                Ok(r) => r,
                Err(o) => return o,
            };
            // A page is bounded by its objects' limit (at most 1 GiB in all).
            let limit = (max as u64)
                .saturating_mul(u64::from(page_size))
                .clamp(max as u64, 1 << 30);
            let mut body = Vec::new();
            if let Err(e) = resp
                .into_body()
                .into_reader()
                .take(limit + 1)
                .read_to_end(&mut body)
            {
                if self.stop.is_set() {
                    return Outcome::Stopped;
                }
                return Outcome::Retry(format!("reading a list page failed: {e}"), None);
            }
            self.counters
                .bytes
                .fetch_add(body.len() as u64, Ordering::Relaxed);
            if body.len() as u64 > limit {
                if page_size > 1 {
                    // Ask again for fewer objects at a time.
                    page_size = (page_size / 2).max(1);
                    log::warn!(
                        "{}: a list page is over {limit} bytes; asking for {page_size} objects a page",
                        self.spec.gvr()
                    );
                    continue;
                }
                // One object over the limit: skip it, as a watch frame is
                // skipped. The page's metadata (before its items) says where to go on.
                let Some((rv, next)) = decode::list_head(&body) else {
                    return Outcome::Retry(
                        "a list page over the limit has no readable metadata".into(),
                        None,
                    );
                };
                self.report(
                    0,
                    "FrameTooLarge",
                    format!("a list item over max_frame_bytes ({max}); skipped"),
                );
                match next {
                    Some(t) => {
                        token = Some(t);
                        continue;
                    }
                    None => {
                        self.set_rv(rv);
                        return if self.finish_sync() {
                            Outcome::Listed
                        } else {
                            Outcome::Stopped
                        };
                    }
                }
            }
            let page = match decode::list_page(&body) {
                Ok(p) => p,
                Err(e) => return Outcome::Retry(format!("bad list page: {}", e.0), None),
            };
            // Items go out in batches, as watch events do (deliver).
            let mut batch = Vec::new();
            for item in &page.items {
                if item.len() > max {
                    if let Some(o) = self.deliver(&mut batch, true) {
                        return o;
                    }
                    // As for a watch frame: reported, skipped, the rest flows.
                    let n = item.len();
                    self.report(
                        0,
                        "FrameTooLarge",
                        format!(
                            "a list item of {n} bytes exceeds max_frame_bytes ({max}); skipped"
                        ),
                    );
                    continue;
                }
                let meta = match decode::object_meta(item) {
                    Ok(m) => m,
                    Err(e) => {
                        let bad = Outcome::Retry(format!("bad list item: {}", e.0), None);
                        return self.deliver(&mut batch, true).unwrap_or(bad);
                    }
                };
                self.counters.events.fetch_add(1, Ordering::Relaxed);
                let bytes = self.list_item_bytes(item, meta.kind.is_none());
                let object = match self.shape(bytes.as_slice()) {
                    Shaped::Drop => continue,
                    Shaped::Replace(v) => v,
                    Shaped::Keep => bytes,
                };
                batch.push(Decoded {
                    kind: EventType::Added,
                    meta: meta.into_owned(),
                    object: Some(object),
                });
                if batch.len() >= BATCH {
                    if let Some(o) = self.deliver(&mut batch, true) {
                        return o;
                    }
                }
            }
            if let Some(o) = self.deliver(&mut batch, true) {
                return o;
            }
            match page.continue_token {
                Some(t) => token = Some(t),
                None => {
                    self.set_rv(page.resource_version);
                    if !self.finish_sync() {
                        return Outcome::Stopped;
                    }
                    return Outcome::Listed;
                }
            }
        }
    }

    fn shape(&self, object: &[u8]) -> Shaped {
        if self.settings.shaping.active() {
            self.settings.shaping.apply(&self.resource, object)
        } else {
            Shaped::Keep
        }
    }

    /// LIST items come without kind and apiVersion; put them back so that an
    /// object looks the same whichever way it arrived. The rest is untouched.
    fn list_item_bytes(&self, item: &str, add_kind: bool) -> Vec<u8> {
        let mut buf = Vec::with_capacity(item.len() + 64);
        match (
            add_kind && !self.resource.kind.is_empty(),
            item.strip_prefix('{'),
        ) {
            (true, Some(rest)) => {
                buf.extend_from_slice(b"{\"kind\":");
                buf.extend_from_slice(
                    serde_json::to_string(&self.resource.kind)
                        .unwrap_or_default()
                        .as_bytes(),
                );
                buf.extend_from_slice(b",\"apiVersion\":");
                buf.extend_from_slice(
                    serde_json::to_string(&self.spec.api_version())
                        .unwrap_or_default()
                        .as_bytes(),
                );
                if !rest.trim_start().starts_with('}') {
                    buf.push(b',');
                }
                buf.extend_from_slice(rest.as_bytes());
            }
            _ => buf.extend_from_slice(item.as_bytes()),
        }
        buf
    }

    /// Dedupes one object event: the entry to deliver (its object still to
    /// be attached), or `None` when it is dropped.
    fn judge(&mut self, tracker: &mut Tracker, kind: EventType, meta: ObjectMeta) -> Option<Entry> {
        if self.synced && tracker.owner() != self.id {
            // Replaced by a relist: its stream delivers these changes.
            self.superseded = true;
            return None;
        }
        if self.resource.kind.is_empty() {
            if let Some(k) = &meta.kind {
                let mut r = (*self.resource).clone();
                r.kind = k.to_string();
                self.resource = Arc::new(r);
            }
        }
        let change = match tracker.observe(kind, &meta, !self.synced) {
            Verdict::Deliver(c) => c,
            Verdict::Stale => {
                self.counters.stale_drops.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Verdict::Duplicate => return None,
        };
        self.counters
            .objects
            .store(tracker.len() as u64, Ordering::Relaxed);
        Some(Entry {
            change,
            resource: self.resource.clone(),
            namespace: tracker.namespace_arc(meta.namespace.as_deref()),
            // Owned strings move in without a copy.
            name: meta.name.into_owned().into_boxed_str(),
            uid: meta.uid.into_owned().into_boxed_str(),
            resource_version: meta.resource_version,
            object: None,
            inferred: false,
            error: None,
        })
    }

    /// Completes a (re-)sync: inferred deletes, then Synced. False when stopping.
    fn finish_sync(&mut self) -> bool {
        if self.stop.is_set() {
            return false;
        }
        let shared = self.shared.clone();
        let mut tracker = shared.tracker.lock();
        tracker.set_owner(self.id);
        let mut gone = tracker.end_sync(self.rv).into_iter();
        if gone.len() > 0 {
            log::info!(
                "{}: {} objects vanished since the last sync",
                self.spec.gvr(),
                gone.len()
            );
        }
        while let Some(v) = gone.next() {
            let back = v.clone();
            let entry = Entry {
                change: Change::Delete,
                resource: self.resource.clone(),
                namespace: v.namespace,
                name: v.name,
                uid: v.uid.into_boxed_str(),
                resource_version: v.resource_version,
                object: None,
                inferred: true,
                error: None,
            };
            if !self.stop.send(&self.out, entry) {
                // Not delivered: the state must still hold these objects.
                for v in std::iter::once(back).chain(gone) {
                    tracker.restore(v);
                }
                return false;
            }
        }
        self.synced = true;
        *self.counters.last_error.lock() = None;
        let objects = tracker.len();
        self.counters.synced.store(true, Ordering::Relaxed);
        self.counters
            .objects
            .store(objects as u64, Ordering::Relaxed);
        log::info!(
            "{}: synced {objects} objects at resourceVersion {}",
            self.spec.gvr(),
            self.rv
        );
        let entry = Entry::marker(Change::Synced, self.resource.clone(), self.rv);
        if !self.stop.send(&self.out, entry) {
            return false;
        }
        drop(tracker);
        if let Role::Replacement(done) = &self.role {
            // The reader swaps this stream in (it may already have gone
            // away); from now on this is the resource's stream.
            let _ = done.try_send(());
            self.role = Role::Primary;
        }
        true
    }

    /// An Error entry for a problem that does not stop the stream.
    fn report(&mut self, code: u16, reason: &str, message: String) {
        log::warn!("{}: {message}", self.spec.gvr());
        let info = ErrorInfo {
            code,
            reason: reason.to_string(),
            message,
        };
        let entry = Entry::failure(self.resource.clone(), info);
        self.stop.send(&self.out, entry);
    }

    fn set_rv(&mut self, rv: u64) {
        self.rv = rv;
        self.counters.resource_version.store(rv, Ordering::Relaxed);
    }

    /// A random watch timeout in 290..=600 s, so that streams do not all
    /// reconnect at once.
    fn timeout_secs(&mut self) -> u32 {
        290 + (self.random() % 311) as u32
    }

    /// Full jitter: uniform in 0..=min(max, initial * 2^(failures-1)).
    fn backoff(&mut self, failures: u32) -> Duration {
        let b = &self.settings.backoff;
        let cap = b
            .initial
            .saturating_mul(
                1u32.checked_shl(failures.saturating_sub(1).min(20))
                    .unwrap_or(u32::MAX),
            )
            .min(b.max);
        let ms = cap.as_millis().max(1) as u64;
        Duration::from_millis(self.random() % (ms + 1))
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: plenty for jitter, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn secs(s: u32) -> Duration {
    Duration::from_secs(u64::from(s))
}

fn seed(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    std::time::SystemTime::now().hash(&mut h);
    std::thread::current().id().hash(&mut h);
    h.finish() | 1
}
