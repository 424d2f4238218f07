//! A stream's sink: decoded events batched, judged against the resource's
//! ledger and sent, in order, in the resource's turn; the end of a full
//! state (inferred deletes, then Synced); a resume's catch-up; and the Error
//! entries of pieces that are skipped or of a resource that failed.
//!
//! The sink flushes its batch itself before anything that follows the
//! batched events (a skipped piece's Error entry, a bookmark, a full state's
//! end, the request's end): no call site writes the flush. What it learns
//! (an entry delivered, the resume point moved, a full state completed, the
//! stream retired) it reports to the stream's [`Course`].

use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::Sender;

use crate::api::end::End;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::lifecycle::{Claim, Completed, StreamId};
use crate::delivery::state::{ResourceState, SyncGate};
use crate::delivery::table::{Vanished, Verdict};
use crate::objects::scrub::Edits;
use crate::objects::shape::Shaped;
use crate::stream::course::{Bookmark, Course, Notice};
use crate::wire::decode::{DecodeError, EventType, ObjectMeta};
use crate::wire::rv::Rv;
use crate::{Change, Entry, ErrorInfo, Reason, Resource, Shard};

/// At most this many object events, or this many bytes of objects, are
/// decoded before they are judged and sent. Sending them together lets a
/// waiting consumer wake once per batch, not once per entry. Once synced, a
/// batch ends early whenever the next frame is not yet buffered, so a live
/// event never waits for the next one; during the initial state (which ends
/// with a bookmark that sends the rest) batches stay full. Measured at
/// 100,000 pods: ending batches at every read instead cost 8% more time to
/// Synced; 256 instead of 64 gained nothing.
const BATCH: usize = 64;
const BATCH_BYTES: usize = 1 << 20;

/// How long an initial object may wait in a batch for others to join it
/// (live ones never wait): a server that trickles its initial state still
/// has its entries flow.
const INITIAL_WAIT: Duration = Duration::from_millis(100);

/// An object event decoded ahead of its verdict.
pub(crate) struct Decoded {
    pub kind: EventType,
    pub meta: ObjectMeta<'static>,
    /// `None`: not to be delivered (shaping dropped it, or it could not be
    /// shaped): an object the consumer has gets a Delete.
    pub object: Option<Vec<u8>>,
}

/// Decoded events waiting to be judged and sent, bounded in count and bytes.
#[derive(Default)]
struct Batch {
    items: Vec<Decoded>,
    bytes: usize,
    /// When the first of `items` came.
    since: Option<Instant>,
}

/// A stream's sink.
pub(crate) struct Sink {
    /// This stream's name in the resource's lifecycle.
    id: StreamId,
    state: Arc<ResourceState>,
    gate: Option<Arc<SyncGate>>,
    out: Out,
    stop: Stop,
    settings: Arc<StreamSettings>,
    /// What entries carry: the resource as resolved, its kind once known.
    resource: Arc<Resource>,
    /// Only metadata is asked for: objects are `PartialObjectMetadata`, whose
    /// kind is not the resource's.
    metadata_only: bool,
    /// The byte-level edits the decoder makes, and whether shaping needs a
    /// `Value` after them (a transform, an event filter).
    edits: Edits,
    needs_value: bool,
    batch: Batch,
    /// A relist's replacement says here that it synced (to be swapped in).
    promote: Option<Sender<()>>,
    /// The stream's shard, unless it is everything: no object outside it
    /// is judged, tracked or delivered.
    shard: Option<Shard>,
    /// An object outside the shard came (the server does not shard), and
    /// the log said so.
    told_unsharded: bool,
}

impl Sink {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: StreamId,
        state: Arc<ResourceState>,
        gate: Option<Arc<SyncGate>>,
        out: Out,
        stop: Stop,
        settings: Arc<StreamSettings>,
        resource: Arc<Resource>,
        metadata_only: bool,
        promote: Option<Sender<()>>,
        shard: Option<Shard>,
    ) -> Sink {
        let shaping = &settings.shaping;
        Sink {
            edits: shaping.edits(&resource),
            needs_value: shaping.needs_value(&resource),
            id,
            state,
            gate,
            out,
            stop,
            settings,
            resource,
            metadata_only,
            batch: Batch::default(),
            promote,
            shard: shard.filter(|s| !s.is_whole()),
            told_unsharded: false,
        }
    }

    /// What entries carry.
    pub(crate) fn resource(&self) -> Arc<Resource> {
        self.resource.clone()
    }

    /// Discovery resolved the resource (`gvr`, as stats name it): entries
    /// carry it from now on.
    pub(crate) fn resolved(&mut self, resource: Resource, gvr: String) {
        self.resource = Arc::new(resource);
        self.edits = self.settings.shaping.edits(&self.resource);
        self.needs_value = self.settings.shaping.needs_value(&self.resource);
        *self.state.counters.resolved.lock() = Some(gvr);
    }

    /// The edits the decoder makes to this resource's objects.
    pub(crate) fn edits(&self) -> Edits {
        self.edits
    }

    /// The resource's live counters.
    pub(crate) fn counters(&self) -> &crate::delivery::state::Counters {
        &self.state.counters
    }

    /// The server answered.
    pub(crate) fn heard(&self) {
        self.state.heard();
    }

    /// `n` more body bytes came from the server.
    pub(crate) fn received(&self, n: u64) {
        if n > 0 {
            self.state.counters.bytes.fetch_add(n, Ordering::Relaxed);
            self.state.heard();
        }
    }

    // --- the batch ---

    /// Adds an event to the batch.
    pub(crate) fn push(&mut self, d: Decoded) {
        let b = &mut self.batch;
        if b.items.is_empty() {
            b.since = Some(Instant::now());
        }
        b.bytes += d.object.as_ref().map_or(0, Vec::len);
        b.items.push(d);
    }

    /// Whether the batch goes now: full, or (the next frame not being
    /// buffered yet, `more` false) at once once synced, and during a full
    /// state once its first object has waited `INITIAL_WAIT` (a burst fills
    /// batches long before).
    pub(crate) fn due(&self, synced: bool, more: bool) -> bool {
        let b = &self.batch;
        if b.items.len() >= BATCH || b.bytes >= BATCH_BYTES {
            return true;
        }
        !b.items.is_empty()
            && !more
            && (synced || b.since.is_some_and(|t| t.elapsed() >= INITIAL_WAIT))
    }

    /// Judges and sends the batch, in order; `Some` ends the connection.
    /// The stream holds the resource's turn over the batch (another stream
    /// of the resource cannot slip in between) and its ledger only while
    /// judging, never across a send.
    pub(crate) fn flush(&mut self, course: &mut Course) -> Option<End> {
        if self.batch.items.is_empty() {
            return None;
        }
        self.batch.bytes = 0;
        let state = self.state.clone();
        // The reader keeps looking for the next entry rather than parking
        // between this batch's entries.
        let control = self.out.control.clone();
        let _burst = control.sending();
        let turn = state.turn();
        let mut items = std::mem::take(&mut self.batch.items).into_iter();
        let mut end = None;
        for d in items.by_ref() {
            let rv = d.meta.resource_version.clone();
            // Every object passes here (LIST pages, initial and live watch
            // events, skipped pieces): one outside the shard only moves the
            // resume point.
            if !self.in_shard(&d.meta) {
                course.event_at(rv);
                continue;
            }
            if !self.judge(course, d) || course.is_retired() {
                end = Some(End::Stopped);
                break;
            }
            course.event_at(rv);
        }
        // Keep the allocation for the next batch.
        let mut v: Vec<Decoded> = items.collect();
        v.clear();
        self.batch.items = v;
        drop(turn);
        self.publish(course);
        end
    }

    /// How a request ends with `end`: what was batched before it goes
    /// first (unless stopping).
    pub(crate) fn end(&mut self, course: &mut Course, end: End) -> End {
        match end {
            End::Stopped => End::Stopped,
            end => self.flush(course).unwrap_or(end),
        }
    }

    /// Whether an object is in the stream's shard. One outside it means the
    /// server did not shard (it ignored `shardSelector`): counted, and the
    /// first one logged.
    fn in_shard(&mut self, meta: &ObjectMeta) -> bool {
        let Some(shard) = self.shard else {
            return true;
        };
        if shard.owns(&meta.uid) {
            return true;
        }
        self.state
            .counters
            .other_shard_drops
            .fetch_add(1, Ordering::Relaxed);
        if !self.told_unsharded {
            self.told_unsharded = true;
            log::info!(
                "{}: the server sent objects outside shard {shard}: it does not shard (ShardedListAndWatch off or unsupported); tattler filters them out here",
                self.resource
            );
        }
        false
    }

    /// Judges one event and sends what it calls for; false when stopping.
    fn judge(&mut self, course: &mut Course, d: Decoded) -> bool {
        if self.resource.kind.is_empty() && !self.metadata_only {
            if let Some(k) = &d.meta.kind {
                let mut r = (*self.resource).clone();
                r.kind = k.to_string();
                self.resource = Arc::new(r);
            }
        }
        let initial = !course.synced();
        // From the verdict to the send (or its undo), for a checkpoint taken
        // after a stop.
        let control = self.out.control.clone();
        let _delivering = control.delivering();
        // Not delivered: as far as the consumer goes, the object is gone.
        let kind = if d.object.is_some() {
            d.kind
        } else {
            EventType::Deleted
        };
        let state = self.state.clone();
        loop {
            let mut ledger = state.ledger();
            if !ledger.may_deliver(self.id, course.synced()) {
                // Replaced by a relist: its stream delivers these changes.
                course.retired();
                return true;
            }
            let change = match ledger.observe(kind, &d.meta, initial) {
                Verdict::Deliver(c) => c,
                Verdict::Stale => {
                    state.counters.stale_drops.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                Verdict::Duplicate => return true,
                Verdict::Displaced(v) => {
                    // Another object held the name: its Delete comes first.
                    drop(ledger);
                    if !self.out.send(self.inferred_delete(v), &self.stop) {
                        state.ledger().undo_last();
                        return false;
                    }
                    continue;
                }
            };
            state
                .counters
                .objects
                .store(ledger.len() as u64, Ordering::Relaxed);
            // A Delete of an object not delivered is tattler's own, at the
            // version the consumer has.
            let inferred = d.object.is_none() && d.kind != EventType::Deleted;
            let resource_version = match ledger.removed_version() {
                Some(rv) if inferred => rv,
                _ => d.meta.resource_version,
            };
            let entry = Entry {
                change,
                resource: self.resource.clone(),
                namespace: ledger.namespace_arc(d.meta.namespace.as_deref()),
                // Owned strings move in without a copy.
                name: d.meta.name.into_owned().into_boxed_str(),
                uid: d.meta.uid.into_owned().into_boxed_str(),
                resource_version,
                inferred,
                object: d.object,
                error: None,
            };
            drop(ledger);
            if !self.out.send(entry, &self.stop) {
                state.ledger().undo_last();
                return false;
            }
            course.progress();
            return true;
        }
    }

    fn inferred_delete(&self, v: Vanished) -> Entry {
        Entry {
            change: Change::Delete,
            resource: self.resource.clone(),
            namespace: v.namespace,
            name: v.name,
            uid: v.uid.into_boxed_str(),
            resource_version: v.resource_version,
            object: None,
            inferred: true,
            error: None,
        }
    }

    /// Tells the lifecycle where this stream is (once a batch, not per
    /// event): the resource's resume point when it is the primary.
    pub(crate) fn publish(&self, course: &Course) {
        self.state.ledger().advance(self.id, course.cursor());
    }

    // --- full states ---

    /// Starts (or, after a failed attempt, retries) a full state, as the
    /// lifecycle allows: while a relist's replacement delivers one, a
    /// primary waits (once the replacement has synced, this stream is retired
    /// and ends; if it gives up, this one syncs); a replacement never waits
    /// for a primary. `None` when stopping or retired; else the request
    /// budget's count to go on from when it waited for a replacement that
    /// gave up (0 when it did not wait).
    pub(crate) fn claim_sync(&mut self, course: &mut Course, name: &str) -> Option<u32> {
        let mut waited = false;
        loop {
            let (claim, lost) = self.state.ledger().claim_sync(self.id, course.fresh_sync());
            if lost {
                // The primary re-syncs: its namespace's state is incomplete.
                self.gate_begin();
            }
            match claim {
                Claim::Granted { .. } => {
                    course.sync_granted();
                    let handed = if waited {
                        self.state.ledger().handed_streak(self.id)
                    } else {
                        0
                    };
                    return Some(handed);
                }
                Claim::Retire => {
                    log::info!("{name}: another stream is syncing this resource; this one ends");
                    course.retired();
                    return None;
                }
                Claim::Wait if !waited => {
                    log::info!("{name}: a relist is syncing this resource; waiting for it");
                    waited = true;
                }
                Claim::Wait => {}
            }
            // The relist ends within its own bounds (it gives up after a few
            // failures); a stop wakes this wait at once.
            if self.stop.sleep(Duration::from_millis(100)) {
                return None;
            }
        }
    }

    /// Waits `d` unless stopped first (true when stopped).
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        self.stop.sleep(d)
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

    fn gate_begin(&self) {
        if let Some(g) = &self.gate {
            g.begin(self.state.member());
        }
    }

    /// Whether the resource's Synced goes out now that this stream has
    /// completed a full state: always, unless the resource is watched in
    /// several namespaces and another of them is still syncing (the last
    /// to finish sends it).
    fn pass_gate(&self) -> bool {
        self.gate
            .as_ref()
            .is_none_or(|g| g.finish(self.state.member()))
    }

    /// A bookmark at `rv`: what was batched goes first; then the bookmark
    /// moves the resume point, ends the full state, or is counted. `Err`
    /// ends the connection.
    pub(crate) fn bookmark(
        &mut self,
        course: &mut Course,
        rv: Rv,
        initial_events_end: bool,
        name: &str,
    ) -> Result<(), End> {
        if let Some(end) = self.flush(course) {
            return Err(end);
        }
        match course.bookmark(rv, initial_events_end) {
            Bookmark::Moved => {
                self.publish(course);
                if !self.check_caught_up(course, name) {
                    return Err(End::Stopped);
                }
            }
            Bookmark::CaughtUp => {
                self.publish(course);
                if !self.caught_up(course, name) {
                    return Err(End::Stopped);
                }
            }
            Bookmark::EndsSync => {
                if !self.finish_sync(course, name) {
                    return Err(End::Stopped);
                }
            }
            Bookmark::Plain => {}
            Bookmark::IgnoresInitialEvents => {
                return Err(ignored_initial_events(
                    name,
                    "bookmarks without the initial-events-end one",
                ))
            }
        }
        Ok(())
    }

    /// Completes a (re-)sync at the resume point: what was batched, inferred
    /// deletes, then the lifecycle's verdict, then Synced. False when
    /// stopping or retired.
    pub(crate) fn finish_sync(&mut self, course: &mut Course, name: &str) -> bool {
        if self.flush(course).is_some() || self.stop.is_set() {
            return false;
        }
        let state = self.state.clone();
        let turn = state.turn();
        // From the inferred deletes to their restore, for a checkpoint.
        let control = self.out.control.clone();
        let delivering = control.delivering();
        let ended = {
            let mut ledger = state.ledger();
            if !ledger.current(self.id) {
                course.retired();
                return false;
            }
            ledger.end_sync(course.cursor())
        };
        let gone = ended.gone;
        let vanished = gone.len();
        let mut gone = gone.into_iter();
        while let Some(v) = gone.next() {
            let back = v.clone();
            if !self.out.send(self.inferred_delete(v), &self.stop) {
                // Not delivered: the state must still hold these objects.
                let mut ledger = state.ledger();
                for v in std::iter::once(back).chain(gone) {
                    ledger.restore(v);
                }
                return false;
            }
        }
        // Only now, with every delete sent, is the state complete here: a
        // checkpoint cannot export it before.
        let (completed, objects) = {
            let mut ledger = state.ledger();
            let completed = ledger.complete(self.id, course.cursor());
            (completed, ledger.len())
        };
        drop(delivering);
        if completed == Completed::Retired {
            course.retired();
            return false;
        }
        course.synced_now();
        // The stats say so before the consumer can see Synced.
        *state.counters.last_error.lock() = None;
        state.counters.stale.store(false, Ordering::Relaxed);
        *state.counters.synced_at.lock() = Some(SystemTime::now());
        state
            .counters
            .objects
            .store(objects as u64, Ordering::Relaxed);
        let rv = course.cursor().clone();
        let entry = Entry::marker(Change::Synced, self.resource.clone(), rv.clone());
        if self.pass_gate() && !self.out.send(entry, &self.stop) {
            return false;
        }
        drop(turn);
        if ended.went_back {
            log::warn!(
                "{name}: the full state at resourceVersion {rv} is older than the last one (an etcd restore?); it is the truth from now on"
            );
        }
        if vanished > 0 {
            log::info!("{name}: {vanished} objects vanished since the last sync");
        }
        log::info!("{name}: synced {objects} objects at resourceVersion {rv}");
        if completed == Completed::Promoted {
            if let Some(done) = self.promote.take() {
                // The reader swaps this stream in (it may already have gone
                // away); from now on this is the resource's stream.
                let _ = done.try_send(());
            }
            course.promoted();
        }
        true
    }

    /// Sends a resumed resource's Synced once its watch has reached the
    /// catch-up target; false when stopping.
    pub(crate) fn check_caught_up(&mut self, course: &mut Course, name: &str) -> bool {
        !course.reached_target() || self.caught_up(course, name)
    }

    /// A resumed resource has replayed what changed while it was stopped:
    /// what was batched goes first, then its state is the server's as of
    /// now and its Synced goes out. False when stopping.
    pub(crate) fn caught_up(&mut self, course: &mut Course, name: &str) -> bool {
        if self.flush(course).is_some() {
            return false;
        }
        if !course.caught_up() {
            return true;
        }
        *self.state.counters.last_error.lock() = None;
        *self.state.counters.synced_at.lock() = Some(SystemTime::now());
        self.state.counters.stale.store(false, Ordering::Relaxed);
        self.state.ledger().caught_up(self.id, course.cursor());
        log::info!(
            "{name}: resumed and caught up at resourceVersion {}",
            course.cursor()
        );
        let entry = Entry::marker(
            Change::Synced,
            self.resource.clone(),
            course.cursor().clone(),
        );
        let _turn = self.state.turn();
        !self.pass_gate() || self.out.send(entry, &self.stop)
    }

    // --- notices ---

    /// Tells the consumer the resource is not current (`notice`), for the
    /// stream of `namespace`; false when stopping.
    pub(crate) fn stale(
        &mut self,
        course: &mut Course,
        notice: Notice,
        namespace: Option<&str>,
        name: &str,
    ) -> bool {
        if self.flush(course).is_some() {
            return false;
        }
        self.state.counters.stale.store(true, Ordering::Relaxed);
        log::warn!(
            "{name}: not current ({}): {}",
            notice.reason,
            notice.message
        );
        let mut entry = Entry::failure(
            self.resource.clone(),
            ErrorInfo::ours(notice.reason, notice.code, notice.message, false),
        );
        entry.change = Change::Stale;
        entry.namespace = namespace.map(Arc::from);
        entry.resource_version = course.cursor().clone();
        // One namespace of several not current: the resource's Synced waits
        // for it as for a full state, so that another namespace catching up
        // does not say the whole resource is current.
        self.gate_begin();
        let _turn = self.state.turn();
        self.out.send(entry, &self.stop)
    }

    // --- pieces that cannot be delivered, and failures ---

    /// The event filter and the transform, for an object already checked
    /// and edited by the decoder: its bytes to deliver, or `None` when it is
    /// not delivered (dropped, or failed and reported). `Err` ends the
    /// connection.
    pub(crate) fn shaped(
        &mut self,
        course: &mut Course,
        bytes: Vec<u8>,
        meta: &ObjectMeta,
        name: &str,
    ) -> Result<Option<Vec<u8>>, End> {
        // Outside the shard: dropped by the flush, never shown to a transform.
        let foreign = self.shard.is_some_and(|s| !s.owns(&meta.uid));
        if !self.needs_value || foreign {
            return Ok(Some(bytes));
        }
        Ok(match self.settings.shaping.apply(&self.resource, &bytes) {
            Shaped::Keep => Some(bytes),
            Shaped::Replace(v) => Some(v),
            Shaped::Drop => None,
            Shaped::Failed(why) => {
                let e = DecodeError {
                    reason: Reason::TransformFailed,
                    message: format!("the object {why}; skipped"),
                    namespace: meta.namespace.as_deref().map(String::from),
                    name: Some(meta.name.to_string()),
                    meta: None,
                };
                self.skip(course, e, &[], name)?;
                None
            }
        })
    }

    /// Reports a piece that cannot be delivered (an Error entry of its own,
    /// once per piece: `piece` is its bytes when they are at hand) and skips
    /// it; what was batched before it goes first; an object the consumer
    /// holds, when it could be named, goes with a Delete. `Err` ends the
    /// connection.
    pub(crate) fn skip(
        &mut self,
        course: &mut Course,
        e: DecodeError,
        piece: &[u8],
        name: &str,
    ) -> Result<(), End> {
        if let Some(end) = self.flush(course) {
            return Err(end);
        }
        let what = match (&e.namespace, &e.name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}: "),
            (None, Some(n)) => format!("{n}: "),
            _ => String::new(),
        };
        self.state.counters.skipped.fetch_add(1, Ordering::Relaxed);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (e.reason, &e.namespace, &e.name, &e.message, piece).hash(&mut h);
        if let Some(m) = &e.meta {
            m.resource_version.as_str().hash(&mut h);
        }
        if self.state.first_report(h.finish()) {
            log::warn!("{name}: {what}{}", e.message);
            let mut entry = Entry::failure(
                self.resource.clone(),
                ErrorInfo::ours(e.reason, 0, e.message, false),
            );
            entry.namespace = e.namespace.map(Arc::from);
            entry.name = e.name.unwrap_or_default().into_boxed_str();
            if !self.out.send(entry, &self.stop) {
                return Err(End::Stopped);
            }
        }
        if let Some(meta) = e.meta {
            self.push(Decoded {
                kind: EventType::Modified,
                meta: *meta,
                object: None,
            });
            if let Some(end) = self.flush(course) {
                return Err(end);
            }
        }
        Ok(())
    }

    /// The resource failed for good: its Error entry (and, when the other
    /// namespaces of the resource waited only for this one, their Synced).
    /// A relist's replacement only logs it: the primary runs on.
    pub(crate) fn fail(&mut self, course: &Course, info: ErrorInfo, name: &str) {
        if course.is_replacement() {
            // The primary runs on; the next relist tries again.
            log::warn!(
                "{name}: relist failed ({} {} {}); keeping the running stream",
                info.code,
                info.reason,
                info.message
            );
            return;
        }
        log::error!(
            "{name}: giving up: {} {} {}",
            info.code,
            info.reason,
            info.message
        );
        let counters = &self.state.counters;
        counters.failed.store(true, Ordering::Relaxed);
        *counters.last_error.lock() =
            Some(format!("{} {}: {}", info.code, info.reason, info.message));
        let entry = Entry::failure(self.resource.clone(), info);
        let owed = self
            .gate
            .as_ref()
            .is_some_and(|g| g.leave(self.state.member()));
        if self.out.send(entry, &self.stop) && owed {
            // The last of the resource's namespaces to finish: the others are
            // synced, and the resource's Synced was theirs to wait for.
            let synced = Entry::marker(
                Change::Synced,
                self.resource.clone(),
                course.cursor().clone(),
            );
            self.out.send(synced, &self.stop);
        }
    }

    /// The stream thread ends: a full state it left open is abandoned.
    pub(crate) fn leave(&self) {
        self.state.ledger().leave(self.id);
    }
}

/// The watch-list was answered as a plain watch (`why`): the state goes
/// on by LIST.
pub(crate) fn ignored_initial_events(name: &str, why: &str) -> End {
    log::info!("{name}: {why}: the server ignores sendInitialEvents");
    End::Quiet
}
