//! Handles (`src/handle.rs`): NULL, closed, freed and foreign pointers are
//! refused, never followed, also when a close races other calls.

// The legacy calls are called here on purpose: C programs link them.
#![allow(deprecated)]

use std::ffi::{c_int, CString};
use std::ptr::{self, null, null_mut};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

#[test]
fn null_arguments_are_refused_not_followed() {
    let api = FakeApi::start();
    let cfg = CString::new(config(&api, &["pods"])).unwrap();
    let mut err = [0xffu8; 64];
    let mut r = null_mut();
    // SAFETY: every pointer is NULL or valid; NULL is what is under test.
    unsafe {
        assert_eq!(
            tattler_open(null(), &mut r, err.as_mut_ptr().cast(), err.len()),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(text(&err), "config_json is NULL");
        assert_eq!(
            tattler_open(cfg.as_ptr(), null_mut(), null_mut(), 0),
            TATTLER_ERR_NULL_ARG
        );
        // A NULL error buffer with a length is ignored, not written.
        assert_eq!(
            tattler_open(null(), &mut r, null_mut(), 100),
            TATTLER_ERR_NULL_ARG
        );
        assert!(r.is_null());

        let mut e = null_mut();
        assert_eq!(
            tattler_next_entry(null_mut(), 0, &mut e),
            TATTLER_ERR_NULL_ARG
        );
        tattler_stop(null_mut());
        tattler_wake(null_mut());
        assert_eq!(tattler_close(null_mut()), TATTLER_OK);
        assert_eq!(
            set_resources(null_mut(), c"[]".as_ptr(), false, true),
            (TATTLER_ERR_NULL_ARG, true, "r is NULL".into())
        );
        let mut changed = false;
        // No error buffer: the status alone.
        assert_eq!(
            tattler_set_resources(
                null_mut(),
                c"[]".as_ptr(),
                false,
                &mut changed,
                null_mut(),
                9
            ),
            TATTLER_ERR_NULL_ARG
        );
        let mut needed = 0;
        assert_eq!(
            tattler_stats_json(null_mut(), null_mut(), 0, &mut needed),
            TATTLER_ERR_NULL_ARG
        );

        let r = open(&config(&api, &["pods"])).unwrap();
        assert_eq!(tattler_next_entry(r, 0, null_mut()), TATTLER_ERR_NULL_ARG);
        assert_eq!(
            set_resources(r, null(), false, true),
            (TATTLER_ERR_NULL_ARG, true, "resources_json is NULL".into())
        );
        assert_eq!(
            tattler_stats_json(r, null_mut(), 10, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
        close(r);

        let e: *const tattler_entry = null();
        assert_eq!(tattler_entry_change(e), tattler_change::TATTLER_CHANGE_NONE);
        for getter in [
            tattler_entry_group,
            tattler_entry_version,
            tattler_entry_resource,
            tattler_entry_kind,
            tattler_entry_namespace,
            tattler_entry_name,
            tattler_entry_uid,
            tattler_entry_identity,
            tattler_entry_holder,
            tattler_entry_error_reason,
            tattler_entry_error_message,
        ] {
            assert_eq!(s(getter(e)), "");
        }
        assert_eq!(tattler_entry_resource_version(e), 0);
        assert!(!tattler_entry_inferred(e));
        assert_eq!(tattler_entry_error_code(e), 0);
        let mut term = 7;
        assert!(!tattler_entry_term(e, &mut term));
        assert_eq!(term, 7, "*out written without a term");
        assert!(!tattler_entry_term(e, null_mut()));
        let mut len = 99;
        assert!(tattler_entry_object(e, &mut len).is_null());
        assert_eq!(len, 0);
        assert!(tattler_entry_object(e, null_mut()).is_null());
        tattler_entry_free(null_mut());
    }
}

#[test]
fn close_only_drops_the_creators_reference() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    // What a call in progress on another thread holds.
    let in_call = tattler::__for_tests::held_reader(r).unwrap();
    close(r);
    assert!(in_call.reader().is_stopped(), "close stops at once");
    assert!(
        in_call
            .reader()
            .next_timeout(Duration::from_secs(10))
            .is_err(),
        "stopped and drained"
    );
    assert_eq!(in_call.references(), 1, "only the call's reference is left");
    drop(in_call);
    assert!(
        api.wait_open_watches(0, Duration::from_secs(10)),
        "the last reference ended the streams"
    );
}

// Misuse of handles: every case is refused with TATTLER_ERR_INVALID_HANDLE
// (or a getter's "no entry" value), the pointer never followed. Under ASan
// the same cases run from C (tests/programs/misuse.c).

/// Every call on a reader that takes a status, on `r`: all must refuse it.
fn every_reader_call(r: *mut tattler_reader) -> Vec<tattler_status> {
    let mut e = ptr::dangling_mut::<tattler_entry>();
    let mut needed = 7usize;
    let mut buf = [0xffu8; 64];
    // SAFETY: valid out-pointers and buffers; `r` is what is under test.
    let sts = unsafe {
        vec![
            tattler_next_entry(r, 0, &mut e),
            tattler_next_entry(r, -1, &mut e),
            tattler_stats_json(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed),
            tattler_metrics_text(r, buf.as_mut_ptr().cast(), buf.len(), &mut needed),
            tattler_checkpoint(r, buf.as_mut_ptr(), buf.len(), &mut needed),
        ]
    };
    assert_eq!(e, ptr::dangling_mut(), "*out written");
    assert_eq!(needed, 7, "*needed written");
    assert!(buf.iter().all(|&b| b == 0xff), "buffer written");
    let (st, changed, msg) = set_resources(r, c"[\"pods\"]".as_ptr(), false, true);
    assert_eq!(
        (changed, msg.as_str()),
        (
            true,
            "r is not an open reader (closed already, or not from tattler_open)"
        )
    );
    // No status: nothing happens (a warning is logged).
    tattler_stop(r);
    tattler_wake(r);
    [sts, vec![st]].concat()
}

/// Every entry getter on `e`: all must give their "no entry" value.
fn assert_no_entry(e: *mut tattler_entry) {
    assert_eq!(tattler_entry_change(e), tattler_change::TATTLER_CHANGE_NONE);
    for getter in [
        tattler_entry_group,
        tattler_entry_version,
        tattler_entry_resource,
        tattler_entry_kind,
        tattler_entry_namespace,
        tattler_entry_name,
        tattler_entry_uid,
        tattler_entry_identity,
        tattler_entry_holder,
        tattler_entry_resource_version_str,
        tattler_entry_error_reason,
        tattler_entry_error_message,
    ] {
        assert_eq!(s(getter(e)), "");
    }
    assert_eq!(tattler_entry_resource_version(e), 0);
    assert!(!tattler_entry_inferred(e));
    assert!(!tattler_entry_error_ended(e));
    assert_eq!(tattler_entry_error_code(e), 0);
    let mut len = 99;
    // SAFETY: a valid out-pointer; `e` is what is under test.
    assert!(unsafe { tattler_entry_object(e, &mut len) }.is_null());
    assert_eq!(len, 0);
    let mut term = 7;
    // SAFETY: as above.
    assert!(!unsafe { tattler_entry_term(e, &mut term) });
    assert_eq!(term, 7, "*out written without a term");
}

const REFUSED: [tattler_status; 6] = [TATTLER_ERR_INVALID_HANDLE; 6];

#[test]
fn a_second_close_is_refused_not_a_double_free() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    assert_eq!(tattler_close(r), TATTLER_OK);
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    assert!(api.wait_open_watches(0, Duration::from_secs(10)));
}

#[test]
fn calls_after_close_are_refused_at_once() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    close(r);
    let t = Instant::now();
    // The waiting next_entry among them: refused, not waited out.
    assert_eq!(every_reader_call(r), REFUSED);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // A new reader is not reached through the old pointer.
    let r2 = open(&config(&api, &["pods"])).unwrap();
    assert_ne!(r2, r, "a closed reader's handle came back at once");
    assert_eq!(tattler_close(r), TATTLER_ERR_INVALID_HANDLE);
    until_synced(r2, 1);
    close(r2);
}

#[test]
fn a_second_entry_free_frees_nothing_and_getters_see_no_entry() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, add) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    assert!(tattler::__for_tests::entry_is_live(add));
    assert_eq!(s(tattler_entry_name(add)), "web-1");
    tattler_entry_free(add);
    assert!(!tattler::__for_tests::entry_is_live(add));
    assert_no_entry(add);
    tattler_entry_free(add);
    // The next entry is not reached through the freed one's pointer: its
    // allocation may well sit where the first one's was.
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    assert_ne!(synced, add);
    tattler_entry_free(add);
    assert!(tattler::__for_tests::entry_is_live(synced));
    assert_eq!(
        tattler_entry_change(synced),
        tattler_change::TATTLER_CHANGE_SYNCED
    );
    tattler_entry_free(synced);
    assert_no_entry(synced);
    close(r);
}

#[test]
fn foreign_pointers_are_refused_not_followed() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    // Garbage behind them, and addresses no allocation has: none is read.
    let mut garbage = [0xa5u8; 64];
    let foreign = [
        garbage.as_mut_ptr(),
        ptr::dangling_mut::<u8>(),
        ptr::without_provenance_mut(1),
        ptr::without_provenance_mut(usize::MAX - 7),
        // The other kind's handle.
        e.cast::<u8>(),
        r.cast::<u8>(),
    ];
    for p in foreign {
        if p != r.cast() {
            assert_eq!(every_reader_call(p.cast()), REFUSED, "{p:?}");
            assert_eq!(tattler_close(p.cast()), TATTLER_ERR_INVALID_HANDLE);
        }
        if p != e.cast() {
            assert_no_entry(p.cast());
            tattler_entry_free(p.cast());
        }
    }
    assert!(garbage.iter().all(|&b| b == 0xa5));
    // Both handles work on.
    assert_eq!(s(tattler_entry_name(e)), "web-1");
    tattler_entry_free(e);
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    tattler_entry_free(synced);
    close(r);
}

#[test]
fn calls_racing_a_close_on_other_threads_are_memory_safe() {
    let api = FakeApi::start();
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    let addr = r as usize;
    let mut callers = Vec::new();
    for _ in 0..2 {
        callers.push(std::thread::spawn(move || {
            let r = addr as *mut tattler_reader;
            let mut seen: Vec<tattler_status> = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(20);
            // Calls until they are refused: whatever comes first is a
            // status of the reader alive or stopped, never anything else.
            loop {
                assert!(Instant::now() < deadline, "never refused: {seen:?}");
                let (st, e) = next(r, 1);
                tattler_entry_free(e);
                let mut needed = 0;
                // SAFETY: a valid out-pointer; `r` may be closed meanwhile.
                let stats = unsafe { tattler_stats_json(r, null_mut(), 0, &mut needed) };
                if !seen.contains(&st) {
                    seen.push(st);
                }
                assert!(
                    [
                        TATTLER_TIMEOUT,
                        TATTLER_CLOSED,
                        TATTLER_OK,
                        TATTLER_ERR_INVALID_HANDLE
                    ]
                    .contains(&st),
                    "{st:?}"
                );
                assert!(
                    [TATTLER_ERR_BUFFER_TOO_SMALL, TATTLER_ERR_INVALID_HANDLE].contains(&stats),
                    "{stats:?}"
                );
                if st == TATTLER_ERR_INVALID_HANDLE {
                    break;
                }
            }
            seen
        }));
    }
    // Two closes racing each other too: one of them closes.
    let closers: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || tattler_close(addr as *mut tattler_reader)))
        .collect();
    let mut sts: Vec<_> = closers.into_iter().map(|t| t.join().unwrap()).collect();
    sts.sort_by_key(|s| *s as c_int);
    assert_eq!(sts, [TATTLER_OK, TATTLER_ERR_INVALID_HANDLE]);
    for c in callers {
        let seen = c.join().unwrap();
        assert_eq!(seen.last(), Some(&TATTLER_ERR_INVALID_HANDLE), "{seen:?}");
    }
    // Every call is refused from now on, and the streams are gone.
    assert_eq!(every_reader_call(addr as *mut tattler_reader), REFUSED);
    assert!(api.wait_open_watches(0, Duration::from_secs(10)));
}

#[test]
fn getters_racing_a_free_on_another_thread_see_the_entry_or_none() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let addr = e as usize;
    let (started_tx, started_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let e = addr as *mut tattler_entry;
        let mut names = 0u64;
        loop {
            // Copied before the next call: what a getter lends dies with a
            // free, which may come between two calls.
            let change = tattler_entry_change(e);
            if names == 0 {
                started_tx.send(()).unwrap();
            }
            if change == tattler_change::TATTLER_CHANGE_NONE {
                return names;
            }
            assert_eq!(change, tattler_change::TATTLER_CHANGE_ADD);
            names += 1;
        }
    });
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    tattler_entry_free(e);
    assert!(reader.join().unwrap() > 0);
    assert_no_entry(e);
    close(r);
}

/// The cost of checking handles, in ns per call (run in release):
/// `cargo test --release -p tattler-ffi --test abi bench_handle_checks -- --ignored --nocapture`
#[test]
#[ignore = "a micro benchmark; run it in release with --ignored --nocapture"]
fn bench_handle_checks() {
    const N: u64 = 5_000_000;
    let api = FakeApi::start();
    for i in 0..1030 {
        api.apply("pods", FakeApi::pod("default", &format!("web-{i}")));
    }
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, e) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let ns = |d: Duration| d.as_nanos() as f64 / N as f64;
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        for _ in 0..N {
            f();
        }
        ns(t.elapsed())
    };
    // Some entries live beside it, as in a consumer that holds a batch.
    let mut held = Vec::new();
    for live in [1usize, 64, 1024] {
        while held.len() + 1 < live {
            held.push(next(r, WAIT_MS).1);
        }
        let unchecked = ns(tattler::__for_tests::entry_name_unchecked(e, N));
        let checked = time(&|| {
            std::hint::black_box(tattler_entry_name(std::hint::black_box(e)));
        });
        let change = time(&|| {
            std::hint::black_box(tattler_entry_change(std::hint::black_box(e)));
        });
        println!(
            "{live} live entries: tattler_entry_name {checked:.1} ns (unchecked {unchecked:.1} ns, +{:.1}), tattler_entry_change {change:.1} ns",
            checked - unchecked
        );
    }
    let null = time(&|| {
        std::hint::black_box(tattler_entry_name(std::hint::black_box(null())));
    });
    let reader = time(&|| {
        std::hint::black_box(tattler::__for_tests::held_reader(std::hint::black_box(r)));
    });
    println!("tattler_entry_name(NULL) {null:.1} ns; a reader lookup (lock, Arc clone and drop) {reader:.1} ns");
    // Two threads reading their own entries at once: the one lock is shared.
    let (st, e2) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let per_thread: Vec<f64> = [e as usize, e2 as usize]
        .map(|addr| {
            std::thread::spawn(move || {
                let e = addr as *mut tattler_entry;
                let t = Instant::now();
                for _ in 0..N {
                    std::hint::black_box(tattler_entry_name(std::hint::black_box(e)));
                }
                ns(t.elapsed())
            })
        })
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    println!("two threads at once: tattler_entry_name {per_thread:.1?} ns each");
    for h in held {
        tattler_entry_free(h);
    }
    tattler_entry_free(e);
    tattler_entry_free(e2);
    close(r);
}
