//! One resource stream on one OS thread, in three parts and a loop: the
//! [`Course`] (`course`) decides and remembers — what to request next and
//! after how long, where to resume, whether this stream's full state is
//! complete; the [`Client`] (`client`) makes one GET at a time and reads
//! its body; the [`Sink`] (`sink`) judges and sends what comes, against the
//! resource's ledger (`crate::delivery`). `watch`, `list` and `discovery`
//! are functions over the three ([`Parts`]); `answer` turns what the server
//! said into how a request ended; `pacing` draws the waits. The [`Stream`]
//! keeps only the loop. Who owns the resource is its lifecycle's to say,
//! never the stream's.

pub(crate) mod course;
mod discovery;
mod list;
pub(crate) mod pacing;
mod sink;
mod watch;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use self::course::{Course, Next, Phase, Step};
use self::discovery::Found;
use self::pacing::Pacing;
use self::sink::Sink;
use crate::access::client::AgentSlot;
use crate::access::transport::Transport;
use crate::api::client::{Client, Response};
use crate::api::end::End;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::state::{ResourceState, SyncGate};
use crate::wire::request::{self, Asking};
use crate::wire::rv::Rv;
use crate::{Resource, ResourceSpec};

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
    pub out: Out,
    pub stop: Stop,
    pub state: Arc<ResourceState>,
    pub role: Role,
    /// Resumed from a checkpoint at this resourceVersion (its objects are
    /// already in the table).
    pub resume: Option<Rv>,
    /// The resource's other namespaces, when there are several.
    pub gate: Option<Arc<SyncGate>>,
}

/// One request's view of its stream: the three parts, the resource as the
/// server is asked for it, the pacing, and the stream's name for logs.
pub(crate) struct Parts<'a> {
    pub client: &'a mut Client,
    pub sink: &'a mut Sink,
    pub course: &'a mut Course,
    pub target: &'a ResourceSpec,
    pub pacing: &'a mut Pacing,
    pub name: &'a str,
}

impl Parts<'_> {
    /// One GET for `what`, with the `Accept` header the course and the
    /// target call for.
    pub(crate) fn get(
        &mut self,
        path: &str,
        what: Asking,
        read_timeout: Option<Duration>,
    ) -> Result<Response, End> {
        let protobuf = self.course.asks_protobuf(self.target.protobuf());
        let accept = request::accept(
            what,
            protobuf,
            self.target.metadata_only,
            self.sink.edits().drop_managed_fields,
        );
        let resp = self.client.get(path, &accept, protobuf, read_timeout)?;
        self.sink.heard();
        Ok(resp)
    }

    /// Claims the full state about to be asked for (see
    /// [`Sink::claim_sync`]); false when stopping or retired. A primary that
    /// waited for a relist's replacement, which then gave up, goes on from
    /// the replacement's budget count and waits it out first: the two
    /// streams' full states are paced as one stream's would be.
    pub(crate) fn claim_sync(&mut self) -> bool {
        let Some(handed) = self.sink.claim_sync(self.course, self.name) else {
            return false;
        };
        if handed > 0 {
            self.course.inherit_streak(handed);
            let wait = self.pacing.budget(self.course.streak());
            log::info!("{}: the relist gave up; re-syncing in {wait:?}", self.name);
            if self.sink.sleep(wait) {
                return false;
            }
        }
        true
    }
}

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

/// One resource stream: its parts and its loop.
pub(crate) struct Stream {
    /// The resource as the user named it.
    spec: ResourceSpec,
    /// The resource as the server is asked for it (discovery resolves a
    /// name or a kind into it).
    target: ResourceSpec,
    client: Client,
    sink: Sink,
    course: Course,
    pacing: Pacing,
    stop: Stop,
}

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
        let pacing = Pacing::new(&spec.gvr(), init.settings.backoff.clone());
        let mut course = Course::new(
            spec.needs_discovery(),
            init.state.counters.list_fallback.load(Ordering::Relaxed),
            init.settings.backoff.reset_after,
            init.settings.short_watch,
        );
        let (replacement, promote) = match init.role {
            Role::Primary => (false, None),
            Role::Replacement(done) => (true, Some(done)),
        };
        if replacement {
            course = course.replacement();
        }
        if let Some(rv) = init.resume {
            course = course.resumed_at(rv);
        }
        let id = NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed);
        // Known to the lifecycle before its thread runs: a relist started
        // right after cannot overtake it.
        init.state.ledger().join(id, replacement);
        let sink = Sink::new(
            id,
            init.state,
            init.gate,
            init.out,
            init.stop.clone(),
            init.settings.clone(),
            resource,
            spec.metadata_only,
            promote,
            spec.shard,
        );
        let client = Client::new(init.transport, init.slot, init.settings, init.stop.clone());
        Stream {
            target: spec.clone(),
            spec,
            client,
            sink,
            course,
            pacing,
            stop: init.stop,
        }
    }

    /// What this stream's entries carry.
    pub(crate) fn resource(&self) -> Arc<Resource> {
        self.sink.resource()
    }

    /// What stops this stream.
    pub(crate) fn stop(&self) -> &Stop {
        &self.stop
    }

    /// Runs until stopped, retired or failed for good.
    pub(crate) fn run(mut self) {
        if self.paced_start() {
            self.run_loop();
        }
        self.sink.leave();
    }

    /// A relist's replacement goes on from its primary's request budget
    /// count: when the primary's full states came close together, the
    /// replacement's first waits as the primary's next would. False when
    /// stopped meanwhile.
    fn paced_start(&mut self) -> bool {
        if !self.course.is_replacement() {
            return true;
        }
        self.course.inherit_streak(self.sink.handed_streak());
        let wait = self.pacing.budget(self.course.streak());
        if wait > Duration::ZERO {
            log::info!("{}: relisting in {wait:?}", self.target.gvr());
        }
        wait.is_zero() || !self.stop.sleep(wait)
    }

    fn run_loop(&mut self) {
        loop {
            if self.stop.is_set() {
                return;
            }
            self.relist_by_resync();
            let started = Instant::now();
            self.course.begin();
            let name = self.target.gvr();
            let mut parts = Parts {
                client: &mut self.client,
                sink: &mut self.sink,
                course: &mut self.course,
                target: &self.target,
                pacing: &mut self.pacing,
                name: &name,
            };
            let end = match parts.course.phase() {
                Phase::Discover => match discovery::discover(&mut parts) {
                    Ok(found) => {
                        self.resolved(found);
                        End::Discovered
                    }
                    Err(end) => end,
                },
                Phase::WatchList => watch::watch_list(&mut parts),
                Phase::List => list::list(&mut parts),
                Phase::Watch => watch::watch_live(&mut parts),
            };
            if self.course.is_retired() {
                return;
            }
            if self.relist_by_resync() {
                // The connection was ended for it: no failure of the server's.
                continue;
            }
            let was_list_mode = self.course.list_mode();
            let answered = self.client.take_answered();
            let step = self.course.finish(end, started.elapsed(), answered);
            self.sink.publish_streak(self.course.streak());
            if let Some(notice) = self.course.notice(answered, &step) {
                let name = self.target.gvr();
                let ns = self.target.namespace.clone();
                if !self
                    .sink
                    .stale(&mut self.course, notice, ns.as_deref(), &name)
                {
                    return;
                }
            }
            let counters = self.sink.counters();
            if self.course.list_mode() != was_list_mode {
                counters.list_fallback.store(true, Ordering::Relaxed);
            }
            if step.reload {
                self.client.reload_credentials();
                counters.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            if step.resync {
                counters.resyncs.fetch_add(1, Ordering::Relaxed);
                self.sink.lose_sync();
            }
            let name = self.target.gvr();
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
                        .pacing
                        .backoff(failures)
                        .max(at_least)
                        .max(self.pacing.budget(syncs));
                    let why = step.why.unwrap_or_default();
                    let counters = self.sink.counters();
                    // The stats first: whoever sees the log line sees them too.
                    *counters.last_error.lock() = Some(why.clone());
                    log::warn!("{name}: {why}; retrying in {delay:?}");
                    counters.reconnects.fetch_add(1, Ordering::Relaxed);
                    if self.stop.sleep(delay) {
                        return;
                    }
                }
                Next::End(Some(info)) => {
                    self.sink.fail(&self.course, info, &name);
                    return;
                }
                Next::End(None) => {
                    if self.course.is_replacement() && !self.stop.is_set() {
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

    /// Discovery found what the spec names: it is asked for from now on.
    fn resolved(&mut self, found: Found) {
        log::info!(
            "{}: served as {} ({})",
            self.target.gvr(),
            found.resource,
            if found.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
        let mut target = self.spec.clone();
        target.group = found.group;
        target.version = found.version;
        target.kind = found.kind;
        target.lookup = None;
        target.resource = found.resource;
        target.namespaced = found.namespaced;
        if !found.namespaced {
            target.namespace = None;
        }
        let resource = Resource {
            group: target.group.clone(),
            version: target.version.clone(),
            resource: target.resource.clone(),
            kind: target.kind.clone(),
        };
        self.sink.resolved(resource, target.gvr());
        self.target = target;
    }

    /// A relist the reader asked this stream for (opaque resourceVersions):
    /// the next request is a new full state. Whether one was asked for.
    fn relist_by_resync(&mut self) -> bool {
        if !self.sink.take_resync() {
            return false;
        }
        let name = self.target.gvr();
        log::info!("{name}: relisting by a re-sync of its own (opaque resourceVersions)");
        self.course.force_resync();
        let step = Step {
            next: Next::Go,
            resync: true,
            reload: false,
            why: Some("a relist by a new full state (opaque resourceVersions)".into()),
        };
        if let Some(notice) = self.course.notice(true, &step) {
            let ns = self.target.namespace.clone();
            self.sink
                .stale(&mut self.course, notice, ns.as_deref(), &name);
        }
        true
    }
}
