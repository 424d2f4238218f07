//! One resource stream on one OS thread: it asks the machine (`machine`)
//! what to request, makes the request (`discovery`, `watch`, `list`, with
//! `answer` reading what the server said), hands what comes to the sink
//! (`sink`: batches judged against the resource's table and sent), and asks
//! again. Who owns the resource is its lifecycle's to say
//! (`crate::delivery::lifecycle`), never the stream's.

pub(crate) mod answer;
mod backoff;
mod body;
pub(crate) mod discovery;
mod list;
pub(crate) mod machine;
pub(crate) mod sink;
mod watch;

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

pub(crate) use self::backoff::Jitter;
use crate::access::client::{AgentSlot, Request, Response};
use crate::access::credentials::CredentialError;
use crate::access::transport::Transport;
use crate::config::Backoff;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::lifecycle::{Claim, Gate, Lifecycle};
use crate::delivery::table::Tracker;
use crate::objects::scrub::Edits;
use crate::stream::machine::{End, Machine, Next, Phase, Seen};
use crate::wire::decode;
use crate::wire::request;
use crate::wire::rv::Rv;
use crate::{Entry, ErrorInfo, Reason, Resource, ResourceSpec};

/// Settings a stream needs, shared by all streams of a reader.
pub(crate) struct StreamSettings {
    pub page_size: u32,
    pub max_frame_bytes: usize,
    pub backoff: Backoff,
    pub shaping: crate::Shaping,
    pub idle_timeout: Duration,
    pub initial_events_timeout: Duration,
    pub gzip: bool,
    pub short_watch: Duration,
}

/// Live counters of one stream, read by [`crate::Reader::stats`]. Whether
/// the resource is synced and where it resumes are its [`Lifecycle`]'s.
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
    pub list_fallback: AtomicBool,
    pub failed: AtomicBool,
    /// When the last full state completed.
    pub synced_at: Mutex<Option<SystemTime>>,
    /// Why the stream last had to retry or give up; cleared by a completed sync.
    pub last_error: Mutex<Option<String>>,
    /// `group/version/resource` once discovery has resolved a name.
    pub resolved: Mutex<Option<String>>,
}

/// One resource's state: its lifecycle and the per-object table, under one
/// lock so that a verdict and the ownership it depends on cannot drift
/// apart. Never held across a send, a join or a log call.
#[derive(Default)]
pub(crate) struct Book {
    pub life: Lifecycle,
    pub table: Tracker,
}

/// State one resource's streams share: the primary, and during a relist its
/// replacement.
#[derive(Default)]
pub(crate) struct Shared {
    pub book: Mutex<Book>,
    /// The turn to deliver: a stream holds it while it judges and sends a
    /// batch, so that two streams of one resource cannot reorder or double
    /// an object's changes. The one lock held across a send: only stream
    /// threads take it (never a caller's thread, so `checkpoint()` or
    /// `stats()` on the consumer's thread cannot wait for a full channel),
    /// and the send it waits for honours stop.
    pub turn: Mutex<()>,
    /// Pieces already reported as skipped (hashes), so that a relist or a
    /// re-sync does not report an unchanged bad object again. Bounded.
    pub reported: Mutex<std::collections::HashSet<u64>>,
    /// This resource's key in its [`SyncGate`], when it has one.
    pub member: u64,
}

impl Shared {
    /// A resource's shared state, resumed at `resume` when given.
    pub(crate) fn new(member: u64, resume: Option<Rv>) -> Shared {
        let mut book = Book::default();
        if let Some(rv) = resume {
            book.life = Lifecycle::resumed(rv);
        }
        Shared {
            book: Mutex::new(book),
            member,
            ..Shared::default()
        }
    }
}

/// One resource watched in several namespaces (one stream each) reaches the
/// consumer as one resource: see [`Gate`].
pub(crate) struct SyncGate {
    gate: Mutex<Gate>,
}

impl SyncGate {
    pub(crate) fn new(members: &[u64]) -> Arc<SyncGate> {
        let mut gate = Gate::default();
        for m in members {
            gate.join(*m);
        }
        Arc::new(SyncGate {
            gate: Mutex::new(gate),
        })
    }

    pub(crate) fn join(&self, member: u64) {
        self.gate.lock().join(member);
    }

    fn begin(&self, member: u64) {
        self.gate.lock().begin(member);
    }

    fn finish(&self, member: u64) -> bool {
        self.gate.lock().finish(member)
    }

    /// A member is gone; true when the resource's Synced, held back for it,
    /// is now to be sent (by the caller).
    pub(crate) fn leave(&self, member: u64) -> bool {
        self.gate.lock().leave(member)
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
    /// Unique among a reader's streams; its name in the [`Lifecycle`].
    pub(crate) id: u64,
    /// The lifecycle retired this stream (another owns the resource): it ends.
    pub(crate) superseded: bool,
    /// Resumed from a checkpoint and not caught up yet: the resource's
    /// Synced waits until the watch has replayed what changed while stopped.
    pub(crate) catch_up: Option<CatchUp>,
    gate: Option<Arc<SyncGate>>,
    /// Jitter for the backoff, the request budget and watch timeouts.
    pub(crate) jitter: Jitter,
    /// The server sent a built-in object with a field tattler's schema does
    /// not have (a newer server): this stream asks for JSON from then on.
    pub(crate) schema_missed: bool,
}

/// Catching up after a resume (`watch`): the server's resourceVersion when
/// the resume started, once asked for.
#[derive(Debug, Default)]
pub(crate) struct CatchUp {
    pub target: Option<Rv>,
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
/// The same, protobuf first: it costs the apiserver about a quarter of the
/// CPU (see bench/README.md); tattler turns it into the same JSON. The
/// Content-Type says which one came.
const METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// Built-in objects, protobuf first (a third to a half of the apiserver's
/// CPU of JSON); a server without it for the kind answers JSON.
const OBJECTS_PROTOBUF: &str = "application/vnd.kubernetes.protobuf,application/json";

impl Stream {
    pub(crate) fn new(init: StreamInit) -> Stream {
        let spec = init.spec;
        let resource = Arc::new(Resource {
            group: spec.group.clone(),
            version: spec.version.clone(),
            // Until discovery resolves it, the name as given.
            resource: spec.shown_name(),
            kind: spec.kind.clone(),
        });
        let jitter = Jitter::new(&spec.gvr(), init.settings.backoff.clone());
        let shaping = &init.settings.shaping;
        let mut machine = Machine::new(
            spec.needs_discovery(),
            init.counters.list_fallback.load(Ordering::Relaxed),
            init.settings.backoff.reset_after,
            init.settings.short_watch,
        );
        machine.replacement = matches!(init.role, Role::Replacement(_));
        let resumed = init.resume.is_some();
        if resumed {
            machine.resumed = true;
            if !spec.needs_discovery() {
                machine.phase = Phase::Watch;
            }
        }
        let id = NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed);
        // Known to the lifecycle before its thread runs: a relist started
        // right after cannot overtake it.
        init.shared
            .book
            .lock()
            .life
            .join(id, matches!(init.role, Role::Replacement(_)));
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
            id,
            superseded: false,
            catch_up: resumed.then(CatchUp::default),
            gate: init.gate,
            jitter,
            schema_missed: false,
        }
    }

    /// Whether this stream's requests ask for protobuf now.
    pub(crate) fn asks_protobuf(&self) -> bool {
        self.spec.protobuf() && !self.schema_missed
    }

    /// A protobuf piece tattler could not write as JSON: when the schema did
    /// not know it (a full object from a newer server), the stream turns to
    /// JSON and resumes where it was, so that no object is lost; `None`
    /// leaves the piece to be skipped as invalid.
    pub(crate) fn schema_miss(&mut self, message: &str) -> Option<End> {
        if self.spec.metadata_only || !message.contains(crate::wire::proto_json::NOT_IN_SCHEMA) {
            return None;
        }
        self.schema_missed = true;
        Some(End::Retry(
            format!("{message}: asking for JSON from now on"),
            None,
        ))
    }

    pub(crate) fn is_replacement(&self) -> bool {
        matches!(self.role, Role::Replacement(_))
    }

    /// Whether the resource's Synced goes out now that this stream has
    /// completed a full state: always, unless the resource is watched in
    /// several namespaces and another of them is still syncing (the last
    /// to finish sends it).
    pub(crate) fn pass_gate(&self) -> bool {
        self.gate
            .as_ref()
            .is_none_or(|g| g.finish(self.shared.member))
    }

    /// Runs until stopped, retired or failed for good.
    pub(crate) fn run(mut self) {
        self.run_loop();
        let mut book = self.shared.book.lock();
        if book.life.syncing(self.id) {
            book.table.abandon_sync();
        }
        book.life.release(self.id);
    }

    fn run_loop(&mut self) {
        loop {
            if self.stop.is_set() {
                return;
            }
            self.relist_by_resync();
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
            if self.relist_by_resync() {
                // The connection was ended for it: no failure of the server's.
                continue;
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
                self.catch_up = None;
                self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
                let mut book = self.shared.book.lock();
                let was = book.life.synced();
                book.life.lose_sync(self.id);
                if was && !book.life.synced() {
                    // Its namespace's state is incomplete from now on.
                    if let Some(g) = &self.gate {
                        g.begin(self.shared.member);
                    }
                }
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
                    let delay = self
                        .jitter
                        .backoff(failures)
                        .max(at_least)
                        .max(self.jitter.budget(syncs));
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

    /// A relist the reader asked this stream for (opaque resourceVersions):
    /// the next request is a new full state. Whether one was asked for.
    fn relist_by_resync(&mut self) -> bool {
        if !self.shared.book.lock().life.take_resync(self.id) {
            return false;
        }
        log::info!(
            "{}: relisting by a re-sync of its own (opaque resourceVersions)",
            self.spec.gvr()
        );
        self.machine.force_resync();
        self.synced = false;
        self.catch_up = None;
        true
    }

    /// Starts (or, after a failed attempt, retries) a full state, as the
    /// [`Lifecycle`] allows: while a relist's replacement delivers one, a
    /// primary waits (once the replacement has synced, this stream is retired
    /// and ends; if it gives up, this one syncs); a replacement never waits
    /// for a primary.
    pub(crate) fn claim_sync(&mut self) -> bool {
        let mut logged = false;
        loop {
            let claim = {
                let mut book = self.shared.book.lock();
                let was_synced = book.life.synced();
                let claim = book.life.claim_sync(self.id);
                if let Claim::Granted { continuing } = claim {
                    let fresh = self.machine.fresh_sync || !continuing || !book.table.in_sync();
                    let overlapped = !book.life.live(self.id);
                    book.table.begin_sync(fresh, overlapped);
                    self.machine.fresh_sync = false;
                }
                if was_synced && !book.life.synced() {
                    // The primary re-syncs: its namespace's state is incomplete.
                    if let Some(g) = &self.gate {
                        g.begin(self.shared.member);
                    }
                }
                claim
            };
            match claim {
                Claim::Granted { .. } => return true,
                Claim::Retire => {
                    log::info!(
                        "{}: another stream is syncing this resource; this one ends",
                        self.spec.gvr()
                    );
                    self.superseded = true;
                    return false;
                }
                Claim::Wait if !logged => {
                    log::info!(
                        "{}: a relist is syncing this resource; waiting for it",
                        self.spec.gvr()
                    );
                    logged = true;
                }
                Claim::Wait => {}
            }
            // The relist ends within its own bounds (it gives up after a few
            // failures); a stop wakes this wait at once.
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
        let owed = self
            .gate
            .as_ref()
            .is_some_and(|g| g.leave(self.shared.member));
        if self.out.send(entry, &self.stop) && owed {
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
    ) -> Result<Response, End> {
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
                return Err(End::Fatal(ErrorInfo::ours(
                    Reason::Credentials,
                    0,
                    message,
                    true,
                )))
            }
            Err(e) => return Err(End::Retry(format!("credentials: {e}"), None)),
        };
        let client = match self.slot.client(&self.transport, &current) {
            None => return Err(End::Stopped),
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                return Err(End::Fatal(ErrorInfo::ours(Reason::TlsIdentity, 0, e, true)))
            }
        };
        let drop = self.edits.drop_managed_fields;
        let accept = match what {
            Asking::Objects if self.asks_protobuf() && self.spec.metadata_only => {
                request::accept(METADATA_PROTOBUF, drop)
            }
            Asking::List if self.asks_protobuf() && self.spec.metadata_only => {
                request::accept(METADATA_LIST_PROTOBUF, drop)
            }
            Asking::Objects | Asking::List if self.asks_protobuf() => {
                request::accept(OBJECTS_PROTOBUF, drop)
            }
            Asking::Objects if self.spec.metadata_only => request::accept(METADATA, drop),
            Asking::List if self.spec.metadata_only => request::accept(METADATA_LIST, drop),
            Asking::Objects | Asking::List => request::accept("application/json", drop),
            Asking::Discovery(accept) => accept.to_string(),
            Asking::Document => "application/json".to_string(),
        };
        log::debug!("GET {path}");
        let req = Request {
            path,
            accept: &accept,
            read_timeout,
        };
        let resp = match client.get(&req) {
            Ok(r) => r,
            Err(_) if self.stop.is_set() => return Err(End::Stopped),
            Err(e) => return Err(End::Retry(format!("request failed: {e}"), None)),
        };
        let code = resp.status();
        if code == 200 {
            // A proxy's error page, say: not an answer of the apiserver's.
            let content_type = resp.header("Content-Type").unwrap_or("application/json");
            let asked_protobuf =
                self.asks_protobuf() && matches!(what, Asking::Objects | Asking::List);
            let readable = content_type.to_ascii_lowercase().contains("json")
                || (asked_protobuf && body::is_protobuf(&resp));
            if !readable {
                let shown: String = content_type.chars().take(64).collect();
                return Err(End::Retry(
                    format!("the server answered 200 with Content-Type {shown:?}, not JSON"),
                    None,
                ));
            }
            self.seen.answered = true;
            return Ok(resp);
        }
        let hint = answer::retry_after(resp.header("Retry-After"), SystemTime::now());
        let mut body = Vec::new();
        let protobuf = body::is_protobuf(&resp);
        let _ = resp.into_body().take(64 << 10).read_to_end(&mut body);
        // Asked protobuf first, the server sends its Status that way too.
        if protobuf {
            body = crate::wire::meta_json::status_doc(&body).unwrap_or_default();
        }
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

    /// Tells the lifecycle where this stream is (once a batch, not per
    /// event): the resource's resume point when it is the primary.
    pub(crate) fn publish_rv(&self) {
        self.shared.book.lock().life.advance(self.id, &self.rv);
    }
}
