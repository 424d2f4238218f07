//! The reader's registry of threads: per resource its state, its running
//! stream thread and, during a relist, the replacement being synced; what a
//! new stream needs to start; and the turn to stop and start them. The
//! public API (`reader/mod.rs`), the watch set, relists, the leader's
//! streams and the wildcards' discovery thread all go through it.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver, Sender, TryRecvError};

use super::threads;
use crate::access::client::AgentSlot;
use crate::access::transport::Transport;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::state::{ResourceState, SyncGate};
use crate::entry::Term;
use crate::error::Error;
use crate::resource::ResourceSpec;
use crate::resource_version::Rv;
use crate::stream::{Role, Stream, StreamInit};
use crate::sync::Mutex;

/// What the reader, its relist timer, its discovery thread, its electors
/// and its calls share.
pub(super) struct Registry {
    /// Held only for short sections that neither wait, join nor log, so that
    /// `stats()` and `stop()` never wait long, whatever else is going on.
    pub(super) roster: Mutex<Roster>,
    /// The turn to stop and start stream threads (see [`Registry::turn`]):
    /// one token, in this channel while nobody has it.
    turn: (Sender<()>, Receiver<()>),
    /// Disconnects when the reader stops: ends every wait for the turn.
    closing: Receiver<()>,
    /// How often the discovery thread looks for the wildcards' resources.
    pub(super) discovery_interval: Duration,
}

impl Registry {
    pub(super) fn new(roster: Roster, closing: Receiver<()>, discovery_interval: Duration) -> Self {
        let turn = bounded(1);
        let _ = turn.0.try_send(());
        Registry {
            roster: Mutex::new(roster),
            turn,
            closing,
            discovery_interval,
        }
    }

    /// Waits for the turn to stop and start stream threads; `None` once
    /// the reader is stopped.
    ///
    /// Every change that ends stream threads and starts others
    /// (`set_resources`, the discovery thread's, a relist's start and swap,
    /// a leader's start and stop) takes it, and keeps it until the threads
    /// it ended are joined and the ones it starts have started: so a
    /// resource's old threads have ended before a concurrent change starts
    /// new ones, and two changes never interleave their reads of the
    /// roster. A turn, not a lock: no guard is held while its holder joins
    /// (lib.rs, "# Threads"); the stream threads it joins never wait for
    /// it, and a stop ends every wait for it. Once stopped nothing starts
    /// again (the roster's starter is gone), so what stops threads then
    /// needs no turn.
    pub(super) fn turn(&self) -> Option<Turn<'_>> {
        if self.closing.try_recv() == Err(TryRecvError::Disconnected) {
            return None;
        }
        select! {
            recv(self.turn.1) -> token => token.ok().map(|()| Turn(&self.turn.0)),
            recv(self.closing) -> _ => None,
        }
    }
}

/// The turn to stop and start stream threads ([`Registry::turn`]);
/// dropping it gives it back.
pub(super) struct Turn<'a>(&'a Sender<()>);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

/// Who runs, and what starting one more needs.
pub(super) struct Roster {
    /// Dropped by stop: every stream's `Stop::all` disconnects.
    pub(super) closing_tx: Option<Sender<()>>,
    pub(super) handles: Vec<StreamHandle>,
    /// What a new stream needs; `None` once stopped.
    pub(super) start: Option<Starter>,
    /// `"*"`-like specs: their resources are found by the discovery thread.
    pub(super) wildcards: Vec<ResourceSpec>,
    /// Tells the discovery thread to look now (the wildcards changed).
    pub(super) look_now: Option<Sender<()>>,
    /// The discovery thread's connection, shut down by stop.
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
#[derive(Clone)]
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

    /// Starts a stream thread for the resource of `h`.
    pub(super) fn spawn(&self, h: &StreamHandle, role: Role) -> Result<Thread, Error> {
        self.spawn_from(h, role, None)
    }

    fn spawn_from(
        &self,
        h: &StreamHandle,
        role: Role,
        resume: Option<Rv>,
    ) -> Result<Thread, Error> {
        let slot = Arc::new(AgentSlot::default());
        let (stop_tx, own) = bounded(0);
        // A leader's stream stamps its entries with the term it runs in.
        let out = match &h.term {
            Some(term) => self.out.in_term(term.clone()),
            None => self.out.clone(),
        };
        let stream = Stream::new(StreamInit {
            spec: h.spec.clone(),
            transport: self.transport.clone(),
            slot: slot.clone(),
            settings: self.settings.clone(),
            out: out.clone(),
            stop: Stop {
                all: self.closing.clone(),
                own,
            },
            state: h.state.clone(),
            role,
            resume,
            gate: h.gate.clone(),
        });
        let report = threads::Report {
            resource: stream.resource(),
            out,
            stop: stream.stop().clone(),
        };
        let name = format!("tattler-watch-{}", h.spec.shown_name());
        let join = threads::spawn(name, report, move || stream.run()).map_err(Error::Spawn)?;
        Ok(Thread {
            slot,
            stop_tx: Some(stop_tx),
            join: Some(join),
        })
    }

    /// What the discovery thread asks with: a client of its own, the slot
    /// that stop shuts down, and its own stop's sender (held by the thread).
    pub(super) fn probe(&self) -> (crate::api::client::Client, Arc<AgentSlot>, Sender<()>) {
        let (own_tx, own) = bounded::<()>(0);
        let slot = Arc::new(AgentSlot::default());
        let client = crate::api::client::Client::new(
            self.transport.clone(),
            slot.clone(),
            self.settings.clone(),
            Stop {
                all: self.closing.clone(),
                own,
            },
        );
        (client, slot, own_tx)
    }

    /// Starts a resource, from its part of a checkpoint when there is one.
    pub(super) fn start_from(
        &self,
        spec: &ResourceSpec,
        resume: Option<&crate::checkpoint::CheckpointPart>,
        gate: Option<(Arc<SyncGate>, u64)>,
        term: Option<&Term>,
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
            state: Arc::new(ResourceState::new(member, resume_at.clone())),
            running: Thread::default(),
            pending: None,
            term: term.cloned(),
        };
        if let Some(part) = resume {
            let mut ledger = h.state.ledger();
            ledger.import(&part.objects, &part.resource_version);
            h.state
                .counters
                .objects
                .store(ledger.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        h.running = self.spawn_from(&h, Role::Primary, resume_at)?;
        Ok(h)
    }
}

/// One resource: its state, its running stream thread and, during a
/// relist, the replacement being synced.
pub(super) struct StreamHandle {
    pub(super) spec: ResourceSpec,
    /// Found by discovery for a wildcard (rather than named by the caller).
    pub(super) found: bool,
    /// Shared with the resource's streams in other namespaces.
    pub(super) gate: Option<Arc<SyncGate>>,
    pub(super) state: Arc<ResourceState>,
    pub(super) running: Thread,
    pub(super) pending: Option<Thread>,
    /// Under leader election: the term its entries carry (relists too).
    pub(super) term: Option<Term>,
}

impl StreamHandle {
    /// Signals its threads to stop; does not wait.
    pub(super) fn signal(&mut self) {
        self.running.signal();
        if let Some(p) = &mut self.pending {
            p.signal();
        }
    }

    /// Waits for its threads to end.
    #[cfg_attr(debug_assertions, track_caller)]
    pub(super) fn join(&mut self) {
        self.running.join();
        if let Some(p) = &mut self.pending {
            p.join();
        }
    }
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
    #[cfg_attr(debug_assertions, track_caller)]
    pub(super) fn join(&mut self) {
        if let Some(t) = self.join.take() {
            if t.thread().id() != std::thread::current().id() {
                // Panics are caught inside the thread; a join error cannot carry one.
                let _ = crate::sync::join(t);
            }
        }
    }

    pub(super) fn id(&self) -> Option<std::thread::ThreadId> {
        self.join.as_ref().map(|j| j.thread().id())
    }
}
