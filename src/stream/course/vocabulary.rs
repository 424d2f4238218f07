//! The words a stream's course is spoken in: what a stream is doing
//! ([`Phase`]), what happened ([`Fact`]), what the sink reads of a course
//! ([`View`]), and what the course decides ([`Step`], [`Next`], [`Notice`],
//! [`Bookmark`], [`Silence`]).

use std::time::Duration;

use crate::api::end::End;
use crate::entry::ErrorInfo;
use crate::resource_version::Rv;

/// What a stream is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Finding a kind's resource name and scope (discovery).
    Discover,
    /// Reading the full state by watch-list; the same connection then goes
    /// on with live events.
    WatchList,
    /// Reading the full state by paged LIST.
    List,
    /// Watching live changes from the last resourceVersion.
    Watch,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// The next request, at once.
    Go,
    /// The next request after a pause: full jitter over the backoff of
    /// `failures` failures in a row, never less than `at_least` (the
    /// server's hint), and, when `syncs` > 0 (a full state follows `syncs`
    /// others with no healthy watching in between), at least half of the
    /// backoff of `syncs` (the request budget: see [`Course::finish`](super::Course::finish)).
    Pause {
        failures: u32,
        at_least: Duration,
        syncs: u32,
    },
    /// The stream ends: failed for good with this error, or (`None`) a
    /// relist's replacement giving up.
    End(Option<ErrorInfo>),
}

/// The decision on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub next: Next,
    /// A new full state begins (after 410, a resourceVersion too large, or
    /// watches that end at once): counts as a re-sync.
    pub resync: bool,
    /// Reload the credentials before the next request.
    pub reload: bool,
    /// Why the stream retries or changed course, for the log and stats.
    pub why: Option<String>,
    /// The request got no answer (a refused or failed connection): its
    /// pause ends early once another request of the reader is answered.
    pub unreachable: bool,
    /// The consumer is owed a notice that the resource is not current (see
    /// [`Course::finish`](super::Course::finish)).
    pub notice: Option<Notice>,
}

/// A notice owed to the consumer: the resource is not current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub reason: crate::entry::Reason,
    /// The HTTP status, when the server answered.
    pub code: u16,
    pub message: String,
}

/// What happened in a stream, as its requests, its sink and its loop
/// report it: the course changes only by [`Course::on`](super::Course::on) and
/// [`Course::finish`](super::Course::finish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fact {
    /// A request begins: nothing seen in it yet.
    Began,
    /// Events were judged (delivered or dropped) up to the one at this
    /// resourceVersion: the resume point moves there once the stream is
    /// synced (a full state's items do not move it).
    Judged(Rv),
    /// An entry was delivered: progress (a bookmark is not).
    Delivered,
    /// A LIST's last page: the full state ends at this resourceVersion.
    Listed(Rv),
    /// A bookmark at this resourceVersion, and what it meant
    /// ([`Course::bookmark_meaning`](super::Course::bookmark_meaning)).
    Bookmark(Rv, Bookmark),
    /// The lifecycle granted a full state: the next attempt continues it.
    SyncGranted,
    /// The stream's full state is complete at the resume point (its
    /// inferred deletes and Synced sent).
    SyncComplete,
    /// The server's resourceVersion when a resume started (empty: unknown).
    CatchUpTarget(Rv),
    /// A catch-up's replay went on past its patience: the server's
    /// resourceVersion is asked for before the next watch.
    CatchUpSlow,
    /// A resume has replayed what changed while stopped (its Synced sent).
    CaughtUp,
    /// Another stream owns the resource: this one ends.
    Retired,
    /// A relist's replacement became the resource's stream.
    Promoted,
    /// Protobuf gave a field tattler's schema does not have: JSON from now on.
    SchemaMissed,
    /// Another stream's request budget count of the same resource (a
    /// relist's replacement goes on from its primary's, a primary from a
    /// replacement that gave up): the budget counts the resource's full
    /// states, not one stream's.
    InheritedStreak(u32),
}

/// How a stream that was current catches up again (resumed from a
/// checkpoint, or told Stale): what it waits for before its Synced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CatchUp {
    /// Its watch replays what it missed: the replay is over when the watch
    /// goes quiet (the server sends its history at once) or a bookmark
    /// comes (the server has sent everything up to it). Nothing is asked
    /// first: after an apiserver restart the watch's 410 comes before any
    /// other request, and a full state follows.
    Quiet,
    /// The replay went on past its patience (a busy resource): the server's
    /// resourceVersion is asked for before the next watch.
    Probe,
    /// The server's resourceVersion to reach (empty: unknown, by quiet or a
    /// bookmark again).
    To(Rv),
}

/// What the sink reads of a course: the few values it needs, never a way
/// to write it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    /// The stream's full state is complete: events are live.
    pub synced: bool,
    /// The resume point.
    pub cursor: &'a Rv,
    /// A relist's replacement (not yet promoted).
    pub replacement: bool,
}

/// What a bookmark means to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bookmark {
    /// Synced: the resume point moved (not progress by itself).
    Moved,
    /// Synced and catching up with a target it cannot order against (none
    /// known, or opaque resourceVersions): a bookmark says the server has
    /// sent everything up to it, so the replay is over.
    CaughtUp,
    /// The `initial-events-end` bookmark: the full state is complete here.
    EndsSync,
    /// A periodic bookmark before `initial-events-end`: a real watch-list
    /// may carry a few.
    Plain,
    /// Too many plain bookmarks before `initial-events-end`: the server
    /// ignores `sendInitialEvents`.
    IgnoresInitialEvents,
}

/// What a read that waited past its limit means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Silence {
    /// A resumed watch's replay is over (the server sends its history at
    /// once): the resource is caught up, and the watch ends to resume.
    CaughtUp,
    /// The request ends so.
    Ends(End),
}
