//! Token-file rotation under a running stream.

use super::*;

#[test]
fn token_file_rotation_under_a_running_stream() {
    let _w = Watchdog::new("token_file_rotation", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-rot-one-1111"));
    let dir = TempDir::new("rotation");
    let file = dir.write("token", "tok-rot-one-1111\n");
    let mut config = common::config(&api, &["pods"]);
    config.access = config.access.token_file(&file).unwrap();
    // Any pause would be long: a reload that is not immediate shows.
    config.tuning.backoff = Backoff {
        initial: Duration::from_secs(30),
        max: Duration::from_secs(30),
        reset_after: Duration::from_secs(120),
    };
    // A watch ending 20 ms after it began is an ordinary end, not one paced
    // by the backoff as ending at once.
    config.tuning.short_watch = Duration::from_millis(20);
    let r = streams_one_pod(&api, config.clone());
    let watch_from = |rv: u64| {
        format!("GET /api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion={rv}")
    };
    let rv: u64 = r.stats()[0].resource_version.parse().unwrap();
    std::thread::sleep(Duration::from_millis(50));

    // Rotate: the cached token is refused once, the file re-read, the request retried at once.
    std::fs::write(&file, "tok-rot-two-2222\n").unwrap();
    api.require_token(Some("tok-rot-two-2222"));
    let ended = Instant::now();
    api.end_watches();
    let rv2 = pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert!(
        ended.elapsed() < Duration::from_secs(5),
        "the 401 retry waited {:?}",
        ended.elapsed()
    );
    let reqs = requests(&api);
    assert_eq!(&reqs[1..], [watch_from(rv), watch_from(rv)], "{reqs:#?}");
    assert_eq!(r.stats()[0].reconnects, 1);
    assert!(!r.stats()[0].failed);
    assert_quiet(&r, Duration::from_millis(300));

    // A token that is wrong in the file too: one reload, then exactly one Error entry.
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(&file, "tok-rot-wrong-3333\n").unwrap();
    api.require_token(Some("tok-rot-four-4444"));
    api.end_watches();
    let e = next(&r);
    assert_eq!(show(&e), "Error pods 401 Unauthorized");
    assert_eq!(e.change(), Change::Error);
    assert_quiet(&r, Duration::from_millis(500));
    let reqs = requests(&api);
    assert_eq!(&reqs[3..], [watch_from(rv2), watch_from(rv2)], "{reqs:#?}");
    let s = &r.stats()[0];
    assert!(s.failed && s.synced, "{s:?}");
    let err = format!("{:?}", e.error());
    let texts = debug_texts(&config, &r);
    let mut all = strs(&texts);
    all.push(&err);
    assert_hidden(
        &[
            "tok-rot-one-1111",
            "tok-rot-two-2222",
            "tok-rot-wrong-3333",
            "tok-rot-four-4444",
        ],
        &all,
    );
}
