//! The reader: owns the stream threads, fans their entries into one bounded
//! channel, and stops them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver, Sender, TryRecvError};
use parking_lot::Mutex;

use super::relist::{relist_all, relist_timer};
use super::stats::StreamStats;
use super::watchset::{dedup, reconcile, sync_gates};
use super::wildcard::explore;
use crate::access::client::AgentSlot;
use crate::access::transport::Transport;
use crate::delivery::channel::{Budget, Out, Stop};
use crate::delivery::threads::{self, on_tattler_thread};
use crate::stream::{Counters, Role, Shared, Stream, StreamInit, StreamSettings, SyncGate};
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
    pub(super) rx: Receiver<Entry>,
    pub(super) budget: Arc<Budget>,
    /// Disconnects when the reader stops.
    closing: Receiver<()>,
    /// [`wake`](Self::wake) leaves a token here; a waiting `next_timeout` takes it.
    wake_tx: Sender<()>,
    wake_rx: Receiver<()>,
    pub(super) shared: Arc<ReaderShared>,
    /// The relist timer, when `relist_interval` is set.
    timer: Mutex<Option<JoinHandle<()>>>,
    /// The discovery thread, once there are wildcards (`"*"`).
    explorer: Mutex<Option<JoinHandle<()>>>,
}

/// What the reader, its relist timer and its calls share.
pub(super) struct ReaderShared {
    /// Held only for short sections that neither wait, join nor log, so that
    /// `stats()` and `stop()` never wait long, whatever else is going on.
    pub(super) inner: Mutex<Inner>,
    /// Serialises the calls that stop and start threads (`set_resources`, a
    /// relist's swap, the discovery thread's changes). Held across joins; no
    /// other call needs it.
    pub(super) control: Mutex<()>,
    /// How often the discovery thread looks for the wildcards' resources.
    pub(super) discovery_interval: Duration,
}

pub(super) struct Inner {
    pub(super) closing_tx: Option<Sender<()>>,
    pub(super) streams: Vec<StreamHandle>,
    /// What a new stream needs; `None` once stopped.
    pub(super) start: Option<Starter>,
    /// `"*"`-like specs: their resources are found by the discovery thread.
    pub(super) wildcards: Vec<ResourceSpec>,
    /// Tells the discovery thread to look now (the wildcards changed).
    pub(super) look_now: Option<Sender<()>>,
    /// The discovery thread's HTTP agent, shut down by stop.
    pub(super) probe_slot: Option<Arc<AgentSlot>>,
    /// Short-lived threads (an owed Synced's send), joined by close.
    pub(super) helpers: Vec<JoinHandle<()>>,
}

/// Which streams a change of the watch set is about.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// The ones the caller named.
    Named,
    /// The ones discovery found for the wildcards.
    Found,
}

/// Everything needed to start one more stream thread.
pub(super) struct Starter {
    pub(super) transport: Arc<Transport>,
    pub(super) settings: Arc<StreamSettings>,
    pub(super) out: Out,
    pub(super) closing: Receiver<()>,
}

impl Starter {
    /// Where the reader's own threads report a panic.
    pub(super) fn report(&self) -> threads::Report {
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
    pub(super) fn spawn(&self, h: &StreamHandle, role: Role) -> Result<Thread, Error> {
        self.spawn_from(h, role, None)
    }

    pub(super) fn spawn_from(
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
    pub(super) fn probe(&self) -> (Stream, Arc<AgentSlot>, Sender<()>) {
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
    pub(super) fn start_from(
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
pub(super) struct StreamHandle {
    pub(super) spec: ResourceSpec,
    /// Found by discovery for a wildcard (rather than named by the caller).
    pub(super) found: bool,
    /// Shared with the resource's streams in other namespaces.
    pub(super) gate: Option<Arc<SyncGate>>,
    pub(super) shared: Arc<Shared>,
    pub(super) counters: Arc<Counters>,
    pub(super) running: Thread,
    pub(super) pending: Option<Thread>,
}

/// A stream thread and what stops it.
#[derive(Default)]
pub(super) struct Thread {
    pub(super) slot: Arc<AgentSlot>,
    pub(super) stop_tx: Option<Sender<()>>,
    pub(super) join: Option<JoinHandle<()>>,
}

impl Thread {
    /// Signals the thread to stop and unblocks its socket; does not wait.
    pub(super) fn signal(&mut self) {
        self.stop_tx = None;
        self.slot.shutdown();
    }

    /// Waits for the thread to end; a no-op on the thread itself (a close
    /// from the log callback), which ends on its own once the callback returns.
    pub(super) fn join(&mut self) {
        if let Some(t) = self.join.take() {
            if t.thread().id() != std::thread::current().id() {
                // Panics are caught inside the thread; a join error cannot carry one.
                let _ = t.join();
            }
        }
    }

    pub(super) fn id(&self) -> Option<std::thread::ThreadId> {
        self.join.as_ref().map(|j| j.thread().id())
    }
}

impl StreamHandle {
    pub(super) fn signal(&mut self) {
        self.running.signal();
        if let Some(p) = &mut self.pending {
            p.signal();
        }
    }

    pub(super) fn join(&mut self) {
        self.running.join();
        if let Some(p) = &mut self.pending {
            p.join();
        }
    }
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
            config.access.source
        );
        let settings = Arc::new(StreamSettings {
            page_size: config.tuning.page_size,
            max_frame_bytes: config.tuning.max_frame_bytes,
            backoff: config.tuning.backoff.clone(),
            shaping: config.shaping.clone(),
            idle_timeout: config.tuning.idle_timeout,
            initial_events_timeout: config.tuning.initial_events_timeout,
            gzip: config.tuning.gzip,
            short_watch: config.tuning.short_watch,
        });
        let (tx, rx) = bounded(config.tuning.channel_capacity);
        let budget = Arc::new(Budget::new(config.tuning.max_buffered_bytes));
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
                server: config.access.server.clone(),
                source: config.access.source.clone(),
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
                discovery_interval: config.tuning.discovery_interval,
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
            recv(self.closing) -> _ => self.after_stop().ok_or(Closed),
        };
        e.map(|e| self.taken(e))
    }

    /// Once stopped: an entry still in the channel, when the sends under way
    /// have ended; `None` means there will be none.
    fn after_stop(&self) -> Option<Entry> {
        self.budget.settle();
        self.rx.try_recv().ok()
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
            recv(self.closing) -> _ => self.after_stop().ok_or(NextTimeoutError::Closed),
            recv(self.wake_rx) -> _ => Err(NextTimeoutError::Timeout),
            default(timeout) => Err(NextTimeoutError::Timeout),
        };
        e.map(|e| self.taken(e))
    }

    /// Installs `hook`, called (from a stream's thread, so it must be quick
    /// and must not call the reader) right after each entry enters the
    /// channel, and once when the reader stops. For the C library's
    /// readiness file descriptor; one hook per reader: false, and `hook`
    /// dropped, when one is installed already.
    #[doc(hidden)]
    pub fn set_ready_hook(&self, hook: Box<dyn Fn() + Send + Sync>) -> bool {
        self.budget.set_ready_hook(hook)
    }

    /// Whether no entry is queued now (a moment's answer: streams send
    /// concurrently). With [`set_ready_hook`](Self::set_ready_hook), to
    /// re-arm after clearing a readiness signal.
    #[doc(hidden)]
    pub fn is_queue_empty(&self) -> bool {
        self.rx.is_empty()
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
            Err(TryRecvError::Empty) if self.is_stopped() => self
                .after_stop()
                .map(|e| self.taken(e))
                .ok_or(TryNextError::Closed),
            Err(TryRecvError::Empty) => Err(TryNextError::Empty),
        }
    }

    /// A blocking iterator over the entries; it ends when the reader stops.
    pub fn iter(&self) -> Iter<'_> {
        Iter { reader: self }
    }

    /// The channel itself, for `crossbeam_channel::select!` over several
    /// sources, at the price the name says: entries taken from it directly
    /// do not give back their room in `max_buffered_bytes`, so asking for it
    /// turns that bound off for this reader (`channel_capacity` still
    /// holds). It disconnects once the reader is stopped and every stream
    /// thread has ended.
    pub fn receiver_without_byte_budget(&self) -> &Receiver<Entry> {
        self.budget.turn_off();
        &self.rx
    }

    /// Stops every stream without waiting for the threads; a thread blocked in
    /// [`next`](Self::next) wakes up with [`Closed`]. Safe to call from any
    /// thread, any number of times. [`close`](Self::close) (or drop) still
    /// joins the threads.
    pub fn stop(&self) {
        // First: no entry enters the channel from now on (Budget::settle).
        self.budget.close();
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
    }

    /// Changes the set of resources streamed, while entries flow.
    ///
    /// Streams for added resources start (with a full initial sync), streams
    /// for removed ones stop and are joined, the others keep running without a
    /// reconnect. A resource whose scope changed (other namespaces or
    /// selectors) hands what the consumer holds to its new streams, which
    /// re-sync against it. Returns whether anything changed; an unchanged set
    /// does nothing. Wildcards (`"*"`, `"*.apps"`) in the list replace the
    /// reader's: the streams discovery finds for them follow at once.
    ///
    /// [`Error::Reentrant`] when called on one of tattler's own threads (from
    /// a log callback): it would have to wait for that very thread;
    /// [`Error::Stopped`] once the reader is stopped.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// use kube_tattler::ResourceSpec;
    /// let pods = ResourceSpec::parse("pods")?.remove(0);
    /// reader.set_resources(&[pods.clone().in_namespace("a"), pods.in_namespace("b")])?;
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    pub fn set_resources(&self, resources: &[ResourceSpec]) -> Result<bool, Error> {
        self.change_resources(resources, false)
    }

    /// As [`set_resources`](Self::set_resources), and every stream of the
    /// set restarts, changed or not: each re-syncs against what the consumer
    /// holds (`Snapshot`s, not a second `Add`). Returns true.
    pub fn restart_resources(&self, resources: &[ResourceSpec]) -> Result<bool, Error> {
        self.change_resources(resources, true)
    }

    fn change_resources(&self, resources: &[ResourceSpec], restart: bool) -> Result<bool, Error> {
        if on_tattler_thread() {
            return Err(Error::Reentrant("set_resources"));
        }
        let (wildcards, named): (Vec<ResourceSpec>, Vec<ResourceSpec>) = dedup(resources)
            .into_iter()
            .partition(ResourceSpec::is_wildcard);
        if named.is_empty() && wildcards.is_empty() {
            return Err(Error::Config("resources: nothing to watch".into()));
        }
        let changed = reconcile(&self.shared, &named, Scope::Named, restart)?;
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

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let streams = self.shared.inner.lock().streams.len();
        f.debug_struct("Reader")
            .field(
                "server",
                &crate::access::secret::redact_userinfo(&self.info.server),
            )
            .field("source", &self.info.source)
            .field("streams", &streams)
            .field("stopped", &self.is_stopped())
            .finish_non_exhaustive()
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

/// Starts a stream's thread; a panic in it becomes an Error entry.
pub(super) fn spawn(spec: &ResourceSpec, stream: Stream) -> std::io::Result<JoinHandle<()>> {
    let what = spec.shown_name();
    let report = threads::Report {
        resource: stream.resource.clone(),
        out: stream.out.clone(),
        stop: stream.stop.clone(),
    };
    threads::spawn(format!("tattler-watch-{what}"), report, move || {
        stream.run()
    })
}
