//! A stream's place in its resource's lifecycle (`crate::delivery`): its
//! name there, the full-state handshake with the ledger (claiming a full
//! state, losing it, handing the request budget on), and the Synced gate of
//! a resource watched in several namespaces. It sends nothing: the sink
//! delivers, and the stream's course decides.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;

use crate::delivery::channel::Stop;
use crate::delivery::lifecycle::{Claim, StreamId};
use crate::delivery::state::{ResourceState, SyncGate};
use crate::resource_version::Rv;

/// What a claim for a full state came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// Granted; `handed` is the request budget's count to go on from when
    /// the stream waited for a relist's replacement that then gave up (0
    /// when it did not wait).
    Granted { handed: u32 },
    /// Another stream syncs the resource: this one ends.
    Retire,
    /// The reader is stopping.
    Stopped,
}

/// A stream's place in its resource's lifecycle.
pub(crate) struct Place {
    /// This stream's name in the resource's lifecycle.
    id: StreamId,
    state: Arc<ResourceState>,
    /// The resource's other namespaces, when there are several.
    gate: Option<Arc<SyncGate>>,
    /// A relist's replacement says here that it synced (to be swapped in).
    promote: Option<Sender<()>>,
}

impl Place {
    /// Joins the resource's lifecycle before the stream's thread runs: a
    /// relist started right after cannot overtake it.
    pub(crate) fn join(
        id: StreamId,
        state: Arc<ResourceState>,
        gate: Option<Arc<SyncGate>>,
        promote: Option<Sender<()>>,
    ) -> Place {
        state.ledger().join(id, promote.is_some());
        Place {
            id,
            state,
            gate,
            promote,
        }
    }

    /// This stream's name in the resource's lifecycle.
    pub(crate) fn id(&self) -> StreamId {
        self.id
    }

    /// The resource's shared state.
    pub(crate) fn state(&self) -> &Arc<ResourceState> {
        &self.state
    }

    /// Starts (or, after a failed attempt, retries: `fresh` false) a full
    /// state, as the lifecycle allows: while a relist's replacement delivers
    /// one, a primary waits (once the replacement has synced, this stream is
    /// retired and ends; if it gives up, this one syncs); a replacement never
    /// waits for a primary.
    pub(crate) fn claim_sync(&self, fresh: bool, stop: &Stop, name: &str) -> Claimed {
        let mut waited = false;
        loop {
            let (claim, lost) = self.state.ledger().claim_sync(self.id, fresh);
            if lost {
                // The primary re-syncs: its namespace's state is incomplete.
                self.gate_begin();
            }
            match claim {
                Claim::Granted { .. } => {
                    let handed = if waited { self.handed_streak() } else { 0 };
                    return Claimed::Granted { handed };
                }
                Claim::Retire => {
                    log::info!("{name}: another stream is syncing this resource; this one ends");
                    return Claimed::Retire;
                }
                Claim::Wait if !waited => {
                    log::info!("{name}: a relist is syncing this resource; waiting for it");
                    waited = true;
                }
                Claim::Wait => {}
            }
            // The relist ends within its own bounds (it gives up after a few
            // failures); a stop wakes this wait at once.
            if stop.sleep(Duration::from_millis(100)) {
                return Claimed::Stopped;
            }
        }
    }

    /// The stream decided to re-sync: the resource's state is incomplete
    /// from now on, before the full state is even asked for.
    pub(crate) fn lose_sync(&self) {
        if self.state.ledger().lose_sync(self.id) {
            self.gate_begin();
        }
    }

    /// Whether a relist asked this stream to re-sync by itself.
    pub(crate) fn take_resync(&self) -> bool {
        self.state.ledger().take_resync(self.id)
    }

    /// Publishes this stream's request budget count (see
    /// `Ledger::publish_streak`).
    pub(crate) fn publish_streak(&self, streak: u32) {
        self.state.ledger().publish_streak(self.id, streak);
    }

    /// The budget count this stream goes on from when it starts (a relist's
    /// replacement: its primary's).
    pub(crate) fn handed_streak(&self) -> u32 {
        self.state.ledger().handed_streak(self.id)
    }

    /// Tells the lifecycle where this stream is (once a batch, not per
    /// event): the resource's resume point when it is the primary.
    pub(crate) fn advance(&self, cursor: &Rv) {
        self.state.ledger().advance(self.id, cursor);
    }

    /// This namespace is not current (a re-sync, a Stale): the resource's
    /// Synced waits for it as for a full state.
    pub(crate) fn gate_begin(&self) {
        if let Some(g) = &self.gate {
            g.begin(self.state.member());
        }
    }

    /// Whether the resource's Synced goes out now that this stream is
    /// current: always, unless the resource is watched in several
    /// namespaces and another of them is still syncing (the last to finish
    /// sends it).
    pub(crate) fn pass_gate(&self) -> bool {
        self.gate
            .as_ref()
            .is_none_or(|g| g.finish(self.state.member()))
    }

    /// This namespace failed for good: whether the resource's Synced, which
    /// the other namespaces waited only for this one to send, is owed now.
    pub(crate) fn leave_gate(&self) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.leave(self.state.member()))
    }

    /// A relist's replacement synced: the reader swaps it in (it may already
    /// have gone away).
    pub(crate) fn promote(&mut self) {
        if let Some(done) = self.promote.take() {
            let _ = done.try_send(());
        }
    }

    /// The stream thread ends: a full state it left open is abandoned.
    pub(crate) fn leave(&self) {
        self.state.ledger().leave(self.id);
    }
}
