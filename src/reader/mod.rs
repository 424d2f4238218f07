//! The reader: here, the blocking API the consumer calls; `open`, the
//! assembling of a reader (its registry, `registry`, and the streams,
//! timers and electors it starts). The stream threads fan their entries
//! into one bounded channel. The reader changes the watch set (`watchset`),
//! relists (`relist`), follows the wildcards (`wildcard`), reports (`stats`)
//! and stops and joins every thread (`threads`: each started one way).

mod leader;
mod open;
mod registry;
mod relist;
pub(crate) mod stats;
pub(crate) mod threads;
mod watchset;
mod wildcard;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{select, Receiver, Sender, TryRecvError};

use self::registry::{Registry, Scope, StreamHandle};
use self::relist::relist_all;
use self::stats::StreamStats;
use self::threads::on_tattler_thread;
use self::watchset::{dedup, reconcile};
use crate::delivery::channel::ChannelControl;
use crate::entry::Entry;
use crate::error::{Closed, Error, NextTimeoutError, TryNextError};
use crate::resource::ResourceSpec;
use crate::sync::Mutex;

/// Streams the chosen resources: their full state, then every change.
///
/// One OS thread per resource; entries from all of them come out of one
/// bounded channel, in order per resource. A consumer that falls behind slows
/// the streams down; no entry is ever dropped.
///
/// `Reader` is `Send + Sync`: one thread may block in [`next`](Self::next)
/// while another calls [`stop`](Self::stop).
///
/// ```no_run
/// use std::sync::Arc;
/// use kube_tattler::{Access, Config, Reader};
///
/// let config = Config::new(Access::infer()?).watch(["pods", "nodes"])?;
/// let reader = Arc::new(Reader::open(config)?);
/// let stopper = Arc::clone(&reader);
/// std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_secs(60));
///     stopper.stop(); // the loop below ends once it has taken what was queued
/// });
/// for entry in &*reader {
///     println!("{entry}");
/// }
/// # Ok::<(), kube_tattler::Error>(())
/// ```
pub struct Reader {
    info: ReaderInfo,
    rx: Receiver<Entry>,
    control: Arc<ChannelControl>,
    /// Disconnects when the reader stops.
    closing: Receiver<()>,
    /// [`wake`](Self::wake) leaves a token here; a waiting `next_timeout` takes it.
    wake_tx: Sender<()>,
    wake_rx: Receiver<()>,
    registry: Arc<Registry>,
    /// The relist timer, when `relist_interval` is set.
    timer: Mutex<Option<JoinHandle<()>>>,
    /// The discovery thread, once there are wildcards (`"*"`).
    explorer: Mutex<Option<JoinHandle<()>>>,
    /// [`Config::shard`](crate::Config::shard), for resources set later without a shard.
    shard: Option<crate::wire::shard::Shard>,
    /// With leader election: the elector threads (one per Lease), and what
    /// tells each that close has joined the streams (dropped then).
    electors: Mutex<Vec<(JoinHandle<()>, Sender<()>)>>,
}

/// Where a reader streams from.
///
/// ```no_run
/// # let reader: kube_tattler::Reader = unimplemented!();
/// let info = reader.info();
/// log::info!("streaming from {} ({})", info.server, info.source);
/// ```
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
    /// Blocks until the next entry.
    ///
    /// Asking for an entry says you are done with those taken before it:
    /// under leader election the checkpoint kept in the cluster holds an
    /// entry only from then on, so finish an entry (write it out, commit
    /// it) before you ask for the next, and one still in your hands when
    /// the process dies comes again from the next leader. Every way of
    /// asking ([`try_next`](Self::try_next), [`next_timeout`](Self::next_timeout),
    /// the iterator) counts; with several threads taking entries, any
    /// thread's asking counts for all.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// while let Ok(entry) = reader.next() {
    ///     println!("{entry}");
    /// }
    /// // Stopped, and every queued entry taken.
    /// ```
    ///
    /// # Errors
    ///
    /// [`Closed`] once the reader has been stopped or closed and the
    /// entries already queued have been handed out; every later call
    /// returns it too, at once.
    pub fn next(&self) -> Result<Entry, Closed> {
        self.control.asks();
        loop {
            if let Some(e) = self.ready() {
                match self.taken(e) {
                    Some(e) => return Ok(e),
                    None => continue,
                }
            }
            let e = select! {
                recv(self.rx) -> e => e.map_err(|_| Closed),
                recv(self.closing) -> _ => self.after_stop().ok_or(Closed),
            };
            if let Some(e) = self.taken(e?) {
                return Ok(e);
            }
        }
    }

    /// Once stopped: an entry still in the channel, when the sends under way
    /// have ended; `None` means there will be none.
    fn after_stop(&self) -> Option<Entry> {
        self.control.settle();
        self.rx.try_recv().ok()
    }

    /// An entry out of the channel: its bytes no longer count. `None` for
    /// an entry of a leader's term that ended while it waited in the
    /// channel (`entry::Term`): the replica stepped down, and the next
    /// leader delivers it again.
    fn taken(&self, e: Entry) -> Option<Entry> {
        self.control.give(&e);
        self.control.took();
        match &e.term {
            Some(t) if !t.delivers(std::time::Instant::now()) => None,
            _ => Some(e),
        }
    }

    /// Blocks until the next entry or until `timeout` has passed.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// use std::time::Duration;
    /// use kube_tattler::NextTimeoutError;
    /// loop {
    ///     match reader.next_timeout(Duration::from_secs(1)) {
    ///         Ok(entry) => println!("{entry}"),
    ///         Err(NextTimeoutError::Timeout) => { /* housekeeping */ }
    ///         Err(NextTimeoutError::Closed) => break,
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`NextTimeoutError::Timeout`]: nothing arrived in time, or
    /// [`wake`](Self::wake) was called; the reader runs on.
    /// [`NextTimeoutError::Closed`]: stopped or closed, and drained.
    pub fn next_timeout(&self, timeout: Duration) -> Result<Entry, NextTimeoutError> {
        self.control.asks();
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(e) = self.ready() {
                match self.taken(e) {
                    Some(e) => return Ok(e),
                    None => continue,
                }
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let e = select! {
                recv(self.rx) -> e => e.map_err(|_| NextTimeoutError::Closed),
                recv(self.closing) -> _ => self.after_stop().ok_or(NextTimeoutError::Closed),
                recv(self.wake_rx) -> _ => Err(NextTimeoutError::Timeout),
                default(left) => Err(NextTimeoutError::Timeout),
            };
            if let Some(e) = self.taken(e?) {
                return Ok(e);
            }
        }
    }

    /// Installs `hook`, called (from a stream's thread, so it must be quick
    /// and must not call the reader) right after each entry enters the
    /// channel, and once when the reader stops. For the C library's
    /// readiness file descriptor; one hook per reader: false, and `hook`
    /// dropped, when one is installed already.
    #[doc(hidden)]
    pub fn set_ready_hook(&self, hook: Box<dyn Fn() + Send + Sync>) -> bool {
        self.control.set_ready_hook(hook)
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
        // (`BATCH` in stream/sink.rs): a consumer that waits a few microseconds before
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
            if !self.control.bursting() {
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
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// let ready: Vec<_> = std::iter::from_fn(|| reader.try_next().ok()).collect();
    /// ```
    ///
    /// # Errors
    ///
    /// [`TryNextError::Empty`]: none ready yet. [`TryNextError::Closed`]:
    /// stopped or closed, and drained.
    pub fn try_next(&self) -> Result<Entry, TryNextError> {
        self.control.asks();
        loop {
            let e = match self.rx.try_recv() {
                Ok(e) => e,
                Err(TryRecvError::Disconnected) => return Err(TryNextError::Closed),
                Err(TryRecvError::Empty) if self.is_stopped() => {
                    self.after_stop().ok_or(TryNextError::Closed)?
                }
                Err(TryRecvError::Empty) => return Err(TryNextError::Empty),
            };
            if let Some(e) = self.taken(e) {
                return Ok(e);
            }
        }
    }

    /// A blocking iterator over the entries; it ends when the reader is
    /// stopped and drained (as [`next`](Self::next) returns [`Closed`]).
    /// `for entry in &reader` is the same.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// use kube_tattler::Change;
    /// let synced = reader.iter().filter(|e| e.change() == Change::Synced).take(2).count();
    /// ```
    pub fn iter(&self) -> Iter<'_> {
        Iter { reader: self }
    }

    /// The channel itself, for `crossbeam_channel::select!` over several
    /// sources, at the price the name says: entries taken from it directly
    /// do not give back their room in `max_buffered_bytes`, so asking for it
    /// turns that bound off for this reader (`channel_capacity` still
    /// holds), and under leader election entries of a term that ended
    /// while they waited are not dropped: skip what comes before a
    /// `Following` with the [`term`](Entry::term) it ended. It disconnects once the reader is stopped and every stream
    /// thread has ended.
    ///
    /// The crossbeam-channel it comes from is re-exported as
    /// [`kube_tattler::crossbeam_channel`](crate::crossbeam_channel): use
    /// that one, whatever version your own dependencies hold.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// use kube_tattler::crossbeam_channel::{select, tick};
    /// use std::time::Duration;
    /// let entries = reader.receiver_without_byte_budget();
    /// let ticks = tick(Duration::from_secs(10));
    /// loop {
    ///     select! {
    ///         recv(entries) -> entry => match entry {
    ///             Ok(entry) => println!("{entry}"),
    ///             Err(_) => break, // stopped, and every stream ended
    ///         },
    ///         recv(ticks) -> _ => println!("{}", reader.metrics_text()),
    ///     }
    /// }
    /// ```
    pub fn receiver_without_byte_budget(&self) -> &Receiver<Entry> {
        self.control.turn_off();
        &self.rx
    }

    /// Stops every stream without waiting for the threads; a thread blocked in
    /// [`next`](Self::next) wakes up with [`Closed`]. Safe to call from any
    /// thread, any number of times. [`close`](Self::close) (or drop) still
    /// joins the threads.
    pub fn stop(&self) {
        // First: no entry enters the channel from now on (ChannelControl::settle).
        self.control.close();
        let mut roster = self.registry.roster.lock();
        roster.closing_tx = None;
        roster.start = None;
        for s in &mut roster.handles {
            s.signal();
        }
        if let Some(slot) = &roster.probe_slot {
            slot.shutdown();
        }
        drop(roster);
    }

    /// Changes the set of resources streamed, while entries flow.
    ///
    /// Streams for added resources start (with a full initial sync), streams
    /// for removed ones stop and are joined, the others keep running without a
    /// reconnect. A resource whose scope changed (other namespaces or
    /// selectors) hands what the consumer holds to its new streams, which
    /// re-sync against it. Returns whether anything changed; an unchanged set
    /// does nothing. Wildcards (`"*"`, `"*.apps"`) in the list replace the
    /// reader's: the streams discovery finds for them follow at once. A
    /// resource without a shard takes [`Config::shard`](crate::Config::shard).
    ///
    /// # Errors
    ///
    /// [`Error::Reentrant`] when called on one of tattler's own threads (from
    /// a log callback): it would have to wait for that very thread;
    /// [`Error::Stopped`] once the reader is stopped; [`Error::Config`] for
    /// an empty list; [`Error::Spawn`] when a thread cannot be started.
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
    ///
    /// # Errors
    ///
    /// As [`set_resources`](Self::set_resources).
    pub fn restart_resources(&self, resources: &[ResourceSpec]) -> Result<bool, Error> {
        self.change_resources(resources, true)
    }

    fn change_resources(&self, resources: &[ResourceSpec], restart: bool) -> Result<bool, Error> {
        if on_tattler_thread() {
            return Err(Error::Reentrant("set_resources"));
        }
        if !self.electors.lock().is_empty() {
            return Err(Error::Config(
                "set_resources: not with leader_election (the elector starts and stops the streams)"
                    .into(),
            ));
        }
        let mut resources = resources.to_vec();
        for spec in resources.iter_mut().filter(|s| s.shard.is_none()) {
            spec.shard = self.shard;
        }
        let (wildcards, named): (Vec<ResourceSpec>, Vec<ResourceSpec>) = dedup(&resources)
            .into_iter()
            .partition(ResourceSpec::is_wildcard);
        if named.is_empty() && wildcards.is_empty() {
            return Err(Error::Config("resources: nothing to watch".into()));
        }
        let changed = reconcile(&self.registry, &named, Scope::Named, restart)?;
        let wildcards_changed = self.registry.roster.lock().wildcards != wildcards;
        self.set_wildcards(wildcards)?;
        Ok(changed || wildcards_changed)
    }

    /// Relists every resource now, one at a time, as the relist timer does
    /// (see [`Config::relist_interval`](crate::Config::relist_interval)): a fresh stream syncs while the
    /// running one goes on, then replaces it. Blocks until done; the entries
    /// it produces must be consumed meanwhile (from another thread), as
    /// always. Resources that failed for good, or have not synced yet, are
    /// left alone. Returns false if the reader stopped first, or when called
    /// on one of tattler's own threads (from a log callback).
    pub fn relist(&self) -> bool {
        if on_tattler_thread() {
            return false;
        }
        relist_all(&self.registry, &self.closing)
    }

    /// True once [`stop`](Self::stop) or [`close`](Self::close) was called.
    pub fn is_stopped(&self) -> bool {
        matches!(self.closing.try_recv(), Err(TryRecvError::Disconnected))
    }

    /// Stops every stream and joins every thread. Returns within about a
    /// second, whether streams are idle, connecting, reading or blocked on a
    /// full channel (a TCP connect under way ends within 0.1 s on Linux,
    /// elsewhere it finishes first, bounded by `connect_timeout`; a thread
    /// in a DNS lookup finishes it first, bounded by the system resolver's
    /// own timeout). Dropping the reader does the same.
    pub fn close(self) {
        drop(self)
    }

    /// The server and where the configuration came from.
    pub fn info(&self) -> &ReaderInfo {
        &self.info
    }

    /// What the reader has delivered, to resume from in a new reader
    /// ([`Config::resume`](crate::Config::resume)): per resource whose full state is complete, its
    /// resourceVersion and the objects the consumer holds.
    ///
    /// It matches what the consumer got exactly when taken after
    /// [`stop`](Self::stop) and once [`next`](Self::next) has returned
    /// [`Closed`] (every entry taken). Taken while the reader runs, it may
    /// hold changes still waiting in the channel, which a resumed reader
    /// would then not deliver.
    ///
    /// A part whose resourceVersion is empty (taken during a re-sync, or
    /// the checkpoint kept in the cluster, which a new leader resumes from
    /// that way on purpose) has no resume point: its stream re-syncs
    /// against the objects it holds (unchanged ones as `Snapshot`, changed
    /// ones as `Update`, new ones as `Add`, gone ones as inferred `Delete`,
    /// then `Synced`). With [`Config::leader_election`](crate::Config::leader_election), it holds the
    /// streams of this reader's leadership only (none while following).
    ///
    /// ```no_run
    /// use kube_tattler::{Access, Checkpoint, Config, Reader};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let mut config = Config::new(Access::infer()?).watch(["pods"])?;
    ///     if let Ok(bytes) = std::fs::read("pods.checkpoint") {
    ///         config.resume = Some(Checkpoint::from_bytes(&bytes)?);
    ///     }
    ///     let reader = Reader::open(config)?;
    ///     // … take entries until it is time to go, then:
    ///     reader.stop();
    ///     for entry in &reader { /* the last ones */ }
    ///     std::fs::write("pods.checkpoint", reader.checkpoint().to_bytes())?;
    ///     Ok(())
    /// }
    /// ```
    pub fn checkpoint(&self) -> crate::checkpoint::Checkpoint {
        checkpoint_of(&self.registry)
    }

    /// The counters in the Prometheus text exposition format (version
    /// 0.0.4), ready to serve on an agent's `/metrics`: per stream (labels
    /// `resource`, and `namespace`, `label_selector`, `field_selector`,
    /// `metadata_only`, `shard` where set, and with a shard `sharding`: see
    /// [`StreamStats::sharding`]) events, bytes, reconnects, re-syncs,
    /// relists, stale drops, skipped pieces, objects tracked, synced, failed,
    /// LIST fallback and seconds since the last full state; for the reader,
    /// entries and bytes waiting in the channel.
    pub fn metrics_text(&self) -> String {
        let streams: Vec<(String, StreamStats)> = {
            let roster = self.registry.roster.lock();
            roster
                .handles
                .iter()
                .map(|h| {
                    let stats = h.snapshot();
                    (stats::metric_labels(&stats, &h.spec), stats)
                })
                .collect()
        };
        stats::metrics_text(&streams, self.rx.len(), self.control.used())
    }

    /// Counters of each stream, in the order the resources were configured.
    ///
    /// ```no_run
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// for s in reader.stats() {
    ///     println!("{}: {} objects, synced {}, {:?}", s.resource, s.objects, s.synced, s.last_error);
    /// }
    /// ```
    pub fn stats(&self) -> Vec<StreamStats> {
        let roster = self.registry.roster.lock();
        roster.handles.iter().map(StreamHandle::snapshot).collect()
    }
}

/// What the consumer has been sent, per resource (see [`Reader::checkpoint`]).
fn checkpoint_of(registry: &Registry) -> crate::checkpoint::Checkpoint {
    let streams: Vec<(ResourceSpec, Arc<crate::delivery::state::ResourceState>)> = {
        let roster = registry.roster.lock();
        roster
            .handles
            .iter()
            .map(|h| (h.spec.clone(), h.state.clone()))
            .collect()
    };
    let mut resources = Vec::new();
    for (spec, state) in streams {
        let ledger = state.ledger();
        // Not synced now (a re-sync, a first sync under way): no resume
        // point; a reader resumed from it re-syncs against the objects.
        let resource_version = ledger.resume_point().cloned().unwrap_or_default();
        let objects = ledger.export();
        drop(ledger);
        resources.push(crate::checkpoint::CheckpointPart {
            spec,
            resource_version,
            objects,
        });
    }
    crate::checkpoint::Checkpoint { resources }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop();
        let threads = [self.timer.lock().take(), self.explorer.lock().take()];
        for t in threads.into_iter().flatten() {
            if t.thread().id() != std::thread::current().id() {
                let _ = crate::sync::join(t);
            }
        }
        let (mut streams, helpers) = {
            let mut roster = self.registry.roster.lock();
            (
                std::mem::take(&mut roster.handles),
                std::mem::take(&mut roster.helpers),
            )
        };
        for s in &mut streams {
            s.join();
        }
        for t in helpers {
            let _ = crate::sync::join(t);
        }
        let electors = std::mem::take(&mut *self.electors.lock());
        if !electors.is_empty() {
            // Joined, and back for the electors' last checkpoints, which
            // read their ledgers; then each releases its Lease.
            self.registry.roster.lock().handles = streams;
            let (threads, finishes): (Vec<_>, Vec<_>) = electors.into_iter().unzip();
            drop(finishes);
            for t in threads {
                if t.thread().id() != std::thread::current().id() {
                    let _ = crate::sync::join(t);
                }
            }
            self.registry.roster.lock().handles.clear();
        }
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let streams = self.registry.roster.lock().handles.len();
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

/// Blocking iterator returned by [`Reader::iter`] and `&Reader`'s
/// [`IntoIterator`]: [`Reader::next`] until [`Closed`], and `None` ever
/// after.
#[derive(Debug)]
pub struct Iter<'a> {
    reader: &'a Reader,
}

impl Iterator for Iter<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.reader.next().ok()
    }
}

// Once Closed, `next` answers Closed at once, forever.
impl std::iter::FusedIterator for Iter<'_> {}

/// `for entry in &reader`: as [`Reader::iter`] (C-ITER): blocks for each
/// entry, and ends when the reader is stopped and drained.
impl<'a> IntoIterator for &'a Reader {
    type Item = Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
