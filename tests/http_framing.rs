//! Every legal framing of a response decodes to the same entries whatever
//! the host logs (issue 30). Each response below is served by the scripted
//! server as raw bytes: whole, a byte at a time, seven at a time, and cut
//! at several places on its first try. Everything runs twice: first with no
//! logger in the process, then with a logger capturing every target at
//! trace level, as a Rust host that logs everything. Both runs must give
//! the same entries, and no captured line may hold the env value or the
//! cookie the server sent, or the token the credentials carried, in any of
//! the forms an HTTP library logs bytes in (text, hex, ureq-proto's rows).
//! The detector is checked first on lines a third party would write with
//! those bytes: if one did, this test would fail.
//!
//! Its own binary: it installs the process's logger.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::scripted::{end_bookmark, frame, pod_json, uid, Reply, Scripted, Then};
use common::tls::{capture_trace, wire_rows};
use common::{next, show, Watchdog};
use kube_tattler::{Access, Backoff, Change, Config, Reader};

const TOKEN: &str = "tok-framing-5e5e5e5e";
const ENV_SECRET: &str = "env-framing-s3cr3t-9a9a";
const COOKIE: &str = "cookie-framing-7c7c7c";
const SECRETS: [&str; 3] = [TOKEN, ENV_SECRET, COOKIE];

/// What every response carries: two pods (the second with an env value)
/// and the initial-events-end bookmark.
fn body() -> Vec<u8> {
    let env = format!(
        r#","spec":{{"containers":[{{"name":"c","image":"i","env":[{{"name":"DB","value":"{ENV_SECRET}"}}]}}]}}"#
    );
    let mut b = frame("ADDED", &pod_json("p1", &uid(1), "10", ""));
    b.extend(frame("ADDED", &pod_json("p2", &uid(2), "11", &env)));
    b.extend(end_bookmark("12"));
    b
}

/// `body` in chunks of the sizes given in turn, each chunk-size line
/// written by `line` (without its CRLF); no last chunk.
fn chunks(body: &[u8], sizes: &[usize], line: &dyn Fn(usize, usize) -> String) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        out.extend(line(i, n).into_bytes());
        out.extend(b"\r\n");
        out.extend(&rest[..n]);
        out.extend(b"\r\n");
        rest = &rest[n..];
        i += 1;
    }
    out
}

fn hex(_: usize, n: usize) -> String {
    format!("{n:x}")
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// The responses: each a legal framing of [`body`].
fn framings() -> Vec<(&'static str, Vec<u8>)> {
    let body = body();
    let cookie = format!("Set-Cookie: session={COOKIE}; HttpOnly\r\n");
    let head = |lines: &str| -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{cookie}{lines}").into_bytes()
    };
    let chunked = head("Transfer-Encoding: chunked\r\n\r\n");
    // One chunk per frame, as the apiserver writes a watch.
    let frames: Vec<usize> = body
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::len)
        .collect();
    let framed = chunks(&body, &frames, &hex);
    let interim: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\nLink: </a.css>; rel=preload\n\nHTTP/1.1 102 Processing\r\n\r\n";
    let padded = chunks(&body, &[100, 7, 1, 333], &|i, n| match i % 3 {
        0 => format!("{n:016X}"),
        1 => format!("{n:08x}  \t"),
        _ => format!("0{n:x}"),
    });
    let extended = chunks(&body, &[64, 200, 3], &|i, n| match i % 2 {
        0 => format!("{n:x};name=value;sig=\"{ENV_SECRET}\""),
        _ => format!("{n:x} ; ext"),
    });
    let trailers = cat(&[
        b"0\r\nX-Checksum: ",
        ENV_SECRET.as_bytes(),
        b"\r\nX-Note: caf\xe9\nX-Third: 3\r\n\r\n",
    ]);
    vec![
        ("CRLF, chunked", cat(&[&chunked, &framed, b"0\r\n\r\n"])),
        (
            "bare LF head",
            cat(&[
                format!("HTTP/1.1 200 OK\nContent-Type: application/json\n{}Transfer-Encoding: chunked\n\n", cookie.replace("\r\n", "\n")).as_bytes(),
                &framed,
                b"0\r\n\r\n",
            ]),
        ),
        (
            "mixed line endings",
            cat(&[
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\n{cookie}Transfer-Encoding: chunked\r\n\n").as_bytes(),
                &framed,
                b"0\r\n\r\n",
            ]),
        ),
        ("interim answers", cat(&[interim, &chunked, &framed, b"0\r\n\r\n"])),
        (
            "obs-text and obs-fold",
            cat(&[
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Note: caf\xe9 \xff\r\nX-Folded: first\r\n second\r\n\tthird\r\n",
                cookie.as_bytes(),
                b"Transfer-Encoding: chunked\r\n\r\n",
                &framed,
                b"0\r\n\r\n",
            ]),
        ),
        (
            // As Go's ReadResponse takes a head: spaces after the version,
            // and any number of fields (128 failed before).
            "Go's heads: spaces in the status line, 300 fields",
            cat(&[
                b"HTTP/1.1   200  OK\r\nContent-Type: application/json\r\n",
                cookie.as_bytes(),
                (0..300).map(|i| format!("X-Field-{i}: {i}\r\n")).collect::<String>().as_bytes(),
                b"Transfer-Encoding: chunked\r\n\r\n",
                &framed,
                b"0\r\n\r\n",
            ]),
        ),
        ("padded chunk sizes", cat(&[&chunked, &padded, b"0000000000000000\r\n\r\n"])),
        ("chunk extensions", cat(&[&chunked, &extended, b"0;last=\"yes\"\r\n\r\n"])),
        ("trailers", cat(&[&head("Transfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"), &framed, &trailers])),
        (
            "Content-Length with chunked",
            cat(&[&head("Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n"), &framed, b"0\r\n\r\n"]),
        ),
        ("Content-Length", cat(&[&head(&format!("Content-Length: {}\r\n\r\n", body.len())), &body])),
        (
            "to the close",
            cat(&[format!("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n{cookie}\r\n").as_bytes(), &body]),
        ),
        (
            "one-byte chunks",
            cat(&[&chunked, &chunks(&body, &[1, 2, 1, 5, 64], &hex), b"0\r\n\r\n"]),
        ),
        (
            "all at once",
            cat(&[
                interim,
                b"HTTP/1.1 200 OK\nContent-Type: application/json\r\nX-Note: \xe9\xff\nX-Folded: a\r\n b\r\n",
                cookie.as_bytes(),
                b"Content-Length: 3\nTransfer-Encoding: chunked\n\n",
                &extended,
                &trailers,
            ]),
        ),
    ]
}

/// How a response goes out.
#[derive(Clone, Copy, Debug)]
enum Delivery {
    /// In one write.
    Whole,
    /// This many bytes a write.
    Pieces(usize),
    /// The first try cut (the connection closed) after this many bytes.
    Cut(usize),
}

/// One reader against a server that answers its watch-lists with
/// `response` (delivered as `how`) and any other request with an open,
/// silent watch; the entries up to Synced, and how many watch-lists it
/// asked for.
fn run(response: &[u8], how: Delivery) -> (Vec<String>, usize) {
    let watch_lists = Arc::new(AtomicUsize::new(0));
    let asked = watch_lists.clone();
    let response = response.to_vec();
    let server = Scripted::start(move |_, path| {
        if !path.contains("sendInitialEvents=true") {
            return Reply::json(Vec::new(), Then::Hang);
        }
        let first = watch_lists.fetch_add(1, Ordering::SeqCst) == 0;
        match how {
            Delivery::Whole => Reply::raw(response.clone(), response.len(), Then::Close),
            Delivery::Pieces(n) => Reply::raw(response.clone(), n, Then::Close),
            Delivery::Cut(at) if first => Reply::raw(response[..at].to_vec(), at, Then::Close),
            Delivery::Cut(_) => Reply::raw(response.clone(), response.len(), Then::Close),
        }
    });
    let mut c = Config::new(Access::new(server.url()).token(TOKEN))
        .watch(["pods"])
        .unwrap();
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(5),
        reset_after: Duration::from_secs(120),
    };
    let r = Reader::open(c).unwrap();
    let mut got = Vec::new();
    loop {
        let e = next(&r);
        if let Some(obj) = e.object() {
            let text = String::from_utf8_lossy(obj);
            assert!(
                !text.contains(ENV_SECRET),
                "the env value was delivered: {text}"
            );
            if e.name() == "p2" {
                assert!(text.contains(r#""value":"REDACTED""#), "{text}");
            }
        }
        got.push(show(&e));
        if e.change() == Change::Synced || got.len() > 10 {
            break;
        }
    }
    r.close();
    let sent = server.authorizations();
    assert!(
        !sent.is_empty() && sent.iter().all(|a| *a == format!("Bearer {TOKEN}")),
        "the token went with every request: {sent:?}"
    );
    (got, asked.load(Ordering::SeqCst))
}

/// Every framing, every delivery: (framing, delivery, entries).
fn run_all() -> Vec<(&'static str, String, Vec<String>)> {
    let mut out = Vec::new();
    for (what, response) in framings() {
        let n = response.len();
        let mut ways = vec![Delivery::Whole, Delivery::Pieces(1), Delivery::Pieces(7)];
        let mut cuts: Vec<usize> = [
            1,
            17,
            60,
            n / 8,
            n / 4,
            n * 3 / 8,
            n / 2,
            n * 5 / 8,
            n * 3 / 4,
            n * 7 / 8,
            n - 5,
            n - 1,
        ]
        .into_iter()
        .filter(|at| (1..n).contains(at))
        .collect();
        cuts.dedup();
        ways.extend(cuts.into_iter().map(Delivery::Cut));
        let mut retried = 0;
        for how in ways {
            let (entries, asked) = run(&response, how);
            if let Delivery::Cut(_) = how {
                retried += usize::from(asked > 1);
            }
            out.push((what, format!("{how:?}"), entries));
        }
        // Most cuts land before the bookmark: the first try broke and the
        // stream asked again.
        assert!(
            retried >= 6,
            "{what}: only {retried} cut answers were retried"
        );
    }
    out
}

/// Where `secret` shows in `lines`: as text, as hex (any case, spaced or
/// not), or across an HTTP library's byte rows (ureq-proto's, joined per
/// thread).
fn leaks(lines: &[String], secret: &str) -> Vec<String> {
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let mut found: Vec<String> = lines
        .iter()
        .filter(|l| {
            let squeezed: String = l
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase();
            l.contains(secret) || squeezed.contains(&hex)
        })
        .cloned()
        .collect();
    for (thread, bytes) in wire_rows(lines) {
        if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
            found.push(format!("the byte rows of [{thread}]"));
        }
    }
    found
}

/// `bytes` as ureq-proto logs them, without their text: rows of 16 in
/// groups of two bytes, so a secret is split across rows.
fn rows(bytes: &[u8]) -> Vec<String> {
    bytes
        .chunks(16)
        .map(|row| {
            let groups: Vec<String> = row
                .chunks(2)
                .map(|g| g.iter().map(|b| format!("{b:02x}")).collect())
                .collect();
            groups.join(" ")
        })
        .collect()
}

#[test]
fn every_framing_decodes_the_same_with_and_without_a_trace_logger_and_nothing_leaks() {
    let _w = Watchdog::new("http_framing", Duration::from_secs(300));
    let want = ["Add a/p1", "Add a/p2", "Synced pods"];

    // 1. No logger at all in the process.
    assert!(!log::log_enabled!(target: "kube_tattler", log::Level::Error));
    let quiet = run_all();

    // 2. A logger taking every line of every target at trace level.
    let log = capture_trace();
    assert!(log::log_enabled!(target: "ureq_proto::util", log::Level::Trace));
    // The detector finds what a third party would log: a response in plain
    // text, as byte rows, as hex; a request head with the token.
    let before = log.lines().len();
    let response = &framings()[0].1;
    let head = format!("GET /api/v1/pods HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    log::trace!(target: "some_http::wire", "{}", String::from_utf8_lossy(response));
    log::trace!(target: "some_http::wire", "{head}");
    let probe = &log.lines()[before..];
    for s in SECRETS {
        assert!(
            !leaks(probe, s).is_empty(),
            "the detector misses {s} in text"
        );
    }
    for bytes in [response.as_slice(), head.as_bytes()] {
        let before = log.lines().len();
        for row in rows(bytes) {
            log::trace!(target: "ureq_proto::util", "{row}");
        }
        let hexed: String = bytes.iter().map(|b| format!("{b:02X} ")).collect();
        log::trace!(target: "some_http::hex", "{hexed}");
        let probe = &log.lines()[before..];
        let (in_rows, in_hex) = probe.split_at(probe.len() - 1);
        let shown = String::from_utf8_lossy(bytes);
        for s in SECRETS.iter().filter(|s| shown.contains(*s)) {
            assert!(
                !leaks(in_rows, s).is_empty(),
                "the detector misses {s} in byte rows"
            );
            assert!(
                !leaks(in_hex, s).is_empty(),
                "the detector misses {s} in hex"
            );
        }
    }
    let start = log.lines().len();
    let traced = run_all();
    let lines = log.lines()[start..].to_vec();

    // The same entries, every framing, every delivery, both times.
    assert_eq!(quiet.len(), traced.len());
    // A cut inside the head is a request the server did not answer: the
    // resource says it is not current before it syncs.
    let objects = |v: &Vec<String>| -> Vec<String> {
        v.iter()
            .filter(|e| !e.starts_with("Stale "))
            .cloned()
            .collect()
    };
    for ((what, how, a), (_, _, b)) in quiet.iter().zip(&traced) {
        assert_eq!(
            a, b,
            "{what}, {how}: the same entries with and without the logger"
        );
        assert_eq!(objects(a), want, "{what}, {how}");
        assert!(
            a.iter()
                .filter(|e| e.starts_with("Stale "))
                .all(|e| e == "Stale pods Unreachable"),
            "{what}, {how}: {a:?}"
        );
    }
    // Nothing the server or the credentials carried reached a line, and
    // every line is tattler's own: no library under it logged at all.
    for s in SECRETS {
        let found = leaks(&lines, s);
        assert!(found.is_empty(), "{s} logged: {found:#?}");
    }
    let foreign: Vec<&String> = lines
        .iter()
        .filter(|l| {
            !l.split(' ')
                .nth(1)
                .unwrap_or_default()
                .starts_with("kube_tattler")
        })
        .collect();
    assert!(
        foreign.is_empty(),
        "lines from other libraries: {foreign:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("GET /api/v1/pods?watch=true")),
        "the capture saw tattler's own request lines"
    );
}

/// Answers as client-go takes them (issue 38 item 3): a LIST answered 203
/// is a success; a watch whose gzip body is empty (`Content-Length: 0`, or
/// chunked with no member) is a watch that ended, not a broken one: the
/// stream watches again from where it was, and says nothing.
#[test]
fn a_list_answered_203_and_empty_gzip_watches_are_taken_as_client_go_takes_them() {
    let _w = Watchdog::new("client_go_answers", Duration::from_secs(60));
    let pod = common::scripted::pod_json("p1", &uid(1), "5", ",\"spec\":{}")
        .replace("\"kind\":\"Pod\",\"apiVersion\":\"v1\",", "");
    let list = common::scripted::list_body(&[pod], "5");
    let watches = Arc::new(AtomicUsize::new(0));
    let counted = watches.clone();
    let server = Scripted::start(move |_, path| {
        if path.contains("sendInitialEvents=true") {
            return Reply::status(422, "Invalid", &[]);
        }
        if !path.contains("watch=true") {
            let mut head = format!(
                "HTTP/1.1 203 Non-Authoritative Information\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                list.len()
            )
            .into_bytes();
            head.extend(&list);
            return Reply::raw(head, 4096, Then::Close);
        }
        let empty: &[u8] = match counted.fetch_add(1, Ordering::SeqCst) {
            0 => b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n",
            1 => b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            _ => return Reply::json(Vec::new(), Then::Hang),
        };
        Reply::raw(empty.to_vec(), empty.len(), Then::Close)
    });
    let mut c = Config::new(Access::new(server.url()).token(TOKEN))
        .watch(["pods"])
        .unwrap();
    c.tuning.gzip = true;
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(5),
        reset_after: Duration::from_secs(120),
    };
    let r = Reader::open(c).unwrap();
    let got: Vec<String> = (0..2).map(|_| show(&next(&r))).collect();
    assert_eq!(got, ["Add a/p1", "Synced pods"]);
    assert!(
        server.wait_requests(5, Duration::from_secs(20)),
        "{:?}",
        server.requests()
    );
    // Nothing went wrong: no Stale, no Error.
    if let Ok(e) = r.next_timeout(Duration::from_millis(300)) {
        panic!("unexpected entry {}", show(&e));
    }
    let watched: Vec<String> = server
        .requests()
        .iter()
        .skip(2)
        .map(|p| {
            p.split("timeoutSeconds")
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        watched, ["/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=5&"; 3],
        "each watch from where the list was"
    );
    assert_eq!(r.stats()[0].reconnects, 2);
    r.close();
}
