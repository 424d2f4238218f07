//! The log callback: lines at the level set reach it until it is removed.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

/// Log lines the callback received: (level, target, message).
type Lines = std::sync::Mutex<Vec<(c_int, String, String)>>;

unsafe extern "C" fn collect(
    user: *mut c_void,
    level: c_int,
    target: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: `user` is the Lines the test installed; the strings live during the call.
    let lines = unsafe { &*(user as *const Lines) };
    lines.lock().unwrap().push((level, s(target), s(msg)));
}

#[test]
fn log_lines_reach_the_callback_until_it_is_removed() {
    let lines: &'static Lines = Box::leak(Box::default());
    let user = lines as *const Lines as *mut c_void;
    assert_eq!(tattler_set_log_level(6), TATTLER_ERR_INVALID_ARG);
    assert_eq!(tattler_set_log_level(-1), TATTLER_ERR_INVALID_ARG);
    assert_eq!(
        tattler_set_log_level(tattler_log_level::TATTLER_LOG_INFO as c_int),
        TATTLER_OK
    );
    // SAFETY: `collect` may be called from any thread with `user` for ever (leaked).
    let st = unsafe { tattler_set_log_callback(Some(collect), user) };
    assert_eq!(st, TATTLER_OK);

    let api = FakeApi::start();
    let r = open(&config(&api, &["configmaps"])).unwrap();
    until_synced(r, 1);
    close(r);
    // SAFETY: removing the callback.
    let st = unsafe { tattler_set_log_callback(None, null_mut()) };
    assert_eq!(st, TATTLER_OK);
    let got = lines.lock().unwrap().clone();
    let ours: Vec<_> = got
        .iter()
        .filter(|(_, _, m)| m.contains(&api.url()))
        .collect();
    assert!(
        ours.iter()
            .any(|(level, target, _)| *level == 3 && target.starts_with("kube_tattler::")),
        "{got:?}"
    );
    assert!(
        got.iter().all(|(level, _, _)| (1..=3).contains(level)),
        "a level above INFO passed: {got:?}"
    );

    let before = lines.lock().unwrap().len();
    let r = open(&config(&api, &["configmaps"])).unwrap();
    until_synced(r, 1);
    close(r);
    assert_eq!(lines.lock().unwrap().len(), before, "called after removal");
}
