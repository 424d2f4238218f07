//! One resource's state, shared by its streams (the primary and, during a
//! relist, its replacement) and read by the reader: the [`Ledger`] (its
//! lifecycle and its per-object table, under one lock so that a verdict and
//! the ownership it depends on cannot drift apart), the turn to deliver, the
//! pieces already reported, the live counters, and the gate that makes a
//! resource watched in several namespaces one resource to the consumer.
//!
//! The ledger is the one place that opens and closes a full state in both
//! the lifecycle and the table: each transition below is one method, so the
//! two cannot disagree about whether a full state is open.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::delivery::lifecycle::{Claim, Completed, Gate, Lifecycle, StreamId};
use crate::delivery::table::{SyncEnd, Table, Vanished, Verdict};
use crate::resource_version::Rv;
use crate::sync::{Mutex, MutexGuard};
use crate::wire::decode::{EventType, ObjectMeta};
use crate::wire::shard::Shard;
use crate::wire::sharding::{Seen, Sharding};

/// Reported pieces remembered per resource, to report each once.
const MAX_REPORTED: usize = 4096;

/// Live counters of one stream, read by [`crate::Reader::stats`]. Whether
/// the resource is synced and where it resumes are its [`Ledger`]'s.
#[derive(Default)]
pub(crate) struct Counters {
    pub events: AtomicU64,
    pub bytes: AtomicU64,
    pub reconnects: AtomicU64,
    pub resyncs: AtomicU64,
    pub relists: AtomicU64,
    pub stale_drops: AtomicU64,
    pub skipped: AtomicU64,
    /// Objects outside the stream's shard, dropped (a server that does not shard).
    pub other_shard_drops: AtomicU64,
    /// Who keeps the stream to its shard, as far as it has seen; written
    /// only by [`Counters::saw_sharding`].
    sharding: Mutex<Sharding>,
    pub objects: AtomicU64,
    pub list_fallback: AtomicBool,
    pub failed: AtomicBool,
    /// The consumer was told the resource is not current (a Stale entry)
    /// and has not had its Synced since.
    pub stale: AtomicBool,
    /// When bytes last came from the server, in milliseconds since `born`.
    pub heard_ms: AtomicU64,
    /// When the last full state completed.
    pub synced_at: Mutex<Option<SystemTime>>,
    /// Why the stream last had to retry or give up; cleared by a completed sync.
    pub last_error: Mutex<Option<String>>,
    /// `group/version/resource` once discovery has resolved a name.
    pub resolved: Mutex<Option<String>>,
}

impl Counters {
    /// Who keeps the stream to its shard, as far as it has seen.
    pub(crate) fn sharding(&self) -> Sharding {
        *self.sharding.lock()
    }

    /// A stream of shard `shard` saw `seen`: the new verdict, when it
    /// changed (for the stream to log, after the lock).
    pub(crate) fn saw_sharding(&self, shard: &Shard, seen: Seen<'_>) -> Option<Sharding> {
        let mut s = self.sharding.lock();
        let after = s.after(shard, seen);
        (after != *s).then(|| {
            *s = after;
            after
        })
    }
}

/// A resource's lifecycle and its per-object table.
#[derive(Default)]
pub(crate) struct Ledger {
    life: Lifecycle,
    table: Table,
    streaks: Streaks,
}

/// The request budget's count (full states the server answered since the
/// last healthy watching) as each of a resource's streams last published
/// it: a relist's replacement starts from the primary's, and a primary that
/// waited for a replacement that gave up goes on from the replacement's, so
/// that two streams of one collection cannot ask for full states faster
/// than one would (simulation seed 234: 6 in 3 s).
#[derive(Default)]
struct Streaks {
    primary: u32,
    replacement: u32,
}

impl Ledger {
    /// A resource resumed from a checkpoint taken at `rv`.
    pub(crate) fn resumed(rv: Rv) -> Ledger {
        Ledger {
            life: Lifecycle::resumed(rv),
            table: Table::default(),
            streaks: Streaks::default(),
        }
    }

    // --- a stream's transitions ---

    /// A stream starts: a primary, or a relist's `replacement`.
    pub(crate) fn join(&mut self, id: StreamId, replacement: bool) {
        self.life.join(id, replacement);
    }

    /// `id`'s request budget counts `streak` full states (see [`Streaks`]).
    pub(crate) fn publish_streak(&mut self, id: StreamId, streak: u32) {
        if self.life.live(id) {
            self.streaks.primary = streak;
        } else if self.life.current(id) {
            self.streaks.replacement = streak;
        }
    }

    /// The count `id` goes on from: a replacement the primary's, a primary
    /// the last replacement's.
    pub(crate) fn handed_streak(&self, id: StreamId) -> u32 {
        if self.life.live(id) {
            self.streaks.replacement
        } else {
            self.streaks.primary
        }
    }

    /// A stream ends: a full state it left open is abandoned (a later one
    /// starts afresh), and another may deliver one.
    pub(crate) fn leave(&mut self, id: StreamId) {
        if self.life.syncing(id) {
            self.table.abandon_sync();
        }
        self.life.release(id);
    }

    /// `id` asks to deliver a full state; granted, the table opens one
    /// (`fresh_wanted`: a new full state rather than a retry of the open
    /// one). The flag says whether the resource's state became incomplete.
    pub(crate) fn claim_sync(&mut self, id: StreamId, fresh_wanted: bool) -> (Claim, bool) {
        let was = self.life.synced();
        let claim = self.life.claim_sync(id);
        if let Claim::Granted { continuing } = claim {
            let fresh = fresh_wanted || !continuing || !self.table.in_sync();
            let overlapped = (!self.life.live(id)).then(|| self.life.resource_version());
            self.table.begin_sync(fresh, overlapped);
        }
        (claim, was && !self.life.synced())
    }

    /// `id`'s live events stopped and a new full state is due; whether the
    /// resource's state became incomplete.
    pub(crate) fn lose_sync(&mut self, id: StreamId) -> bool {
        let was = self.life.synced();
        self.life.lose_sync(id);
        was && !self.life.synced()
    }

    /// Whether `id` may still deliver: it holds the resource, and once its
    /// own state is complete (`synced`) only its live events count.
    pub(crate) fn may_deliver(&self, id: StreamId, synced: bool) -> bool {
        self.life.current(id) && (!synced || self.life.live(id))
    }

    /// Whether `id` still holds the resource (as primary or replacement).
    pub(crate) fn current(&self, id: StreamId) -> bool {
        self.life.current(id)
    }

    /// Judges one event (see [`Table::observe`]).
    pub(crate) fn observe(&mut self, kind: EventType, meta: &ObjectMeta, initial: bool) -> Verdict {
        self.table.observe(kind, meta, initial)
    }

    /// Takes back the last verdict: its entry was not sent.
    pub(crate) fn undo_last(&mut self) {
        self.table.undo_last();
    }

    /// The version the consumer held of the object the last verdict removed.
    pub(crate) fn removed_version(&self) -> Option<Rv> {
        self.table.removed_version()
    }

    /// The shared text of a namespace.
    pub(crate) fn namespace_arc(&mut self, ns: Option<&str>) -> Option<Arc<str>> {
        self.table.namespace_arc(ns)
    }

    /// Objects the consumer holds.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Ends the open full state at `rv`: what it lacks is forgotten (each
    /// gets an inferred Delete).
    pub(crate) fn end_sync(&mut self, rv: &Rv) -> SyncEnd {
        self.table.end_sync(rv)
    }

    /// Puts back an object whose inferred Delete was not sent.
    pub(crate) fn restore(&mut self, v: Vanished) {
        self.table.restore(v);
    }

    /// `id` delivered its full state at `rv`, with every inferred Delete.
    /// A relist's replacement promoted in place of a primary that was
    /// current at `before` will replay, from its snapshot's resourceVersion
    /// on, live events the primary already delivered: the table's floor
    /// rises to `before`, so that an object deleted meanwhile cannot come
    /// back with its old Add, whatever became of the tombstones.
    pub(crate) fn complete(&mut self, id: StreamId, rv: &Rv) -> Completed {
        let before = self.life.resume_point().cloned();
        let completed = self.life.complete(id, rv);
        if let (Completed::Promoted, Some(before)) = (completed, before) {
            self.table.raise_floor(&before);
        }
        completed
    }

    /// The primary's resume point moved.
    pub(crate) fn advance(&mut self, id: StreamId, rv: &Rv) {
        self.life.advance(id, rv);
    }

    /// A resumed primary replayed what changed while stopped, up to `rv`.
    pub(crate) fn caught_up(&mut self, id: StreamId, rv: &Rv) {
        self.life.advance(id, rv);
        self.life.caught_up(id);
    }

    /// A relist asked `id` to re-sync by itself (opaque resourceVersions).
    pub(crate) fn take_resync(&mut self, id: StreamId) -> bool {
        self.life.take_resync(id)
    }

    // --- what the reader asks and does ---

    /// Whether the consumer's state is complete as of now.
    pub(crate) fn synced(&self) -> bool {
        self.life.synced()
    }

    /// The primary's last resourceVersion.
    pub(crate) fn resource_version(&self) -> &Rv {
        self.life.resource_version()
    }

    /// Where a checkpoint resumes: `None` while the state is not complete.
    pub(crate) fn resume_point(&self) -> Option<&Rv> {
        self.life.resume_point()
    }

    /// Whether the resource's resourceVersions are opaque (no order).
    pub(crate) fn opaque(&self) -> bool {
        self.life.opaque()
    }

    /// Asks the primary to re-sync by itself; the count of completed full
    /// states to wait past.
    pub(crate) fn want_resync(&mut self) -> u64 {
        self.life.want_resync()
    }

    /// Full states completed, by any stream.
    pub(crate) fn completed(&self) -> u64 {
        self.life.completed()
    }

    /// What the consumer holds, for a checkpoint or a hand-over.
    pub(crate) fn export(&self) -> Vec<crate::checkpoint::Held> {
        self.table.export()
    }

    /// Takes the objects whose namespace `moves` says go elsewhere.
    pub(crate) fn split_off(
        &mut self,
        moves: impl Fn(Option<&str>) -> bool,
    ) -> Vec<crate::checkpoint::Held> {
        self.table.split_off(moves)
    }

    /// Takes what a checkpoint (or a hand-over) says the consumer holds.
    pub(crate) fn import(&mut self, objects: &[crate::checkpoint::Held], rv: &Rv) {
        self.table.import(objects, rv);
    }
}

/// One resource's state, shared by its streams and the reader.
pub(crate) struct ResourceState {
    ledger: Mutex<Ledger>,
    /// The turn to deliver: a stream holds it while it judges and sends a
    /// batch, so that two streams of one resource cannot reorder or double
    /// an object's changes. The one lock held across a send: only stream
    /// threads take it (never a caller's thread, so `checkpoint()` or
    /// `stats()` on the consumer's thread cannot wait for a full channel),
    /// and the send it waits for honours stop.
    turn: Mutex<()>,
    /// Pieces already reported as skipped (hashes), so that a relist or a
    /// re-sync does not report an unchanged bad object again. Bounded.
    reported: Mutex<HashSet<u64>>,
    /// This resource's key in its [`SyncGate`], when it has one.
    member: u64,
    /// The live counters.
    pub counters: Counters,
    /// When the state was made: the counters' clock.
    born: Instant,
}

impl Default for ResourceState {
    fn default() -> Self {
        ResourceState {
            ledger: Mutex::default(),
            turn: Mutex::default(),
            reported: Mutex::default(),
            member: 0,
            counters: Counters::default(),
            born: Instant::now(),
        }
    }
}

impl ResourceState {
    /// A resource's state, resumed at `resume` when given.
    pub(crate) fn new(member: u64, resume: Option<Rv>) -> ResourceState {
        ResourceState {
            ledger: Mutex::new(resume.map(Ledger::resumed).unwrap_or_default()),
            member,
            ..ResourceState::default()
        }
    }

    /// The ledger, locked: never across a send, a join or a log call.
    #[cfg_attr(debug_assertions, track_caller)]
    pub(crate) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock()
    }

    /// The turn to deliver (see the field).
    #[cfg_attr(debug_assertions, track_caller)]
    pub(crate) fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock()
    }

    /// Whether the piece hashed `h` is reported for the first time.
    pub(crate) fn first_report(&self, h: u64) -> bool {
        let mut reported = self.reported.lock();
        if reported.len() >= MAX_REPORTED {
            reported.clear();
        }
        reported.insert(h)
    }

    /// This resource's key in its gate.
    pub(crate) fn member(&self) -> u64 {
        self.member
    }

    /// Bytes came from the server now.
    pub(crate) fn heard(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.counters
            .heard_ms
            .store(ms.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// How long ago bytes last came from the server; `None` before any.
    pub(crate) fn since_heard(&self) -> Option<Duration> {
        let ms = self
            .counters
            .heard_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        (ms > 0).then(|| {
            self.born
                .elapsed()
                .saturating_sub(Duration::from_millis(ms))
        })
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

    /// A namespace joins (or re-joins, syncing again).
    pub(crate) fn join(&self, member: u64) {
        self.gate.lock().join(member);
    }

    /// A namespace's state is incomplete from now on.
    pub(crate) fn begin(&self, member: u64) {
        self.gate.lock().begin(member);
    }

    /// A namespace completed a full state; true when the resource's Synced
    /// goes out now (the last of its namespaces to finish sends it).
    pub(crate) fn finish(&self, member: u64) -> bool {
        self.gate.lock().finish(member)
    }

    /// A member is gone; true when the resource's Synced, held back for it,
    /// is now to be sent (by the caller).
    pub(crate) fn leave(&self, member: u64) -> bool {
        self.gate.lock().leave(member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode::ObjectMeta;
    use std::borrow::Cow;

    fn meta(name: &str, uid: &str, rv: u64) -> ObjectMeta<'static> {
        ObjectMeta {
            kind: None,
            namespace: Some(Cow::Owned("a".into())),
            name: Cow::Owned(name.into()),
            uid: Cow::Owned(uid.into()),
            resource_version: Rv::from_u64(rv),
        }
    }

    /// Simulation seed 234: the request budget's count passes between a
    /// resource's primary and its relist's replacement, by role.
    #[test]
    fn the_budget_count_is_handed_between_primary_and_replacement() {
        const P: StreamId = 1;
        const R: StreamId = 2;
        let mut l = Ledger::default();
        l.join(P, false);
        l.publish_streak(P, 2);
        l.join(R, true);
        assert_eq!(
            l.handed_streak(R),
            2,
            "the replacement starts from the primary's"
        );
        l.publish_streak(R, 4);
        assert_eq!(
            l.handed_streak(P),
            4,
            "the primary goes on from the replacement's"
        );
        l.publish_streak(P, 0);
        assert_eq!(l.handed_streak(P), 4, "each role writes its own");
        // Gone: a stream that holds nothing publishes nothing.
        l.leave(R);
        l.publish_streak(R, 9);
        assert_eq!(l.handed_streak(P), 4);
        // Promoted, the replacement publishes as the primary.
        l.join(3, true);
        assert!(matches!(l.claim_sync(3, true).0, Claim::Granted { .. }));
        let _ = l.end_sync(&Rv::from_u64(8));
        assert_eq!(l.complete(3, &Rv::from_u64(8)), Completed::Promoted);
        l.publish_streak(3, 1);
        assert_eq!(l.handed_streak(4), 1);
    }

    /// Convergence seed 12: a relist's replacement synced from an old
    /// snapshot (rv 8) while the primary delivered p9's create (23) and
    /// delete (32); promoted, its own live events replay them, and a second
    /// relist's fresh sync had cleared the tombstones. The floor, raised to
    /// where the primary was, drops the replayed Add.
    #[test]
    fn a_promoted_replacement_cannot_replay_what_its_primary_delivered() {
        const P: StreamId = 1;
        const R: StreamId = 2;
        let mut l = Ledger::default();
        l.join(P, false);
        assert!(matches!(l.claim_sync(P, true).0, Claim::Granted { .. }));
        assert_eq!(l.complete(P, &Rv::from_u64(6)), Completed::Synced);
        // The relist begins; the primary goes on live.
        l.join(R, true);
        assert!(matches!(l.claim_sync(R, true).0, Claim::Granted { .. }));
        let p9 = "00000000-0000-0000-0000-000000000009";
        assert_eq!(
            l.observe(EventType::Added, &meta("p9", p9, 23), false),
            Verdict::Deliver(crate::entry::Change::Add)
        );
        l.advance(P, &Rv::from_u64(23));
        assert_eq!(
            l.observe(EventType::Deleted, &meta("p9", p9, 32), false),
            Verdict::Deliver(crate::entry::Change::Delete)
        );
        l.advance(P, &Rv::from_u64(32));
        // The replacement's snapshot is at 8: p9 is not in it.
        let _ = l.end_sync(&Rv::from_u64(8));
        assert_eq!(l.complete(R, &Rv::from_u64(8)), Completed::Promoted);
        // A second relist's fresh sync clears the tombstones.
        l.join(3, true);
        assert!(matches!(l.claim_sync(3, true).0, Claim::Granted { .. }));
        // The promoted stream's live events replay p9's Add.
        assert_eq!(
            l.observe(EventType::Added, &meta("p9", p9, 23), false),
            Verdict::Stale
        );
        // A new object after it is delivered.
        assert_eq!(
            l.observe(
                EventType::Added,
                &meta("p10", "00000000-0000-0000-0000-000000000010", 33),
                false
            ),
            Verdict::Deliver(crate::entry::Change::Add)
        );
    }
}
