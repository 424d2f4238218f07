//! One resource stream on one OS thread: it asks the machine (machine.rs)
//! what to request, makes the request (discovery.rs, watch.rs, list.rs,
//! answer.rs), delivers what comes (deliver.rs), and asks again.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::auth::CredentialError;
use crate::channel::{Out, Stop};
use crate::config::Backoff;
use crate::machine::{End, Machine, Next, Phase, Seen};
use crate::rv::Rv;
use crate::scrub::Edits;
use crate::state::Tracker;
use crate::transport::{AgentSlot, Transport};
use crate::{answer, decode, Entry, ErrorInfo, Resource, ResourceSpec};

/// Settings a stream needs, shared by all streams of a reader.
pub(crate) struct StreamSettings {
    pub page_size: u32,
    pub max_frame_bytes: usize,
    pub backoff: Backoff,
    pub shaping: crate::Shaping,
    pub idle_timeout: Duration,
    pub initial_events_timeout: Duration,
    pub gzip: bool,
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
    pub skipped: AtomicU64,
    pub objects: AtomicU64,
    pub synced: AtomicBool,
    pub list_fallback: AtomicBool,
    pub failed: AtomicBool,
    /// The last resourceVersion seen; written once a batch, not per event.
    pub resource_version: Mutex<Rv>,
    /// When the last full state completed.
    pub synced_at: Mutex<Option<SystemTime>>,
    /// Why the stream last had to retry or give up; cleared by a completed sync.
    pub last_error: Mutex<Option<String>>,
    /// `group/version/resource` once discovery has resolved a name.
    pub resolved: Mutex<Option<String>>,
}

/// State one resource's streams share: the primary, and during a relist its
/// replacement. Entries are judged and sent under the tracker's lock, so the
/// two cannot reorder or double an object's changes.
#[derive(Default)]
pub(crate) struct Shared {
    /// One full state at a time (Tracker::claim_sync).
    pub tracker: Mutex<Tracker>,
    /// Pieces already reported as skipped (hashes), so that a relist or a
    /// re-sync does not report an unchanged bad object again. Bounded.
    pub reported: Mutex<std::collections::HashSet<u64>>,
}

/// One resource watched in several namespaces (one stream each) reaches the
/// consumer as one resource: its first Synced comes once every namespace's
/// stream has delivered its initial state, or failed for good.
pub(crate) struct SyncGate {
    waiting: Mutex<usize>,
}

impl SyncGate {
    pub(crate) fn new(members: usize) -> Arc<SyncGate> {
        Arc::new(SyncGate {
            waiting: Mutex::new(members),
        })
    }

    /// One member is done: whether the resource's Synced goes out now.
    fn arrive(&self) -> bool {
        let mut w = self.waiting.lock();
        *w = w.saturating_sub(1);
        *w == 0
    }
}

/// What a stream is for.
pub(crate) enum Role {
    /// The resource's stream.
    Primary,
    /// A relist: a fresh stream that syncs while the primary runs on, and
    /// says so on this channel once synced, to be swapped in.
    Replacement(crossbeam_channel::Sender<()>),
}

/// Everything a stream thread starts with.
pub(crate) struct StreamInit {
    pub spec: ResourceSpec,
    pub transport: Arc<Transport>,
    pub slot: Arc<AgentSlot>,
    pub settings: Arc<StreamSettings>,
    pub out: Out,
    pub stop: Stop,
    pub counters: Arc<Counters>,
    pub shared: Arc<Shared>,
    pub role: Role,
    /// Resumed from a checkpoint at this resourceVersion (its objects are
    /// already in the tracker).
    pub resume: Option<Rv>,
    /// The resource's other namespaces, when there are several.
    pub gate: Option<Arc<SyncGate>>,
}

pub(crate) struct Stream {
    pub(crate) spec: ResourceSpec,
    pub(crate) resource: Arc<Resource>,
    pub(crate) transport: Arc<Transport>,
    pub(crate) slot: Arc<AgentSlot>,
    pub(crate) settings: Arc<StreamSettings>,
    pub(crate) out: Out,
    pub(crate) stop: Stop,
    pub(crate) counters: Arc<Counters>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) role: Role,
    pub(crate) machine: Machine,
    /// The resume point: the last resourceVersion seen (event or bookmark).
    pub(crate) rv: Rv,
    /// The tracker's state is complete (the initial state was delivered).
    pub(crate) synced: bool,
    /// What the current request has done, for the machine.
    pub(crate) seen: Seen,
    /// The byte-level edits the decoder makes, and whether shaping needs a
    /// `Value` after them (a transform, an event filter).
    pub(crate) edits: Edits,
    pub(crate) needs_value: bool,
    /// Unique among a reader's streams; see `Tracker::owner`.
    pub(crate) id: u64,
    /// Another stream owns the live events now: this one ends.
    pub(crate) superseded: bool,
    gate: Option<Arc<SyncGate>>,
    rng: u64,
}

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

/// What a request asks for, which decides its `Accept` header.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asking {
    /// A watch: its events' objects.
    Objects,
    /// A LIST page.
    List,
    /// A plain JSON document.
    Document,
    /// A discovery document, with its own `Accept`.
    Discovery(&'static str),
}

/// Only metadata, as `PartialObjectMetadata` (client-go's metadata client asks
/// the same); plain JSON from a server that cannot (full objects, then).
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

impl Stream {
    pub(crate) fn new(init: StreamInit) -> Stream {
        let spec = init.spec;
        let resource = Arc::new(Resource {
            group: spec.group.clone(),
            version: spec.version.clone(),
            // Until discovery resolves it, the name as given.
            resource: match (&spec.lookup, spec.resource.is_empty()) {
                (Some(name), true) => name.clone(),
                _ => spec.resource.clone(),
            },
            kind: spec.kind.clone(),
        });
        let rng = seed(&spec.gvr());
        let shaping = &init.settings.shaping;
        let mut machine = Machine::new(
            spec.needs_discovery(),
            init.counters.list_fallback.load(Ordering::Relaxed),
            init.settings.backoff.reset_after,
        );
        machine.replacement = matches!(init.role, Role::Replacement(_));
        let resumed = init.resume.is_some();
        let replacement = matches!(init.role, Role::Replacement(_));
        if resumed {
            machine.resumed = true;
            if !spec.needs_discovery() {
                machine.phase = Phase::Watch;
            }
        }
        Stream {
            edits: shaping.edits(&resource),
            needs_value: shaping.needs_value(&resource),
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
            machine,
            rv: init.resume.unwrap_or_default(),
            synced: resumed,
            seen: Seen::default(),
            id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
            superseded: false,
            // A relist's sync is not the resource's first.
            gate: init.gate.filter(|_| !replacement),
            rng,
        }
    }

    pub(crate) fn is_replacement(&self) -> bool {
        matches!(self.role, Role::Replacement(_))
    }

    /// Whether this stream's Synced goes out: always, but for the first
    /// sync of a resource in several namespaces, which waits for the others
    /// (the last of them sends it).
    pub(crate) fn pass_gate(&mut self) -> bool {
        match self.gate.take() {
            Some(g) => g.arrive(),
            None => true,
        }
    }

    /// Runs until stopped or failed for good.
    pub(crate) fn run(mut self) {
        self.run_loop();
        self.shared.tracker.lock().release_sync(self.id);
    }

    fn run_loop(&mut self) {
        if !self.is_replacement() {
            // A (re)started primary delivers from now on; a replacement waits
            // for its snapshot (finish_sync).
            self.shared.tracker.lock().set_owner(self.id);
        }
        if self.machine.resumed && self.synced {
            // The restored state is complete as of the checkpoint.
            *self.counters.synced_at.lock() = Some(SystemTime::now());
            self.counters.synced.store(true, Ordering::Relaxed);
            self.publish_rv();
            let entry = Entry::marker(
                crate::Change::Synced,
                self.resource.clone(),
                self.rv.clone(),
            );
            if self.pass_gate() && !self.out.send(entry, &self.stop) {
                return;
            }
            log::info!(
                "{}: resumed at resourceVersion {}",
                self.spec.gvr(),
                self.rv
            );
        }
        loop {
            if self.stop.is_set() {
                return;
            }
            let started = Instant::now();
            self.seen = Seen::default();
            let end = match self.machine.phase {
                Phase::Discover => self.discover(),
                Phase::WatchList => self.watch_list(),
                Phase::List => self.list(),
                Phase::Watch => self.watch_live(),
            };
            if self.superseded {
                return;
            }
            self.seen.lasted = started.elapsed();
            let was_list_mode = self.machine.list_mode;
            let step = self.machine.next(end, self.seen);
            if self.machine.list_mode != was_list_mode {
                self.counters.list_fallback.store(true, Ordering::Relaxed);
            }
            if step.reload {
                self.transport.credentials.invalidate();
                self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            if step.resync {
                self.synced = false;
                self.counters.synced.store(false, Ordering::Relaxed);
                self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
            }
            let name = self.spec.gvr();
            match step.next {
                Next::Go => {
                    if let Some(why) = step.why {
                        log::info!("{name}: {why}");
                    }
                }
                Next::Pause {
                    failures,
                    at_least,
                    syncs,
                } => {
                    let delay = self.backoff(failures).max(at_least).max(self.budget(syncs));
                    let why = step.why.unwrap_or_default();
                    // The stats first: whoever sees the log line sees them too.
                    *self.counters.last_error.lock() = Some(why.clone());
                    log::warn!("{name}: {why}; retrying in {delay:?}");
                    self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
                    if self.stop.sleep(delay) {
                        return;
                    }
                }
                Next::End(Some(info)) => {
                    self.fail(info);
                    return;
                }
                Next::End(None) => {
                    if self.is_replacement() && !self.stop.is_set() {
                        // The running stream goes on; the next relist tries again.
                        log::warn!(
                            "{name}: the relist failed ({}); giving up on it",
                            step.why.unwrap_or_default()
                        );
                    }
                    return;
                }
            }
        }
    }

    /// Starts (or, after a failed attempt, retries) a full state. While
    /// another stream of this resource delivers one (a relist's
    /// replacement), a primary waits: once the replacement has synced it owns
    /// the resource and this stream ends; if it gives up, this one syncs. A
    /// replacement never waits for a primary.
    pub(crate) fn claim_sync(&mut self) -> bool {
        let fresh = self.machine.fresh_sync;
        let mut logged = false;
        loop {
            let owned = {
                let mut t = self.shared.tracker.lock();
                if t.claim_sync(self.id, fresh) {
                    self.machine.fresh_sync = false;
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
        if self.out.send(entry, &self.stop) && self.gate.is_some() && self.pass_gate() {
            // The last of the resource's namespaces to finish: the others are
            // synced, and the resource's Synced was theirs to wait for.
            let synced = Entry::marker(
                crate::Change::Synced,
                self.resource.clone(),
                self.rv.clone(),
            );
            self.out.send(synced, &self.stop);
        }
    }

    /// One GET; a non-200 answer is turned into how the request ended.
    /// `read_timeout`: a shorter idle limit for this request's reads.
    pub(crate) fn get(
        &mut self,
        path: &str,
        what: Asking,
        read_timeout: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, End> {
        let creds = &self.transport.credentials;
        let current = match creds.current(&[&self.stop.all, &self.stop.own]) {
            Ok(c) => c,
            Err(CredentialError::Stopped) => return Err(End::Stopped),
            // A credential that cannot come (a missing plugin, unusable output,
            // failing again and again) ends the resource with an Error entry.
            Err(CredentialError::Failed {
                message,
                fatal: true,
            }) => {
                return Err(End::Fatal(ErrorInfo {
                    code: 0,
                    reason: "Credentials".into(),
                    message,
                    ended: true,
                }))
            }
            Err(e) => return Err(End::Retry(format!("credentials: {e}"), None)),
        };
        let agent = match self.slot.get(&self.transport, &current) {
            None => return Err(End::Stopped),
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                return Err(End::Fatal(ErrorInfo {
                    code: 0,
                    reason: "TlsIdentity".into(),
                    message: e,
                    ended: true,
                }))
            }
        };
        let url = format!("{}{}", self.transport.base, path);
        let accept = match what {
            Asking::Objects if self.spec.metadata_only => METADATA,
            Asking::List if self.spec.metadata_only => METADATA_LIST,
            Asking::Discovery(accept) => accept,
            _ => "application/json",
        };
        let mut req = agent.get(&url).header("Accept", accept);
        if let Some(h) = &current.header {
            req = req.header("Authorization", h);
        }
        if let Some(t) = read_timeout {
            req = req.config().timeout_per_read(Some(t)).build();
        }
        log::debug!("GET {path}");
        let resp = match req.call() {
            Ok(r) => r,
            Err(_) if self.stop.is_set() => return Err(End::Stopped),
            Err(e) => return Err(End::Retry(format!("request failed: {e}"), None)),
        };
        let code = resp.status().as_u16();
        if code == 200 {
            // A proxy's error page, say: not an answer of the apiserver's.
            let content_type = resp
                .headers()
                .get("Content-Type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json");
            if !content_type.to_ascii_lowercase().contains("json") {
                let shown: String = content_type.chars().take(64).collect();
                return Err(End::Retry(
                    format!("the server answered 200 with Content-Type {shown:?}, not JSON"),
                    None,
                ));
            }
            self.seen.answered = true;
            return Ok(resp);
        }
        let hint = answer::retry_after(
            resp.headers()
                .get("Retry-After")
                .and_then(|v| v.to_str().ok()),
            SystemTime::now(),
        );
        let mut body = Vec::new();
        let _ = resp
            .into_body()
            .into_reader()
            .take(64 << 10)
            .read_to_end(&mut body);
        let status = decode::status(&body);
        Err(answer::classify(code, status, hint, creds.reloadable()))
    }

    /// Moves the resume point. Not progress by itself (see `Machine::next`):
    /// only delivered entries are.
    pub(crate) fn set_rv(&mut self, rv: Rv) {
        if rv != self.rv {
            self.rv = rv;
        }
    }

    /// Publishes the resume point to the stats (once a batch, not per event).
    pub(crate) fn publish_rv(&self) {
        let mut c = self.counters.resource_version.lock();
        if *c != self.rv {
            *c = self.rv.clone();
        }
    }

    /// A random watch timeout in 290..=600 s, so that streams do not all
    /// reconnect at once.
    pub(crate) fn timeout_secs(&mut self) -> u32 {
        290 + (self.random() % 311) as u32
    }

    /// Full jitter: uniform in 0..=min(max, initial * 2^(failures-1)).
    pub(crate) fn backoff(&mut self, failures: u32) -> Duration {
        let cap = self.settings.backoff.cap(failures);
        let ms = cap.as_millis().max(1) as u64;
        Duration::from_millis(self.random() % (ms + 1))
    }

    /// The request budget's wait before a full state that follows `syncs`
    /// others without healthy watching: equal jitter, uniform in
    /// cap/2..=cap of the backoff of `syncs` failures, so that the bound
    /// holds whatever the draw (README: "Requests").
    pub(crate) fn budget(&mut self, syncs: u32) -> Duration {
        if syncs == 0 {
            return Duration::ZERO;
        }
        let cap = self.settings.backoff.cap(syncs);
        let half = cap / 2;
        let ms = (cap - half).as_millis() as u64;
        half + Duration::from_millis(self.random() % (ms + 1))
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: plenty for jitter, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn seed(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    SystemTime::now().hash(&mut h);
    std::thread::current().id().hash(&mut h);
    h.finish() | 1
}
