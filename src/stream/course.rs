//! One stream's course, owned in one place: what it is doing (its phase),
//! what it remembers (the resume point, whether its own full state is
//! complete, the attempt under way, a resume's catch-up target, whether it
//! was retired or must ask for JSON from now on) and the one pure function
//! that decides, from how the last request ended, what to request next and
//! how long to wait first. The stream's I/O reports events here (an answer,
//! an entry delivered, a bookmark, a full state completed, a retirement, a
//! schema miss) and asks; nothing else writes these fields. No I/O, no
//! clock: the stream measures, this decides, and the table tests below pin
//! every path, the hot loops a hostile server could cause included.
//!
//! | event                          | what changes                                              |
//! |--------------------------------|-----------------------------------------------------------|
//! | `begin`                        | a new attempt: nothing seen in it yet                     |
//! | `event_at(rv)`, `progress`     | the resume point moves once synced; an entry is progress  |
//! | `bookmark(rv, end)`            | synced: the resume point moves; else it may end the sync  |
//! | `synced(rv)`                   | the stream's full state is complete at `rv`               |
//! | `finish(end, lasted, answered)`| the decision: what next, after how long                   |
//! | `force_resync`                 | a relist by re-sync: the next request is a full state     |
//! | `caught_up`                    | a resume has replayed what changed while stopped          |
//! | `retired`                      | another stream owns the resource: this one ends           |
//! | `schema_miss`                  | protobuf gave a field tattler does not know: JSON now     |
//! | `promoted`                     | a relist's replacement became the resource's stream       |

use std::time::Duration;

use crate::api::end::End;
use crate::wire::rv::Rv;
use crate::ErrorInfo;

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

/// What else the stream saw of the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// How long the connection lasted.
    pub lasted: Duration,
    /// The server answered 200.
    pub answered: bool,
    /// The resume point moved, or an entry was delivered.
    pub progressed: bool,
    /// A full state was completed on it (the bookmark came, the LIST ended).
    pub synced: bool,
    /// Bookmarks without the initial-events-end annotation before it.
    pub plain_bookmarks: u32,
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
    /// backoff of `syncs` (the request budget: see [`Course::finish`]).
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
    /// The consumer is owed a notice that the resource is not current (see
    /// [`Course::finish`]).
    pub notice: Option<Notice>,
}

/// Watch-lists in a row that cannot complete before tattler falls back to LIST.
const INCOMPLETE_WATCH_LISTS: u32 = 2;
/// Watches in a row that end at once with nothing before a re-sync.
const SHORT_WATCHES: u32 = 3;
/// Failures in a row after which a relist's replacement gives up.
const REPLACEMENT_FAILURES: u32 = 3;
/// Full-state requests answered 429 in a row after which the stream reads
/// what the watch cache holds instead of a consistent read.
const LAGGING_CACHE: u32 = 3;
/// 403s in a row a stream that was allowed before retries before it ends:
/// an apiserver that is starting answers before its RBAC is loaded
/// ("clusterrole not found"), for seconds; a permission really taken away
/// ends the stream after about a minute of backoff.
const FORBIDDEN_RETRIES: u32 = 6;

/// One stream's course: see the module's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Course {
    phase: Phase,
    /// The server cannot do watch-list for this resource: every full state
    /// comes by LIST.
    list_mode: bool,
    /// The current full state comes by LIST (watch-lists kept breaking).
    list_once: bool,
    /// The next sync attempt begins a new full state (rather than retrying the
    /// current one).
    fresh_sync: bool,
    failures: u32,
    incomplete: u32,
    short: u32,
    short_watch: Duration,
    reauthed: bool,
    /// A healthy connection this long forgets the failures before it.
    reset_after: Duration,
    /// A relist's replacement (it gives up after a few failures in a row),
    /// until it is promoted.
    replacement: bool,
    /// Resumed from a checkpoint: the state is complete; once the resource
    /// is found, watch from the checkpoint's resourceVersion.
    resumed: bool,
    /// Full states completed since the last healthy watching: the request
    /// budget (each further full state waits longer).
    streak: u32,
    /// The server refused a watch from the resume point once (a damaged
    /// checkpoint, a resourceVersion of another cluster): re-synced; a
    /// second refusal before healthy watching ends the stream.
    refused_watch: bool,
    /// The resume point: the last resourceVersion seen (event or bookmark).
    cursor: Rv,
    /// This stream's full state is complete (its initial state was
    /// delivered, or it resumed from a checkpoint): events are live.
    synced: bool,
    /// What the request under way has done.
    attempt: Seen,
    /// Resumed and not caught up yet: the server's resourceVersion when the
    /// resume started, once asked for (empty: unknown, caught up by silence).
    catch_up: Option<Option<Rv>>,
    /// The lifecycle retired this stream: it delivers nothing more and ends.
    retired: bool,
    /// The server sent a built-in object with a field tattler's schema does
    /// not have (a newer server): this stream asks for JSON from then on.
    schema_missed: bool,
    /// The consumer was told the resource is not current (a Stale entry)
    /// since this stream's last Synced.
    told_stale: bool,
    /// Full-state requests answered 429 in a row.
    throttled: u32,
    /// Why the last request failed, as the consumer is told it.
    cause: Cause,
    /// The server answered this stream 200 once: a later 403 may be an
    /// apiserver starting up, retried a while.
    allowed: bool,
    /// 403s in a row since it was allowed.
    forbidden: u32,
    /// The current full state reads what the watch cache holds (not older
    /// than the resume point) rather than a consistent read.
    cache_read: bool,
    /// The current full state's LIST comes in one answer, not in pages: a
    /// continue token expired (client-go's pager does the same).
    unpaged: bool,
}

/// Why a request failed, as the consumer is told it (see [`Course::notice`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Cause {
    /// Not a failure: no notice.
    #[default]
    None,
    /// No answer: a failed connect, a broken connection.
    Unreachable(String),
    /// An answer worth retrying: its status.
    Refused(u16, String),
    /// Nothing came for the idle timeout.
    Silent(String),
    /// The credentials could not be had.
    Credentials(String),
}

impl Cause {
    /// The cause of a request that ended with `end`.
    fn of(end: &End) -> Cause {
        match end {
            End::Refused { code, why, .. } => Cause::Refused(*code, why.clone()),
            End::Silent(why) => Cause::Silent(why.clone()),
            End::NoCredentials(why) => Cause::Credentials(why.clone()),
            End::Retry(why, _) | End::Broke(why) => Cause::Unreachable(why.clone()),
            _ => Cause::None,
        }
    }
}

/// A notice owed to the consumer: the resource is not current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub reason: crate::Reason,
    /// The HTTP status, when the server answered.
    pub code: u16,
    pub message: String,
}

/// What happened in a stream, as its requests, its sink and its loop
/// report it: the course changes only by [`Course::on`] and
/// [`Course::finish`].
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
    /// ([`Course::bookmark_meaning`]).
    Bookmark(Rv, Bookmark),
    /// The lifecycle granted a full state: the next attempt continues it.
    SyncGranted,
    /// The stream's full state is complete at the resume point (its
    /// inferred deletes and Synced sent).
    SyncComplete,
    /// The server's resourceVersion when a resume started (empty: unknown).
    CatchUpTarget(Rv),
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

/// Periodic bookmarks before the initial-events-end one that a real
/// watch-list may carry (the server bookmarks about once a minute); more,
/// and the server ignores sendInitialEvents.
const PLAIN_BOOKMARKS: u32 = 2;

impl Course {
    /// `short_watch`: a watch that ends sooner with no progress is a
    /// failure (client-go: 1 s).
    pub(crate) fn new(
        needs_discovery: bool,
        list_mode: bool,
        reset_after: Duration,
        short_watch: Duration,
    ) -> Course {
        let mut m = Course {
            phase: Phase::Discover,
            list_mode,
            list_once: false,
            fresh_sync: true,
            failures: 0,
            incomplete: 0,
            short: 0,
            reauthed: false,
            reset_after,
            short_watch,
            replacement: false,
            resumed: false,
            streak: 0,
            refused_watch: false,
            cursor: Rv::empty(),
            synced: false,
            attempt: Seen::default(),
            catch_up: None,
            retired: false,
            schema_missed: false,
            told_stale: false,
            throttled: 0,
            cause: Cause::None,
            unpaged: false,
            allowed: false,
            forbidden: 0,
            cache_read: false,
        };
        if !needs_discovery {
            m.phase = m.sync_phase();
        }
        m
    }

    /// A relist's replacement: it gives up after a few failures in a row.
    pub(crate) fn replacement(mut self) -> Course {
        self.replacement = true;
        self
    }

    /// Resumed from a checkpoint at `rv`: the state is complete there; the
    /// stream watches from it (once the resource is found) and catches up.
    pub(crate) fn resumed_at(mut self, rv: Rv) -> Course {
        self.resumed = true;
        self.synced = true;
        self.cursor = rv;
        self.catch_up = Some(None);
        if self.phase != Phase::Discover {
            self.phase = Phase::Watch;
        }
        self
    }

    // --- what the stream asks ---

    /// What the sink reads of this course.
    pub(crate) fn view(&self) -> View<'_> {
        View {
            synced: self.synced,
            cursor: &self.cursor,
            replacement: self.replacement,
        }
    }

    /// What the stream is doing.
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    /// The resume point.
    pub(crate) fn cursor(&self) -> &Rv {
        &self.cursor
    }

    /// Whether this stream's full state is complete (events are live).
    pub(crate) fn synced(&self) -> bool {
        self.synced
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
        self.fresh_sync
    }

    /// Resumed and not caught up: the catch-up target, `Some(None)` while
    /// the server's resourceVersion has not been asked for.
    pub(crate) fn catch_up(&self) -> Option<Option<&Rv>> {
        self.catch_up.as_ref().map(Option::as_ref)
    }

    /// Whether a resumed stream's resume point has reached its catch-up
    /// target (opaque versions have no order: only the target itself counts;
    /// an empty target, the server's version unknown, is never reached).
    pub(crate) fn reached_target(&self) -> bool {
        match self.catch_up.as_ref().and_then(Option::as_ref) {
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
        self.synced || self.phase != Phase::WatchList || added
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
            Some(_) if self.catch_up.is_some() => Silence::CaughtUp,
            // The watch-list's connection, quiet after its sync: resume.
            Some(_) if self.synced => Silence::Ends(End::Ended),
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
    /// [`Fact::Bookmark`].
    pub(crate) fn bookmark_meaning(&self, rv: &Rv, initial_events_end: bool) -> Bookmark {
        if self.synced {
            let unordered = |t: &Rv| t.as_str().is_empty() || rv.key().order(t.key()).is_none();
            if matches!(&self.catch_up, Some(Some(t)) if unordered(t)) {
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
    /// is [`Fact::SchemaMissed`]); `None` leaves the piece to be skipped as
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
        self.unpaged
    }

    /// Whether the next full state reads what the watch cache holds: the
    /// `resourceVersion` to ask for (not older than the resume point, or
    /// `0`, anything it has), `None` for a consistent read.
    pub(crate) fn cache_read(&self) -> Option<&str> {
        self.cache_read.then(|| match self.cursor.as_str() {
            "" => "0",
            rv => rv,
        })
    }

    // --- the one door: what happened ---

    /// Applies what happened (see [`Fact`]): with [`finish`](Self::finish),
    /// the only way the course changes.
    pub(crate) fn on(&mut self, fact: Fact) {
        match fact {
            Fact::Began => self.attempt = Seen::default(),
            // A full state's items do not move the resume point.
            Fact::Judged(rv) if self.synced => self.cursor = rv,
            Fact::Judged(_) => {}
            Fact::Delivered => self.attempt.progressed = true,
            Fact::Listed(rv) => self.cursor = rv,
            Fact::Bookmark(rv, meaning) => match meaning {
                Bookmark::Moved | Bookmark::CaughtUp | Bookmark::EndsSync => self.cursor = rv,
                Bookmark::Plain | Bookmark::IgnoresInitialEvents => {
                    self.attempt.plain_bookmarks += 1
                }
            },
            Fact::SyncGranted => self.fresh_sync = false,
            Fact::SyncComplete => {
                self.synced = true;
                self.attempt.synced = true;
                self.attempt.progressed = true;
                self.told_stale = false;
                self.throttled = 0;
                self.cache_read = false;
                self.unpaged = false;
            }
            Fact::CatchUpTarget(target) => {
                if let Some(t) = &mut self.catch_up {
                    *t = Some(target);
                }
            }
            Fact::CaughtUp => {
                if self.catch_up.take().is_some() {
                    self.told_stale = false;
                }
            }
            Fact::Retired => self.retired = true,
            Fact::Promoted => self.replacement = false,
            Fact::SchemaMissed => self.schema_missed = true,
            Fact::InheritedStreak(streak) => self.streak = self.streak.max(streak),
        }
    }

    /// Decides what follows the request under way, which ended with `end`
    /// after `lasted`, the server having answered 200 (`answered`) or not,
    /// and whether the consumer is owed a notice that the resource is not
    /// current ([`Step::notice`]). A re-sync it decides makes the stream's
    /// state incomplete at once.
    pub(crate) fn finish(&mut self, end: End, lasted: Duration, answered: bool) -> Step {
        let relist = end == End::Relist;
        let mut step = if relist {
            // At once: the relist interval paces it.
            self.phase = self.sync_phase();
            self.fresh_sync = true;
            Step {
                next: Next::Go,
                resync: true,
                reload: false,
                why: Some("a relist by a new full state (opaque resourceVersions)".into()),
                notice: None,
            }
        } else {
            let seen = Seen {
                lasted,
                answered: answered || self.attempt.answered,
                ..self.attempt
            };
            self.next(end, seen)
        };
        if step.resync {
            self.lose_sync();
        }
        step.notice = self.notice(answered || relist, &step);
        step
    }

    /// Whether the request [`finish`](Self::finish) decided on (its cause
    /// kept from there), and the `step` decided, owe the consumer a notice
    /// that the resource is not current; once told, not again until it is
    /// current. A relist's replacement tells nothing (the primary's view
    /// stays current). A re-sync is told at once; a failure that pauses the
    /// stream is told when the server did not answer 200 (refused,
    /// unreachable, an error status) or was silent past the idle timeout. A
    /// connection that broke after an answer (a load balancer's cut) is no
    /// outage: its reconnect tells, if it fails; watches that keep ending at
    /// once re-sync, which tells. A resource that was current catches up
    /// before its next Synced: its watch resumes, and the Synced comes once
    /// it has replayed what it missed.
    fn notice(&mut self, answered: bool, step: &Step) -> Option<Notice> {
        let cause = std::mem::replace(&mut self.cause, Cause::None);
        if self.replacement || self.told_stale {
            return None;
        }
        let pausing = matches!(step.next, Next::Pause { .. });
        let (reason, code, message) = match cause {
            _ if step.resync => (
                crate::Reason::Resyncing,
                0,
                step.why
                    .clone()
                    .unwrap_or_else(|| "a new full state".into()),
            ),
            Cause::Refused(429, why) if pausing => (crate::Reason::Throttled, 429, why),
            Cause::Refused(code, why) if pausing => (crate::Reason::Refused, code, why),
            Cause::Silent(why) if pausing => (crate::Reason::Silent, 0, why),
            Cause::Credentials(why) if pausing => (crate::Reason::Credentials, 0, why),
            Cause::Unreachable(why) if pausing && !answered => (crate::Reason::Unreachable, 0, why),
            _ => return None,
        };
        self.told_stale = true;
        if self.synced {
            // Current again once the resumed watch has caught up.
            self.catch_up = Some(None);
        }
        Some(Notice {
            reason,
            code,
            message,
        })
    }

    fn lose_sync(&mut self) {
        self.synced = false;
        self.catch_up = None;
    }

    fn sync_phase(&self) -> Phase {
        if self.list_mode || self.list_once {
            Phase::List
        } else {
            Phase::WatchList
        }
    }

    /// Whether the current phase reads a full state.
    pub(crate) fn syncing(&self) -> bool {
        matches!(self.phase, Phase::WatchList | Phase::List)
    }

    fn fail(&mut self, why: String, at_least: Option<Duration>) -> Step {
        self.failures = self.failures.saturating_add(1);
        let next = if self.replacement && self.failures >= REPLACEMENT_FAILURES {
            Next::End(None)
        } else {
            Next::Pause {
                failures: self.failures,
                at_least: at_least.unwrap_or(Duration::ZERO),
                syncs: 0,
            }
        };
        Step {
            next,
            resync: false,
            reload: false,
            why: Some(why),
            notice: None,
        }
    }

    fn go(why: Option<String>) -> Step {
        Step {
            next: Next::Go,
            resync: false,
            reload: false,
            why,
            notice: None,
        }
    }

    /// A new full state follows.
    fn resync(&mut self, step: &mut Step) {
        self.phase = self.sync_phase();
        self.fresh_sync = true;
        step.resync = true;
    }

    /// The request budget: a full-state request (a watch-list, a LIST) that
    /// follows others the server answered with no healthy watching in
    /// between waits (see `Pause`), whatever the server answered and whether
    /// or not those completed, so that no answer makes tattler ask for full
    /// states faster than its backoff. The first goes at once.
    fn budget(&self, step: &mut Step) {
        if self.streak == 0 || !self.syncing() {
            return;
        }
        step.next = match step.next {
            Next::Go => Next::Pause {
                failures: 0,
                at_least: Duration::ZERO,
                syncs: self.streak,
            },
            Next::Pause {
                failures, at_least, ..
            } => Next::Pause {
                failures,
                at_least,
                syncs: self.streak,
            },
            ref end @ Next::End(_) => end.clone(),
        };
    }

    /// A watch-list that could not complete; the second in a row falls back to
    /// LIST: for good when the server answered but never finished (`sticky`),
    /// for this full state only when connections broke.
    fn incomplete(&mut self, why: String, sticky: bool) -> Step {
        self.incomplete += 1;
        let mut why = why;
        if self.incomplete >= INCOMPLETE_WATCH_LISTS {
            self.incomplete = 0;
            if sticky {
                self.list_mode = true;
            } else {
                self.list_once = true;
            }
            self.phase = Phase::List;
            why = format!("{why}; falling back to LIST + WATCH");
        }
        self.fail(why, None)
    }

    /// Decides what follows a request that ended with `end`.
    ///
    /// The request budget: a watch (or a watch-list past its sync) that
    /// lasted `reset_after` is healthy watching, and forgets both the
    /// failures and the full states before it; without it, full states back
    /// off as failures do. Only delivered entries are progress: a bookmark,
    /// even one whose resourceVersion moves (or goes back), is not.
    fn next(&mut self, end: End, seen: Seen) -> Step {
        if seen.answered {
            self.allowed = true;
            self.forbidden = 0;
        }
        // A dead connection is a broken one, to what follows.
        let end = match end {
            End::Fatal(info)
                if info.code == 403 && self.allowed && self.forbidden < FORBIDDEN_RETRIES =>
            {
                self.forbidden += 1;
                End::Refused {
                    code: 403,
                    why: format!(
                        "forbidden ({}), though allowed before: retried (an apiserver starting answers so until its RBAC is loaded)",
                        info.message
                    ),
                    hint: None,
                }
            }
            end => end,
        };
        self.cause = Cause::of(&end);
        let end = match end {
            End::Silent(why) => End::Broke(why),
            End::NoCredentials(why) => End::Retry(why, None),
            end => end,
        };
        if seen.lasted >= self.reset_after {
            self.failures = 0;
            if self.phase == Phase::Watch || seen.synced {
                self.streak = 0;
                self.refused_watch = false;
            }
        }
        if seen.answered {
            self.reauthed = false;
        }
        if self.syncing() && seen.answered {
            // A full state the server answered (and so worked for).
            self.streak = self.streak.saturating_add(1);
        }
        if seen.synced {
            self.incomplete = 0;
            self.list_once = false;
            self.fresh_sync = false;
            if self.syncing() {
                self.phase = Phase::Watch;
            }
        }
        let mut step = match end {
            // Handled by `finish`.
            End::Stopped | End::Relist => Step {
                next: Next::End(None),
                resync: false,
                reload: false,
                why: None,
                notice: None,
            },
            End::Discovered => {
                self.phase = if self.resumed {
                    Phase::Watch
                } else {
                    self.sync_phase()
                };
                Self::go(None)
            }
            End::Listed => {
                self.phase = Phase::Watch;
                Self::go(None)
            }
            End::Ended => match self.phase {
                Phase::Watch if seen.progressed || seen.lasted >= self.short_watch => {
                    self.short = 0;
                    Self::go(None)
                }
                Phase::Watch => {
                    self.short += 1;
                    if self.short >= SHORT_WATCHES {
                        self.short = 0;
                        let mut s = self.fail(
                            format!("{SHORT_WATCHES} watches in a row ended at once with nothing in them; re-syncing"),
                            None,
                        );
                        self.resync(&mut s);
                        s
                    } else {
                        self.fail("the watch ended at once with nothing in it".into(), None)
                    }
                }
                Phase::WatchList => self.incomplete(
                    "the watch-list ended before its initial-events-end bookmark".into(),
                    true,
                ),
                Phase::List | Phase::Discover => self.fail("the answer ended early".into(), None),
            },
            // A cut watch-list that delivered something new may complete on
            // a retry; two in a row that delivered nothing fall back.
            End::Broke(why) if self.phase == Phase::WatchList && seen.progressed => {
                self.incomplete = 0;
                self.fail(why, None)
            }
            End::Broke(why) if self.phase == Phase::WatchList => self.incomplete(why, false),
            End::Broke(why) => self.fail(why, None),
            End::Quiet => {
                self.list_mode = true;
                self.phase = Phase::List;
                Self::go(Some(
                    "no initial-events-end bookmark: the server ignores sendInitialEvents; using LIST + WATCH".into(),
                ))
            }
            End::InitialError(why) => self.incomplete(why, true),
            End::Expired => {
                // History gone: a new full state. A second in a row waits.
                let again = self.failures > 0 || self.syncing();
                let mut s = if again {
                    self.fail("the resourceVersion expired again".into(), None)
                } else {
                    Self::go(Some("the resourceVersion expired; re-syncing".into()))
                };
                self.resync(&mut s);
                s
            }
            End::TokenExpired => {
                // The same full state goes on (nothing delivered in it comes
                // again), its LIST unpaged: no token left to expire.
                self.unpaged = true;
                self.fail(
                    "a LIST page's continue token expired; listing again in one answer".into(),
                    None,
                )
            }
            End::TooLarge(hint) => {
                let mut s = self.fail(
                    "the resourceVersion is ahead of the server; re-syncing".into(),
                    hint,
                );
                self.resync(&mut s);
                s
            }
            End::Rejected(info) if self.phase == Phase::WatchList => {
                self.list_mode = true;
                self.phase = Phase::List;
                Self::go(Some(format!(
                    "the server refuses watch-list ({} {}); using LIST + WATCH",
                    info.code, info.message
                )))
            }
            End::Rejected(info) if self.phase == Phase::Watch && !self.refused_watch => {
                // The resume point itself is refused (a damaged checkpoint):
                // a full state, once.
                self.refused_watch = true;
                let mut s = self.fail(
                    format!(
                        "the server refuses the watch from this resourceVersion ({} {}); re-syncing",
                        info.code, info.message
                    ),
                    None,
                );
                self.resync(&mut s);
                s
            }
            End::Rejected(info) | End::Fatal(info) => Step {
                next: Next::End(Some(info)),
                resync: false,
                reload: false,
                why: None,
                notice: None,
            },
            End::Unauthorized { info, reloadable } => {
                if reloadable && !self.reauthed {
                    // A rotated token or an expired exec credential: reload once, at once.
                    self.reauthed = true;
                    Step {
                        next: Next::Go,
                        resync: false,
                        reload: true,
                        why: Some("401 Unauthorized; reloading credentials".into()),
                        notice: None,
                    }
                } else {
                    Step {
                        next: Next::End(Some(info)),
                        resync: false,
                        reload: false,
                        why: None,
                        notice: None,
                    }
                }
            }
            End::Retry(why, hint) => self.fail(why, hint),
            // Mapped to Broke and Retry above.
            End::Silent(why) | End::NoCredentials(why) => self.fail(why, None),
            End::Refused { code, why, hint } => {
                let throttled = code == 429 && self.syncing();
                let mut s = self.fail(why, hint);
                if throttled {
                    self.throttled = self.throttled.saturating_add(1);
                    if self.throttled >= LAGGING_CACHE && !self.cache_read {
                        // kubernetes#139766: a consistent read waits for a
                        // watch cache that lags, and the server answers 429
                        // after ~3 s, forever.
                        self.cache_read = true;
                        s.why = s.why.map(|w| {
                            format!("{w}; the watch cache lags: asking for what it holds (not older than the last resourceVersion seen)")
                        });
                    }
                }
                s
            }
        };
        if step.resync && self.phase == Phase::Discover {
            step.resync = false;
        }
        self.budget(&mut step);
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    /// A bookmark through the door: what it means, then applied.
    fn bookmark(c: &mut Course, rv: Rv, initial_events_end: bool) -> Bookmark {
        let meaning = c.bookmark_meaning(&rv, initial_events_end);
        c.on(Fact::Bookmark(rv, meaning));
        meaning
    }

    /// A catch-up through the door: whether the course was catching up.
    fn caught_up(c: &mut Course) -> bool {
        let was = c.catch_up().is_some();
        c.on(Fact::CaughtUp);
        was
    }

    /// A schema miss through the door (as `Parts::schema_miss` does it).
    fn schema_miss(c: &mut Course, metadata_only: bool, message: &str) -> Option<End> {
        let end = c.schema_miss_end(metadata_only, message)?;
        c.on(Fact::SchemaMissed);
        Some(end)
    }

    fn machine(phase: Phase) -> Course {
        let mut m = Course::new(
            false,
            false,
            Duration::from_secs(120),
            Duration::from_secs(1),
        );
        m.phase = phase;
        m.fresh_sync = false;
        m
    }

    fn info(code: u16) -> ErrorInfo {
        ErrorInfo::server(code, "R".into(), "m".into())
    }

    fn seen(lasted_ms: u64, progressed: bool) -> Seen {
        Seen {
            lasted: Duration::from_millis(lasted_ms),
            answered: true,
            progressed,
            ..Seen::default()
        }
    }

    fn pause(failures: u32, at_least: Duration) -> Next {
        Next::Pause {
            failures,
            at_least,
            syncs: 0,
        }
    }

    /// A pause that the request budget also sets: `syncs` full states before.
    fn budget(failures: u32, syncs: u32) -> Next {
        Next::Pause {
            failures,
            at_least: Duration::ZERO,
            syncs,
        }
    }

    /// Runs `ends` through a machine; the phase and `next` after each.
    fn run(m: &mut Course, ends: Vec<(End, Seen)>) -> Vec<(Phase, Next, bool)> {
        ends.into_iter()
            .map(|(e, s)| {
                let step = m.next(e, s);
                (m.phase, step.next, step.resync)
            })
            .collect()
    }

    #[test]
    fn a_healthy_stream_syncs_then_watches_and_resumes_at_once() {
        let mut m = Course::new(false, false, 120 * S, Duration::from_secs(1));
        assert_eq!((m.phase, m.fresh_sync), (Phase::WatchList, true));
        let synced = Seen {
            synced: true,
            ..seen(600_000, true)
        };
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Ended, synced),
                    (End::Ended, seen(300_000, true)),
                    (End::Ended, seen(300, true))
                ]
            ),
            vec![(Phase::Watch, Next::Go, false); 3]
        );
        assert!(!m.fresh_sync);
        let mut d = Course::new(true, false, 120 * S, Duration::from_secs(1));
        assert_eq!(d.phase, Phase::Discover);
        assert_eq!(
            run(&mut d, vec![(End::Discovered, seen(10, false))]),
            [(Phase::WatchList, Next::Go, false)]
        );
    }

    #[test]
    fn an_expired_continue_token_goes_on_with_the_same_full_state_unpaged() {
        let mut m = machine(Phase::List);
        m.fresh_sync = true;
        let steps = run(&mut m, vec![(End::TokenExpired, seen(5, false))]);
        // No re-sync: what the first pages delivered stands.
        assert_eq!(steps.len(), 1);
        assert_eq!((steps[0].0, steps[0].2), (Phase::List, false));
        assert!(matches!(steps[0].1, Next::Pause { .. }), "{:?}", steps[0].1);
        assert!(m.unpaged() && m.fresh_sync);
        let synced = Seen {
            synced: true,
            ..seen(50, true)
        };
        assert_eq!(
            run(&mut m, vec![(End::Listed, synced)]),
            [(Phase::Watch, Next::Go, false)]
        );
        m.on(Fact::SyncComplete);
        assert!(!m.unpaged(), "the next full state pages again");
    }

    #[test]
    fn failures_back_off_honour_the_server_and_reset_after_a_healthy_while() {
        let mut m = machine(Phase::Watch);
        let hint = Some(Duration::ZERO);
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Retry("503".into(), hint), seen(5, false)),
                    (End::Retry("503".into(), Some(30 * S)), seen(5, false)),
                    (End::Broke("cut".into()), seen(5, false)),
                    (End::Broke("cut".into()), seen(121_000, true)),
                ]
            ),
            [
                // Retry-After: 0 is no reason to hammer: the backoff still counts.
                (Phase::Watch, pause(1, Duration::ZERO), false),
                (Phase::Watch, pause(2, 30 * S), false),
                (Phase::Watch, pause(3, Duration::ZERO), false),
                (Phase::Watch, pause(1, Duration::ZERO), false),
            ]
        );
    }

    #[test]
    fn watches_that_end_at_once_with_nothing_are_failures_and_then_a_resync() {
        let mut m = machine(Phase::Watch);
        let quick = seen(20, false);
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Ended, quick),
                    (End::Ended, quick),
                    (End::Ended, quick)
                ]
            ),
            [
                (Phase::Watch, pause(1, Duration::ZERO), false),
                (Phase::Watch, pause(2, Duration::ZERO), false),
                (Phase::WatchList, pause(3, Duration::ZERO), true),
            ]
        );
        assert!(m.fresh_sync);
        // Progress, or a long watch, is a normal end.
        let mut m = machine(Phase::Watch);
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Ended, quick),
                    (End::Ended, seen(20, true)),
                    (End::Ended, quick),
                    (End::Ended, seen(1500, false))
                ]
            ),
            [
                (Phase::Watch, pause(1, Duration::ZERO), false),
                (Phase::Watch, Next::Go, false),
                (Phase::Watch, pause(2, Duration::ZERO), false),
                (Phase::Watch, Next::Go, false),
            ]
        );
    }

    #[test]
    fn watch_lists_that_cannot_complete_fall_back_to_list() {
        // Ended before the bookmark, twice: the server ignores sendInitialEvents.
        let mut m = machine(Phase::WatchList);
        assert_eq!(
            run(
                &mut m,
                vec![(End::Ended, seen(50, true)), (End::Ended, seen(50, true))]
            ),
            [
                (Phase::WatchList, budget(1, 1), false),
                (Phase::List, budget(2, 2), false),
            ]
        );
        assert!(
            m.list_mode && !m.fresh_sync,
            "for good; the same full state goes on"
        );
        let synced = Seen {
            synced: true,
            ..seen(50, true)
        };
        assert_eq!(
            run(
                &mut m,
                vec![(End::Listed, synced), (End::Expired, seen(5, false))]
            ),
            [
                (Phase::Watch, Next::Go, false),
                // Two watch-lists and a LIST were answered: the budget waits.
                (Phase::List, budget(3, 3), true)
            ]
        );
        // Quiet: at once, for good.
        let mut m = machine(Phase::WatchList);
        assert_eq!(
            run(&mut m, vec![(End::Quiet, seen(30_000, true))]),
            // The watch-list was answered: the LIST is the next full state.
            [(Phase::List, budget(0, 1), false)]
        );
        assert!(m.list_mode);
        // Cut twice with nothing new: LIST for this full state only.
        let mut m = machine(Phase::WatchList);
        let cut = || (End::Broke("cut".into()), seen(50, false));
        assert_eq!(
            run(&mut m, vec![cut(), cut()]),
            [
                (Phase::WatchList, budget(1, 1), false),
                (Phase::List, budget(2, 2), false)
            ]
        );
        let synced = Seen {
            synced: true,
            ..seen(50, true)
        };
        assert_eq!(
            run(
                &mut m,
                vec![(End::Listed, synced), (End::Expired, seen(5, false))]
            ),
            [
                (Phase::Watch, Next::Go, false),
                (Phase::WatchList, budget(3, 3), true)
            ]
        );
        assert!(!m.list_mode);
        // Cuts that each deliver something new go on with watch-list.
        let mut m = machine(Phase::WatchList);
        let progress = || (End::Broke("cut".into()), seen(50, true));
        let quiet_cut = || (End::Broke("cut".into()), seen(50, false));
        assert_eq!(
            run(
                &mut m,
                vec![quiet_cut(), progress(), quiet_cut(), progress(), progress()]
            )
            .iter()
            .map(|x| x.0)
            .collect::<Vec<_>>(),
            [Phase::WatchList; 5]
        );
        // An error event before the bookmark (an etcd too old): twice, for good.
        let mut m = machine(Phase::WatchList);
        let old = || (End::InitialError("etcd".into()), seen(5, false));
        assert_eq!(
            run(&mut m, vec![old(), old()]).last().unwrap().0,
            Phase::List
        );
        assert!(m.list_mode);
        // A refused watch-list: at once, for good; a refused LIST fails for good.
        let mut m = machine(Phase::WatchList);
        assert_eq!(
            run(
                &mut m,
                vec![
                    // Refusals are not 200s: not answered, not a full state.
                    (End::Rejected(info(422)), Seen::default()),
                    (End::Rejected(info(400)), Seen::default())
                ]
            ),
            [
                (Phase::List, Next::Go, false),
                (Phase::List, Next::End(Some(info(400))), false)
            ]
        );
    }

    #[test]
    fn expired_and_too_large_resync_without_hammering() {
        let mut m = machine(Phase::Watch);
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Expired, seen(5, false)),
                    (End::Expired, seen(5, false)),
                    (End::TooLarge(Some(S)), seen(5, false)),
                ]
            ),
            [
                (Phase::WatchList, Next::Go, true),
                (Phase::WatchList, budget(1, 1), true),
                (
                    Phase::WatchList,
                    Next::Pause {
                        failures: 2,
                        at_least: S,
                        syncs: 2
                    },
                    true
                ),
            ]
        );
    }

    #[test]
    fn unauthorized_reloads_once_then_fails_and_fatal_ends() {
        let mut m = machine(Phase::Watch);
        let u = |reloadable| {
            (
                End::Unauthorized {
                    info: info(401),
                    reloadable,
                },
                Seen::default(),
            )
        };
        let steps: Vec<Step> = [u(true), u(true)]
            .into_iter()
            .map(|(e, s)| m.next(e, s))
            .collect();
        assert_eq!((steps[0].next.clone(), steps[0].reload), (Next::Go, true));
        assert_eq!(steps[1].next, Next::End(Some(info(401))));
        // A 200 in between re-arms the reload.
        let mut m = machine(Phase::Watch);
        m.next(u(true).0, Seen::default());
        m.next(End::Ended, seen(2000, true));
        assert!(m.next(u(true).0, Seen::default()).reload);
        assert_eq!(
            m.next(u(false).0, Seen::default()).next,
            Next::End(Some(info(401)))
        );
        let mut m = machine(Phase::Watch);
        assert_eq!(
            m.next(End::Fatal(info(403)), Seen::default()).next,
            Next::End(Some(info(403)))
        );
        assert_eq!(m.next(End::Stopped, Seen::default()).next, Next::End(None));
    }

    #[test]
    fn a_replacement_gives_up_after_three_failures_in_a_row() {
        let mut m = machine(Phase::WatchList);
        m.replacement = true;
        let busy = || (End::Retry("503".into(), None), seen(5, false));
        assert_eq!(
            run(&mut m, vec![busy(), busy(), busy()])
                .into_iter()
                .map(|x| x.1)
                .collect::<Vec<_>>(),
            [
                // Each answered watch-list counts against the budget too.
                budget(1, 1),
                budget(2, 2),
                Next::End(None)
            ]
        );
    }

    #[test]
    fn full_states_back_off_whatever_the_server_answers_until_healthy_watching() {
        let synced = |ms| Seen {
            synced: true,
            ..seen(ms, true)
        };
        // A watch-list syncs; the watch from it is answered 410; again and again.
        let mut m = Course::new(false, false, 120 * S, Duration::from_secs(1));
        let mut got = Vec::new();
        for _ in 0..4 {
            got.extend(run(
                &mut m,
                vec![(End::Ended, synced(50)), (End::Expired, seen(5, false))],
            ));
        }
        assert_eq!(
            got.iter().skip(1).step_by(2).cloned().collect::<Vec<_>>(),
            [
                (Phase::WatchList, budget(0, 1), true),
                (Phase::WatchList, budget(0, 2), true),
                (Phase::WatchList, budget(0, 3), true),
                (Phase::WatchList, budget(0, 4), true),
            ]
        );
        // The same, the 410 as an error event right after a bookmark; then a
        // healthy watch (reset_after long) forgets the streak: at once again.
        let mut m = Course::new(false, false, 120 * S, Duration::from_secs(1));
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Expired, synced(50)),
                    (End::Expired, synced(50)),
                    (End::Ended, synced(50)),
                    (End::Expired, seen(121_000, false)),
                ]
            ),
            [
                (Phase::WatchList, budget(0, 1), true),
                (Phase::WatchList, budget(0, 2), true),
                (Phase::Watch, Next::Go, false),
                (Phase::WatchList, Next::Go, true),
            ]
        );
        // LIST + WATCH with every watch expired: the LISTs back off.
        let mut m = machine(Phase::List);
        m.list_mode = true;
        assert_eq!(
            run(
                &mut m,
                vec![
                    (End::Listed, synced(5)),
                    (End::Expired, seen(5, false)),
                    (End::Listed, synced(5)),
                    (End::Expired, seen(5, false)),
                ]
            ),
            [
                (Phase::Watch, Next::Go, false),
                (Phase::List, budget(0, 1), true),
                (Phase::Watch, Next::Go, false),
                (Phase::List, budget(0, 2), true),
            ]
        );
        // Watches with a bookmark each (not progress, whichever way its
        // resourceVersion moves) that end at once: failures, then a re-sync
        // that the budget also paces.
        let mut m = Course::new(false, false, 120 * S, Duration::from_secs(1));
        let quick = || (End::Ended, seen(5, false));
        let got = run(
            &mut m,
            vec![(End::Ended, synced(50)), quick(), quick(), quick()],
        );
        assert_eq!(got[3], (Phase::WatchList, budget(3, 1), true));
    }

    #[test]
    fn a_refused_resume_point_resyncs_once() {
        let mut m = machine(Phase::Watch);
        let refused = || (End::Rejected(info(400)), seen(5, false));
        assert_eq!(
            run(&mut m, vec![refused()]),
            [(Phase::WatchList, pause(1, Duration::ZERO), true)]
        );
        let synced = Seen {
            synced: true,
            ..seen(50, true)
        };
        assert_eq!(
            run(&mut m, vec![(End::Ended, synced), refused()]),
            [
                (Phase::Watch, Next::Go, false),
                (Phase::Watch, Next::End(Some(info(400))), false)
            ]
        );
    }

    #[test]
    fn bookmarks_move_the_resume_point_end_a_sync_or_reveal_a_plain_watch() {
        let rv = |n: u64| Rv::from_u64(n);
        // (synced, initial_events_end, plain bookmarks before) -> meaning, cursor after
        // Catching up with no known target: any bookmark ends the replay.
        let mut c = machine(Phase::Watch).resumed_at(rv(1));
        c.on(Fact::CatchUpTarget(Rv::empty()));
        assert_eq!(bookmark(&mut c, rv(9), false), Bookmark::CaughtUp);
        c.on(Fact::CatchUpTarget(rv(20)));
        let mut c = machine(Phase::Watch).resumed_at(rv(1));
        c.on(Fact::CatchUpTarget(rv(20)));
        assert_eq!(
            bookmark(&mut c, rv(9), false),
            Bookmark::Moved,
            "a known target is reached by order"
        );
        let mut c = machine(Phase::Watch).resumed_at(Rv::new("x-1"));
        c.on(Fact::CatchUpTarget(Rv::new("x-7")));
        assert_eq!(
            bookmark(&mut c, Rv::new("x-9"), false),
            Bookmark::CaughtUp,
            "opaque: no order"
        );
        let rows: [(bool, bool, u32, Bookmark, &str); 6] = [
            (true, false, 0, Bookmark::Moved, "9"),
            (true, true, 0, Bookmark::Moved, "9"),
            (false, true, 0, Bookmark::EndsSync, "9"),
            (false, true, 2, Bookmark::EndsSync, "9"),
            (false, false, 1, Bookmark::Plain, "1"),
            (false, false, 2, Bookmark::IgnoresInitialEvents, "1"),
        ];
        for (synced, end, before, want, cursor) in rows {
            let mut c = machine(Phase::WatchList);
            c.cursor = rv(1);
            c.synced = synced;
            c.attempt.plain_bookmarks = before;
            assert_eq!(
                bookmark(&mut c, rv(9), end),
                want,
                "{synced} {end} {before}"
            );
            assert_eq!(c.cursor().as_str(), cursor);
            assert!(!c.attempt.progressed, "a bookmark is not progress");
        }
    }

    #[test]
    fn a_read_timeout_means_what_the_request_and_the_course_say() {
        let s = Duration::from_secs;
        let idle = s(150);
        let broke = |m: &str| Silence::Ends(End::Broke(m.into()));
        let dead = Silence::Ends(End::Silent(
            "no data within idle_timeout: connection taken as dead".into(),
        ));
        // (synced, catching up, the request's short limit, mid-frame, objects) -> meaning
        let rows = [
            (
                false,
                false,
                Some(s(30)),
                false,
                5,
                Silence::Ends(End::Quiet),
            ),
            (
                false,
                false,
                Some(s(30)),
                false,
                0,
                broke("no initial events within 30s (initial_events_timeout)"),
            ),
            (
                true,
                false,
                Some(s(30)),
                false,
                0,
                Silence::Ends(End::Ended),
            ),
            (true, true, Some(s(1)), false, 0, Silence::CaughtUp),
            // Mid-frame, or no short limit: the idle timeout, a dead peer.
            (false, false, Some(s(30)), true, 5, dead.clone()),
            (true, true, Some(s(1)), true, 0, dead.clone()),
            (true, false, None, false, 0, dead.clone()),
            // A short limit no shorter than the idle one is the idle one.
            (false, false, Some(s(150)), false, 5, dead),
        ];
        for (synced, catching_up, short, mid, objects, want) in rows {
            let mut c = machine(Phase::WatchList);
            c.synced = synced;
            c.catch_up = catching_up.then_some(None);
            assert_eq!(
                c.silence(short, idle, mid, objects),
                want,
                "{synced} {catching_up} {short:?} {mid} {objects}"
            );
        }
    }

    #[test]
    fn a_resume_is_caught_up_at_its_target_or_past_it() {
        let rv = |t: &str| Rv::new(t);
        // (cursor, target) -> reached
        let rows = [
            ("10", Some("10"), true),
            ("11", Some("10"), true),
            ("9", Some("10"), false),
            ("x-1", Some("x-1"), true),
            ("x-2", Some("x-1"), false),
            ("10", Some(""), false),
            ("10", None, false),
        ];
        for (cursor, target, want) in rows {
            let mut c = machine(Phase::Watch).resumed_at(rv(cursor));
            if let Some(t) = target {
                c.on(Fact::CatchUpTarget(rv(t)));
            }
            assert_eq!(c.reached_target(), want, "{cursor} {target:?}");
        }
        let mut c = machine(Phase::Watch).resumed_at(rv("3"));
        assert!(c.synced() && c.catch_up().is_some());
        assert!(caught_up(&mut c));
        assert!(!caught_up(&mut c), "once");
    }

    #[test]
    fn a_resync_makes_the_state_incomplete_and_ends_a_catch_up() {
        let mut c = machine(Phase::Watch).resumed_at(Rv::from_u64(4));
        c.on(Fact::Began);
        let step = c.finish(End::Expired, Duration::from_millis(5), true);
        assert!(step.resync);
        assert!(!c.synced() && c.catch_up().is_none());
        assert_eq!(c.phase(), Phase::WatchList);
        // A relist by re-sync does the same, at once.
        let mut c = machine(Phase::Watch);
        c.synced = true;
        c.finish(End::Relist, Duration::ZERO, true);
        assert!(!c.synced() && c.fresh_sync());
        assert_eq!(c.phase(), Phase::WatchList);
    }

    #[test]
    fn entries_are_progress_and_events_move_the_resume_point_only_once_synced() {
        let mut c = machine(Phase::WatchList);
        c.cursor = Rv::from_u64(1);
        c.on(Fact::Began);
        c.on(Fact::Judged(Rv::from_u64(5)));
        assert_eq!(
            c.cursor().as_str(),
            "1",
            "an initial object is no resume point"
        );
        assert!(!c.attempt.progressed, "judged is not delivered");
        c.on(Fact::Delivered);
        assert!(c.attempt.progressed);
        c.on(Fact::SyncComplete);
        c.on(Fact::Judged(Rv::from_u64(6)));
        assert_eq!(c.cursor().as_str(), "6");
        // Initial events are ADDED; anything else before the bookmark is a plain watch.
        let mut c = machine(Phase::WatchList);
        assert!(c.initial_event_ok(true) && !c.initial_event_ok(false));
        c.on(Fact::SyncComplete);
        assert!(c.initial_event_ok(false));
        assert!(machine(Phase::List).initial_event_ok(false));
    }

    #[test]
    fn a_403_ends_a_stream_never_allowed_and_is_retried_a_while_by_one_that_was() {
        let forbidden = || End::Fatal(info(403));
        // Never answered 200: the identity may not read it; at once.
        let mut m = machine(Phase::WatchList);
        assert_eq!(
            m.next(forbidden(), Seen::default()).next,
            Next::End(Some(info(403)))
        );
        // Allowed before (an apiserver restarting answers 403 until its RBAC
        // is loaded): retried with backoff, FORBIDDEN_RETRIES times in a row.
        let mut m = machine(Phase::Watch);
        m.next(End::Ended, seen(300_000, true));
        let steps: Vec<Next> = (0..=FORBIDDEN_RETRIES)
            .map(|_| m.next(forbidden(), Seen::default()).next)
            .collect();
        assert!(
            steps[..FORBIDDEN_RETRIES as usize]
                .iter()
                .enumerate()
                .all(|(i, n)| *n == pause(i as u32 + 1, Duration::ZERO)),
            "{steps:?}"
        );
        assert_eq!(
            steps[FORBIDDEN_RETRIES as usize],
            Next::End(Some(info(403)))
        );
        // An answer in between starts the count again.
        let mut m = machine(Phase::Watch);
        m.next(End::Ended, seen(300_000, true));
        for _ in 0..3 * FORBIDDEN_RETRIES {
            assert!(matches!(
                m.next(forbidden(), Seen::default()).next,
                Next::Pause { .. }
            ));
            m.next(End::Ended, seen(5_000, true));
        }
    }

    #[test]
    fn a_schema_miss_turns_to_json_except_for_metadata() {
        let mut c = machine(Phase::Watch);
        assert!(c.asks_protobuf(true));
        assert_eq!(schema_miss(&mut c, true, "m"), None);
        assert!(c.asks_protobuf(true));
        assert_eq!(
            schema_miss(&mut c, false, "m"),
            Some(End::Retry("m: asking for JSON from now on".into(), None))
        );
        assert!(!c.asks_protobuf(true) && !c.asks_protobuf(false));
    }
}
