//! One stream's course, owned in one place: what it is doing (its phase,
//! carrying what means something only there), what it remembers across
//! phases (the resume point, the request budget, failures in a row, whether
//! it was retired or must ask for JSON from now on) and the one function
//! that decides, from how the last request ended, what to request next and
//! how long to wait first. It changes through two doors only: [`Course::on`]
//! applies what happened ([`Fact`]), and [`Course::finish`] decides on a
//! request that ended; everything else reads. No I/O, no clock: the stream
//! measures, this decides, and the table tests (`tests.rs`) pin every path,
//! the hot loops a hostile server could cause included.
//!
//! | phase (`Doing`)          | carries                                                          |
//! |--------------------------|------------------------------------------------------------------|
//! | `Discover { resumed }`   | resumed from a checkpoint: synced at the resume point            |
//! | `Sync(Sync)`             | by watch-list or LIST; a new full state or a retry; watch-lists   |
//! |                          | that could not complete; 429s in a row, a cache read; unpaged    |
//! | `Watch(Watching)`        | synced; watches that ended at once; a catch-up (quiet, asking,   |
//! |                          | or a target to reach)                                            |
//!
//! | fact / door                         | what changes                                          |
//! |-------------------------------------|-------------------------------------------------------|
//! | `Began`                             | a new attempt: nothing seen in it yet                 |
//! | `Judged(rv)`, `Delivered`           | the resume point moves once synced; an entry is progress |
//! | `Bookmark(rv, meaning)`             | synced: the resume point moves; else it may end the sync |
//! | `Listed(rv)`                        | a LIST's full state ends at `rv`                      |
//! | `SyncGranted`                       | the full state is claimed: a retry continues it       |
//! | `SyncComplete`                      | synced: the stream watches                            |
//! | `CatchUpSlow`, `CatchUpTarget(rv)`  | a busy replay asks the server; the target it said      |
//! | `CaughtUp`                          | a resume's (or a Stale's) replay is over              |
//! | `Retired`, `Promoted`               | another stream owns the resource; a relist swapped in |
//! | `SchemaMissed`                      | protobuf gave a field tattler does not know: JSON now |
//! | `InheritedStreak(n)`                | the resource's request budget count goes on           |
//! | `finish(end, lasted, answered)`     | the decision: what next, after how long, what to tell |

mod questions;
mod stale;
pub(crate) mod vocabulary;

#[cfg(test)]
mod tests;

use std::time::Duration;

use self::stale::Cause;
use self::vocabulary::{Bookmark, CatchUp, Fact, Next, Phase, Step};
use crate::api::end::End;
use crate::resource_version::Rv;

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
/// ends the stream after about a minute of backoff. Each waits at least
/// [`FORBIDDEN_PAUSE`], so that the retries last seconds whatever the
/// jitter draws.
const FORBIDDEN_RETRIES: u32 = 10;
/// The least wait before a 403 is retried (see [`FORBIDDEN_RETRIES`]).
const FORBIDDEN_PAUSE: Duration = Duration::from_millis(500);

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
    /// The request asked for a full state (it began while syncing).
    pub full_state: bool,
    /// Bookmarks without the initial-events-end annotation before it.
    pub plain_bookmarks: u32,
}

/// What a stream is doing, with what means something only there.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Doing {
    /// Finding a kind's resource name and scope (discovery); `resumed`:
    /// from a checkpoint, so synced at the resume point.
    Discover { resumed: bool },
    /// Reading a full state.
    Sync(Sync),
    /// Watching live changes from the resume point: synced.
    Watch(Watching),
}

/// A full state under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Sync {
    /// By paged LIST; else by watch-list, whose connection then goes on
    /// with live events.
    by_list: bool,
    /// This full state comes by LIST (watch-lists kept breaking).
    list_once: bool,
    /// The next attempt begins a new full state (rather than retrying this).
    fresh: bool,
    /// Watch-lists in a row that could not complete.
    incomplete: u32,
    /// Requests answered 429 in a row.
    throttled: u32,
    /// It reads what the watch cache holds (not older than the resume
    /// point) rather than a consistent read.
    cache_read: bool,
    /// Its LIST comes in one answer, not in pages: a continue token expired
    /// (client-go's pager does the same).
    unpaged: bool,
}

/// Live watching.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Watching {
    /// Watches in a row that ended at once with nothing in them.
    short: u32,
    /// Not current yet (resumed, or told Stale): how it catches up.
    catch_up: Option<CatchUp>,
}

/// One stream's course: see the module's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Course {
    doing: Doing,
    /// The server cannot do watch-list for this resource: every full state
    /// comes by LIST.
    list_mode: bool,
    failures: u32,
    /// The failures in a row so far are the server's silence (no answer):
    /// a refusal after them starts its backoff again.
    unreachable_spell: bool,
    reauthed: bool,
    /// A healthy connection this long forgets the failures before it.
    reset_after: Duration,
    /// A watch that ends sooner with no progress is a failure.
    short_watch: Duration,
    /// A relist's replacement (it gives up after a few failures in a row),
    /// until it is promoted.
    replacement: bool,
    /// Full states completed since the last healthy watching: the request
    /// budget (each further full state waits longer).
    streak: u32,
    /// The server refused a watch from the resume point once (a damaged
    /// checkpoint, a resourceVersion of another cluster): re-synced; a
    /// second refusal before healthy watching ends the stream.
    refused_watch: bool,
    /// The resume point: the last resourceVersion seen (event or bookmark).
    /// A full state reads the watch cache "not older than" it, so every
    /// phase has one.
    cursor: Rv,
    /// What the request under way has done.
    attempt: Seen,
    /// The lifecycle retired this stream: it delivers nothing more and ends.
    retired: bool,
    /// The server sent a built-in object with a field tattler's schema does
    /// not have (a newer server): this stream asks for JSON from then on.
    schema_missed: bool,
    /// The consumer was told the resource is not current (a Stale entry)
    /// since this stream's last Synced.
    told_stale: bool,
    /// Why the last request failed, as the consumer is told it.
    cause: Cause,
    /// The server answered this stream 200 once: a later 403 may be an
    /// apiserver starting up, retried a while.
    allowed: bool,
    /// 403s in a row since it was allowed.
    forbidden: u32,
}

impl Course {
    /// `short_watch`: a watch that ends sooner with no progress is a
    /// failure (client-go: 1 s).
    pub(crate) fn new(
        needs_discovery: bool,
        list_mode: bool,
        reset_after: Duration,
        short_watch: Duration,
    ) -> Course {
        let mut c = Course {
            doing: Doing::Discover { resumed: false },
            list_mode,
            failures: 0,
            unreachable_spell: false,
            reauthed: false,
            reset_after,
            short_watch,
            replacement: false,
            streak: 0,
            refused_watch: false,
            cursor: Rv::empty(),
            attempt: Seen::default(),
            retired: false,
            schema_missed: false,
            told_stale: false,
            cause: Cause::None,
            allowed: false,
            forbidden: 0,
        };
        if !needs_discovery {
            c.resync();
        }
        c
    }

    /// A relist's replacement: it gives up after a few failures in a row.
    pub(crate) fn replacement(mut self) -> Course {
        self.replacement = true;
        self
    }

    /// Resumed from a checkpoint at `rv`: the state is complete there; the
    /// stream watches from it (once the resource is found) and catches up.
    pub(crate) fn resumed_at(mut self, rv: Rv) -> Course {
        self.cursor = rv;
        self.doing = match self.doing {
            Doing::Discover { .. } => Doing::Discover { resumed: true },
            _ => Doing::Watch(Watching {
                short: 0,
                catch_up: Some(CatchUp::Quiet),
            }),
        };
        self
    }

    // --- the first door: what happened ---

    /// Applies what happened (see [`Fact`]): with [`finish`](Self::finish),
    /// the only way the course changes.
    pub(crate) fn on(&mut self, fact: Fact) {
        let synced = self.synced();
        match fact {
            Fact::Began => {
                self.attempt = Seen {
                    full_state: self.syncing(),
                    ..Seen::default()
                }
            }
            // A full state's items do not move the resume point.
            Fact::Judged(rv) if synced => self.cursor = rv,
            Fact::Judged(_) => {}
            Fact::Delivered => self.attempt.progressed = true,
            Fact::Listed(rv) => self.cursor = rv,
            Fact::Bookmark(rv, meaning) => match meaning {
                Bookmark::Moved | Bookmark::CaughtUp | Bookmark::EndsSync => self.cursor = rv,
                Bookmark::Plain | Bookmark::IgnoresInitialEvents => {
                    self.attempt.plain_bookmarks += 1
                }
            },
            Fact::SyncGranted => {
                if let Doing::Sync(s) = &mut self.doing {
                    s.fresh = false;
                }
            }
            Fact::SyncComplete => {
                // The watch-list's connection goes on with live events.
                self.doing = Doing::Watch(Watching::default());
                self.attempt.synced = true;
                self.attempt.progressed = true;
                self.told_stale = false;
            }
            Fact::CatchUpTarget(target) => {
                if let Doing::Watch(Watching {
                    catch_up: Some(c), ..
                }) = &mut self.doing
                {
                    *c = CatchUp::To(target);
                }
            }
            Fact::CatchUpSlow => {
                if let Doing::Watch(Watching {
                    catch_up: Some(c @ CatchUp::Quiet),
                    ..
                }) = &mut self.doing
                {
                    *c = CatchUp::Probe;
                }
            }
            Fact::CaughtUp => {
                if let Doing::Watch(w) = &mut self.doing {
                    if w.catch_up.take().is_some() {
                        self.told_stale = false;
                    }
                }
            }
            Fact::Retired => self.retired = true,
            Fact::Promoted => self.replacement = false,
            Fact::SchemaMissed => self.schema_missed = true,
            Fact::InheritedStreak(streak) => self.streak = self.streak.max(streak),
        }
    }

    // --- the second door: the decision ---

    /// Decides what follows the request under way, which ended with `end`
    /// after `lasted`, the server having answered 200 (`answered`) or not,
    /// and whether the consumer is owed a notice that the resource is not
    /// current ([`Step::notice`]): once told, not again until it is current;
    /// a relist's replacement tells nothing (the primary's view stays
    /// current). A resource that was current catches up before its next
    /// Synced: its watch resumes, and the Synced comes once it has replayed
    /// what it missed.
    pub(crate) fn finish(&mut self, end: End, lasted: Duration, answered: bool) -> Step {
        let relist = end == End::Relist;
        let mut step = if relist {
            // At once: the relist interval paces it.
            self.resync();
            Step {
                next: Next::Go,
                resync: true,
                reload: false,
                why: Some("a relist by a new full state (opaque resourceVersions)".into()),
                unreachable: false,
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
        let cause = std::mem::take(&mut self.cause);
        step.unreachable = matches!(cause, Cause::Unreachable(_)) && !answered && !relist;
        if !self.replacement && !self.told_stale {
            step.notice = stale::owed(cause, &step, answered || relist);
        }
        if step.notice.is_some() {
            self.told_stale = true;
            if let Doing::Watch(w) = &mut self.doing {
                // Current again once the resumed watch has caught up.
                w.catch_up = Some(CatchUp::Quiet);
            }
        }
        step
    }

    /// A new full state follows (the one under way, if any, starts anew);
    /// nothing it began is kept but how it is read.
    fn resync(&mut self) {
        match &mut self.doing {
            Doing::Sync(s) => {
                s.fresh = true;
                s.by_list = self.list_mode || s.list_once;
            }
            doing => {
                *doing = Doing::Sync(Sync {
                    by_list: self.list_mode,
                    fresh: true,
                    ..Sync::default()
                })
            }
        }
    }

    /// The full state under way is read consistently (no resourceVersion).
    fn consistent_read(&mut self) {
        if let Doing::Sync(s) = &mut self.doing {
            s.cache_read = false;
            s.throttled = 0;
        }
    }

    /// The full state under way goes on by LIST: for good (`sticky`), or
    /// for this full state only.
    fn fall_back_to_list(&mut self, sticky: bool) {
        if sticky {
            self.list_mode = true;
        }
        if let Doing::Sync(s) = &mut self.doing {
            s.list_once |= !sticky;
            s.by_list = true;
        }
    }

    fn fail(&mut self, why: String, at_least: Option<Duration>) -> Step {
        // A refusal after a spell of no answer (an apiserver back from a
        // restart that answers 403 until its RBAC is loaded, or 429 while
        // its cache fills) backs off from the first step again: the
        // outage's length says nothing about how long the refusals last.
        match self.cause {
            Cause::Unreachable(_) => self.unreachable_spell = true,
            Cause::Refused(..) if self.unreachable_spell => {
                self.unreachable_spell = false;
                self.failures = 0;
            }
            _ => self.unreachable_spell = false,
        }
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
            unreachable: false,
            notice: None,
        }
    }

    fn go(why: Option<String>) -> Step {
        Step {
            next: Next::Go,
            resync: false,
            reload: false,
            why,
            unreachable: false,
            notice: None,
        }
    }

    fn end(info: Option<crate::entry::ErrorInfo>) -> Step {
        Step {
            next: Next::End(info),
            resync: false,
            reload: false,
            why: None,
            unreachable: false,
            notice: None,
        }
    }

    /// A failure after which a new full state follows.
    fn fail_and_resync(&mut self, why: String, at_least: Option<Duration>) -> Step {
        let mut step = self.fail(why, at_least);
        self.resync();
        step.resync = true;
        step
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
        let mut why = why;
        if let Doing::Sync(s) = &mut self.doing {
            s.incomplete += 1;
            if s.incomplete >= INCOMPLETE_WATCH_LISTS {
                s.incomplete = 0;
                self.fall_back_to_list(sticky);
                why = format!("{why}; falling back to LIST + WATCH");
            }
        }
        self.fail(why, None)
    }

    /// A 403 to a stream that was allowed before is retried a while (an
    /// apiserver starting answers so until its RBAC is loaded); a dead
    /// connection is a broken one and missing credentials a retry, to what
    /// follows. The cause is kept for the notice.
    fn judged(&mut self, end: End) -> End {
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
                    hint: Some(FORBIDDEN_PAUSE),
                }
            }
            end => end,
        };
        self.cause = Cause::of(&end);
        match end {
            End::Silent(why) => End::Broke(why),
            End::NoCredentials(why) => End::Retry(why, None),
            end => end,
        }
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
            self.reauthed = false;
        }
        let end = self.judged(end);
        if seen.lasted >= self.reset_after {
            self.failures = 0;
            if matches!(self.doing, Doing::Watch(_)) || seen.synced {
                self.streak = 0;
                self.refused_watch = false;
            }
        }
        if (self.syncing() || seen.full_state) && seen.answered {
            // A full state the server answered (and so worked for).
            self.streak = self.streak.saturating_add(1);
        }
        if seen.synced && self.syncing() {
            self.doing = Doing::Watch(Watching::default());
        }
        let phase = self.phase();
        let mut step = match end {
            // Handled by `finish`.
            End::Stopped | End::Relist => Self::end(None),
            End::Discovered => {
                self.doing = match self.doing {
                    Doing::Discover { resumed: true } => Doing::Watch(Watching {
                        short: 0,
                        catch_up: Some(CatchUp::Quiet),
                    }),
                    _ => {
                        self.resync();
                        self.doing.clone()
                    }
                };
                Self::go(None)
            }
            End::Listed => {
                if self.syncing() {
                    self.doing = Doing::Watch(Watching::default());
                }
                Self::go(None)
            }
            End::Ended => match &mut self.doing {
                Doing::Watch(w) if seen.progressed || seen.lasted >= self.short_watch => {
                    w.short = 0;
                    Self::go(None)
                }
                Doing::Watch(w) => {
                    w.short += 1;
                    if w.short >= SHORT_WATCHES {
                        self.fail_and_resync(
                            format!("{SHORT_WATCHES} watches in a row ended at once with nothing in them; re-syncing"),
                            None,
                        )
                    } else {
                        self.fail("the watch ended at once with nothing in it".into(), None)
                    }
                }
                Doing::Sync(s) if !s.by_list => self.incomplete(
                    "the watch-list ended before its initial-events-end bookmark".into(),
                    true,
                ),
                _ => self.fail("the answer ended early".into(), None),
            },
            // A cut watch-list that delivered something new may complete on
            // a retry; two in a row that delivered nothing fall back.
            End::Broke(why) if phase == Phase::WatchList && seen.progressed => {
                if let Doing::Sync(s) = &mut self.doing {
                    s.incomplete = 0;
                }
                self.fail(why, None)
            }
            End::Broke(why) if phase == Phase::WatchList => self.incomplete(why, false),
            End::Broke(why) => self.fail(why, None),
            End::Quiet => {
                self.fall_back_to_list(true);
                Self::go(Some(
                    "no initial-events-end bookmark: the server ignores sendInitialEvents; using LIST + WATCH".into(),
                ))
            }
            End::InitialError(why) => self.incomplete(why, true),
            End::Expired => {
                // History gone: a new full state, at once: the server
                // answered, so what failed before (the outage of a restart,
                // whose new watch cache starts at the current revision) is
                // over and counts no more. One during a full state (a second
                // in a row) waits; the request budget paces the rest.
                //
                // The new full state reads what the watch cache holds, not
                // older than the resume point, as client-go's reflector does
                // after a watch's 410: the server's cache serves it at once,
                // with no consistent read (a round trip to etcd, and a wait
                // for a cache that may lag: kubernetes#139766). Only a
                // number: another server may refuse an opaque one.
                if self.syncing() {
                    self.consistent_read();
                    self.fail_and_resync("the resourceVersion expired again".into(), None)
                } else {
                    self.failures = 0;
                    self.resync();
                    if self.cursor.number().is_some() {
                        if let Doing::Sync(s) = &mut self.doing {
                            s.cache_read = true;
                        }
                    }
                    let mut s = Self::go(Some("the resourceVersion expired; re-syncing".into()));
                    s.resync = true;
                    s
                }
            }
            End::TokenExpired => {
                // The same full state goes on (nothing delivered in it comes
                // again), its LIST unpaged: no token left to expire.
                if let Doing::Sync(s) = &mut self.doing {
                    s.unpaged = true;
                }
                self.fail(
                    "a LIST page's continue token expired; listing again in one answer".into(),
                    None,
                )
            }
            End::TooLarge(hint) => {
                // The resume point is not the server's (restored from a
                // backup, another cluster): a consistent read, as client-go
                // then asks.
                self.consistent_read();
                self.fail_and_resync(
                    "the resourceVersion is ahead of the server; re-syncing".into(),
                    hint,
                )
            }
            End::Rejected(info) if self.cache_read().is_some() => {
                // The server refuses to read its cache at this resource
                // version: the same full state, read consistently.
                self.consistent_read();
                self.fail(
                    format!(
                        "the server refuses to read its cache at this resourceVersion ({} {}); reading consistently",
                        info.code, info.message
                    ),
                    None,
                )
            }
            End::Rejected(info) if phase == Phase::WatchList => {
                self.fall_back_to_list(true);
                Self::go(Some(format!(
                    "the server refuses watch-list ({} {}); using LIST + WATCH",
                    info.code, info.message
                )))
            }
            End::Rejected(info) if phase == Phase::Watch && !self.refused_watch => {
                // The resume point itself is refused (a damaged checkpoint):
                // a full state, once.
                self.refused_watch = true;
                self.fail_and_resync(
                    format!(
                        "the server refuses the watch from this resourceVersion ({} {}); re-syncing",
                        info.code, info.message
                    ),
                    None,
                )
            }
            End::Rejected(info) | End::Fatal(info) => Self::end(Some(info)),
            End::Unauthorized { info, reloadable } => {
                if reloadable && !self.reauthed {
                    // A rotated token or an expired exec credential: reload once, at once.
                    self.reauthed = true;
                    let mut s = Self::go(Some("401 Unauthorized; reloading credentials".into()));
                    s.reload = true;
                    s
                } else {
                    Self::end(Some(info))
                }
            }
            End::Retry(why, hint) => self.fail(why, hint),
            // Mapped to Broke and Retry by `judged`.
            End::Silent(why) | End::NoCredentials(why) => self.fail(why, None),
            End::Refused { code, why, hint } => {
                let mut s = self.fail(why, hint);
                if let Doing::Sync(sync) = &mut self.doing {
                    if code == 429 {
                        sync.throttled = sync.throttled.saturating_add(1);
                        if sync.throttled >= LAGGING_CACHE && !sync.cache_read {
                            // kubernetes#139766: a consistent read waits for a
                            // watch cache that lags, and the server answers 429
                            // after ~3 s, forever.
                            sync.cache_read = true;
                            s.why = s.why.map(|w| {
                                format!("{w}; the watch cache lags: asking for what it holds (not older than the last resourceVersion seen)")
                            });
                        }
                    }
                }
                s
            }
        };
        self.budget(&mut step);
        step
    }
}
