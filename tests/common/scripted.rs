//! A scripted HTTP server for answers the fake apiserver cannot give: raw
//! bytes (objects nested 10,000 deep, frames it would never write), servers
//! that ignore `sendInitialEvents`, odd headers. Each request is answered by
//! the test's function; every answer closes its connection.

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
}

impl Reply {
    /// 200 with JSON chunks.
    pub fn json(chunks: Vec<Vec<u8>>, then: Then) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            chunks,
            then,
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

/// A running scripted server on 127.0.0.1.
pub struct Scripted {
    url: String,
    requests: Arc<Mutex<Vec<(Instant, String)>>>,
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
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let answer: Arc<Handler> = Arc::new(answer);
        let accept = {
            let (requests, stop, conns, threads) = (
                requests.clone(),
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
                    let (requests, stop, answer) = (requests.clone(), stop.clone(), answer.clone());
                    let t = std::thread::spawn(move || serve(s, &requests, &stop, &*answer));
                    threads.lock().unwrap().push(t);
                }
            })
        };
        Scripted {
            url,
            requests,
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
    requests: &Mutex<Vec<(Instant, String)>>,
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
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
    }
    let n = {
        let mut q = requests.lock().unwrap();
        q.push((Instant::now(), path.clone()));
        q.len() - 1
    };
    let reply = answer(n, &path);
    let mut w = &s;
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
