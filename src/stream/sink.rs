//! A stream's sink: decoded events batched, judged against the resource's
//! ledger and sent, in order, in the resource's turn; the end of a full
//! state (inferred deletes, then Synced); a resume's Synced; and the Stale
//! and Error entries of a resource not current, of pieces that are skipped
//! or of a resource that failed.
//!
//! The sink flushes its batch itself before anything that follows the
//! batched events (a skipped piece's Error entry, a full state's end, a
//! notice, the request's end): no call site writes the flush. It reads the
//! stream's course through a [`View`] and never writes it: what happened (an
//! entry delivered, events judged up to a resourceVersion, a full state
//! completed, the stream retired or promoted) it records as [`Fact`]s, which
//! the stream applies to its course (`Parts::settle`).

use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::api::end::End;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::{Out, Stop};
use crate::delivery::lifecycle::Completed;
use crate::delivery::table::{Vanished, Verdict};
use crate::entry::{Change, Entry, ErrorInfo, Reason, Resource, Text};
use crate::objects::edits::Edits;
use crate::objects::shape::Shaped;
use crate::resource_version::Rv;
use crate::stream::course::vocabulary::{Fact, Notice, View};
use crate::stream::decoded::Decoded;
use crate::stream::place::Place;
use crate::wire::decode::{DecodeError, EventType, ObjectMeta};
use crate::wire::shard::Shard;
use crate::wire::sharding::{Seen, Sharding};

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

/// Decoded events waiting to be judged and sent, bounded in count and bytes.
#[derive(Default)]
struct Batch {
    items: Vec<Decoded>,
    bytes: usize,
    /// When the first of `items` came.
    since: Option<Instant>,
}

/// How judging one event went.
enum Judged {
    Delivered,
    /// Not delivered (a duplicate, an older version): nothing to send.
    Dropped,
    /// A relist replaced this stream: its stream delivers from now on.
    Retired,
    Stopped,
}

/// A stream's sink.
pub(crate) struct Sink {
    /// This stream's place in the resource's lifecycle.
    place: Place,
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
    /// The stream's shard, unless it is everything: no object outside it
    /// is judged, tracked or delivered.
    shard: Option<Shard>,
    /// What happened since the stream last applied it to its course.
    facts: Vec<Fact>,
}

impl Sink {
    pub(crate) fn new(
        place: Place,
        out: Out,
        stop: Stop,
        settings: Arc<StreamSettings>,
        resource: Arc<Resource>,
        metadata_only: bool,
        shard: Option<Shard>,
    ) -> Sink {
        let shaping = &settings.shaping;
        Sink {
            edits: shaping.edits(&resource),
            needs_value: shaping.needs_value(&resource),
            place,
            out,
            stop,
            settings,
            resource,
            metadata_only,
            batch: Batch::default(),
            shard: shard.filter(|s| !s.is_whole()),
            facts: Vec::new(),
        }
    }

    /// Hands each fact recorded since the last call to `apply`, in order.
    pub(crate) fn drain_facts(&mut self, mut apply: impl FnMut(Fact)) {
        for f in self.facts.drain(..) {
            apply(f);
        }
    }

    /// This stream's place in the resource's lifecycle.
    pub(crate) fn place(&self) -> &Place {
        &self.place
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
        *self.counters().resolved.lock() = Some(gvr);
    }

    /// The edits the decoder makes to this resource's objects.
    pub(crate) fn edits(&self) -> Edits {
        self.edits
    }

    /// The resource's live counters.
    pub(crate) fn counters(&self) -> &crate::delivery::state::Counters {
        &self.place.state().counters
    }

    /// The server answered.
    pub(crate) fn heard(&self) {
        self.place.state().heard();
    }

    /// `n` more body bytes came from the server.
    pub(crate) fn received(&self, n: u64) {
        if n > 0 {
            self.counters().bytes.fetch_add(n, Ordering::Relaxed);
            self.place.state().heard();
        }
    }

    /// Waits `d` unless stopped first (true when stopped).
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        self.stop.sleep(d)
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
    /// judging, never across a send. Records the events judged, whether one
    /// was delivered, and a retirement.
    pub(crate) fn flush(&mut self, v: View<'_>) -> Option<End> {
        if self.batch.items.is_empty() {
            return None;
        }
        self.batch.bytes = 0;
        let state = self.place.state().clone();
        // The reader keeps looking for the next entry rather than parking
        // between this batch's entries.
        let control = self.out.control.clone();
        let _burst = control.sending();
        let turn = state.turn();
        let mut batch = std::mem::take(&mut self.batch.items);
        let mut items = batch.drain(..);
        let (mut end, mut last, mut delivered, mut foreign) = (None, None, false, false);
        for d in items.by_ref() {
            let rv = d.resource_version.clone();
            // Every object passes here (LIST pages, initial and live watch
            // events, skipped pieces): one outside the shard only moves the
            // resume point.
            if !self.in_shard(d.uid()) {
                foreign = true;
                last = Some(rv);
                continue;
            }
            match self.judge(v.synced, d) {
                Judged::Delivered => delivered = true,
                Judged::Dropped => {}
                Judged::Retired => {
                    self.facts.push(Fact::Retired);
                    end = Some(End::Stopped);
                    break;
                }
                Judged::Stopped => {
                    end = Some(End::Stopped);
                    break;
                }
            }
            last = Some(rv);
        }
        // What a stop left unjudged goes; the allocation is kept for the next batch.
        drop(items);
        self.batch.items = batch;
        drop(turn);
        if foreign {
            self.saw_sharding(Seen::Outside);
        }
        if delivered {
            self.facts.push(Fact::Delivered);
        }
        // Synced, the resume point moves to the last event judged.
        let cursor = match &last {
            Some(rv) if v.synced => rv,
            _ => v.cursor,
        };
        self.place.advance(cursor);
        if let Some(rv) = last {
            self.facts.push(Fact::Judged(rv));
        }
        end
    }

    /// How a request ends with `end`: what was batched before it goes
    /// first (unless stopping).
    pub(crate) fn end(&mut self, v: View<'_>, end: End) -> End {
        match end {
            End::Stopped => End::Stopped,
            end => self.flush(v).unwrap_or(end),
        }
    }

    /// A LIST page's `metadata.shardInfo.selector`, when it had one: the
    /// server says which shard it sent.
    pub(crate) fn listed_shard_info(&self, selector: Option<&str>) {
        if let Some(selector) = selector {
            self.saw_sharding(Seen::ShardInfo(selector));
        }
    }

    /// What the stream saw that says who keeps it to its shard; the log
    /// says so whenever the verdict changes: once per resource, unless the
    /// server's answers disagree (see [`Sharding`]).
    fn saw_sharding(&self, seen: Seen<'_>) {
        let Some(shard) = self.shard else {
            return;
        };
        match self.counters().saw_sharding(&shard, seen) {
            Some(Sharding::Server) => {
                let selector = match seen {
                    Seen::ShardInfo(s) => s,
                    Seen::Outside => "",
                };
                log::info!(
                    "{}: the server shards (shardInfo {selector:?}): it sends only shard {shard}'s objects",
                    self.resource
                );
            }
            Some(Sharding::Here) => log::info!(
                "{}: the server sent objects outside shard {shard}: it does not shard (ShardedListAndWatch off or unsupported); tattler filters them out here",
                self.resource
            ),
            _ => {}
        }
    }

    /// Whether an object is in the stream's shard. One outside it means the
    /// server did not shard (it ignored `shardSelector`): counted (and
    /// said by the flush, after the turn).
    fn in_shard(&mut self, uid: &str) -> bool {
        let Some(shard) = self.shard else {
            return true;
        };
        if shard.owns(uid) {
            return true;
        }
        self.counters()
            .other_shard_drops
            .fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Judges one event (`synced`: the stream's full state is complete) and
    /// sends what it calls for.
    fn judge(&mut self, synced: bool, d: Decoded) -> Judged {
        if self.resource.kind.is_empty() && !self.metadata_only {
            if let Some(k) = &d.meta().kind {
                let mut r = (*self.resource).clone();
                r.kind = k.to_string();
                self.resource = Arc::new(r);
            }
        }
        // From the verdict to the send (or its undo), for a checkpoint taken
        // after a stop.
        let control = self.out.control.clone();
        let Some(_delivering) = control.delivering() else {
            return Judged::Stopped;
        };
        // Not delivered: as far as the consumer goes, the object is gone.
        let kind = if d.object.is_some() {
            d.kind
        } else {
            EventType::Deleted
        };
        let state = self.place.state().clone();
        let id = self.place.id();
        loop {
            let mut ledger = state.ledger();
            if !ledger.may_deliver(id, synced) {
                // Replaced by a relist: its stream delivers these changes.
                return Judged::Retired;
            }
            // Read once per verdict; let go before the strings move into the entry.
            let meta = d.meta();
            let change = match ledger.observe(kind, &meta, !synced) {
                Verdict::Deliver(c) => c,
                Verdict::Stale => {
                    state.counters.stale_drops.fetch_add(1, Ordering::Relaxed);
                    return Judged::Dropped;
                }
                Verdict::Duplicate => return Judged::Dropped,
                Verdict::Displaced(v) => {
                    // Another object held the name: its Delete comes first.
                    drop(ledger);
                    if !self.out.send(self.inferred_delete(v), &self.stop) {
                        state.ledger().undo_last();
                        return Judged::Stopped;
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
            let namespace = ledger.namespace_arc(meta.namespace.as_deref());
            let resource_version = match ledger.removed_version() {
                Some(rv) if inferred => rv,
                _ => d.resource_version,
            };
            let entry = Entry {
                change,
                resource: self.resource.clone(),
                namespace,
                // Kept in the object, or owned: they move in without a copy.
                name: d.name,
                uid: d.uid,
                resource_version,
                inferred,
                object: d.object,
                error: None,
                term: None,
                holder: None,
            };
            drop(ledger);
            if !self.out.send(entry, &self.stop) {
                state.ledger().undo_last();
                return Judged::Stopped;
            }
            return Judged::Delivered;
        }
    }

    fn inferred_delete(&self, v: Vanished) -> Entry {
        Entry {
            change: Change::Delete,
            resource: self.resource.clone(),
            namespace: v.namespace,
            name: Text::Own(v.name),
            uid: Text::from(v.uid),
            resource_version: v.resource_version,
            object: None,
            inferred: true,
            error: None,
            term: None,
            holder: None,
        }
    }

    // --- Synced ---

    /// The resource's Synced at `rv`, unless it waits for another of its
    /// namespaces (`gate`: a Synced this stream owes itself) or for a
    /// namespace that failed (not `gate`: the last to finish owes the
    /// others'). The one place a Synced leaves a stream. False when stopping.
    fn send_synced(&self, rv: Rv, gate: bool) -> bool {
        if gate && !self.place.pass_gate() {
            return true;
        }
        self.out.send_synced(self.resource.clone(), rv, &self.stop)
    }

    /// Completes a (re-)sync at the resume point `v.cursor`: what was
    /// batched, inferred deletes, then the lifecycle's verdict, then
    /// Synced; records the full state completed (or the stream retired, or
    /// promoted). False when stopping or retired.
    pub(crate) fn finish_sync(&mut self, v: View<'_>, name: &str) -> bool {
        if self.flush(v).is_some() || self.stop.is_set() {
            return false;
        }
        let state = self.place.state().clone();
        let id = self.place.id();
        let turn = state.turn();
        // From the inferred deletes to their restore, for a checkpoint.
        let control = self.out.control.clone();
        let Some(delivering) = control.delivering() else {
            return false;
        };
        let ended = {
            let mut ledger = state.ledger();
            if !ledger.current(id) {
                drop(ledger);
                self.facts.push(Fact::Retired);
                return false;
            }
            ledger.end_sync(v.cursor)
        };
        if ended.behind {
            // Judged against versions the server no longer has: this relist
            // gives up (the primary's own full state, after its resume
            // point is refused as ahead of the server, is the truth).
            drop(delivering);
            drop(turn);
            log::warn!(
                "{name}: the relist's full state at resourceVersion {} is older than the running stream (an etcd restore?); giving it up",
                v.cursor
            );
            self.facts.push(Fact::Retired);
            return false;
        }
        let gone = ended.gone;
        let vanished = gone.len();
        let mut gone = gone.into_iter();
        while let Some(vanished) = gone.next() {
            let back = vanished.clone();
            if !self.out.send(self.inferred_delete(vanished), &self.stop) {
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
            let completed = ledger.complete(id, v.cursor);
            (completed, ledger.len())
        };
        drop(delivering);
        if completed == Completed::Retired {
            self.facts.push(Fact::Retired);
            return false;
        }
        self.facts.push(Fact::SyncComplete);
        // The stats say so before the consumer can see Synced.
        let counters = &state.counters;
        *counters.last_error.lock() = None;
        counters.stale.store(false, Ordering::Relaxed);
        *counters.synced_at.lock() = Some(SystemTime::now());
        counters.objects.store(objects as u64, Ordering::Relaxed);
        let rv = v.cursor.clone();
        if !self.send_synced(rv.clone(), true) {
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
            // From now on this is the resource's stream.
            self.place.promote();
            self.facts.push(Fact::Promoted);
        }
        true
    }

    /// A resumed resource has replayed what changed while it was stopped
    /// (the course's catch-up is over at `cursor`, and what was batched went
    /// first): its state is the server's as of now, and its Synced goes
    /// out. False when stopping.
    pub(crate) fn caught_up(&mut self, cursor: &Rv, name: &str) -> bool {
        let state = self.place.state().clone();
        *state.counters.last_error.lock() = None;
        *state.counters.synced_at.lock() = Some(SystemTime::now());
        state.counters.stale.store(false, Ordering::Relaxed);
        state.ledger().caught_up(self.place.id(), cursor);
        log::info!("{name}: resumed and caught up at resourceVersion {cursor}");
        let _turn = state.turn();
        self.send_synced(cursor.clone(), true)
    }

    // --- notices ---

    /// Tells the consumer the resource is not current (`notice`), for the
    /// stream of `namespace`; what was batched goes first. False when
    /// stopping.
    pub(crate) fn stale(
        &mut self,
        v: View<'_>,
        notice: Notice,
        namespace: Option<&str>,
        name: &str,
    ) -> bool {
        if self.flush(v).is_some() {
            return false;
        }
        self.counters().stale.store(true, Ordering::Relaxed);
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
        entry.resource_version = v.cursor.clone();
        // One namespace of several not current: the resource's Synced waits
        // for it as for a full state, so that another namespace catching up
        // does not say the whole resource is current.
        self.place.gate_begin();
        let _turn = self.place.state().turn();
        self.out.send(entry, &self.stop)
    }

    // --- pieces that cannot be delivered, and failures ---

    /// The event filter and the transform, for an object already checked
    /// and edited by the decoder: its bytes to deliver, or `None` when it is
    /// not delivered (dropped, or failed and reported). `Err` ends the
    /// connection.
    pub(crate) fn shaped(
        &mut self,
        v: View<'_>,
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
                self.skip(v, e, &[], name)?;
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
        v: View<'_>,
        e: DecodeError,
        piece: &[u8],
        name: &str,
    ) -> Result<(), End> {
        if let Some(end) = self.flush(v) {
            return Err(end);
        }
        let what = match (&e.namespace, &e.name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}: "),
            (None, Some(n)) => format!("{n}: "),
            _ => String::new(),
        };
        self.counters().skipped.fetch_add(1, Ordering::Relaxed);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (e.reason, &e.namespace, &e.name, &e.message, piece).hash(&mut h);
        if let Some(m) = &e.meta {
            m.resource_version.as_str().hash(&mut h);
        }
        if self.place.state().first_report(h.finish()) {
            log::warn!("{name}: {what}{}", e.message);
            let mut entry = Entry::failure(
                self.resource.clone(),
                ErrorInfo::ours(e.reason, 0, e.message, false),
            );
            entry.namespace = e.namespace.map(Arc::from);
            entry.name = Text::from(e.name.unwrap_or_default());
            if !self.out.send(entry, &self.stop) {
                return Err(End::Stopped);
            }
        }
        if let Some(meta) = e.meta {
            self.push(Decoded::new(EventType::Modified, *meta, &[], None, true));
            if let Some(end) = self.flush(v) {
                return Err(end);
            }
        }
        Ok(())
    }

    /// The resource failed for good: its Error entry (and, when the other
    /// namespaces of the resource waited only for this one, their Synced).
    /// A relist's replacement only logs it: the primary runs on.
    pub(crate) fn fail(&mut self, v: View<'_>, info: ErrorInfo, name: &str) {
        if v.replacement {
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
        let counters = self.counters();
        counters.failed.store(true, Ordering::Relaxed);
        *counters.last_error.lock() =
            Some(format!("{} {}: {}", info.code, info.reason, info.message));
        let entry = Entry::failure(self.resource.clone(), info);
        let owed = self.place.leave_gate();
        if self.out.send(entry, &self.stop) && owed {
            // The last of the resource's namespaces to finish: the others are
            // synced, and the resource's Synced was theirs to wait for.
            self.send_synced(v.cursor.clone(), false);
        }
    }
}

/// The watch-list was answered as a plain watch (`why`): the state goes
/// on by LIST.
pub(crate) fn ignored_initial_events(name: &str, why: &str) -> End {
    log::info!("{name}: {why}: the server ignores sendInitialEvents");
    End::Quiet
}
