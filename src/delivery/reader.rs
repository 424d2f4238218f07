//! The reader: owns the stream threads, fans their entries into one bounded
//! channel, and stops them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver, Sender, TryRecvError};
use parking_lot::Mutex;

use crate::delivery::channel::{Budget, Out, Stop};
use crate::delivery::threads::{self, on_tattler_thread};
use crate::stream::{Counters, Role, Shared, Stream, StreamInit, StreamSettings, SyncGate};
use crate::transport::{AgentSlot, Transport};
use crate::{Closed, Config, Entry, Error, NextTimeoutError, ResourceSpec, TryNextError};

/// Streams the chosen resources: their full state, then every change.
///
/// One OS thread per resource; entries from all of them come out of one
/// bounded channel, in order per resource. A consumer that falls behind slows
/// the streams down; no entry is ever dropped.
///
/// `Reader` is `Send + Sync`: one thread may block in [`next`](Self::next)
/// while another calls [`stop`](Self::stop).
pub struct Reader {
    info: ReaderInfo,
    rx: Receiver<Entry>,
    budget: Arc<Budget>,
    /// Disconnects when the reader stops.
    closing: Receiver<()>,
    /// [`wake`](Self::wake) leaves a token here; a waiting `next_timeout` takes it.
    wake_tx: Sender<()>,
    wake_rx: Receiver<()>,
    shared: Arc<ReaderShared>,
    /// The relist timer, when `relist_interval` is set.
    timer: Mutex<Option<JoinHandle<()>>>,
    /// The discovery thread, once there are wildcards (`"*"`).
    explorer: Mutex<Option<JoinHandle<()>>>,
}

/// What the reader, its relist timer and its calls share.
struct ReaderShared {
    /// Held only for short sections that neither wait, join nor log, so that
    /// `stats()` and `stop()` never wait long, whatever else is going on.
    inner: Mutex<Inner>,
    /// Serialises the calls that stop and start threads (`set_resources`, a
    /// relist's swap, the discovery thread's changes). Held across joins; no
    /// other call needs it.
    control: Mutex<()>,
    /// How often the discovery thread looks for the wildcards' resources.
    discovery_interval: Duration,
}

struct Inner {
    closing_tx: Option<Sender<()>>,
    streams: Vec<StreamHandle>,
    /// What a new stream needs; `None` once stopped.
    start: Option<Starter>,
    /// `"*"`-like specs: their resources are found by the discovery thread.
    wildcards: Vec<ResourceSpec>,
    /// Tells the discovery thread to look now (the wildcards changed).
    look_now: Option<Sender<()>>,
    /// The discovery thread's HTTP agent, shut down by stop.
    probe_slot: Option<Arc<AgentSlot>>,
    /// Short-lived threads (an owed Synced's send), joined by close.
    helpers: Vec<JoinHandle<()>>,
}

/// Which streams a change of the watch set is about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The ones the caller named.
    Named,
    /// The ones discovery found for the wildcards.
    Found,
}

/// Everything needed to start one more stream thread.
struct Starter {
    transport: Arc<Transport>,
    settings: Arc<StreamSettings>,
    out: Out,
    closing: Receiver<()>,
}

impl Starter {
    /// Where the reader's own threads report a panic.
    fn report(&self) -> threads::Report {
        threads::Report {
            resource: threads::reader_resource(),
            out: self.out.clone(),
            stop: Stop {
                all: self.closing.clone(),
                own: crossbeam_channel::never(),
            },
        }
    }

    /// Starts a stream thread for `spec` over the resource's shared state.
    fn spawn(&self, h: &StreamHandle, role: Role) -> Result<Thread, Error> {
        self.spawn_from(h, role, None)
    }

    fn spawn_from(
        &self,
        h: &StreamHandle,
        role: Role,
        resume: Option<crate::wire::rv::Rv>,
    ) -> Result<Thread, Error> {
        let slot = Arc::new(AgentSlot::default());
        let (stop_tx, own) = bounded(0);
        let stream = Stream::new(StreamInit {
            spec: h.spec.clone(),
            transport: self.transport.clone(),
            slot: slot.clone(),
            settings: self.settings.clone(),
            out: self.out.clone(),
            stop: Stop {
                all: self.closing.clone(),
                own,
            },
            counters: h.counters.clone(),
            shared: h.shared.clone(),
            role,
            resume,
            gate: h.gate.clone(),
        });
        let thread = spawn(&h.spec, stream).map_err(Error::Spawn)?;
        Ok(Thread {
            slot,
            stop_tx: Some(stop_tx),
            join: Some(thread),
        })
    }

    /// A stream object the discovery thread asks discovery with (it is
    /// never run), the slot that stop shuts down, and its own stop's sender
    /// (held by the thread).
    fn probe(&self) -> (Stream, Arc<AgentSlot>, Sender<()>) {
        let (own_tx, own) = bounded::<()>(0);
        let slot = Arc::new(AgentSlot::default());
        let stream = Stream::new(StreamInit {
            spec: ResourceSpec::new("", "v1", "", "", false),
            transport: self.transport.clone(),
            slot: slot.clone(),
            settings: self.settings.clone(),
            out: self.out.clone(),
            stop: Stop {
                all: self.closing.clone(),
                own,
            },
            counters: Arc::new(Counters::default()),
            shared: Arc::new(Shared::default()),
            role: Role::Primary,
            resume: None,
            gate: None,
        });
        (stream, slot, own_tx)
    }

    /// Starts a resource, from its part of a checkpoint when there is one.
    fn start_from(
        &self,
        spec: &ResourceSpec,
        resume: Option<&crate::checkpoint::ResourceState>,
        gate: Option<(Arc<SyncGate>, u64)>,
    ) -> Result<StreamHandle, Error> {
        // A part taken while the resource was not synced has no resume
        // point: the new reader re-syncs against its objects.
        let resume_at = resume
            .map(|part| part.resource_version.clone())
            .filter(|rv| !rv.as_str().is_empty());
        let member = gate.as_ref().map_or(0, |(_, m)| *m);
        let mut h = StreamHandle {
            spec: spec.clone(),
            found: false,
            gate: gate.map(|(g, _)| g),
            shared: Arc::new(Shared::new(member, resume_at.clone())),
            counters: Arc::new(Counters::default()),
            running: Thread::default(),
            pending: None,
        };
        if let Some(part) = resume {
            let mut book = h.shared.book.lock();
            book.table.import(&part.objects, &part.resource_version);
            h.counters
                .objects
                .store(book.table.len() as u64, Ordering::Relaxed);
        }
        h.running = self.spawn_from(&h, Role::Primary, resume_at)?;
        Ok(h)
    }
}

/// One resource: its shared state, its running stream thread and, during a
/// relist, the replacement being synced.
struct StreamHandle {
    spec: ResourceSpec,
    /// Found by discovery for a wildcard (rather than named by the caller).
    found: bool,
    /// Shared with the resource's streams in other namespaces.
    gate: Option<Arc<SyncGate>>,
    shared: Arc<Shared>,
    counters: Arc<Counters>,
    running: Thread,
    pending: Option<Thread>,
}

/// A stream thread and what stops it.
#[derive(Default)]
struct Thread {
    slot: Arc<AgentSlot>,
    stop_tx: Option<Sender<()>>,
    join: Option<JoinHandle<()>>,
}

impl Thread {
    /// Signals the thread to stop and unblocks its socket; does not wait.
    fn signal(&mut self) {
        self.stop_tx = None;
        self.slot.shutdown();
    }

    /// Waits for the thread to end; a no-op on the thread itself (a close
    /// from the log callback), which ends on its own once the callback returns.
    fn join(&mut self) {
        if let Some(t) = self.join.take() {
            if t.thread().id() != std::thread::current().id() {
                // Panics are caught inside the thread; a join error cannot carry one.
                let _ = t.join();
            }
        }
    }

    fn id(&self) -> Option<std::thread::ThreadId> {
        self.join.as_ref().map(|j| j.thread().id())
    }
}

impl StreamHandle {
    fn snapshot(&self) -> StreamStats {
        let c = &self.counters;
        let (synced, resource_version) = {
            let book = self.shared.book.lock();
            (book.life.synced(), book.life.resource_version().clone())
        };
        StreamStats {
            resource: c.resolved.lock().clone().unwrap_or_else(|| self.spec.gvr()),
            events: c.events.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            reconnects: c.reconnects.load(Ordering::Relaxed),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            relists: c.relists.load(Ordering::Relaxed),
            stale_drops: c.stale_drops.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            resource_version: resource_version.as_str().to_string(),
            objects: c.objects.load(Ordering::Relaxed),
            synced,
            synced_at: *c.synced_at.lock(),
            list_fallback: c.list_fallback.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            last_error: c.last_error.lock().clone(),
        }
    }

    fn signal(&mut self) {
        self.running.signal();
        if let Some(p) = &mut self.pending {
            p.signal();
        }
    }

    fn join(&mut self) {
        self.running.join();
        if let Some(p) = &mut self.pending {
            p.join();
        }
    }
}

/// A snapshot of one resource stream's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamStats {
    /// The resource, as `group/version/resource` (`v1/pods` for core).
    pub resource: String,
    /// Watch events and LIST items received.
    pub events: u64,
    /// Body bytes received (after gzip decoding).
    pub bytes: u64,
    /// Connections re-made after a failure.
    pub reconnects: u64,
    /// Full re-syncs (410 Expired, resourceVersion too large, watches that
    /// end at once).
    pub resyncs: u64,
    /// Relist swaps completed (see `relist_interval`).
    pub relists: u64,
    /// Events dropped as older than what was already delivered.
    pub stale_drops: u64,
    /// Objects and frames skipped because they could not be delivered (each
    /// reported by an Error entry).
    pub skipped: u64,
    /// The last resourceVersion seen, as the server sent it.
    pub resource_version: String,
    /// Objects currently tracked.
    pub objects: u64,
    /// The initial state (or the latest re-sync) is complete.
    pub synced: bool,
    /// When the last full state completed.
    pub synced_at: Option<std::time::SystemTime>,
    /// The server cannot do watch-list (it refused it, or never ended its
    /// initial events); this resource uses paged LIST + WATCH.
    pub list_fallback: bool,
    /// The stream failed for good and sent an Error entry.
    pub failed: bool,
    /// Why the stream last retried or gave up (a refused connection, a
    /// failing exec plugin, a 503…); `None` once a sync completes.
    pub last_error: Option<String>,
}

/// Where a reader streams from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReaderInfo {
    /// The server's URL.
    pub server: String,
    /// Where the configuration came from: `explicit`, `kubeconfig …, context …`,
    /// `in-cluster service account …`.
    pub source: String,
}

/// How many times [`Reader::next`] looks again (a CPU pause apart) before parking.
const SPINS: u32 = 64;

impl Reader {
    /// Checks the configuration and starts one thread per resource.
    ///
    /// Fails only on what can be judged without the network (a bad URL, an
    /// unreadable CA bundle, no resources). Server-side failures arrive later
    /// as retries, and as Error entries when retrying cannot help.
    pub fn open(config: Config) -> Result<Reader, Error> {
        let server = config.validate()?;
        let transport = Arc::new(Transport::new(&config, &server)?);
        log::info!(
            "streaming {} resources from {} ({})",
            config.resources.len(),
            server.base,
            config.source
        );
        let settings = Arc::new(StreamSettings {
            page_size: config.page_size,
            max_frame_bytes: config.max_frame_bytes,
            backoff: config.backoff.clone(),
            shaping: config.shaping.clone(),
            idle_timeout: config.idle_timeout,
            initial_events_timeout: config.initial_events_timeout,
            gzip: config.gzip,
        });
        let (tx, rx) = bounded(config.channel_capacity);
        let budget = Arc::new(Budget::new(config.max_buffered_bytes));
        let (closing_tx, closing) = bounded(0);
        let (wake_tx, wake_rx) = bounded(1);
        let start = Starter {
            transport,
            settings,
            out: Out {
                tx,
                budget: budget.clone(),
            },
            closing: closing.clone(),
        };
        let reader = Reader {
            info: ReaderInfo {
                server: config.server.clone(),
                source: config.source.clone(),
            },
            rx,
            budget,
            closing: closing.clone(),
            wake_tx,
            wake_rx,
            shared: Arc::new(ReaderShared {
                inner: Mutex::new(Inner {
                    closing_tx: Some(closing_tx),
                    streams: Vec::new(),
                    start: None,
                    wildcards: Vec::new(),
                    look_now: None,
                    probe_slot: None,
                    helpers: Vec::new(),
                }),
                control: Mutex::new(()),
                discovery_interval: config.discovery_interval,
            }),
            timer: Mutex::new(None),
            explorer: Mutex::new(None),
        };
        let (wildcards, named): (Vec<ResourceSpec>, Vec<ResourceSpec>) = dedup(&config.resources)
            .into_iter()
            .partition(ResourceSpec::is_wildcard);
        let gates = sync_gates(&named);
        for (spec, gate) in named.iter().zip(gates) {
            // On failure, dropping `reader` stops and joins what was started.
            let part = config.resume.as_ref().and_then(|c| c.part(spec));
            let handle = start.start_from(spec, part, gate)?;
            reader.shared.inner.lock().streams.push(handle);
        }
        reader.shared.inner.lock().start = Some(start);
        reader.set_wildcards(wildcards)?;
        if let Some(interval) = config.relist_interval {
            let shared = reader.shared.clone();
            let report = reader
                .shared
                .inner
                .lock()
                .start
                .as_ref()
                .map(Starter::report);
            let report = report.ok_or(Error::Stopped)?;
            let t = threads::spawn("tattler-relist".into(), report, move || {
                relist_timer(&shared, &closing, interval)
            })
            .map_err(Error::Spawn)?;
            *reader.timer.lock() = Some(t);
        }
        Ok(reader)
    }

    /// Blocks until the next entry.
    ///
    /// Returns [`Closed`] once the reader has been stopped or closed and the
    /// entries already queued have been handed out.
    pub fn next(&self) -> Result<Entry, Closed> {
        if let Some(e) = self.ready() {
            return Ok(self.taken(e));
        }
        let e = select! {
            recv(self.rx) -> e => e.map_err(|_| Closed),
            recv(self.closing) -> _ => self.rx.try_recv().map_err(|_| Closed),
        };
        e.map(|e| self.taken(e))
    }

    /// An entry out of the channel: its bytes no longer count.
    fn taken(&self, e: Entry) -> Entry {
        self.budget.give(&e);
        e
    }

    /// Blocks until the next entry or until `timeout` has passed.
    ///
    /// [`NextTimeoutError::Timeout`]: nothing arrived in time, or
    /// [`wake`](Self::wake) was called; the reader runs on.
    /// [`NextTimeoutError::Closed`]: stopped or closed, and drained.
    pub fn next_timeout(&self, timeout: Duration) -> Result<Entry, NextTimeoutError> {
        if let Some(e) = self.ready() {
            return Ok(self.taken(e));
        }
        let e = select! {
            recv(self.rx) -> e => e.map_err(|_| NextTimeoutError::Closed),
            recv(self.closing) -> _ => self.rx.try_recv().map_err(|_| NextTimeoutError::Closed),
            recv(self.wake_rx) -> _ => Err(NextTimeoutError::Timeout),
            default(timeout) => Err(NextTimeoutError::Timeout),
        };
        e.map(|e| self.taken(e))
    }

    /// Makes a thread waiting in [`next_timeout`](Self::next_timeout) return
    /// [`NextTimeoutError::Timeout`] at once, without stopping the reader
    /// (how a cancelled Go context ends a wait). With no thread waiting, the
    /// next `next_timeout` returns at once; wakes do not add up. Any thread,
    /// any time; never blocks.
    pub fn wake(&self) {
        let _ = self.wake_tx.try_send(());
    }

    /// An entry that is ready now.
    fn ready(&self) -> Option<Entry> {
        // A stream sends a batch of entries a microsecond or so apart
        // (deliver::BATCH): a consumer that waits a few microseconds before
        // parking takes the whole batch for one wake-up instead of one per
        // entry, and while a batch is being sent it waits up to BURST_WAIT.
        // Spinning, not yielding: yielding (a system call each time) doubled
        // system time when measured.
        let mut deadline = None;
        loop {
            for _ in 0..SPINS {
                if let Ok(e) = self.rx.try_recv() {
                    return Some(e);
                }
                std::hint::spin_loop();
            }
            if !self.budget.bursting() {
                break;
            }
            let now = std::time::Instant::now();
            match deadline {
                None => deadline = Some(now + crate::delivery::channel::BURST_WAIT),
                Some(d) if now >= d => break,
                Some(_) => {}
            }
        }
        self.rx.try_recv().ok()
    }

    /// The next entry if one is ready, without blocking.
    ///
    /// [`TryNextError::Empty`]: none ready yet. [`TryNextError::Closed`]:
    /// stopped or closed, and drained.
    pub fn try_next(&self) -> Result<Entry, TryNextError> {
        match self.rx.try_recv() {
            Ok(e) => Ok(self.taken(e)),
            Err(TryRecvError::Disconnected) => Err(TryNextError::Closed),
            Err(TryRecvError::Empty) if self.is_stopped() => Err(TryNextError::Closed),
            Err(TryRecvError::Empty) => Err(TryNextError::Empty),
        }
    }

    /// A blocking iterator over the entries; it ends when the reader stops.
    pub fn iter(&self) -> Iter<'_> {
        Iter { reader: self }
    }

    /// The channel itself, for `crossbeam_channel::select!` over several
    /// sources. It disconnects once the reader is stopped and every stream
    /// thread has ended. Entries taken from it directly do not give back
    /// their room in `max_buffered_bytes`, so asking for the receiver turns
    /// that bound off for this reader (`channel_capacity` still holds).
    pub fn receiver(&self) -> &Receiver<Entry> {
        self.budget.turn_off();
        &self.rx
    }

    /// Stops every stream without waiting for the threads; a thread blocked in
    /// [`next`](Self::next) wakes up with [`Closed`]. Safe to call from any
    /// thread, any number of times. [`close`](Self::close) (or drop) still
    /// joins the threads.
    pub fn stop(&self) {
        let mut inner = self.shared.inner.lock();
        inner.closing_tx = None;
        inner.start = None;
        for s in &mut inner.streams {
            s.signal();
        }
        if let Some(slot) = &inner.probe_slot {
            slot.shutdown();
        }
        drop(inner);
        self.budget.wake();
    }

    /// Changes the set of resources streamed, while entries flow.
    ///
    /// Streams for added resources start (with a full initial sync), streams
    /// for removed ones stop and are joined, the others keep running without a
    /// reconnect. With `force`, every stream is restarted. Returns whether
    /// anything changed; an unchanged set without `force` does nothing.
    /// Wildcards (`"*"`, `"*.apps"`) in the list replace the reader's: the
    /// streams discovery finds for them follow at once.
    ///
    /// [`Error::Reentrant`] when called on one of tattler's own threads (from
    /// a log callback): it would have to wait for that very thread.
    pub fn set_resources(&self, resources: &[ResourceSpec], force: bool) -> Result<bool, Error> {
        if on_tattler_thread() {
            return Err(Error::Reentrant("set_resources"));
        }
        let (wildcards, named): (Vec<ResourceSpec>, Vec<ResourceSpec>) = dedup(resources)
            .into_iter()
            .partition(ResourceSpec::is_wildcard);
        if named.is_empty() && wildcards.is_empty() {
            return Err(Error::Config("resources: nothing to watch".into()));
        }
        let changed = reconcile(&self.shared, &named, Scope::Named, force)?;
        let wildcards_changed = self.shared.inner.lock().wildcards != wildcards;
        self.set_wildcards(wildcards)?;
        Ok(changed || wildcards_changed)
    }

    /// Keeps the wildcards, starting the discovery thread for them (or
    /// telling it to look again) when there are any.
    fn set_wildcards(&self, wildcards: Vec<ResourceSpec>) -> Result<(), Error> {
        let mut inner = self.shared.inner.lock();
        if inner.wildcards == wildcards {
            return Ok(());
        }
        let any = !wildcards.is_empty();
        inner.wildcards = wildcards;
        if let Some(poke) = &inner.look_now {
            let _ = poke.try_send(());
            return Ok(());
        }
        if !any {
            return Ok(());
        }
        let Some((probe, slot, own_stop)) = inner.start.as_ref().map(Starter::probe) else {
            return Err(Error::Stopped);
        };
        let report = inner.start.as_ref().map(Starter::report);
        let report = report.ok_or(Error::Stopped)?;
        let (poke, look_now) = bounded(1);
        inner.look_now = Some(poke);
        inner.probe_slot = Some(slot);
        drop(inner);
        let (shared, closing) = (self.shared.clone(), self.closing.clone());
        let t = threads::spawn("tattler-discovery".into(), report, move || {
            let _own_stop = own_stop;
            explore(&shared, &closing, &look_now, probe)
        })
        .map_err(Error::Spawn)?;
        *self.explorer.lock() = Some(t);
        Ok(())
    }

    /// Relists every resource now, one at a time, as the relist timer does
    /// (see [`Config::relist_interval`]): a fresh stream syncs while the
    /// running one goes on, then replaces it. Blocks until done; the entries
    /// it produces must be consumed meanwhile (from another thread), as
    /// always. Resources that failed for good, or have not synced yet, are
    /// left alone. Returns false if the reader stopped first, or when called
    /// on one of tattler's own threads (from a log callback).
    pub fn relist(&self) -> bool {
        if on_tattler_thread() {
            return false;
        }
        relist_all(&self.shared, &self.closing)
    }

    /// True once [`stop`](Self::stop) or [`close`](Self::close) was called.
    pub fn is_stopped(&self) -> bool {
        matches!(self.closing.try_recv(), Err(TryRecvError::Disconnected))
    }

    /// Stops every stream and joins every thread. Returns within about a
    /// second, whether streams are idle, reading or blocked on a full channel
    /// (a thread in the middle of a TCP connect finishes it first, bounded by
    /// `connect_timeout`; one in a DNS lookup, by the system resolver's own
    /// timeout). Dropping the reader does the same.
    pub fn close(self) {
        drop(self)
    }

    /// The server and where the configuration came from.
    pub fn info(&self) -> &ReaderInfo {
        &self.info
    }

    /// What the reader has delivered, to resume from in a new reader
    /// ([`Config::resume`]): per resource whose full state is complete, its
    /// resourceVersion and the objects the consumer holds.
    ///
    /// It matches what the consumer got exactly when taken after
    /// [`stop`](Self::stop) and once [`next`](Self::next) has returned
    /// [`Closed`] (every entry taken). Taken while the reader runs, it may
    /// hold changes still waiting in the channel, which a resumed reader
    /// would then not deliver.
    pub fn checkpoint(&self) -> crate::Checkpoint {
        let streams: Vec<(ResourceSpec, Arc<Shared>)> = {
            let inner = self.shared.inner.lock();
            inner
                .streams
                .iter()
                .map(|h| (h.spec.clone(), h.shared.clone()))
                .collect()
        };
        let mut resources = Vec::new();
        for (spec, shared) in streams {
            let book = shared.book.lock();
            // Not synced now (a re-sync, a first sync under way): no resume
            // point; a reader resumed from it re-syncs against the objects.
            let resource_version = book.life.resume_point().cloned().unwrap_or_default();
            let objects = book.table.export();
            drop(book);
            resources.push(crate::checkpoint::ResourceState {
                spec,
                resource_version,
                objects,
            });
        }
        crate::Checkpoint { resources }
    }

    /// Counters of each stream, in the order the resources were configured.
    pub fn stats(&self) -> Vec<StreamStats> {
        let inner = self.shared.inner.lock();
        inner.streams.iter().map(StreamHandle::snapshot).collect()
    }
}

impl Reader {
    /// The counters in the Prometheus text exposition format (version
    /// 0.0.4), ready to serve on an agent's `/metrics`: per stream (labels
    /// `resource`, and `namespace`, `label_selector`, `field_selector`,
    /// `metadata_only` where set) events, bytes, reconnects, re-syncs,
    /// relists, stale drops, skipped pieces, objects tracked, synced, failed,
    /// LIST fallback and seconds since the last full state; for the reader,
    /// entries and bytes waiting in the channel.
    pub fn metrics_text(&self) -> String {
        use std::fmt::Write;
        let now = std::time::SystemTime::now();
        let streams: Vec<(String, StreamStats)> = {
            let inner = self.shared.inner.lock();
            inner
                .streams
                .iter()
                .map(|h| {
                    let stats = h.snapshot();
                    (metric_labels(&stats.resource, &h.spec), stats)
                })
                .collect()
        };
        type Get = fn(&StreamStats, std::time::SystemTime) -> Option<f64>;
        let per_stream: [(&str, &str, &str, Get); 12] = [
            (
                "events_total",
                "counter",
                "Watch events and LIST items received.",
                |s, _| Some(s.events as f64),
            ),
            (
                "received_bytes_total",
                "counter",
                "Body bytes received (after decompression).",
                |s, _| Some(s.bytes as f64),
            ),
            (
                "reconnects_total",
                "counter",
                "Requests made again after a failure.",
                |s, _| Some(s.reconnects as f64),
            ),
            (
                "resyncs_total",
                "counter",
                "Full re-syncs (history expired, resourceVersion too large, empty watches).",
                |s, _| Some(s.resyncs as f64),
            ),
            (
                "relists_total",
                "counter",
                "Relist swaps completed.",
                |s, _| Some(s.relists as f64),
            ),
            (
                "stale_drops_total",
                "counter",
                "Events dropped as older than what was delivered.",
                |s, _| Some(s.stale_drops as f64),
            ),
            (
                "skipped_total",
                "counter",
                "Objects and frames skipped, each reported by an Error entry.",
                |s, _| Some(s.skipped as f64),
            ),
            (
                "objects",
                "gauge",
                "Objects tracked (the consumer's state).",
                |s, _| Some(s.objects as f64),
            ),
            (
                "synced",
                "gauge",
                "1 when the last full state is complete.",
                |s, _| Some(u8::from(s.synced).into()),
            ),
            (
                "failed",
                "gauge",
                "1 when the stream failed for good.",
                |s, _| Some(u8::from(s.failed).into()),
            ),
            (
                "list_fallback",
                "gauge",
                "1 when the resource is read by LIST + WATCH.",
                |s, _| Some(u8::from(s.list_fallback).into()),
            ),
            (
                "seconds_since_sync",
                "gauge",
                "Seconds since the last full state completed.",
                |s, now| {
                    s.synced_at
                        .map(|t| now.duration_since(t).unwrap_or_default().as_secs_f64())
                },
            ),
        ];
        let mut out = String::new();
        for (name, kind, help, get) in per_stream {
            let _ = writeln!(
                out,
                "# HELP tattler_{name} {help}\n# TYPE tattler_{name} {kind}"
            );
            for (labels, s) in &streams {
                if let Some(v) = get(s, now) {
                    let _ = writeln!(out, "tattler_{name}{{{labels}}} {v}");
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP tattler_channel_entries Entries waiting for the consumer.\n# TYPE tattler_channel_entries gauge\ntattler_channel_entries {}",
            self.rx.len()
        );
        let _ = writeln!(
            out,
            "# HELP tattler_channel_bytes Bytes of objects waiting for the consumer.\n# TYPE tattler_channel_bytes gauge\ntattler_channel_bytes {}",
            self.budget.used()
        );
        out
    }
}

/// A stream's labels: `resource="v1/pods"`, and its scope where set.
fn metric_labels(resource: &str, spec: &ResourceSpec) -> String {
    let esc = |v: &str| {
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    let mut l = format!("resource=\"{}\"", esc(resource));
    for (k, v) in [
        ("namespace", spec.namespace.as_deref()),
        ("label_selector", spec.label_selector.as_deref()),
        ("field_selector", spec.field_selector.as_deref()),
        ("metadata_only", spec.metadata_only.then_some("true")),
    ] {
        if let Some(v) = v {
            l.push_str(&format!(",{k}=\"{}\"", esc(v)));
        }
    }
    l
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop();
        let threads = [self.timer.lock().take(), self.explorer.lock().take()];
        for t in threads.into_iter().flatten() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        let (mut streams, helpers) = {
            let mut inner = self.shared.inner.lock();
            (
                std::mem::take(&mut inner.streams),
                std::mem::take(&mut inner.helpers),
            )
        };
        for s in &mut streams {
            s.join();
        }
        for t in helpers {
            let _ = t.join();
        }
    }
}

/// Blocking iterator returned by [`Reader::iter`].
pub struct Iter<'a> {
    reader: &'a Reader,
}

impl Iterator for Iter<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.reader.next().ok()
    }
}

/// Makes the streams of `scope` the ones of `wanted`: starts the new, stops
/// and joins the gone (without the lock), restarts all with `force`; the
/// other scope's streams are left alone (and a found one that the caller
/// names is not started twice). Whether anything changed.
fn reconcile(
    shared: &ReaderShared,
    wanted: &[ResourceSpec],
    scope: Scope,
    force: bool,
) -> Result<bool, Error> {
    let stopped = || Error::Stopped;
    let _control = shared.control.lock();
    let mut result_spawn = Ok(());
    let ours = |h: &StreamHandle| h.found == (scope == Scope::Found);
    // Signal what goes or restarts and take its threads, under the lock;
    // join them without it.
    let (mut gone, mut restarting, changed) = {
        let mut inner = shared.inner.lock();
        if inner.start.is_none() {
            return Err(stopped());
        }
        let (keep, mut gone): (Vec<StreamHandle>, Vec<StreamHandle>) = inner
            .streams
            .drain(..)
            .partition(|s| !ours(s) || wanted.contains(&s.spec));
        let mut keep = keep;
        let present = keep.iter().filter(|s| ours(s)).count();
        let changed = force || !gone.is_empty() || wanted.len() != present;
        for s in &mut gone {
            s.signal();
        }
        let mut restarting = Vec::new();
        if force {
            // The old threads end before new ones start: two streams
            // syncing one resource's state at once would confuse it.
            for h in keep.iter_mut().filter(|h| ours(h)) {
                h.signal();
                restarting.push(std::mem::take(&mut h.running));
                restarting.extend(h.pending.take());
            }
        }
        // Streams blocked on a full channel look at their stop now.
        if let Some(start) = &inner.start {
            start.out.budget.wake();
        }
        inner.streams = keep;
        (gone, restarting, changed)
    };
    for s in &mut gone {
        s.join();
    }
    for t in &mut restarting {
        t.join();
    }
    let mut guard = shared.inner.lock();
    let inner = &mut *guard;
    let Some(start) = inner.start.as_ref() else {
        return Err(stopped());
    };
    // A namespace removed while the resource's other namespaces waited for
    // it: their Synced goes now, from a thread of its own (the caller may be
    // the consumer, and the channel full).
    inner.helpers.retain(|t| !t.is_finished());
    for h in &gone {
        let Some(gate) = &h.gate else { continue };
        if !gate.leave(h.shared.member) {
            continue;
        }
        let resource = Arc::new(crate::Resource {
            group: h.spec.group.clone(),
            version: h.spec.version.clone(),
            resource: h.spec.resource.clone(),
            kind: h.spec.kind.clone(),
        });
        let report = start.report();
        let (out, stop) = (report.out.clone(), report.stop.clone());
        let entry = Entry::marker(
            crate::Change::Synced,
            resource,
            crate::wire::rv::Rv::empty(),
        );
        match threads::spawn("tattler-synced".into(), report, move || {
            out.send(entry, &stop);
        }) {
            Ok(t) => inner.helpers.push(t),
            Err(e) => result_spawn = Err(Error::Spawn(e)),
        }
    }
    let mut result = result_spawn.map(|()| changed);
    if force {
        // Dedupe state carries over: the consumer sees Snapshots, not a second Add.
        for h in inner.streams.iter_mut().filter(|h| ours(h)) {
            match start.spawn(h, Role::Primary) {
                Ok(t) => h.running = t,
                Err(e) => result = Err(e),
            }
        }
    }
    let fresh: Vec<ResourceSpec> = wanted
        .iter()
        .filter(|spec| {
            !inner.streams.iter().any(|s| {
                (ours(s) && &s.spec == *spec)
                    || (scope == Scope::Found && crate::checkpoint::same_scope(&s.spec, spec))
            })
        })
        .cloned()
        .collect();
    let inherited = hand_over(&gone, &fresh);
    // Several namespaces of one new resource share a gate (one Synced);
    // another namespace of a resource already in several joins its gate.
    let gates = sync_gates(&fresh);
    for ((spec, gate), part) in fresh.iter().zip(gates).zip(inherited) {
        let gate = gate.or_else(|| {
            let g = inner
                .streams
                .iter()
                .find(|s| same_resource(&s.spec, spec))
                .and_then(|s| s.gate.clone())?;
            let m = new_member();
            g.join(m);
            Some((g, m))
        });
        match start.start_from(spec, part.as_ref(), gate) {
            Ok(mut h) => {
                h.found = scope == Scope::Found;
                inner.streams.push(h);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // The caller's order for stats(), the found ones after.
    inner.streams.sort_by_key(|s| {
        (
            s.found,
            wanted
                .iter()
                .position(|w| w == &s.spec)
                .unwrap_or(usize::MAX),
        )
    });
    result
}

/// What the consumer holds of removed streams, handed to new streams of the
/// same resource (a scope changed: other namespaces, other selectors): each
/// new one re-syncs against the objects in its namespace, and the first takes
/// the rest too, so that its first full state deletes what no new scope
/// holds. A consumer keyed by resource, namespace and name so never keeps an
/// object the new scopes lack, nor misses a delete made during the change.
/// A resource removed with no new scope gets nothing: the consumer removed it.
fn hand_over(
    gone: &[StreamHandle],
    fresh: &[ResourceSpec],
) -> Vec<Option<crate::checkpoint::ResourceState>> {
    let same = |a: &ResourceSpec, b: &ResourceSpec| {
        (&a.group, &a.version, &a.resource, &a.lookup)
            == (&b.group, &b.version, &b.resource, &b.lookup)
    };
    let mut parts: Vec<Option<crate::checkpoint::ResourceState>> = vec![None; fresh.len()];
    for g in gone {
        let Some(first) = fresh.iter().position(|f| same(f, &g.spec)) else {
            continue;
        };
        let held = g.shared.book.lock().table.export();
        for o in held {
            let at = fresh
                .iter()
                .position(|f| {
                    same(f, &g.spec)
                        && f.namespace
                            .as_ref()
                            .is_none_or(|ns| o.namespace.as_ref() == Some(ns))
                })
                .unwrap_or(first);
            parts[at]
                .get_or_insert_with(|| crate::checkpoint::ResourceState {
                    spec: fresh[at].clone(),
                    resource_version: crate::wire::rv::Rv::empty(),
                    objects: Vec::new(),
                })
                .objects
                .push(o);
        }
    }
    parts
}

/// The discovery thread: every `discovery_interval` (and when the wildcards
/// change), finds the resources the wildcards stand for and makes them the
/// found streams: a CRD established later gets a stream, one deleted loses
/// it. A failing discovery is retried with backoff.
fn explore(
    shared: &ReaderShared,
    closing: &Receiver<()>,
    look_now: &Receiver<()>,
    mut probe: Stream,
) {
    let mut failures = 0u32;
    loop {
        let wildcards = shared.inner.lock().wildcards.clone();
        let wait = if wildcards.is_empty() {
            let _ = reconcile(shared, &[], Scope::Found, false);
            shared.discovery_interval
        } else {
            match probe.served() {
                Ok(served) => {
                    failures = 0;
                    let found = expand(&wildcards, &served);
                    log::debug!(
                        "discovery: {} resources for {} wildcards",
                        found.len(),
                        wildcards.len()
                    );
                    if let Err(e) = reconcile(shared, &found, Scope::Found, false) {
                        log::warn!("discovery: cannot change the watch set: {e}");
                    }
                    shared.discovery_interval
                }
                Err(crate::stream::machine::End::Stopped) => return,
                Err(end) => {
                    failures = failures.saturating_add(1);
                    let wait = probe.jitter.backoff(failures);
                    log::warn!("discovery failed ({end:?}); looking again in {wait:?}");
                    wait
                }
            }
        };
        select! {
            recv(closing) -> _ => return,
            recv(look_now) -> _ => {}
            default(wait) => {}
        }
    }
}

/// The specs the wildcards stand for: every served resource that can be
/// listed and watched, in each group's preferred version, with the
/// wildcard's scope (namespace, selectors, metadata-only).
fn expand(
    wildcards: &[ResourceSpec],
    served: &[crate::stream::discovery::Served],
) -> Vec<ResourceSpec> {
    let mut out: Vec<ResourceSpec> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for s in served {
        if !s.watchable() || seen.iter().any(|(g, r)| *g == s.group && *r == s.resource) {
            continue;
        }
        seen.push((s.group.clone(), s.resource.clone()));
        for w in wildcards.iter().filter(|w| w.wildcard_takes(&s.group)) {
            let mut spec =
                ResourceSpec::new(&s.group, &s.version, &s.resource, &s.kind, s.namespaced);
            if let Some(ns) = &w.namespace {
                spec = spec.in_namespace(ns);
            }
            spec.label_selector.clone_from(&w.label_selector);
            spec.field_selector.clone_from(&w.field_selector);
            spec.metadata_only = w.metadata_only;
            if !out.contains(&spec) {
                out.push(spec);
            }
        }
    }
    out
}

/// Every `interval`, relists each synced resource in turn: a replacement
/// stream syncs while the running one goes on, then takes its place. One
/// relist at a time, to spare the apiserver.
fn relist_timer(shared: &ReaderShared, closing: &Receiver<()>, interval: Duration) {
    loop {
        select! {
            recv(closing) -> _ => return,
            default(interval) => {}
        }
        if !relist_all(shared, closing) {
            return;
        }
    }
}

/// Relists every resource in turn; false when the reader is stopping.
fn relist_all(shared: &ReaderShared, closing: &Receiver<()>) -> bool {
    let specs: Vec<ResourceSpec> = shared
        .inner
        .lock()
        .streams
        .iter()
        .map(|s| s.spec.clone())
        .collect();
    specs.iter().all(|spec| relist(shared, closing, spec))
}

/// One relist; false when the reader is stopping.
///
/// The wait for the replacement's sync is bounded by the replacement itself:
/// it gives up after a few failures in a row (`stream::machine`), which ends this wait.
fn relist(shared: &ReaderShared, closing: &Receiver<()>, spec: &ResourceSpec) -> bool {
    let (done_tx, done) = bounded(1);
    let started = {
        let mut g = shared.inner.lock();
        let g = &mut *g;
        let Some(start) = g.start.as_ref() else {
            return false;
        };
        let Some(h) = g.streams.iter_mut().find(|h| &h.spec == spec) else {
            return true;
        };
        if h.pending.is_some()
            || !h.shared.book.lock().life.synced()
            || h.counters.failed.load(Ordering::Relaxed)
        {
            return true;
        }
        start.spawn(h, Role::Replacement(done_tx)).map(|t| {
            let id = t.id();
            h.pending = Some(t);
            id
        })
    };
    let thread = match started {
        Ok(id) => id,
        Err(e) => {
            log::warn!("{}: cannot start a relist: {e}", spec.gvr());
            return true;
        }
    };
    log::info!("{}: relisting", spec.gvr());
    // Synced, or the replacement ended without syncing (dropping the sender).
    let synced = select! {
        recv(done) -> r => r.is_ok(),
        recv(closing) -> _ => return false,
    };
    let _control = shared.control.lock();
    let mut finished = {
        let mut g = shared.inner.lock();
        let Some(h) = g.streams.iter_mut().find(|h| &h.spec == spec) else {
            return true;
        };
        // Still ours: set_resources may have stopped it and started another.
        if h.pending.as_ref().and_then(Thread::id) != thread {
            return true;
        }
        let Some(new) = h.pending.take() else {
            return true;
        };
        if synced {
            h.counters.relists.fetch_add(1, Ordering::Relaxed);
            std::mem::replace(&mut h.running, new)
        } else {
            // The running stream goes on (it may re-sync itself meanwhile).
            new
        }
    };
    finished.signal();
    if let Some(start) = &shared.inner.lock().start {
        start.out.budget.wake();
    }
    finished.join();
    if !synced {
        log::warn!(
            "{}: the relist did not complete; the running stream goes on",
            spec.gvr()
        );
    }
    true
}

/// Whether two specs are one resource to the consumer: the same but for
/// the namespace.
fn same_resource(a: &ResourceSpec, b: &ResourceSpec) -> bool {
    let mut b = b.clone();
    b.namespace.clone_from(&a.namespace);
    crate::checkpoint::same_scope(a, &b)
}

/// A key for one resource's part in a [`SyncGate`].
fn new_member() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// For each spec, the gate it shares with the same resource's other
/// namespaces, when there are several, and its key there.
fn sync_gates(specs: &[ResourceSpec]) -> Vec<Option<(Arc<SyncGate>, u64)>> {
    let mut gates: Vec<Option<(Arc<SyncGate>, u64)>> = vec![None; specs.len()];
    for i in 0..specs.len() {
        if gates[i].is_some() {
            continue;
        }
        let group: Vec<usize> = (i..specs.len())
            .filter(|&j| same_resource(&specs[i], &specs[j]))
            .collect();
        if group.len() > 1 {
            let members: Vec<u64> = group.iter().map(|_| new_member()).collect();
            let gate = SyncGate::new(&members);
            for (j, m) in group.into_iter().zip(members) {
                gates[j] = Some((gate.clone(), m));
            }
        }
    }
    gates
}

/// The specs without repeats, in their first order.
fn dedup(specs: &[ResourceSpec]) -> Vec<ResourceSpec> {
    let mut out: Vec<ResourceSpec> = Vec::with_capacity(specs.len());
    for s in specs {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// Starts a stream's thread; a panic in it becomes an Error entry.
fn spawn(spec: &ResourceSpec, stream: Stream) -> std::io::Result<JoinHandle<()>> {
    let what = match (&spec.lookup, spec.resource.is_empty()) {
        (_, false) => spec.resource.clone(),
        (Some(name), true) => name.clone(),
        (None, true) => spec.kind.to_lowercase(),
    };
    let report = threads::Report {
        resource: stream.resource.clone(),
        out: stream.out.clone(),
        stop: stream.stop.clone(),
    };
    threads::spawn(format!("tattler-watch-{what}"), report, move || {
        stream.run()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_labels_are_escaped() {
        let spec = ResourceSpec::parse("pods")
            .unwrap()
            .remove(0)
            .in_namespace("a")
            .with_field_selector("x=\"q\\\n")
            .metadata_only();
        assert_eq!(
            metric_labels(&spec.gvr(), &spec),
            r#"resource="v1/pods",namespace="a",field_selector="x=\"q\\\n",metadata_only="true""#
        );
    }
}
