//! The course's table tests: every path of the decision, the hot loops a
//! hostile server could cause included.

use super::*;
use crate::entry::ErrorInfo;
use crate::stream::course::vocabulary::{CatchUp, Silence};

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

fn course_in(phase: Phase) -> Course {
    let mut m = Course::new(
        false,
        false,
        Duration::from_secs(120),
        Duration::from_secs(1),
    );
    m.doing = match phase {
        Phase::Discover => Doing::Discover { resumed: false },
        Phase::WatchList | Phase::List => Doing::Sync(Sync {
            by_list: phase == Phase::List,
            ..Sync::default()
        }),
        Phase::Watch => Doing::Watch(Watching::default()),
    };
    m
}

/// Synced (watching), or as it was.
fn set_synced(c: &mut Course, synced: bool) {
    if synced {
        c.doing = Doing::Watch(Watching::default());
    }
}

/// A full state under way that begins anew (`fresh`) or continues.
fn set_fresh(c: &mut Course, fresh: bool) {
    if let Doing::Sync(s) = &mut c.doing {
        s.fresh = fresh;
    }
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

/// Runs `ends` through a course; the phase and `next` after each.
fn run(m: &mut Course, ends: Vec<(End, Seen)>) -> Vec<(Phase, Next, bool)> {
    ends.into_iter()
        .map(|(e, s)| {
            let step = m.next(e, s);
            (m.phase(), step.next, step.resync)
        })
        .collect()
}

#[test]
fn a_healthy_stream_syncs_then_watches_and_resumes_at_once() {
    let mut m = Course::new(false, false, 120 * S, Duration::from_secs(1));
    assert_eq!((m.phase(), m.fresh_sync()), (Phase::WatchList, true));
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
    assert!(!m.fresh_sync());
    let mut d = Course::new(true, false, 120 * S, Duration::from_secs(1));
    assert_eq!(d.phase(), Phase::Discover);
    assert_eq!(
        run(&mut d, vec![(End::Discovered, seen(10, false))]),
        [(Phase::WatchList, Next::Go, false)]
    );
}

#[test]
fn an_expired_continue_token_goes_on_with_the_same_full_state_unpaged() {
    let mut m = course_in(Phase::List);
    set_fresh(&mut m, true);
    let steps = run(&mut m, vec![(End::TokenExpired, seen(5, false))]);
    // No re-sync: what the first pages delivered stands.
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].0, steps[0].2), (Phase::List, false));
    assert!(matches!(steps[0].1, Next::Pause { .. }), "{:?}", steps[0].1);
    assert!(m.unpaged() && m.fresh_sync());
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
    let mut m = course_in(Phase::Watch);
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

/// Issue 36: the fleet's restart runs where resumes met a 403 while the
/// new apiserver's RBAC loaded took 2.8-9.9 s to be current: the 403s
/// backed off from the outage's count of failures. A refusal after a spell
/// of no answer backs off from the first step again; refusals in a row
/// then count as ever.
#[test]
fn a_refusal_after_an_outage_backs_off_from_the_first_step() {
    let mut m = course_in(Phase::Watch);
    m.next(End::Ended, seen(300_000, true));
    let forbidden = || End::Fatal(info(403));
    let throttled = || End::Refused {
        code: 429,
        why: "too many requests".into(),
        hint: None,
    };
    let refused = || End::Broke("connection refused".into());
    assert_eq!(
        run(
            &mut m,
            vec![
                (refused(), seen(5, false)),
                (refused(), seen(5, false)),
                (refused(), seen(5, false)),
                (forbidden(), seen(5, false)),
                (forbidden(), seen(5, false)),
                (throttled(), seen(5, false)),
                (refused(), seen(5, false)),
                (forbidden(), seen(5, false)),
            ]
        ),
        [
            (Phase::Watch, pause(1, Duration::ZERO), false),
            (Phase::Watch, pause(2, Duration::ZERO), false),
            (Phase::Watch, pause(3, Duration::ZERO), false),
            (Phase::Watch, pause(1, FORBIDDEN_PAUSE), false),
            (Phase::Watch, pause(2, FORBIDDEN_PAUSE), false),
            (Phase::Watch, pause(3, Duration::ZERO), false),
            (Phase::Watch, pause(4, Duration::ZERO), false),
            (Phase::Watch, pause(1, FORBIDDEN_PAUSE), false),
        ]
    );
}

#[test]
fn watches_that_end_at_once_with_nothing_are_failures_and_then_a_resync() {
    let mut m = course_in(Phase::Watch);
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
    assert!(m.fresh_sync());
    // Progress, or a long watch, is a normal end.
    let mut m = course_in(Phase::Watch);
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
    let mut m = course_in(Phase::WatchList);
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
        m.list_mode && !m.fresh_sync(),
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
            // Two watch-lists and a LIST were answered: the budget waits
            // (the 410 was an answer: the failures before it count no more).
            (Phase::List, budget(0, 3), true)
        ]
    );
    // Quiet: at once, for good.
    let mut m = course_in(Phase::WatchList);
    assert_eq!(
        run(&mut m, vec![(End::Quiet, seen(30_000, true))]),
        // The watch-list was answered: the LIST is the next full state.
        [(Phase::List, budget(0, 1), false)]
    );
    assert!(m.list_mode);
    // Cut twice with nothing new: LIST for this full state only.
    let mut m = course_in(Phase::WatchList);
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
            (Phase::WatchList, budget(0, 3), true)
        ]
    );
    assert!(!m.list_mode);
    // Cuts that each deliver something new go on with watch-list.
    let mut m = course_in(Phase::WatchList);
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
    let mut m = course_in(Phase::WatchList);
    let old = || (End::InitialError("etcd".into()), seen(5, false));
    assert_eq!(
        run(&mut m, vec![old(), old()]).last().unwrap().0,
        Phase::List
    );
    assert!(m.list_mode);
    // A refused watch-list: at once, for good; a refused LIST fails for good.
    let mut m = course_in(Phase::WatchList);
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
    let mut m = course_in(Phase::Watch);
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
    let mut m = course_in(Phase::Watch);
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
    let mut m = course_in(Phase::Watch);
    m.next(u(true).0, Seen::default());
    m.next(End::Ended, seen(2000, true));
    assert!(m.next(u(true).0, Seen::default()).reload);
    assert_eq!(
        m.next(u(false).0, Seen::default()).next,
        Next::End(Some(info(401)))
    );
    let mut m = course_in(Phase::Watch);
    assert_eq!(
        m.next(End::Fatal(info(403)), Seen::default()).next,
        Next::End(Some(info(403)))
    );
    assert_eq!(m.next(End::Stopped, Seen::default()).next, Next::End(None));
}

#[test]
fn a_replacement_gives_up_after_three_failures_in_a_row() {
    let mut m = course_in(Phase::WatchList);
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
    let mut m = course_in(Phase::List);
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
    let mut m = course_in(Phase::Watch);
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
    // Catching up by quiet (nothing asked yet), or with no known target:
    // any bookmark ends the replay.
    let mut c = course_in(Phase::Watch).resumed_at(rv(1));
    assert_eq!(c.catch_up(), Some(&CatchUp::Quiet));
    assert_eq!(bookmark(&mut c, rv(9), false), Bookmark::CaughtUp);
    let mut c = course_in(Phase::Watch).resumed_at(rv(1));
    c.on(Fact::CatchUpTarget(Rv::empty()));
    assert_eq!(bookmark(&mut c, rv(9), false), Bookmark::CaughtUp);
    c.on(Fact::CatchUpTarget(rv(20)));
    let mut c = course_in(Phase::Watch).resumed_at(rv(1));
    c.on(Fact::CatchUpTarget(rv(20)));
    assert_eq!(
        bookmark(&mut c, rv(9), false),
        Bookmark::Moved,
        "a known target is reached by order"
    );
    let mut c = course_in(Phase::Watch).resumed_at(Rv::new("x-1"));
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
        let mut c = course_in(Phase::WatchList);
        c.cursor = rv(1);
        set_synced(&mut c, synced);
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
        let mut c = course_in(Phase::WatchList);
        set_synced(&mut c, synced);
        if let Doing::Watch(w) = &mut c.doing {
            w.catch_up = catching_up.then_some(CatchUp::Quiet);
        }
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
        let mut c = course_in(Phase::Watch).resumed_at(rv(cursor));
        if let Some(t) = target {
            c.on(Fact::CatchUpTarget(rv(t)));
        }
        assert_eq!(c.reached_target(), want, "{cursor} {target:?}");
    }
    let mut c = course_in(Phase::Watch).resumed_at(rv("3"));
    assert!(c.synced() && c.catch_up().is_some());
    assert!(caught_up(&mut c));
    assert!(!caught_up(&mut c), "once");
}

#[test]
fn a_catch_up_asks_nothing_first_and_asks_once_its_replay_runs_long() {
    let rv = |n: u64| Rv::from_u64(n);
    // Resumed, or told Stale while current: quiet first, nothing asked.
    let mut c = course_in(Phase::Watch).resumed_at(rv(1));
    assert_eq!(c.catch_up(), Some(&CatchUp::Quiet));
    let mut told = course_in(Phase::Watch);
    told.on(Fact::Began);
    let step = told.finish(End::Broke("cut".into()), Duration::from_millis(5), false);
    assert!(step.notice.is_some());
    assert_eq!(told.catch_up(), Some(&CatchUp::Quiet));
    // A busy replay: ask, then reach what the server said.
    c.on(Fact::CatchUpSlow);
    assert_eq!(c.catch_up(), Some(&CatchUp::Probe));
    assert_eq!(
        bookmark(&mut c, rv(5), false),
        Bookmark::Moved,
        "asking: not over"
    );
    c.on(Fact::CatchUpTarget(rv(20)));
    assert_eq!(c.catch_up(), Some(&CatchUp::To(rv(20))));
    c.on(Fact::CatchUpSlow);
    assert_eq!(c.catch_up(), Some(&CatchUp::To(rv(20))), "asked once");
    assert!(!c.reached_target());
    c.on(Fact::Judged(rv(20)));
    assert!(c.reached_target());
}

#[test]
fn a_resync_makes_the_state_incomplete_and_ends_a_catch_up() {
    let mut c = course_in(Phase::Watch).resumed_at(Rv::from_u64(4));
    c.on(Fact::Began);
    let step = c.finish(End::Expired, Duration::from_millis(5), true);
    assert!(step.resync);
    assert!(!c.synced() && c.catch_up().is_none());
    assert_eq!(c.phase(), Phase::WatchList);
    // A relist by re-sync does the same, at once.
    let mut c = course_in(Phase::Watch);
    set_synced(&mut c, true);
    c.finish(End::Relist, Duration::ZERO, true);
    assert!(!c.synced() && c.fresh_sync());
    assert_eq!(c.phase(), Phase::WatchList);
}

#[test]
fn entries_are_progress_and_events_move_the_resume_point_only_once_synced() {
    let mut c = course_in(Phase::WatchList);
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
    let mut c = course_in(Phase::WatchList);
    assert!(c.initial_event_ok(true) && !c.initial_event_ok(false));
    c.on(Fact::SyncComplete);
    assert!(c.initial_event_ok(false));
    assert!(course_in(Phase::List).initial_event_ok(false));
}

#[test]
fn a_403_ends_a_stream_never_allowed_and_is_retried_a_while_by_one_that_was() {
    let forbidden = || End::Fatal(info(403));
    // Never answered 200: the identity may not read it; at once.
    let mut m = course_in(Phase::WatchList);
    assert_eq!(
        m.next(forbidden(), Seen::default()).next,
        Next::End(Some(info(403)))
    );
    // Allowed before (an apiserver restarting answers 403 until its RBAC
    // is loaded): retried with backoff, FORBIDDEN_RETRIES times in a row.
    let mut m = course_in(Phase::Watch);
    m.next(End::Ended, seen(300_000, true));
    let steps: Vec<Next> = (0..=FORBIDDEN_RETRIES)
        .map(|_| m.next(forbidden(), Seen::default()).next)
        .collect();
    assert!(
        steps[..FORBIDDEN_RETRIES as usize]
            .iter()
            .enumerate()
            .all(|(i, n)| *n == pause(i as u32 + 1, FORBIDDEN_PAUSE)),
        "{steps:?}"
    );
    assert_eq!(
        steps[FORBIDDEN_RETRIES as usize],
        Next::End(Some(info(403)))
    );
    // An answer in between starts the count again.
    let mut m = course_in(Phase::Watch);
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
    let mut c = course_in(Phase::Watch);
    assert!(c.asks_protobuf(true));
    assert_eq!(schema_miss(&mut c, true, "m"), None);
    assert!(c.asks_protobuf(true));
    assert_eq!(
        schema_miss(&mut c, false, "m"),
        Some(End::Retry("m: asking for JSON from now on".into(), None))
    );
    assert!(!c.asks_protobuf(true) && !c.asks_protobuf(false));
}

/// After a watch's 410 the full state reads the watch cache not older than
/// the resume point, as client-go's reflector does; a resourceVersion the
/// server does not have (ahead of it, refused, or expired again) goes back
/// to a consistent read, and an opaque one never asks the cache.
#[test]
fn after_an_expired_watch_the_full_state_reads_the_cache_not_older_than_the_resume_point() {
    let expired_while_watching = |cursor: &str| {
        let mut m = course_in(Phase::Watch);
        m.on(Fact::Listed(Rv::new(cursor)));
        let step = m.next(End::Expired, seen(5, false));
        assert!(step.resync);
        assert_eq!(m.phase(), Phase::WatchList);
        m
    };
    let m = expired_while_watching("8481");
    assert_eq!(m.cache_read(), Some("8481"));
    let m = expired_while_watching("opaque/7");
    assert_eq!(
        m.cache_read(),
        None,
        "an opaque resourceVersion is not asked for"
    );

    let ends: [(End, &str); 3] = [
        (End::TooLarge(None), "ahead of the server"),
        (End::Rejected(info(400)), "refused"),
        (End::Expired, "expired again"),
    ];
    for (end, what) in ends {
        let mut m = expired_while_watching("8481");
        let step = m.next(end, seen(5, false));
        assert_eq!(
            (m.phase(), m.cache_read()),
            (Phase::WatchList, None),
            "{what}: a consistent read next"
        );
        assert!(matches!(step.next, Next::Pause { .. }), "{what}: {step:?}");
    }
    // A LIST reads the cache the same way.
    let mut m = expired_while_watching("8481");
    m.list_mode = true;
    m.resync();
    assert_eq!((m.phase(), m.cache_read()), (Phase::List, Some("8481")));
}
