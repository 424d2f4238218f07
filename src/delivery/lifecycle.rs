//! One resource's lifecycle, owned in one place: which stream's live events
//! count (the primary), which stream is a relist's replacement, which one is
//! delivering a full state now, whether the consumer's state is complete
//! (synced), and where it resumes (what a checkpoint exports). Streams ask
//! and report; every change is one method here, each a transition of the
//! table below, and nothing else writes these fields.
//!
//! | event                         | primary P syncs | replacement R syncs           |
//! |-------------------------------|-----------------|-------------------------------|
//! | P asks to sync                | granted         | P waits (R may take over)     |
//! | R asks to sync                | R retires       | granted                       |
//! | R completes                   | —               | R is primary, P retires       |
//! | R gives up                    | —               | P may sync                    |
//! | a retired stream asks anything| retire          | retire                        |
//!
//! A retired stream delivers nothing more and ends: so a stream that lost
//! the resource to a relist can never take it back (the resource would be
//! left with a stream the relist then stops, and none at all).

use crate::resource_version::Rv;

/// A stream, unique among a reader's streams; 0 is none.
pub(crate) type StreamId = u64;

/// The answer to a stream that asks to deliver a full state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Deliver it. `continuing`: this stream's earlier attempt at the same
    /// full state is still open (a retry after a cut).
    Granted { continuing: bool },
    /// Another stream (a relist's) is delivering one: ask again later.
    Wait,
    /// The resource is another stream's now: end.
    Retire,
}

/// What a completed full state changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completed {
    /// The primary re-synced (or synced for the first time).
    Synced,
    /// A relist's replacement completed: it is the primary from now on.
    Promoted,
    /// The stream no longer holds the resource: nothing changes.
    Retired,
}

/// The lifecycle of one resource (one spec: one namespace, one selector).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    primary: StreamId,
    replacement: StreamId,
    /// The stream whose full state is open in the tracker.
    syncer: StreamId,
    synced: bool,
    /// Resumed from a checkpoint and not caught up yet: the state is complete
    /// as of the checkpoint (a checkpoint may export it) but not as of now
    /// (the resource is not reported synced, its Synced has not gone out).
    catching_up: bool,
    /// Where the consumer's state is complete: the primary's last
    /// resourceVersion once synced; what a checkpoint exports.
    resume: Rv,
    /// Full states completed, by any stream.
    completed: u64,
    /// The primary is to re-sync (a relist of a resource whose
    /// resourceVersions are opaque: without an order, a snapshot read while
    /// another stream delivers live events cannot be judged against them).
    resync_wanted: bool,
}

impl Lifecycle {
    /// A resource resumed from a checkpoint taken at `rv`: its state is
    /// complete there (the first Synced still waits for the catch-up).
    pub(crate) fn resumed(rv: Rv) -> Lifecycle {
        Lifecycle {
            synced: true,
            catching_up: true,
            resume: rv,
            ..Lifecycle::default()
        }
    }

    /// The resumed primary has replayed what changed while stopped.
    pub(crate) fn caught_up(&mut self, id: StreamId) {
        if id == self.primary {
            self.catching_up = false;
        }
    }

    /// A stream starts: a primary (the first, or a restart replacing a
    /// stopped one) or a relist's replacement.
    pub(crate) fn join(&mut self, id: StreamId, replacement: bool) {
        if replacement {
            self.replacement = id;
        } else {
            if self.syncer != 0 && self.syncer != id {
                self.syncer = 0;
            }
            self.primary = id;
        }
    }

    /// Whether `id` still holds the resource (as primary or replacement).
    pub(crate) fn current(&self, id: StreamId) -> bool {
        id != 0 && (id == self.primary || id == self.replacement)
    }

    /// Whether `id`'s live events are delivered.
    pub(crate) fn live(&self, id: StreamId) -> bool {
        id != 0 && id == self.primary
    }

    /// `id` wants to deliver a full state.
    pub(crate) fn claim_sync(&mut self, id: StreamId) -> Claim {
        if !self.current(id) {
            return Claim::Retire;
        }
        if id == self.primary {
            // Its live events stopped: the consumer's state is not complete.
            self.synced = false;
            self.catching_up = false;
        }
        if self.syncer == 0 || self.syncer == id {
            let continuing = self.syncer == id;
            self.syncer = id;
            return Claim::Granted { continuing };
        }
        if id == self.primary {
            Claim::Wait
        } else {
            // The primary is re-syncing: its full state will be as fresh.
            self.replacement = 0;
            Claim::Retire
        }
    }

    /// The primary's live events stopped and a new full state is due (its
    /// machine decided so): the consumer's state is not complete from now
    /// on, before the full state is even asked for, so that no relist starts
    /// a second stream's full state beside it meanwhile.
    pub(crate) fn lose_sync(&mut self, id: StreamId) {
        if self.live(id) {
            self.synced = false;
            self.catching_up = false;
        }
    }

    /// `id` delivered its full state, taken at `rv`, and every inferred
    /// delete of it.
    pub(crate) fn complete(&mut self, id: StreamId, rv: &Rv) -> Completed {
        if !self.current(id) {
            return Completed::Retired;
        }
        if self.syncer == id {
            self.syncer = 0;
        }
        self.synced = true;
        self.resume = rv.clone();
        self.completed += 1;
        if id == self.replacement {
            self.primary = id;
            self.replacement = 0;
            Completed::Promoted
        } else {
            Completed::Synced
        }
    }

    /// The primary's resume point moved (live events, bookmarks).
    pub(crate) fn advance(&mut self, id: StreamId, rv: &Rv) {
        if self.synced && id == self.primary && *rv != self.resume {
            self.resume = rv.clone();
        }
    }

    /// `id` ends, or gives up its full state: another may deliver one.
    pub(crate) fn release(&mut self, id: StreamId) {
        if self.syncer == id {
            self.syncer = 0;
        }
        if self.replacement == id {
            self.replacement = 0;
        }
    }

    /// Whether `id`'s full state is open (its earlier attempt may be
    /// continued).
    pub(crate) fn syncing(&self, id: StreamId) -> bool {
        id != 0 && self.syncer == id
    }

    /// Whether the consumer's state is complete as of now (the last full
    /// state was, the primary's live events are flowing, and a resumed one
    /// has caught up).
    pub(crate) fn synced(&self) -> bool {
        self.synced && !self.catching_up
    }

    /// What a checkpoint exports: the resume point when the state is
    /// complete; `None` while it is not (a resumed reader then re-syncs
    /// against the objects held).
    pub(crate) fn resume_point(&self) -> Option<&Rv> {
        (self.synced && !self.resume.as_str().is_empty()).then_some(&self.resume)
    }

    /// Whether the resource's resourceVersions are opaque (not integers):
    /// a relist is then the primary's own re-sync ([`want_resync`](Self::want_resync)).
    pub(crate) fn opaque(&self) -> bool {
        !self.resume.as_str().is_empty() && self.resume.number().is_none()
    }

    /// Asks the primary for a new full state of its own; the count of full
    /// states completed so far, to wait for the next.
    pub(crate) fn want_resync(&mut self) -> u64 {
        self.resync_wanted = true;
        self.completed
    }

    /// Whether `id`, the primary, is to re-sync now (the request is taken).
    pub(crate) fn take_resync(&mut self, id: StreamId) -> bool {
        let take = self.resync_wanted && self.live(id);
        if take {
            self.resync_wanted = false;
        }
        take
    }

    /// Full states completed so far.
    pub(crate) fn completed(&self) -> u64 {
        self.completed
    }

    /// The resume point, whatever the state (for the stats).
    pub(crate) fn resource_version(&self) -> &Rv {
        &self.resume
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: StreamId = 1;
    const R: StreamId = 2;
    const Q: StreamId = 3;

    fn rv(n: u64) -> Rv {
        Rv::from_u64(n)
    }

    fn synced_primary() -> Lifecycle {
        let mut l = Lifecycle::default();
        l.join(P, false);
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert_eq!(l.complete(P, &rv(10)), Completed::Synced);
        l
    }

    #[test]
    fn a_primary_syncs_watches_and_resumes() {
        let mut l = synced_primary();
        assert!(l.synced() && l.live(P));
        l.advance(P, &rv(12));
        assert_eq!(l.resume_point(), Some(&rv(12)));
        // A re-sync: not synced until it completes; a retry continues it.
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert_eq!(l.resume_point(), None);
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: true });
        l.advance(P, &rv(13)); // initial events do not move the resume point
        assert_eq!(l.complete(P, &rv(20)), Completed::Synced);
        assert_eq!(l.resume_point(), Some(&rv(20)));
    }

    #[test]
    fn a_relist_takes_over_and_the_old_stream_retires_for_good() {
        let mut l = synced_primary();
        l.join(R, true);
        assert_eq!(l.claim_sync(R), Claim::Granted { continuing: false });
        // The replacement's snapshot does not move the resume point; the
        // primary's live events do, and count.
        l.advance(R, &rv(11));
        assert_eq!(l.resume_point(), Some(&rv(10)));
        assert!(l.live(P) && !l.live(R));
        // The primary's watch expires meanwhile: it waits for the relist.
        assert_eq!(l.claim_sync(P), Claim::Wait);
        assert_eq!(l.resume_point(), None, "not synced while nobody watches");
        assert_eq!(l.complete(R, &rv(30)), Completed::Promoted);
        assert!(l.live(R) && !l.live(P) && l.synced());
        // The old primary can never take the resource back.
        assert_eq!(l.claim_sync(P), Claim::Retire);
        assert_eq!(l.complete(P, &rv(40)), Completed::Retired);
        l.advance(P, &rv(41));
        assert_eq!(l.resume_point(), Some(&rv(30)));
        l.release(P);
        assert!(l.live(R));
    }

    #[test]
    fn a_primary_that_must_resync_is_not_synced_at_once() {
        let mut l = synced_primary();
        l.join(R, true);
        l.lose_sync(R);
        assert!(l.synced(), "only the primary's state counts");
        l.lose_sync(P);
        assert!(!l.synced());
        assert_eq!(l.resume_point(), None);
    }

    #[test]
    fn a_replacement_yields_to_a_primary_resync_and_may_give_up() {
        let mut l = synced_primary();
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        l.join(R, true);
        assert_eq!(l.claim_sync(R), Claim::Retire);
        assert!(!l.current(R));
        assert_eq!(l.complete(P, &rv(20)), Completed::Synced);
        // Another relist that gives up: the primary may sync again at once.
        l.join(Q, true);
        assert_eq!(l.claim_sync(Q), Claim::Granted { continuing: false });
        assert_eq!(l.claim_sync(P), Claim::Wait);
        l.release(Q);
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert!(l.live(P));
    }

    #[test]
    fn a_restarted_primary_replaces_the_stopped_one() {
        let mut l = synced_primary();
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        l.join(Q, false);
        assert_eq!(l.claim_sync(Q), Claim::Granted { continuing: false });
        assert_eq!(l.claim_sync(P), Claim::Retire);
        assert_eq!(l.complete(Q, &rv(5)), Completed::Synced);
        assert_eq!(l.resume_point(), Some(&rv(5)));
    }

    #[test]
    fn an_opaque_resource_is_relisted_by_its_primary() {
        let mut l = Lifecycle::default();
        l.join(P, false);
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert_eq!(l.complete(P, &Rv::new("opaque-1")), Completed::Synced);
        assert!(l.opaque());
        let before = l.want_resync();
        assert!(!l.take_resync(Q), "only the primary");
        assert!(l.take_resync(P));
        assert!(!l.take_resync(P), "once");
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert_eq!(l.complete(P, &Rv::new("opaque-2")), Completed::Synced);
        assert_eq!(l.completed(), before + 1);
        assert!(!synced_primary().opaque());
    }

    #[test]
    fn a_resumed_resource_exports_its_checkpoint_until_it_resyncs() {
        let mut l = Lifecycle::resumed(rv(7));
        l.join(P, false);
        assert_eq!(l.resume_point(), Some(&rv(7)));
        assert!(!l.synced(), "not as of now until caught up");
        l.advance(P, &rv(9));
        assert_eq!(l.resume_point(), Some(&rv(9)));
        l.caught_up(P);
        assert!(l.synced());
        assert_eq!(l.claim_sync(P), Claim::Granted { continuing: false });
        assert_eq!(l.resume_point(), None);
    }
}

/// The `Synced` gate of one resource watched in several namespaces (one
/// stream each, each with its own [`Lifecycle`]): the consumer sees one
/// resource, so its `Synced` goes out when a member completes a full state
/// and no other member is in the middle of one; a member that leaves (removed
/// by `set_resources`, failed for good) while the others wait for it lets
/// the owed `Synced` go.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Gate {
    /// Each member, and whether its consumer-visible state is incomplete.
    members: Vec<(u64, bool)>,
    /// A member completed a full state whose `Synced` has not gone out.
    owed: bool,
}

impl Gate {
    /// A member joins, its initial state still to come.
    pub(crate) fn join(&mut self, member: u64) {
        match self.members.iter_mut().find(|m| m.0 == member) {
            Some(m) => m.1 = true,
            None => self.members.push((member, true)),
        }
    }

    /// A member's state became incomplete (its primary re-syncs).
    pub(crate) fn begin(&mut self, member: u64) {
        self.join(member);
    }

    /// A member completed a full state: whether the resource's `Synced`
    /// goes out now.
    pub(crate) fn finish(&mut self, member: u64) -> bool {
        if let Some(m) = self.members.iter_mut().find(|m| m.0 == member) {
            m.1 = false;
        }
        self.owed = true;
        self.release()
    }

    /// A member is gone: whether the `Synced` it held back goes out now.
    pub(crate) fn leave(&mut self, member: u64) -> bool {
        self.members.retain(|m| m.0 != member);
        self.release()
    }

    fn release(&mut self) -> bool {
        let go = self.owed && self.members.iter().all(|m| !m.1);
        if go {
            self.owed = false;
        }
        go
    }
}

#[cfg(test)]
mod gate_tests {
    use super::Gate;

    #[test]
    fn one_synced_per_resource_whatever_its_namespaces_do() {
        let mut g = Gate::default();
        g.join(1);
        g.join(2);
        // The first Synced: once both namespaces have their state.
        assert!(!g.finish(1));
        assert!(g.finish(2));
        // Both re-sync at once (a 410 for both): one Synced, after both.
        g.begin(1);
        g.begin(2);
        assert!(!g.finish(2));
        assert!(g.finish(1));
        // One re-syncs alone (or is relisted): its own Synced.
        g.begin(2);
        assert!(g.finish(2));
        assert!(g.finish(1), "a relist of a member");
        // The one waited for is removed: the Synced goes then, once.
        g.join(3);
        g.begin(1);
        assert!(!g.finish(1));
        assert!(g.leave(3));
        assert!(!g.leave(3));
        // Removing a member nobody waits for owes nothing.
        assert!(!g.leave(2));
        assert!(g.finish(1));
    }
}
