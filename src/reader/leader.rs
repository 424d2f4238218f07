//! The reader's streams as the elector sees them (leader election): started
//! once it holds the Lease, stopped and joined when it loses it (each in the
//! registry's turn), and the checkpoint it keeps in the cluster.

use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::registry::{Registry, StreamHandle};
use super::watchset::sync_gates;
use crate::checkpoint::Checkpoint;
use crate::coordination::Streams;
use crate::delivery::channel::ChannelControl;
use crate::entry::Entry;
use crate::entry::Term;
use crate::error::Error;
use crate::resource::ResourceSpec;

/// The named streams of a reader with leader election.
pub(super) struct LeaderStreams {
    pub(super) registry: Arc<Registry>,
    pub(super) named: Vec<ResourceSpec>,
    /// The reader's channel, looked at (never taken from) for entries the
    /// consumer has not taken yet.
    pub(super) rx: Receiver<Entry>,
    pub(super) control: Arc<ChannelControl>,
}

impl Streams for LeaderStreams {
    fn start(&self, resume: Option<&Checkpoint>, term: &Term) -> Result<(), Error> {
        let Some(_turn) = self.registry.turn() else {
            return Err(Error::Stopped);
        };
        let mut guard = self.registry.roster.lock();
        let roster = &mut *guard;
        let Some(start) = roster.start.as_ref() else {
            return Err(Error::Stopped);
        };
        for (spec, gate) in self.named.iter().zip(sync_gates(&self.named)) {
            // From the checkpoint's resourceVersion by a watch, as
            // client-go's reflector resumes: the server replays what
            // changed since (an object created after the checkpoint and
            // deleted since comes as ADDED then DELETED: no ghost of what
            // the last leader delivered). Only a 410 re-syncs, against the
            // objects the checkpoint holds, after a Stale notice.
            let part = resume.and_then(|c| c.part(spec));
            let handle = start.start_from(spec, part, gate, Some(term))?;
            roster.handles.push(handle);
        }
        Ok(())
    }

    fn stop(&self) {
        // Once the reader is stopped there is no turn, and none needed:
        // nothing starts again.
        let _turn = self.registry.turn();
        // Only this Lease's streams: with shards, the others' run on.
        let mut gone = {
            let mut roster = self.registry.roster.lock();
            let (mut gone, kept): (Vec<StreamHandle>, Vec<StreamHandle>) =
                std::mem::take(&mut roster.handles)
                    .into_iter()
                    .partition(|h| self.named.contains(&h.spec));
            roster.handles = kept;
            for h in &mut gone {
                h.signal();
            }
            gone
        };
        // Streams blocked on a full channel look at their stop now.
        self.control.wake();
        for h in &mut gone {
            h.join();
        }
        // A Synced helper's send, the last one possible.
        self.control.settle();
    }

    fn quiet_checkpoint(&self) -> Option<Checkpoint> {
        let (begun, busy) = self.control.deliveries();
        if busy || !self.consumer_done() {
            return None;
        }
        let mut cp = super::checkpoint_of(&self.registry);
        cp.resources.retain(|r| self.named.contains(&r.spec));
        let (after, busy) = self.control.deliveries();
        (after == begun && !busy && self.consumer_done()).then_some(cp)
    }
}

impl LeaderStreams {
    /// Whether the consumer is done with every entry sent: it took them
    /// all and has asked for another since (`ChannelControl::asks`), so
    /// none is still in its hands (a line in a buffer not yet written, a
    /// row not yet committed) when its process dies. With the raw receiver
    /// handed out, takes are not seen: an empty channel is all there is.
    fn consumer_done(&self) -> bool {
        if self.control.is_off() {
            self.rx.is_empty()
        } else {
            self.control.all_done()
        }
    }
}
