//! Fuzz targets for tattler (issue 8), as plain functions so that both
//! libFuzzer (`cargo fuzz run <target>`, fuzz_targets/) and a stable smoke
//! run (`cargo test --lib --no-default-features`, below) drive them.
//!
//! - [`config_json`]: `Config::from_json` on any UTF-8 text.
//! - [`kubeconfig`]: `Config::from_kubeconfig` on a file holding the input.
//! - [`watch_stream`]: a whole `Reader` against a tiny HTTP server that sends
//!   the input as the watch response: tattler's HTTP client (response head
//!   and chunked body reader, with fuzzer-chosen chunk boundaries or raw
//!   chunk framing), the frame reader, event decoding, dedupe and secret
//!   scrubbing.
//!
//! Each target fails (panics) on a panic in the library, on a secret showing
//! where it must not (an env value in a scrubbed object; a token or password
//! in an error message or a `Debug` text), and on an entry whose object is not
//! the JSON object it names.
//!
//! With the `hook` feature (tattler's `fuzzing` feature, its hidden `__fuzz`
//! module), three more targets reach the crate-private code directly:
//! [`decode_frames`] (the frame reader and event decoding), [`decode_list`]
//! (LIST bodies read item by item), [`decode_protobuf`] (protobuf watch and
//! LIST bodies turned into JSON), [`scrub_bytes`] (the byte-level walk and
//! scrubber), [`walk_depth`] (nesting, on a small stack) and
//! [`http_response`] (tattler's HTTP/1.1 response reader: heads, interim
//! answers, framing, chunks and trailers, split at every byte).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube_tattler::{Access, Backoff, Change, Config, Reader};
use serde_json::Value;

/// Inputs that name device or process files would make a parser read them
/// (`/dev/zero` never ends): not a finding, so they are skipped.
fn names_special_files(text: &str) -> bool {
    ["/dev", "/proc", "/sys", "\\"]
        .iter()
        .any(|p| text.contains(p))
}

/// Strings at `key` anywhere in `v`.
fn strings_at(v: &Value, key: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key {
                    if let Value::String(s) = x {
                        out.push(s.clone());
                    }
                }
                strings_at(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| strings_at(x, key, out)),
        _ => {}
    }
}

/// Secret values of `keys` in `doc` that appear exactly once in `text`
/// (so that any other appearance can only be an echo of the secret).
fn secrets(doc: &Value, text: &str, keys: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for k in keys {
        strings_at(doc, k, &mut found);
    }
    found
        .into_iter()
        .filter(|s| s.len() >= 8 && text.matches(s.as_str()).count() == 1)
        .filter(|s| !keys.iter().any(|k| k.contains(s.as_str())))
        .collect()
}

fn assert_hidden(secrets: &[String], what: &str, text: &str) {
    for s in secrets {
        assert!(
            !text.contains(s.as_str()),
            "secret {s:?} shows in {what}: {text}"
        );
    }
}

/// `Config::from_json`.
pub fn config_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if names_special_files(text) {
        return;
    }
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let hidden = secrets(&doc, text, &["token", "password"]);
    match Config::from_json(text) {
        Ok(c) => assert_hidden(&hidden, "Config's Debug", &format!("{c:?}")),
        Err(e) => assert_hidden(&hidden, "the error", &format!("{e} {e:?}")),
    }
}

/// `Config::from_kubeconfig` on a file holding the input.
pub fn kubeconfig(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if names_special_files(text) {
        return;
    }
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tattler-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        dir.join("kubeconfig")
    });
    std::fs::write(path, data).expect("write the kubeconfig");
    // Token values are YAML scalars; take those written plainly as `token: VALUE`.
    // (`token:VALUE`, without the space, is one string where a user mapping
    // belongs: tests/fake/faults.rs checks that typo on its own.)
    let mut hidden: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim_start_matches([' ', '-']);
            l.strip_prefix("token: ")
                .or_else(|| l.strip_prefix("password: "))
        })
        .map(|v| v.trim().to_string())
        .filter(|v| v.len() >= 8 && v.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect();
    hidden.retain(|s| text.matches(s.as_str()).count() == 1);
    match Access::from_kubeconfig(Some(&path), None) {
        Ok(c) => assert_hidden(&hidden, "Config's Debug", &format!("{c:?}")),
        Err(e) => assert_hidden(&hidden, "the error", &format!("{e} {e:?}")),
    }
}

// ---------------------------------------------------------------------------
// A whole Reader against a server that sends the input.

/// How the input becomes the HTTP response (its first byte chooses).
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// The rest is the body, with Content-Length.
    Length,
    /// The rest is the body, chunked in pieces of (second byte % 64 + 1) bytes.
    Chunked(usize),
    /// The rest follows chunked headers verbatim: the input does the chunk framing.
    RawChunks,
    /// The rest is the whole response, status line and headers included.
    Raw,
}

struct Server {
    addr: SocketAddr,
    /// The input being run (its readers watch namespace `n<input>`) and its response.
    response: Mutex<(u64, Vec<u8>)>,
    /// Requests of the current input served.
    served: AtomicU64,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<&'static Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let s: &'static Server = Box::leak(Box::new(Server {
            addr: listener.local_addr().expect("address"),
            response: Mutex::new((0, Vec::new())),
            served: AtomicU64::new(0),
        }));
        std::thread::Builder::new()
            .name("fuzz-server".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    serve(s, conn);
                }
            })
            .expect("spawn");
        s
    })
}

/// One request, one response, then the connection is closed.
fn serve(s: &Server, mut conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
        match conn.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return,
        }
    }
    // A late request of an earlier input's reader gets nothing.
    let text = String::from_utf8_lossy(&head);
    let input: Option<u64> = text
        .split("/namespaces/n")
        .nth(1)
        .and_then(|t| t.split('/').next())
        .and_then(|n| n.parse().ok());
    let (current, response) = s.response.lock().unwrap().clone();
    if input == Some(current) {
        s.served.fetch_add(1, Ordering::SeqCst);
        let _ = conn.write_all(&response);
    }
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

fn response(framing: Framing, body: &[u8]) -> Vec<u8> {
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n";
    let mut out = Vec::with_capacity(body.len() + 256);
    match framing {
        Framing::Length => {
            out.extend_from_slice(format!("{OK}Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
        }
        Framing::Chunked(size) => {
            out.extend_from_slice(format!("{OK}Transfer-Encoding: chunked\r\n\r\n").as_bytes());
            for piece in body.chunks(size) {
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
        }
        Framing::RawChunks => {
            out.extend_from_slice(format!("{OK}Transfer-Encoding: chunked\r\n\r\n").as_bytes());
            out.extend_from_slice(body);
        }
        Framing::Raw => out.extend_from_slice(body),
    }
    out
}

/// Every env value a pod (or pod template) object holds at the paths scrubbing covers.
fn env_values(obj: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for spec in [
        "/spec",
        "/spec/template/spec",
        "/spec/jobTemplate/spec/template/spec",
    ] {
        let Some(spec) = obj.pointer(spec) else {
            continue;
        };
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            for c in spec
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for var in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(v) = var.get("value") {
                        out.push(v);
                    }
                }
            }
        }
    }
    out
}

/// Checks an entry's object: valid JSON naming the entry's object, scrubbed.
fn check_object(e: &kube_tattler::Entry, input: &[u8]) {
    let Some(obj) = e.object() else {
        return;
    };
    let v: Value = serde_json::from_slice(obj).unwrap_or_else(|err| {
        panic!(
            "{} handed out an object that is not JSON ({err}): {:?}",
            e.change(),
            String::from_utf8_lossy(obj)
        )
    });
    assert_eq!(
        v["metadata"]["name"].as_str(),
        Some(e.name()),
        "the object is not the one named"
    );
    assert_eq!(
        v["metadata"]["uid"].as_str(),
        Some(e.uid()),
        "the object is not the one named"
    );
    let mut scrubbed = vec![v.clone()];
    let applied = v
        .pointer("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    scrubbed.extend(applied);
    for doc in &scrubbed {
        for value in env_values(doc) {
            if let Value::String(s) = value {
                assert_eq!(s, "REDACTED", "an env value was handed out: {v}");
            }
        }
    }
    // Duplicate keys hide a value from the checks above; the bytes must not hold
    // any env value string of the input either (when it is distinctive).
    let text = String::from_utf8_lossy(input);
    for line in text.lines() {
        let Ok(frame) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for value in env_values(&frame["object"]) {
            if let Value::String(s) = value {
                if s.len() >= 8 && s != "REDACTED" && text.matches(s.as_str()).count() == 1 {
                    assert!(
                        !obj.windows(s.len()).any(|w| w == s.as_bytes()),
                        "env value {s:?} handed out in {}",
                        String::from_utf8_lossy(obj)
                    );
                }
            }
        }
    }
}

/// A whole Reader against a server that sends the input as the watch response.
pub fn watch_stream(data: &[u8]) {
    let [mode, size, rest @ ..] = data else {
        return;
    };
    let framing = match mode % 4 {
        0 => Framing::Length,
        1 => Framing::Chunked(usize::from(size % 64) + 1),
        2 => Framing::RawChunks,
        _ => Framing::Raw,
    };
    let s = server();
    let input = {
        let mut cur = s.response.lock().unwrap();
        s.served.store(0, Ordering::SeqCst);
        *cur = (cur.0 + 1, response(framing, rest));
        cur.0
    };
    let mut c = Config::new(Access::new(&format!("http://{}", s.addr)));
    c.resources = vec![kube_tattler::ResourceSpec::parse("pods")
        .unwrap()
        .remove(0)
        .in_namespace(&format!("n{input}"))];
    c.access.proxy = kube_tattler::ProxyConfig::None;
    c.tuning.idle_timeout = Duration::from_secs(1);
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(1),
        reset_after: Duration::from_secs(60),
    };
    // Small enough that the fuzzer meets it; the second byte varies it.
    c.tuning.max_frame_bytes = 256 + usize::from(*size) * 64;
    let r = Reader::open(c).expect("a valid configuration");
    // One pass over the body: until the stream asks again (or a stream ends for good).
    let deadline = Instant::now() + Duration::from_secs(3);
    while s.served.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        match r.next_timeout(Duration::from_millis(1)) {
            Ok(e) => {
                if e.change() == Change::Error {
                    let err = e.error().unwrap();
                    assert!(
                        !err.message.contains("panicked"),
                        "the library panicked: {}",
                        err.message
                    );
                    if r.stats()[0].failed {
                        break;
                    }
                }
                check_object(&e, rest);
            }
            Err(kube_tattler::NextTimeoutError::Closed) => break,
            Err(kube_tattler::NextTimeoutError::Timeout) => {}
        }
    }
    r.stop();
    while let Ok(e) = r.try_next() {
        if let Some(err) = e.error() {
            assert!(
                !err.message.contains("panicked"),
                "the library panicked: {}",
                err.message
            );
        }
        check_object(&e, rest);
    }
    r.close();
}

// ---------------------------------------------------------------------------
// The crate-private decoders, through tattler's hidden `__fuzz` module.

/// The frame reader and event decoding: the first byte sets how many bytes
/// arrive per read (1..=64), the second the frame limit (16..=4096).
#[cfg(feature = "hook")]
pub fn decode_frames(data: &[u8]) {
    let [a, b, body @ ..] = data else {
        return;
    };
    let chunk = usize::from(a % 64) + 1;
    let max = 16 + usize::from(*b) * 16;
    kube_tattler::__fuzz::frames(body, chunk, max);
    kube_tattler::__fuzz::event(body);
}

/// LIST bodies read item by item: the first byte sets how many bytes arrive
/// per read (1..=64).
#[cfg(feature = "hook")]
pub fn decode_list(data: &[u8]) {
    let [a, body @ ..] = data else {
        return;
    };
    kube_tattler::__fuzz::list(body, usize::from(a % 64) + 1);
}

/// Protobuf bodies (metadata-only streams) read as watch frames and as LIST
/// items: byte 1 sets how many bytes arrive per read (1..=64), byte 2 the
/// frame limit (64..=16384).
#[cfg(feature = "hook")]
pub fn decode_protobuf(data: &[u8]) {
    let [a, b, body @ ..] = data else {
        return;
    };
    let (chunk, max) = (usize::from(a % 64) + 1, usize::from(*b) * 64 + 64);
    kube_tattler::__fuzz::protobuf(body, chunk, max);
    // The one pass (issue 39) against the plain conversion and the walk.
    kube_tattler::__fuzz::protobuf_one_pass(body, chunk, max);
}

/// The byte-level walk and scrubber, on any input (it checks the structure
/// itself): the hook asserts that what it edits stays JSON.
#[cfg(feature = "hook")]
pub fn scrub_bytes(data: &[u8]) {
    kube_tattler::__fuzz::scrub(data);
}

/// Nesting: two bytes of depth (up to twice the walker's limit), a shape of
/// objects and arrays, a tail; the walk runs on a 64 KiB stack and must
/// refuse what is too deep.
#[cfg(feature = "hook")]
pub fn walk_depth(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let depth = usize::from(u16::from_le_bytes([*a, *b])) * 3;
    let (shape, tail) = rest.split_at(rest.len().min(8));
    kube_tattler::__fuzz::depth(shape, depth, tail);
}

/// tattler's HTTP/1.1 response reader on any bytes: the head (interim
/// answers skipped), the framing and the body, read whole, in small pieces
/// and cut at every byte; the hook asserts that every way agrees and that
/// the read buffer stays bounded, whatever sizes the input claims.
#[cfg(feature = "hook")]
pub fn http_response(data: &[u8]) {
    kube_tattler::__fuzz::http_response(data);
}

#[cfg(test)]
mod smoke {
    //! A stable-Rust stand-in for libFuzzer: every corpus file, then random
    //! mutations of them for `TATTLER_FUZZ_SECS` seconds (default 5) per target.

    use std::path::Path;
    use std::time::{Duration, Instant};

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(v.len() + 1);
            match rng.below(6) {
                0 if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v[i] = rng.next() as u8;
                }
                1 if !v.is_empty() => {
                    let end = (at + rng.below(16)).min(v.len());
                    v.drain(at.min(end)..end);
                }
                2 => {
                    let bytes: &[u8] = *[
                        &b"\n"[..],
                        b"\r\n",
                        b"{",
                        b"}",
                        b"\"",
                        b"\\u0000",
                        b"\xff",
                        b"0\r\n\r\n",
                        b"ffffffff\r\n",
                        b"\"env\":[{\"name\":\"A\",\"value\":\"s3cr3t-value\"}]",
                        b"[[[[[[[[",
                        b"HTTP/1.1 100 Continue\r\n\r\n",
                        b"\r\nTransfer-Encoding: chunked",
                        b"\r\nContent-Length: 18446744073709551615",
                        b";ext=\"a b\"",
                        b"\xe9\xff",
                    ]
                    .get(rng.below(16))
                    .unwrap();
                    v.splice(at..at, bytes.iter().copied());
                }
                3 if !corpus.is_empty() => {
                    let other = &corpus[rng.below(corpus.len())];
                    let from = rng.below(other.len() + 1);
                    let to = (from + rng.below(64)).min(other.len());
                    v.splice(at..at, other[from..to].iter().copied());
                }
                4 if !v.is_empty() => {
                    let from = rng.below(v.len());
                    let to = (from + rng.below(32)).min(v.len());
                    let piece = v[from..to].to_vec();
                    v.splice(at..at, piece);
                }
                _ => v.truncate(at),
            }
        }
        v
    }

    fn run(target: &str, f: fn(&[u8])) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target);
        let mut corpus: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| std::fs::read(e.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        corpus.sort();
        assert!(!corpus.is_empty(), "no corpus in {}", dir.display());
        for input in &corpus {
            f(input);
        }
        let secs: u64 = std::env::var("TATTLER_FUZZ_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5);
        let start = Instant::now();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ target.len() as u64);
        let mut runs = corpus.len() as u64;
        while start.elapsed() < Duration::from_secs(secs) {
            let base = corpus[rng.below(corpus.len())].clone();
            let input = mutate(&mut rng, &base, &corpus);
            let shown = String::from_utf8_lossy(&input).into_owned();
            let r = std::panic::catch_unwind(|| f(&input));
            if r.is_err() {
                panic!("{target}: failing input ({} bytes): {shown:?}", input.len());
            }
            runs += 1;
        }
        eprintln!(
            "{target}: {runs} runs in {:.1} s ({:.0}/s), {} corpus files",
            start.elapsed().as_secs_f64(),
            runs as f64 / start.elapsed().as_secs_f64().max(0.001),
            corpus.len()
        );
    }

    #[test]
    fn config_json() {
        run("config_json", super::config_json);
    }

    #[test]
    fn kubeconfig() {
        run("kubeconfig", super::kubeconfig);
    }

    #[test]
    fn watch_stream() {
        run("watch_stream", super::watch_stream);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn decode_frames() {
        run("decode_frames", super::decode_frames);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn decode_list() {
        run("decode_list", super::decode_list);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn decode_protobuf() {
        run("decode_protobuf", super::decode_protobuf);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn scrub_bytes() {
        run("scrub_bytes", super::scrub_bytes);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn walk_depth() {
        run("walk_depth", super::walk_depth);
    }

    #[cfg(feature = "hook")]
    #[test]
    fn http_response() {
        run("http_response", super::http_response);
    }
}
