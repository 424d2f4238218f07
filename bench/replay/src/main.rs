//! A replay kube-apiserver for the benchmark: N synthetic pods served as a
//! watch-list stream (HTTP/1.1 chunked, one event per chunk, then the
//! initial-events-end BOOKMARK), as paged LISTs, and as a plain WATCH, on
//! 127.0.0.1 only. Everything is rendered before the first connection, so
//! serving is a memcpy into the socket.
//!
//! usage: replay [--n N] [--port P] [--live-rate R] [--live-secs S] [--live-delay-ms D] [--protobuf FILE]
//!
//! `--protobuf FILE` serves the watch-list from FILE, a protobuf watch body
//! (`bench/decode`'s `proto-body` writes one from this server's JSON), with
//! the apiserver's protobuf Content-Type, one frame a chunk.
//!
//! stdout, line 1: the URL; line 2: a JSON line describing the data
//! (objects, the watch-list body size in bytes, the bookmark resourceVersion).
//!
//! After the bookmark (and at once on a plain WATCH) the stream is held open
//! until the client goes away; with --live-rate, it first carries R MODIFIED
//! events per second for S seconds, starting D ms after the bookmark, each with
//! its send time (CLOCK_REALTIME ns) in the `bench.tattler.dev/sent-unix-nanos`
//! annotation.

mod pod;

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pod::{render_body, Rng, KIND_PREFIX};

/// resourceVersions start above this, like a cluster that has lived a while.
const RV_BASE: u64 = 4_000_000;

struct Opts {
    n: usize,
    port: u16,
    live_rate: u32,
    live_secs: u32,
    live_delay_ms: u64,
    /// A protobuf watch-list body (`proto-body`'s output): the watch-list is
    /// served from it as the apiserver serves protobuf, one frame a chunk.
    protobuf: Option<String>,
}

struct Data {
    n: usize,
    /// The whole watch-list response body, chunked: every ADDED event, then the bookmark.
    stream: Vec<u8>,
    /// The de-chunked size of `stream` (the JSON frames and their newlines).
    body_bytes: u64,
    /// Per pod, the byte range in `stream` of its body (after `KIND_PREFIX`, to the closing brace).
    bodies: Vec<(usize, usize)>,
    /// The resourceVersion of the bookmark and of a LIST.
    list_rv: u64,
    /// With `--protobuf`: that body, chunked.
    proto_stream: Option<Vec<u8>>,
    opts: Opts,
}

fn main() {
    let opts = parse_args();
    let started = Instant::now();
    let data = Arc::new(build(opts));
    let listener = TcpListener::bind(("127.0.0.1", data.opts.port)).expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    let avg = if data.n == 0 {
        0
    } else {
        data.bodies
            .iter()
            .map(|(a, b)| b - a + KIND_PREFIX.len())
            .sum::<usize>()
            / data.n
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{addr}");
    let _ = writeln!(
        out,
        r#"{{"objects":{},"stream_bytes":{},"avg_object_bytes":{},"bookmark_rv":{},"render_seconds":{:.3},"live_rate":{},"live_secs":{}}}"#,
        data.n,
        data.body_bytes,
        avg,
        data.list_rv,
        started.elapsed().as_secs_f64(),
        data.opts.live_rate,
        data.opts.live_secs
    );
    let _ = out.flush();
    drop(out);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let data = data.clone();
        let _ = std::thread::Builder::new()
            .name("replay-conn".into())
            .spawn(move || {
                let _ = serve(&data, conn);
            });
    }
}

fn parse_args() -> Opts {
    let mut o = Opts {
        n: 10_000,
        port: 0,
        live_rate: 0,
        live_secs: 0,
        live_delay_ms: 2000,
        protobuf: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--n" => o.n = num(&val()),
            "--port" => o.port = num(&val()),
            "--live-rate" => o.live_rate = num(&val()),
            "--live-secs" => o.live_secs = num(&val()),
            "--live-delay-ms" => o.live_delay_ms = num(&val()),
            "--protobuf" => o.protobuf = Some(val()),
            _ => die(&format!("unknown argument {a}")),
        }
    }
    o
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse()
        .unwrap_or_else(|_| die(&format!("not a number: {s}")))
}

fn die(msg: &str) -> ! {
    eprintln!("replay: {msg}");
    eprintln!(
        "usage: replay [--n N] [--port P] [--live-rate R] [--live-secs S] [--live-delay-ms D] [--protobuf FILE]"
    );
    std::process::exit(2)
}

/// Renders every pod into one chunked watch-list body.
fn build(opts: Opts) -> Data {
    let n = opts.n;
    // The initial ADDED events come in storage order, not resourceVersion order:
    // give the pods a shuffled set of resourceVersions.
    let mut rvs: Vec<u64> = (1..=n as u64).map(|k| RV_BASE + k * 3).collect();
    let mut rng = Rng::new(42);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        rvs.swap(i, j);
    }
    let list_rv = RV_BASE + n as u64 * 3 + 7;
    let mut stream = Vec::with_capacity(n * 4400 + 256);
    let mut bodies = Vec::with_capacity(n);
    let mut body_bytes = 0u64;
    let mut frame = Vec::with_capacity(8192);
    for (i, rv) in rvs.iter().enumerate() {
        let r = render_body(i, *rv, false);
        frame.clear();
        frame.extend_from_slice(br#"{"type":"ADDED","object":"#);
        frame.extend_from_slice(KIND_PREFIX.as_bytes());
        let at = frame.len();
        frame.extend_from_slice(r.body.as_bytes());
        let end = frame.len();
        frame.extend_from_slice(b"}\n");
        let head = format!("{:x}\r\n", frame.len());
        let base = stream.len() + head.len();
        bodies.push((base + at, base + end));
        stream.extend_from_slice(head.as_bytes());
        stream.extend_from_slice(&frame);
        stream.extend_from_slice(b"\r\n");
        body_bytes += frame.len() as u64;
    }
    let bookmark = format!(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{list_rv}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n"
    );
    let _ = write!(stream, "{:x}\r\n{bookmark}\r\n", bookmark.len());
    body_bytes += bookmark.len() as u64;
    let proto_stream = opts.protobuf.as_deref().map(proto_stream);
    Data {
        n,
        stream,
        body_bytes,
        bodies,
        list_rv,
        proto_stream,
        opts,
    }
}

/// A protobuf watch body (4-byte big-endian lengths before each frame),
/// chunked one frame a chunk as the apiserver flushes each event.
fn proto_stream(path: &str) -> Vec<u8> {
    let body = std::fs::read(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let mut out = Vec::with_capacity(body.len() + body.len() / 100);
    let mut at = 0;
    while at + 4 <= body.len() {
        let n = u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize;
        let end = (at + 4 + n).min(body.len());
        let _ = write!(out, "{:x}\r\n", end - at);
        out.extend_from_slice(&body[at..end]);
        out.extend_from_slice(b"\r\n");
        at = end;
    }
    out
}

/// One connection: requests until the client closes, or until a watch ends it.
fn serve(data: &Data, conn: TcpStream) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut rd = BufReader::new(conn.try_clone()?);
    let mut wr = conn;
    loop {
        let mut line = String::new();
        if rd.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        // One line per request on stderr: the harness keeps it, to show what each client asked.
        eprintln!("{}", line.trim_end());
        let mut close = line.contains("HTTP/1.0");
        let mut body_len = 0usize;
        loop {
            let mut h = String::new();
            if rd.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if lower.starts_with("connection:") && lower.contains("close") {
                close = true;
            }
            if let Some(v) = lower.strip_prefix("content-length:") {
                body_len = v.trim().parse().unwrap_or(0);
            }
        }
        if body_len > 0 {
            std::io::copy(&mut (&mut rd).take(body_len as u64), &mut std::io::sink())?;
        }
        let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
        let q = |key: &str| {
            query
                .split('&')
                .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        match path {
            "/api/v1/pods" if matches!(q("watch").as_deref(), Some("true" | "1")) => {
                let initial = q("sendInitialEvents").as_deref() == Some("true");
                return watch(data, rd, wr, initial);
            }
            "/api/v1/pods" => {
                let limit: usize = q("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
                let start: usize = q("continue")
                    .and_then(|c| c.strip_prefix('c').and_then(|s| s.parse().ok()))
                    .unwrap_or(0);
                // Like the watch cache: resourceVersion=0 is served whole, limit ignored.
                let limit = if q("resourceVersion").as_deref() == Some("0") {
                    0
                } else {
                    limit
                };
                list(data, &mut wr, start, limit)?;
            }
            "/version" => json(&mut wr, 200, &version())?,
            "/api" => json(
                &mut wr,
                200,
                r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]}"#,
            )?,
            "/apis" => json(
                &mut wr,
                200,
                r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[]}"#,
            )?,
            "/api/v1" => json(&mut wr, 200, API_V1)?,
            _ => json(
                &mut wr,
                404,
                &format!(
                    r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"the server could not find the requested resource ({path})","reason":"NotFound","details":{{}},"code":404}}"#
                ),
            )?,
        }
        if close {
            return Ok(());
        }
    }
}

fn version() -> String {
    r#"{"major":"1","minor":"34","emulationMajor":"1","emulationMinor":"34","minCompatibilityMajor":"1","minCompatibilityMinor":"33","gitVersion":"v1.34.0","gitCommit":"0000000000000000000000000000000000000000","gitTreeState":"clean","buildDate":"2025-08-27T00:00:00Z","goVersion":"go1.24.6","compiler":"gc","platform":"linux/amd64"}"#.to_string()
}

const API_V1: &str = r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"],"storageVersionHash":"xPOwRZ+Yhw8="},{"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]}]}"#;

fn json(w: &mut TcpStream, code: u16, body: &str) -> std::io::Result<()> {
    let reason = if code == 200 { "OK" } else { "Not Found" };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut buf = head.into_bytes();
    buf.extend_from_slice(body.as_bytes());
    w.write_all(&buf)
}

/// One LIST page: items `start..start+limit` (all when `limit` is 0), with a
/// continue token when more remain. Items carry no kind/apiVersion, as in a real list.
fn list(data: &Data, w: &mut TcpStream, start: usize, limit: usize) -> std::io::Result<()> {
    let start = start.min(data.n);
    let end = if limit == 0 {
        data.n
    } else {
        (start + limit).min(data.n)
    };
    let cont = if end < data.n {
        format!(
            r#","continue":"c{end}","remainingItemCount":{}"#,
            data.n - end
        )
    } else {
        String::new()
    };
    let pre = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{}"{cont}}},"items":["#,
        data.list_rv
    );
    let post = "]}";
    let items = &data.bodies[start..end];
    let len = pre.len()
        + post.len()
        + items.iter().map(|(a, b)| b - a + 1).sum::<usize>()
        + items.len().saturating_sub(1);
    let mut bw = BufWriter::with_capacity(1 << 20, w);
    write!(
        bw,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n{pre}"
    )?;
    for (k, (a, b)) in items.iter().enumerate() {
        if k > 0 {
            bw.write_all(b",")?;
        }
        bw.write_all(b"{")?;
        bw.write_all(&data.stream[*a..*b])?;
    }
    bw.write_all(post.as_bytes())?;
    bw.flush()
}

/// A watch: the initial events and bookmark (watch-list), then live events if
/// configured, then held open until the client closes.
fn watch(
    data: &Data,
    mut rd: BufReader<TcpStream>,
    mut w: TcpStream,
    initial: bool,
) -> std::io::Result<()> {
    let (content_type, stream) = match &data.proto_stream {
        Some(p) => (
            "application/vnd.kubernetes.protobuf;stream=watch",
            p.as_slice(),
        ),
        None => ("application/json", data.stream.as_slice()),
    };
    w.write_all(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .as_bytes(),
    )?;
    if initial {
        // Large writes: the kernel takes as much as the socket buffer holds each time.
        for part in stream.chunks(4 << 20) {
            w.write_all(part)?;
        }
    }
    let o = &data.opts;
    if o.live_rate > 0 && o.live_secs > 0 && data.n > 0 {
        std::thread::sleep(Duration::from_millis(o.live_delay_ms));
        let total = u64::from(o.live_rate) * u64::from(o.live_secs);
        let t0 = Instant::now();
        let mut rv = data.list_rv;
        for k in 0..total {
            let due = t0 + Duration::from_nanos(k * 1_000_000_000 / u64::from(o.live_rate));
            let i = (k as usize).wrapping_mul(7919) % data.n;
            rv += 1;
            let r = render_body(i, rv, true);
            let mut frame = Vec::with_capacity(r.body.len() + 64);
            frame.extend_from_slice(br#"{"type":"MODIFIED","object":"#);
            frame.extend_from_slice(KIND_PREFIX.as_bytes());
            let stamp = frame.len() + r.stamp_at.expect("live body has a stamp");
            frame.extend_from_slice(r.body.as_bytes());
            frame.extend_from_slice(b"}\n");
            let mut chunk = format!("{:x}\r\n", frame.len()).into_bytes();
            let stamp = stamp + chunk.len();
            chunk.extend_from_slice(&frame);
            chunk.extend_from_slice(b"\r\n");
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let ns = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            chunk[stamp..stamp + 19].copy_from_slice(format!("{ns:019}").as_bytes());
            w.write_all(&chunk)?;
        }
    }
    // Hold the stream open until the client closes it.
    let mut sink = [0u8; 4096];
    while rd.read(&mut sink)? > 0 {}
    Ok(())
}
