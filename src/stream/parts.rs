//! One request's parts, and the one door into the stream's course. The
//! requests (`watch`, `list`, `discovery`) and the loop reach the client,
//! the sink and the course only through [`Parts`]: they read the course
//! ([`Parts::course`]), and what happens (a sink's flush, a bookmark, a full
//! state completed, a catch-up) is applied here, fact by fact, through
//! [`Course::on`], or decided by [`Course::finish`]. Nothing else writes the
//! course.

use std::time::Duration;

use crate::api::client::{Client, Response};
use crate::api::end::End;
use crate::delivery::state::Counters;
use crate::entry::{ErrorInfo, Resource};
use crate::objects::edits::Edits;
use crate::resource::ResourceSpec;
use crate::resource_version::Rv;
use crate::stream::course::vocabulary::{Bookmark, Fact, Step};
use crate::stream::course::Course;
use crate::stream::decoded::Decoded;
use crate::stream::pacing::Pacing;
use crate::stream::place::Claimed;
use crate::stream::sink::{ignored_initial_events, Sink};
use crate::wire::decode::{DecodeError, ObjectMeta};
use crate::wire::request::{self, Asking};
use std::sync::Arc;

/// One request's view of its stream: the client, the sink and the course,
/// the resource as the server is asked for it, the pacing, and the stream's
/// name for logs.
pub(crate) struct Parts<'a> {
    pub client: &'a mut Client,
    sink: &'a mut Sink,
    course: &'a mut Course,
    pub target: &'a ResourceSpec,
    pub pacing: &'a mut Pacing,
    pub name: &'a str,
}

impl<'a> Parts<'a> {
    pub(crate) fn new(
        client: &'a mut Client,
        sink: &'a mut Sink,
        course: &'a mut Course,
        target: &'a ResourceSpec,
        pacing: &'a mut Pacing,
        name: &'a str,
    ) -> Parts<'a> {
        Parts {
            client,
            sink,
            course,
            target,
            pacing,
            name,
        }
    }

    /// The stream's course, to read.
    pub(crate) fn course(&self) -> &Course {
        self.course
    }

    /// Applies what the sink recorded since the last time.
    fn settle(&mut self) {
        let course = &mut *self.course;
        self.sink.drain_facts(|f| course.on(f));
    }

    // --- the loop's ---

    /// A request begins.
    pub(crate) fn begin(&mut self) {
        self.course.on(Fact::Began);
    }

    /// What follows the request that ended with `end` (see
    /// [`Course::finish`]); the request budget's count is published for the
    /// resource's other streams.
    pub(crate) fn finish(&mut self, end: End, lasted: Duration, answered: bool) -> Step {
        self.settle();
        let step = self.course.finish(end, lasted, answered);
        self.sink.place().publish_streak(self.course.streak());
        step
    }

    /// Goes on from another stream's request budget count of the resource
    /// (see [`Fact::InheritedStreak`]); the wait it calls for.
    pub(crate) fn inherit_streak(&mut self, streak: u32) -> Duration {
        self.course.on(Fact::InheritedStreak(streak));
        self.pacing.budget(self.course.streak())
    }

    // --- asking ---

    /// One GET for `what`, with the `Accept` header the course and the
    /// target call for.
    pub(crate) fn get(
        &mut self,
        path: &str,
        what: Asking,
        read_timeout: Option<Duration>,
    ) -> Result<Response, End> {
        let protobuf = self.course.asks_protobuf(self.target.protobuf());
        let accept = request::accept(
            what,
            protobuf,
            self.target.metadata_only,
            self.sink.edits().drop_managed_fields,
        );
        let resp = self
            .client
            .get(path, what, &accept, protobuf, read_timeout)?;
        self.sink.heard();
        Ok(resp)
    }

    /// Claims the full state about to be asked for (see
    /// [`Place::claim_sync`](crate::stream::place::Place::claim_sync));
    /// false when stopping or retired. A primary that waited for a relist's
    /// replacement, which then gave up, goes on from the replacement's
    /// budget count and waits it out first: the two streams' full states are
    /// paced as one stream's would be.
    pub(crate) fn claim_sync(&mut self) -> bool {
        let fresh = self.course.fresh_sync();
        let stop = self.client.stop().clone();
        match self.sink.place().claim_sync(fresh, &stop, self.name) {
            Claimed::Granted { handed } => {
                self.course.on(Fact::SyncGranted);
                if handed > 0 {
                    let wait = self.inherit_streak(handed);
                    log::info!("{}: the relist gave up; re-syncing in {wait:?}", self.name);
                    if self.sink.sleep(wait) {
                        return false;
                    }
                }
                true
            }
            Claimed::Retire => {
                self.course.on(Fact::Retired);
                false
            }
            Claimed::Stopped => false,
        }
    }

    /// The server's resourceVersion when a resume started (empty: unknown).
    pub(crate) fn catch_up_target(&mut self, target: Rv) {
        self.course.on(Fact::CatchUpTarget(target));
    }

    /// A catch-up's replay went on past its patience (see
    /// [`Fact::CatchUpSlow`]).
    pub(crate) fn catch_up_slow(&mut self) {
        self.course.on(Fact::CatchUpSlow);
    }

    /// What a protobuf piece the schema does not know ends the request with
    /// (see [`Course::schema_miss_end`]).
    pub(crate) fn schema_miss(&mut self, message: &str) -> Option<End> {
        let end = self
            .course
            .schema_miss_end(self.target.metadata_only, message)?;
        self.course.on(Fact::SchemaMissed);
        Some(end)
    }

    // --- the sink's batch ---

    /// What entries carry.
    pub(crate) fn resource(&self) -> Arc<Resource> {
        self.sink.resource()
    }

    /// The edits the decoder makes to this resource's objects.
    pub(crate) fn edits(&self) -> Edits {
        self.sink.edits()
    }

    /// The resource's live counters.
    pub(crate) fn counters(&self) -> &Counters {
        self.sink.counters()
    }

    /// `n` more body bytes came from the server.
    pub(crate) fn received(&self, n: u64) {
        self.sink.received(n);
    }

    /// Adds an event to the batch.
    pub(crate) fn push(&mut self, d: Decoded) {
        self.sink.push(d);
    }

    /// Whether the batch goes now (`more`: the next frame is buffered).
    pub(crate) fn due(&self, more: bool) -> bool {
        self.sink.due(self.course.synced(), more)
    }

    /// Judges and sends the batch; `Some` ends the connection.
    pub(crate) fn flush(&mut self) -> Option<End> {
        let end = self.sink.flush(self.course.view());
        self.settle();
        end
    }

    /// How a request ends with `end`: what was batched goes first.
    pub(crate) fn end(&mut self, end: End) -> End {
        let end = self.sink.end(self.course.view(), end);
        self.settle();
        end
    }

    /// The event filter and the transform (see [`Sink::shaped`]).
    pub(crate) fn shaped(
        &mut self,
        bytes: Vec<u8>,
        meta: &ObjectMeta,
    ) -> Result<Option<Vec<u8>>, End> {
        let shaped = self.sink.shaped(self.course.view(), bytes, meta, self.name);
        self.settle();
        shaped
    }

    /// Reports and skips a piece that cannot be delivered (see
    /// [`Sink::skip`]).
    pub(crate) fn skip(&mut self, e: DecodeError, piece: &[u8]) -> Result<(), End> {
        let skipped = self.sink.skip(self.course.view(), e, piece, self.name);
        self.settle();
        skipped
    }

    // --- full states and catch-ups ---

    /// A bookmark at `rv`: what was batched goes first; then the bookmark
    /// moves the resume point, ends the full state, or is counted. `Err`
    /// ends the connection.
    pub(crate) fn bookmark(&mut self, rv: Rv, initial_events_end: bool) -> Result<(), End> {
        if let Some(end) = self.flush() {
            return Err(end);
        }
        let meaning = self.course.bookmark_meaning(&rv, initial_events_end);
        self.course.on(Fact::Bookmark(rv, meaning));
        if matches!(meaning, Bookmark::Moved | Bookmark::CaughtUp) {
            self.sink.place().advance(self.course.cursor());
        }
        let ok = match meaning {
            Bookmark::Moved => self.check_caught_up(),
            Bookmark::CaughtUp => self.caught_up(),
            Bookmark::EndsSync => self.finish_sync(),
            Bookmark::Plain => true,
            Bookmark::IgnoresInitialEvents => {
                return Err(ignored_initial_events(
                    self.name,
                    "bookmarks without the initial-events-end one",
                ))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(End::Stopped)
        }
    }

    /// A LIST page's `metadata.shardInfo.selector`, when it had one (see
    /// [`Sink::listed_shard_info`]).
    pub(crate) fn listed_shard_info(&self, selector: Option<&str>) {
        self.sink.listed_shard_info(selector);
    }

    /// A LIST's last page at `rv`: the full state completes there.
    pub(crate) fn listed(&mut self, rv: Rv) -> bool {
        self.course.on(Fact::Listed(rv));
        self.finish_sync()
    }

    /// Completes a (re-)sync at the resume point (see
    /// [`Sink::finish_sync`]); false when stopping or retired.
    pub(crate) fn finish_sync(&mut self) -> bool {
        let done = self.sink.finish_sync(self.course.view(), self.name);
        self.settle();
        done
    }

    /// Sends a resumed resource's Synced once its watch has reached the
    /// catch-up target; false when stopping.
    pub(crate) fn check_caught_up(&mut self) -> bool {
        !self.course.reached_target() || self.caught_up()
    }

    /// A resumed resource has replayed what changed while it was stopped:
    /// what was batched goes first, then its Synced. False when stopping.
    pub(crate) fn caught_up(&mut self) -> bool {
        if self.flush().is_some() {
            return false;
        }
        if self.course.catch_up().is_none() {
            return true;
        }
        self.course.on(Fact::CaughtUp);
        self.sink.caught_up(self.course.cursor(), self.name)
    }

    // --- the consumer told ---

    /// Tells the consumer the resource is not current, when the step owes
    /// it (see [`Step::notice`]); false when stopping.
    pub(crate) fn tell(&mut self, step: &mut Step) -> bool {
        let Some(notice) = step.notice.take() else {
            return true;
        };
        let namespace = self.target.namespace.as_deref();
        let told = self
            .sink
            .stale(self.course.view(), notice, namespace, self.name);
        self.settle();
        told
    }

    /// The resource failed for good (see [`Sink::fail`]).
    pub(crate) fn fail(&mut self, info: ErrorInfo) {
        self.sink.fail(self.course.view(), info, self.name);
    }
}
