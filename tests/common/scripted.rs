//! A scripted HTTP server for answers the fake apiserver cannot give: raw
//! bytes (objects nested 10,000 deep, frames it would never write, whole
//! responses framed as the test writes them: [`Reply::raw`]), servers that
//! ignore `sendInitialEvents`, odd headers. Each request is answered by the
//! test's function; every answer closes its connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How an answer's body ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Then {
    /// The connection closes after the last chunk (a clean end: `0\r\n\r\n`).
    Close,
    /// The connection stays open, silent, until the server is dropped.
    Hang,
}

/// One answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Written one HTTP chunk each.
    pub chunks: Vec<Vec<u8>>,
    pub then: Then,
    /// Chunks the test writes later, after `chunks` (see [`Taps`]).
    pub feed: Option<Feed>,
    /// The whole answer as these bytes instead (status line, head, framing
    /// and all), written `piece` bytes at a time; then as `then` says.
    pub raw: Option<(Vec<u8>, usize)>,
}

/// The receiving end of a [`Tap`]: what the serving thread writes while the
/// answer is open.
pub struct Feed {
    rx: crossbeam_channel::Receiver<Vec<u8>>,
    open: Arc<AtomicBool>,
}

impl Reply {
    /// 200 with JSON chunks.
    pub fn json(chunks: Vec<Vec<u8>>, then: Then) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            chunks,
            then,
            feed: None,
            raw: None,
        }
    }

    /// The answer as `bytes` exactly, written `piece` bytes at a time
    /// (each write its own TCP segment, as far as the kernel allows).
    pub fn raw(bytes: Vec<u8>, piece: usize, then: Then) -> Reply {
        Reply {
            raw: Some((bytes, piece.max(1))),
            ..Reply::json(Vec::new(), then)
        }
    }

    /// A status with a `Status` body.
    pub fn status(code: u16, reason: &str, headers: &[(&str, &str)]) -> Reply {
        let body = format!(
            "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"scripted {code}\",\"reason\":\"{reason}\",\"code\":{code}}}"
        );
        let mut r = Reply::json(vec![body.into_bytes()], Then::Close);
        r.status = code;
        r.headers
            .extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        r
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }
}

type Handler = dyn Fn(usize, &str) -> Reply + Send + Sync;

/// What a server records of each request: when and its path, its
/// `Accept` header, and its `Authorization` header.
type Log<'a> = (
    &'a Mutex<Vec<(Instant, String)>>,
    &'a Mutex<Vec<String>>,
    &'a Mutex<Vec<String>>,
);

/// A running scripted server on 127.0.0.1.
pub struct Scripted {
    url: String,
    requests: Arc<Mutex<Vec<(Instant, String)>>>,
    /// Each request's `Accept` header, in request order.
    accepts: Arc<Mutex<Vec<String>>>,
    /// Each request's `Authorization` header, in request order.
    authorizations: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Scripted {
    /// Serves with `answer(n, path_and_query)`, `n` counting requests from 0.
    pub fn start(answer: impl Fn(usize, &str) -> Reply + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
        let accepts: Arc<Mutex<Vec<String>>> = Arc::default();
        let authorizations: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let answer: Arc<Handler> = Arc::new(answer);
        let accept = {
            let (requests, accepts, authorizations, stop, conns, threads) = (
                requests.clone(),
                accepts.clone(),
                authorizations.clone(),
                stop.clone(),
                conns.clone(),
                threads.clone(),
            );
            std::thread::spawn(move || {
                for s in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(s) = s else { continue };
                    if let Ok(c) = s.try_clone() {
                        conns.lock().unwrap().push(c);
                    }
                    let (requests, accepts, authorizations, stop, answer) = (
                        requests.clone(),
                        accepts.clone(),
                        authorizations.clone(),
                        stop.clone(),
                        answer.clone(),
                    );
                    let t = std::thread::spawn(move || {
                        serve(s, (&requests, &accepts, &authorizations), &stop, &*answer)
                    });
                    threads.lock().unwrap().push(t);
                }
            })
        };
        Scripted {
            url,
            requests,
            accepts,
            authorizations,
            stop,
            conns,
            accept: Some(accept),
            threads,
        }
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The paths (with queries) asked for, in order.
    /// Each request's `Accept` header (empty when it had none), in order.
    pub fn accepts(&self) -> Vec<String> {
        self.accepts.lock().unwrap().clone()
    }

    /// Each request's `Authorization` header (empty when it had none), in order.
    pub fn authorizations(&self) -> Vec<String> {
        self.authorizations.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// When each request came.
    pub fn times(&self) -> Vec<Instant> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| *t)
            .collect()
    }

    /// Waits until `n` requests came; false after `limit`.
    pub fn wait_requests(&self, n: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.requests.lock().unwrap().len() < n {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        // Wake the accept loop.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        for t in self.threads.lock().unwrap().drain(..) {
            let _ = t.join();
        }
    }
}

fn serve(
    s: TcpStream,
    (requests, accepts, authorizations): Log<'_>,
    stop: &AtomicBool,
    answer: &Handler,
) {
    let mut r = BufReader::new(match s.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut line = String::new();
    if r.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut accept = String::new();
    let mut authorization = String::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("accept") {
                accept = v.trim().to_string();
            }
            if k.eq_ignore_ascii_case("authorization") {
                authorization = v.trim().to_string();
            }
        }
    }
    let n = {
        let mut q = requests.lock().unwrap();
        q.push((Instant::now(), path.clone()));
        accepts.lock().unwrap().push(accept);
        authorizations.lock().unwrap().push(authorization);
        q.len() - 1
    };
    let reply = answer(n, &path);
    let mut w = &s;
    if let Some((raw, piece)) = &reply.raw {
        let _ = s.set_nodelay(true);
        for p in raw.chunks(*piece) {
            if w.write_all(p).is_err() {
                return;
            }
            if *piece < raw.len() {
                std::thread::yield_now();
            }
        }
        if reply.then == Then::Hang {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = s.shutdown(Shutdown::Both);
        return;
    }
    let reason = match reply.status {
        200 => "OK",
        _ => "Scripted",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if w.write_all(head.as_bytes()).is_err() {
        return;
    }
    for c in &reply.chunks {
        let mut out = format!("{:x}\r\n", c.len()).into_bytes();
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
        if w.write_all(&out).is_err() {
            return;
        }
    }
    if let Some(feed) = reply.feed {
        let gone = run_feed(&s, &feed, stop);
        feed.open.store(false, Ordering::SeqCst);
        if gone {
            let _ = s.shutdown(Shutdown::Both);
            return;
        }
    }
    match reply.then {
        Then::Close => {
            let _ = w.write_all(b"0\r\n\r\n");
        }
        Then::Hang => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    let _ = s.shutdown(Shutdown::Both);
}

/// A watch frame of `kind` (`ADDED`…) carrying `object`, with its newline.
pub fn frame(kind: &str, object: &str) -> Vec<u8> {
    format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n").into_bytes()
}

/// A pod's JSON as the apiserver writes it, with `extra` members after its metadata.
pub fn pod_json(name: &str, uid: &str, rv: &str, extra: &str) -> String {
    format!(
        "{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"a\",\"uid\":\"{uid}\",\"resourceVersion\":\"{rv}\"}}{extra}}}"
    )
}

/// The initial-events-end bookmark at `rv`.
pub fn end_bookmark(rv: &str) -> Vec<u8> {
    frame(
        "BOOKMARK",
        &format!("{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}"),
    )
}

/// A LIST body of `items` (objects without kind, as the apiserver writes them) at `rv`.
pub fn list_body(items: &[String], rv: &str) -> Vec<u8> {
    format!(
        "{{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}},\"items\":[{}]}}",
        items.join(",")
    )
    .into_bytes()
}

/// A uid for test object `i`.
pub fn uid(i: u32) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// Writes what the test sends on the feed, one chunk each, until the test
/// ends the tap (false) or the client goes away or the server stops (true).
fn run_feed(s: &TcpStream, feed: &Feed, stop: &AtomicBool) -> bool {
    use crossbeam_channel::RecvTimeoutError;
    let _ = s.set_read_timeout(Some(Duration::from_millis(1)));
    let mut w = s;
    loop {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        match feed.rx.recv_timeout(Duration::from_millis(10)) {
            Ok(c) => {
                let mut out = format!("{:x}\r\n", c.len()).into_bytes();
                out.extend_from_slice(&c);
                out.extend_from_slice(b"\r\n");
                if w.write_all(&out).is_err() {
                    return true;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return false,
            Err(RecvTimeoutError::Timeout) => {
                let mut b = [0u8; 1];
                match s.peek(&mut b) {
                    Ok(0) => return true,
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => return true,
                }
            }
        }
    }
}

/// The sending end of one answer's feed.
struct Tap {
    n: usize,
    path: String,
    tx: Option<crossbeam_channel::Sender<Vec<u8>>>,
    open: Arc<AtomicBool>,
}

/// Answers the test writes to while they are open: a watch that stays open
/// and gets an event when the test says, or an initial state sent slowly.
/// A tap is open until the test ends it or the client hangs up.
#[derive(Clone, Default)]
pub struct Taps(Arc<(Mutex<Vec<Tap>>, std::sync::Condvar)>);

impl Taps {
    pub fn new() -> Taps {
        Taps::default()
    }

    /// `reply` for request `n` (of `path`), with a feed the test writes to
    /// by `n`; when the test ends it, the answer ends as `reply.then` says.
    pub fn reply(&self, n: usize, path: &str, mut reply: Reply) -> Reply {
        let (tx, rx) = crossbeam_channel::unbounded();
        let open = Arc::new(AtomicBool::new(true));
        reply.feed = Some(Feed {
            rx,
            open: open.clone(),
        });
        let (taps, cond) = &*self.0;
        taps.lock().unwrap().push(Tap {
            n,
            path: path.to_string(),
            tx: Some(tx),
            open,
        });
        cond.notify_all();
        reply
    }

    /// Writes `chunk` on request `n`'s answer; false if it is not open.
    pub fn send(&self, n: usize, chunk: Vec<u8>) -> bool {
        let taps = self.0 .0.lock().unwrap();
        match taps.iter().find(|t| t.n == n) {
            Some(Tap {
                tx: Some(tx), open, ..
            }) if open.load(Ordering::SeqCst) => tx.send(chunk).is_ok(),
            _ => false,
        }
    }

    /// Writes `chunk` on every open answer; the requests it went to.
    pub fn send_open(&self, chunk: &[u8]) -> Vec<usize> {
        let taps = self.0 .0.lock().unwrap();
        taps.iter()
            .filter(|t| t.open.load(Ordering::SeqCst))
            .filter(|t| {
                t.tx.as_ref()
                    .is_some_and(|tx| tx.send(chunk.to_vec()).is_ok())
            })
            .map(|t| t.n)
            .collect()
    }

    /// Ends request `n`'s feed: its answer ends as its `then` says.
    pub fn end(&self, n: usize) {
        let mut taps = self.0 .0.lock().unwrap();
        for t in taps.iter_mut().filter(|t| t.n == n) {
            t.tx = None;
        }
    }

    /// The requests whose answers are open now (not ended, client there), with their paths.
    pub fn open(&self) -> Vec<(usize, String)> {
        let taps = self.0 .0.lock().unwrap();
        taps.iter()
            .filter(|t| t.tx.is_some() && t.open.load(Ordering::SeqCst))
            .map(|t| (t.n, t.path.clone()))
            .collect()
    }

    /// Waits until request `n` has a tap; false after `limit`.
    pub fn wait(&self, n: usize, limit: Duration) -> bool {
        self.wait_for(limit, |taps| taps.iter().any(|t| t.n == n))
    }

    /// Waits until exactly `count` answers are open; false after `limit`.
    pub fn wait_open(&self, count: usize, limit: Duration) -> bool {
        self.wait_for(limit, |taps| {
            taps.iter()
                .filter(|t| t.tx.is_some() && t.open.load(Ordering::SeqCst))
                .count()
                == count
        })
    }

    fn wait_for(&self, limit: Duration, done: impl Fn(&[Tap]) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let (taps, cond) = &*self.0;
        let mut g = taps.lock().unwrap();
        while !done(&g) {
            let now = Instant::now();
            if now > deadline {
                return false;
            }
            // Open flags change without a notification: look again soon.
            let wait = (deadline - now).min(Duration::from_millis(10));
            g = cond.wait_timeout(g, wait).unwrap().0;
        }
        true
    }
}
