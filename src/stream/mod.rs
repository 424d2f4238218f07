//! One resource stream on one OS thread, in three parts and a loop: the
//! [`Course`] (`course`) decides and remembers — what to request next and
//! after how long, where to resume, whether this stream's full state is
//! complete; the apiserver [`Client`] (`crate::api`) makes one GET at a
//! time and reads its body; the [`Sink`] (`sink`) judges and sends what
//! comes, against the resource's ledger, through the stream's [`Place`]
//! in the resource's lifecycle (`place`, `crate::delivery`). `watch`,
//! `list` and `discovery` are functions over [`Parts`] (`parts`), the one
//! door into the course: they read it, and what happens is applied there as
//! facts. `pacing` draws the waits. The [`Stream`] keeps only the loop. Who
//! owns the resource is its lifecycle's to say, never the stream's.

pub(crate) mod course;
mod decoded;
mod discovery;
mod list;
pub(crate) mod pacing;
mod parts;
mod place;
mod sink;
mod watch;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use self::course::vocabulary::{Next, Phase};
use self::course::Course;
use self::discovery::Found;
use self::pacing::Pacing;
use self::parts::Parts;
use self::place::Place;
use self::sink::Sink;
use crate::access::client::AgentSlot;
use crate::access::transport::Transport;
use crate::api::client::Client;
use crate::api::end::End;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::state::{ResourceState, SyncGate};
use crate::entry::Resource;
use crate::resource::ResourceSpec;
use crate::resource_version::Rv;

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

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

/// How often a stream backing off from an unreachable server looks whether
/// another stream of its reader got through.
const REACH_POLL: Duration = Duration::from_millis(100);
/// The most a stream waits once another stream of its reader got through.
const BACK_JITTER: Duration = Duration::from_millis(250);

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
        let promote = match init.role {
            Role::Primary => None,
            Role::Replacement(done) => {
                course = course.replacement();
                Some(done)
            }
        };
        if let Some(rv) = init.resume {
            course = course.resumed_at(rv);
        }
        let id = NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed);
        let place = Place::join(id, init.state, init.gate, promote);
        let sink = Sink::new(
            place,
            init.out,
            init.stop.clone(),
            init.settings.clone(),
            resource,
            spec.metadata_only,
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
            while self.step() {}
        }
        self.sink.place().leave();
    }

    /// One request's parts.
    fn parts<'a>(&'a mut self, name: &'a str) -> Parts<'a> {
        Parts::new(
            &mut self.client,
            &mut self.sink,
            &mut self.course,
            &self.target,
            &mut self.pacing,
            name,
        )
    }

    /// A relist's replacement goes on from its primary's request budget
    /// count: when the primary's full states came close together, the
    /// replacement's first waits as the primary's next would. False when
    /// stopped meanwhile.
    fn paced_start(&mut self) -> bool {
        if !self.course.is_replacement() {
            return true;
        }
        let handed = self.sink.place().handed_streak();
        let name = self.target.gvr();
        let wait = self.parts(&name).inherit_streak(handed);
        if wait > Duration::ZERO {
            log::info!("{name}: relisting in {wait:?}");
        }
        wait.is_zero() || !self.stop.sleep(wait)
    }

    /// One request and what follows it; false when the stream ends.
    fn step(&mut self) -> bool {
        if self.stop.is_set() {
            return false;
        }
        let started = Instant::now();
        let mark = self.client.reach_mark();
        let name = self.target.gvr();
        let end = if self.relist_asked(&name) {
            End::Relist
        } else {
            let mut parts = self.parts(&name);
            parts.begin();
            let end = match parts.course().phase() {
                Phase::Discover => match discovery::discover(&mut parts) {
                    Ok(found) => Err(found),
                    Err(end) => Ok(end),
                },
                Phase::WatchList => Ok(watch::watch_list(&mut parts)),
                Phase::List => Ok(list::list(&mut parts)),
                Phase::Watch => Ok(watch::watch_live(&mut parts)),
            };
            match end {
                Ok(end) => end,
                Err(found) => {
                    self.resolved(found);
                    End::Discovered
                }
            }
        };
        if self.course.is_retired() {
            return false;
        }
        // A relist asked for while the request ran ended its connection: no
        // failure of the server's.
        let end = if end != End::Relist && self.relist_asked(&name) {
            End::Relist
        } else {
            end
        };
        // A relist is no re-sync of the server's making: neither counted nor
        // logged as one, and the resource's state stays as it is until the
        // full state is claimed.
        let relist = end == End::Relist;
        let was_list_mode = self.course.list_mode();
        let answered = self.client.take_answered();
        let mut parts = self.parts(&name);
        let mut step = parts.finish(end, started.elapsed(), answered);
        if !parts.tell(&mut step) {
            return false;
        }
        let counters = self.sink.counters();
        if self.course.list_mode() != was_list_mode {
            counters.list_fallback.store(true, Ordering::Relaxed);
        }
        if step.reload {
            self.client.reload_credentials();
            counters.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        if step.resync && !relist {
            counters.resyncs.fetch_add(1, Ordering::Relaxed);
            self.sink.place().lose_sync();
        }
        match step.next {
            Next::Go => {
                if let Some(why) = step.why.filter(|_| !relist) {
                    log::info!("{name}: {why}");
                }
                true
            }
            Next::Pause {
                failures,
                at_least,
                syncs,
            } => {
                let backoff = if step.unreachable {
                    self.pacing.unreachable(failures)
                } else {
                    self.pacing.backoff(failures)
                };
                let delay = backoff.max(at_least).max(self.pacing.budget(syncs));
                let why = step.why.unwrap_or_default();
                let counters = self.sink.counters();
                // The stats first: whoever sees the log line sees them too.
                *counters.last_error.lock() = Some(why.clone());
                log::warn!("{name}: {why}; retrying in {delay:?}");
                counters.reconnects.fetch_add(1, Ordering::Relaxed);
                if step.unreachable {
                    self.pause_unreachable(delay, mark)
                } else {
                    !self.stop.sleep(delay)
                }
            }
            Next::End(Some(info)) => {
                self.parts(&name).fail(info);
                false
            }
            Next::End(None) => {
                if self.course.is_replacement() && !self.stop.is_set() {
                    // The running stream goes on; the next relist tries again.
                    log::warn!(
                        "{name}: the relist failed ({}); giving up on it",
                        step.why.unwrap_or_default()
                    );
                }
                false
            }
        }
    }

    /// Whether the reader asked this stream for a relist by a new full
    /// state of its own (opaque resourceVersions), said once.
    fn relist_asked(&self, name: &str) -> bool {
        let asked = self.sink.place().take_resync();
        if asked {
            log::info!("{name}: relisting by a re-sync of its own (opaque resourceVersions)");
        }
        asked
    }

    /// The pause after a request the server did not answer (false when
    /// stopped): `delay`, cut short once another request of the reader was
    /// answered after `mark` (the server is back; a jitter of up to
    /// `BACK_JITTER` spreads the streams it wakes).
    fn pause_unreachable(&mut self, delay: Duration, mark: u64) -> bool {
        let end = Instant::now() + delay;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            if self.client.answered_since(mark) {
                let jitter = self.pacing.jitter(BACK_JITTER);
                return !self.stop.sleep(jitter.min(left));
            }
            if self.stop.sleep(left.min(REACH_POLL)) {
                return false;
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
}
