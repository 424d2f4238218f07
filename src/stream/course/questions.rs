//! What the stream asks its course: everything here reads, nothing writes
//! (the course changes only through `Course::on` and `Course::finish`, in
//! `mod.rs`).

use std::time::Duration;

use super::{Course, Doing};
use crate::api::end::End;
use crate::resource_version::Rv;
use crate::stream::course::vocabulary::{Bookmark, CatchUp, Phase, Silence, View};

/// Periodic bookmarks before the initial-events-end one that a real
/// watch-list may carry (the server bookmarks about once a minute); more,
/// and the server ignores sendInitialEvents.
const PLAIN_BOOKMARKS: u32 = 2;

impl Course {
    /// What the sink reads of this course.
    pub(crate) fn view(&self) -> View<'_> {
        View {
            synced: self.synced(),
            cursor: &self.cursor,
            replacement: self.replacement,
        }
    }

    /// What the stream is doing.
    pub(crate) fn phase(&self) -> Phase {
        match &self.doing {
            Doing::Discover { .. } => Phase::Discover,
            Doing::Sync(s) if s.by_list => Phase::List,
            Doing::Sync(_) => Phase::WatchList,
            Doing::Watch(_) => Phase::Watch,
        }
    }

    /// The resume point.
    pub(crate) fn cursor(&self) -> &Rv {
        &self.cursor
    }

    /// Whether this stream's full state is complete (events are live).
    pub(crate) fn synced(&self) -> bool {
        matches!(
            self.doing,
            Doing::Watch(_) | Doing::Discover { resumed: true }
        )
    }

    /// Whether every full state comes by LIST (the server cannot do watch-list).
    pub(crate) fn list_mode(&self) -> bool {
        self.list_mode
    }

    /// Whether this stream is a relist's replacement (not yet promoted).
    pub(crate) fn is_replacement(&self) -> bool {
        self.replacement
    }

    /// Whether the lifecycle retired this stream.
    pub(crate) fn is_retired(&self) -> bool {
        self.retired
    }

    /// Whether a resource that asks for protobuf (`protobuf`) still does:
    /// not after a schema miss.
    pub(crate) fn asks_protobuf(&self, protobuf: bool) -> bool {
        protobuf && !self.schema_missed
    }

    /// Whether the next full state is a new one (not a retry of the current).
    pub(crate) fn fresh_sync(&self) -> bool {
        match &self.doing {
            Doing::Sync(s) => s.fresh,
            Doing::Discover { .. } => true,
            Doing::Watch(_) => false,
        }
    }

    /// Not current yet (resumed, or told Stale): how it catches up.
    pub(crate) fn catch_up(&self) -> Option<&CatchUp> {
        static QUIET: CatchUp = CatchUp::Quiet;
        match &self.doing {
            Doing::Watch(w) => w.catch_up.as_ref(),
            Doing::Discover { resumed: true } => Some(&QUIET),
            _ => None,
        }
    }

    /// The server's resourceVersion a catch-up must reach, when it was
    /// asked for (empty: the answer did not say).
    fn catch_up_target(&self) -> Option<&Rv> {
        match self.catch_up() {
            Some(CatchUp::To(t)) => Some(t),
            _ => None,
        }
    }

    /// Whether a resumed stream's resume point has reached its catch-up
    /// target (opaque versions have no order: only the target itself counts;
    /// an empty target, the server's version unknown, is never reached).
    pub(crate) fn reached_target(&self) -> bool {
        match self.catch_up_target() {
            Some(t) if t.as_str().is_empty() => false,
            Some(t) => {
                self.cursor == *t
                    || matches!(
                        self.cursor.key().order(t.key()),
                        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                    )
            }
            None => false,
        }
    }

    /// Whether an object event of `kind` may come now: a watch-list's
    /// initial events are all ADDED; anything else before its
    /// initial-events-end bookmark says the server ignores
    /// `sendInitialEvents`.
    pub(crate) fn initial_event_ok(&self, added: bool) -> bool {
        self.phase() != Phase::WatchList || added
    }

    /// What a read that waited past its limit means: `short_reads` is the
    /// request's shorter limit (the initial-events timeout, or a resume's
    /// catch-up quiet) when it has one, `idle` the idle timeout;
    /// `mid_frame`: part of a frame had come; `objects`: initial objects
    /// delivered by this request.
    pub(crate) fn silence(
        &self,
        short_reads: Option<Duration>,
        idle: Duration,
        mid_frame: bool,
        objects: u64,
    ) -> Silence {
        // Only the short limit, between frames, says "no bookmark is coming"
        // or "the replay is over".
        let quiet = short_reads.filter(|t| *t < idle && !mid_frame);
        match quiet {
            Some(_) if self.catch_up().is_some() => Silence::CaughtUp,
            // The watch-list's connection, quiet after its sync: resume.
            Some(_) if self.synced() => Silence::Ends(End::Ended),
            Some(_) if objects > 0 => Silence::Ends(End::Quiet),
            Some(t) => Silence::Ends(End::Broke(format!(
                "no initial events within {t:?} (initial_events_timeout)"
            ))),
            None => Silence::Ends(End::Silent(
                "no data within idle_timeout: connection taken as dead".into(),
            )),
        }
    }

    /// What a bookmark at `rv` means now (see [`Bookmark`]); applying it is
    /// [`Fact::Bookmark`](super::vocabulary::Fact::Bookmark).
    pub(crate) fn bookmark_meaning(&self, rv: &Rv, initial_events_end: bool) -> Bookmark {
        if self.synced() {
            // A bookmark says the server has sent everything up to it: a
            // catch-up without a target it can order against is over.
            let unordered = |t: &Rv| t.as_str().is_empty() || rv.key().order(t.key()).is_none();
            let over = match self.catch_up() {
                Some(CatchUp::Quiet) => true,
                Some(CatchUp::To(t)) => unordered(t),
                Some(CatchUp::Probe) | None => false,
            };
            if over {
                Bookmark::CaughtUp
            } else {
                Bookmark::Moved
            }
        } else if initial_events_end {
            Bookmark::EndsSync
        } else if self.attempt.plain_bookmarks >= PLAIN_BOOKMARKS {
            Bookmark::IgnoresInitialEvents
        } else {
            Bookmark::Plain
        }
    }

    /// What a protobuf piece the schema does not know (a newer server's
    /// field or kind) ends the request with: unless metadata-only (whose
    /// schema is fixed), a retry that asks for JSON from now on (applying it
    /// is [`Fact::SchemaMissed`](super::vocabulary::Fact::SchemaMissed)); `None` leaves the piece to be skipped as
    /// invalid.
    pub(crate) fn schema_miss_end(&self, metadata_only: bool, message: &str) -> Option<End> {
        (!metadata_only)
            .then(|| End::Retry(format!("{message}: asking for JSON from now on"), None))
    }

    /// Full states the server answered since the last healthy watching
    /// (what the request budget counts).
    pub(crate) fn streak(&self) -> u32 {
        self.streak
    }

    /// Whether the current full state's LIST comes in one answer (a
    /// continue token expired).
    pub(crate) fn unpaged(&self) -> bool {
        matches!(&self.doing, Doing::Sync(s) if s.unpaged)
    }

    /// Whether the next full state reads what the watch cache holds: the
    /// `resourceVersion` to ask for (not older than the resume point, or
    /// `0`, anything it has), `None` for a consistent read.
    pub(crate) fn cache_read(&self) -> Option<&str> {
        match &self.doing {
            Doing::Sync(s) if s.cache_read => Some(match self.cursor.as_str() {
                "" => "0",
                rv => rv,
            }),
            _ => None,
        }
    }

    /// Whether the current phase reads a full state.
    pub(crate) fn syncing(&self) -> bool {
        matches!(self.doing, Doing::Sync(_))
    }
}
