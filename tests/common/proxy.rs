//! A fault-injecting TCP proxy for the reliability tests (issue 8).
//!
//! It listens on `127.0.0.1:0` in front of an HTTP server (the fake
//! apiserver), one thread per connection and one more per direction, and
//! decides per connection what goes wrong: nothing, a cut at a byte offset of
//! the response (anywhere, inside a chunk's hex size line, or inside a
//! chunk's payload), a stall (nothing more is forwarded until the client gives
//! up), a slow trickle, a refused connection, an extra chunk injected into the
//! response, or a canned answer instead of the server's. Faults are queued
//! explicitly ([`FaultProxy::push`]) or drawn from a seeded [`Mix`], so a
//! seed replays the same choices. Every fault carried out is counted.
//!
//! The proxy parses the response stream (head, `Content-Length` or chunked
//! body, one response after another on a kept-alive connection) only to know
//! where the chunk boundaries are; the bytes are forwarded unchanged.
//!
//! Dropping it closes every socket and joins every thread.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver, Sender};
use parking_lot::Mutex;

/// A small deterministic generator (SplitMix64): the same seed, the same choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// What goes wrong on one connection. Offsets count bytes of the response
/// stream (server to client) on that connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    Pass,
    /// Forward `n` bytes of the response stream, then close both sides.
    CutAt(u64),
    /// Close both sides inside the hex size line of the `chunk`th chunk (0-based,
    /// counting every chunk of the connection), after `after` bytes of that line
    /// (1: after the first hex digit).
    CutInChunkSize { chunk: usize, after: usize },
    /// Forward `n` bytes of chunk payload (the watch frames), then close both sides.
    CutInPayload(u64),
    /// Forward `n` bytes, then nothing more: the client's idle timeout must end it.
    StallAfter(u64),
    /// Forward at most `bytes` at a time, pausing `pause_us` microseconds in between.
    Slow { bytes: usize, pause_us: u64 },
    /// Accept the connection, then close it without a byte.
    Refuse,
    /// Insert one more chunk, `payload`, after the `after`th complete data chunk
    /// (0-based; 0: after the first) of the response stream; the rest is forwarded as is.
    Inject { after: usize, payload: Payload },
    /// Read the request head, answer with these raw bytes instead of asking the
    /// server, then close.
    Respond(Vec<u8>),
    /// As `Respond`, in these pieces with 50 ms between them: the client reads
    /// each piece on its own.
    RespondInPieces(Vec<Vec<u8>>),
}

/// What an injected chunk carries.
#[derive(Clone, PartialEq, Eq)]
pub enum Payload {
    /// These bytes (a watch frame with its newline, garbage, invalid UTF-8…).
    Bytes(Vec<u8>),
    /// One ADDED watch frame of `len` bytes for a ConfigMap `namespace/name`
    /// whose data holds a string of `x`: generated as it is sent, never held in memory.
    Huge {
        len: u64,
        namespace: String,
        name: String,
    },
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Payload::Bytes(b) => write!(f, "Bytes({:?})", String::from_utf8_lossy(b)),
            Payload::Huge { len, .. } => write!(f, "Huge({len})"),
        }
    }
}

impl Payload {
    /// The frame of a [`Payload::Huge`] in three parts: head, `len - head - tail` bytes of `x`, tail.
    fn huge_parts(len: u64, namespace: &str, name: &str) -> (Vec<u8>, u64, Vec<u8>) {
        let head = format!(
            "{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{namespace}\",\"uid\":\"00000000-0000-0000-0000-0000000b16b1\",\"resourceVersion\":\"1\"}},\"data\":{{\"blob\":\""
        )
        .into_bytes();
        let tail = b"\"}}}\n".to_vec();
        let fill = len.saturating_sub((head.len() + tail.len()) as u64);
        (head, fill, tail)
    }

    fn len(&self) -> u64 {
        match self {
            Payload::Bytes(b) => b.len() as u64,
            Payload::Huge {
                len,
                namespace,
                name,
            } => {
                let (h, fill, t) = Payload::huge_parts(*len, namespace, name);
                h.len() as u64 + fill + t.len() as u64
            }
        }
    }

    /// Writes the payload; false if the client went away.
    fn write_to(&self, out: &mut TcpStream) -> bool {
        match self {
            Payload::Bytes(b) => out.write_all(b).is_ok(),
            Payload::Huge {
                len,
                namespace,
                name,
            } => {
                let (head, mut fill, tail) = Payload::huge_parts(*len, namespace, name);
                if out.write_all(&head).is_err() {
                    return false;
                }
                let block = [b'x'; 64 << 10];
                while fill > 0 {
                    let n = fill.min(block.len() as u64) as usize;
                    if out.write_all(&block[..n]).is_err() {
                        return false;
                    }
                    fill -= n as u64;
                }
                out.write_all(&tail).is_ok()
            }
        }
    }
}

/// Weights of the faults drawn per connection from a seed (0: never).
#[derive(Debug, Clone)]
pub struct Mix {
    pub pass: u64,
    pub cut: u64,
    pub cut_chunk_size: u64,
    pub cut_payload: u64,
    pub stall: u64,
    pub slow: u64,
    pub refuse: u64,
    /// Cuts and stalls happen within this many bytes of the response stream.
    pub max_offset: u64,
    /// Chunk-size cuts happen within this many chunks.
    pub max_chunks: usize,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            pass: 60,
            cut: 10,
            cut_chunk_size: 10,
            cut_payload: 10,
            stall: 2,
            slow: 6,
            refuse: 2,
            max_offset: 16 << 10,
            max_chunks: 12,
        }
    }
}

impl Mix {
    fn draw(&self, rng: &mut Rng) -> Fault {
        let weights = [
            self.pass,
            self.cut,
            self.cut_chunk_size,
            self.cut_payload,
            self.stall,
            self.slow,
            self.refuse,
        ];
        let total: u64 = weights.iter().sum();
        let mut r = rng.below(total.max(1));
        let mut which = 0;
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                which = i;
                break;
            }
            r -= w;
        }
        match which {
            1 => Fault::CutAt(rng.below(self.max_offset)),
            2 => Fault::CutInChunkSize {
                chunk: rng.below(self.max_chunks as u64) as usize,
                after: rng.range(1, 2) as usize,
            },
            3 => Fault::CutInPayload(rng.below(self.max_offset)),
            4 => Fault::StallAfter(rng.below(self.max_offset)),
            5 => Fault::Slow {
                bytes: rng.range(1, 64) as usize,
                pause_us: rng.range(0, 300),
            },
            6 => Fault::Refuse,
            _ => Fault::Pass,
        }
    }
}

/// Faults carried out so far, by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub connections: u64,
    pub cut_at: u64,
    pub cut_chunk_size: u64,
    pub cut_payload: u64,
    pub stalls: u64,
    pub slow: u64,
    pub refused: u64,
    pub injected: u64,
    pub responded: u64,
    /// Connections cut by [`FaultProxy::cut_all`].
    pub cut_all: u64,
    pub bytes_down: u64,
}

impl Counts {
    /// Faults of every kind, added up.
    pub fn faults(&self) -> u64 {
        self.cut_at
            + self.cut_chunk_size
            + self.cut_payload
            + self.stalls
            + self.slow
            + self.refused
            + self.injected
            + self.responded
            + self.cut_all
    }

    pub fn add(&mut self, o: &Counts) {
        self.connections += o.connections;
        self.cut_at += o.cut_at;
        self.cut_chunk_size += o.cut_chunk_size;
        self.cut_payload += o.cut_payload;
        self.stalls += o.stalls;
        self.slow += o.slow;
        self.refused += o.refused;
        self.injected += o.injected;
        self.responded += o.responded;
        self.cut_all += o.cut_all;
        self.bytes_down += o.bytes_down;
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "connections {} | cut at byte {} | cut in chunk-size line {} | cut in payload {} | \
             stalls {} | slow {} | refused {} | injected chunks {} | canned answers {} | cut by time {} | \
             {} bytes forwarded",
            self.connections,
            self.cut_at,
            self.cut_chunk_size,
            self.cut_payload,
            self.stalls,
            self.slow,
            self.refused,
            self.injected,
            self.responded,
            self.cut_all,
            self.bytes_down
        )
    }
}

#[derive(Default)]
struct AtomicCounts {
    connections: AtomicU64,
    cut_at: AtomicU64,
    cut_chunk_size: AtomicU64,
    cut_payload: AtomicU64,
    stalls: AtomicU64,
    slow: AtomicU64,
    refused: AtomicU64,
    injected: AtomicU64,
    responded: AtomicU64,
    cut_all: AtomicU64,
    bytes_down: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Where faults come from.
struct Plan {
    queue: VecDeque<Fault>,
    mix: Option<(Mix, Rng)>,
}

#[derive(Default)]
struct Conns {
    closed: bool,
    next_id: u64,
    /// Both sockets of each open connection, to cut or close them from outside.
    socks: HashMap<u64, Vec<TcpStream>>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    addr: SocketAddr,
    plan: Mutex<Plan>,
    conns: Mutex<Conns>,
    counts: AtomicCounts,
    /// Disconnected when the proxy is dropped.
    stop: Receiver<()>,
    /// The faults chosen, in connection order (for a failing seed's report).
    log: Mutex<Vec<Fault>>,
}

/// The proxy. See the module documentation.
pub struct FaultProxy {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    stop_tx: Option<Sender<()>>,
}

impl FaultProxy {
    /// A proxy in front of `upstream` (`http://127.0.0.1:PORT` or `127.0.0.1:PORT`)
    /// that forwards everything until told otherwise.
    pub fn start(upstream: &str) -> FaultProxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("proxy: upstream must be IP:PORT");
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy: bind");
        let addr = listener.local_addr().expect("proxy: local address");
        let (stop_tx, stop) = bounded(0);
        let shared = Arc::new(Shared {
            upstream,
            addr,
            plan: Mutex::new(Plan {
                queue: VecDeque::new(),
                mix: None,
            }),
            conns: Mutex::new(Conns::default()),
            counts: AtomicCounts::default(),
            stop,
            log: Mutex::new(Vec::new()),
        });
        let sh = shared.clone();
        let accept = std::thread::Builder::new()
            .name("proxy-accept".into())
            .spawn(move || accept_loop(&sh, listener))
            .expect("proxy: spawn");
        FaultProxy {
            shared,
            accept: Some(accept),
            stop_tx: Some(stop_tx),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The next connection (after those already queued) gets `fault`.
    pub fn push(&self, fault: Fault) {
        self.shared.plan.lock().queue.push_back(fault);
    }

    /// Connections with no queued fault draw one from `mix` with this seed;
    /// `None`: they pass.
    pub fn set_mix(&self, mix: Option<Mix>, seed: u64) {
        self.shared.plan.lock().mix = mix.map(|m| (m, Rng::new(seed)));
    }

    /// Cuts every open connection now, wherever its streams are.
    pub fn cut_all(&self) -> usize {
        let conns = self.shared.conns.lock();
        for socks in conns.socks.values() {
            for s in socks {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let n = conns.socks.len();
        self.shared
            .counts
            .cut_all
            .fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    /// Open connections now.
    pub fn open_connections(&self) -> usize {
        self.shared.conns.lock().socks.len()
    }

    /// The faults carried out so far.
    pub fn counts(&self) -> Counts {
        let c = &self.shared.counts;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counts {
            connections: l(&c.connections),
            cut_at: l(&c.cut_at),
            cut_chunk_size: l(&c.cut_chunk_size),
            cut_payload: l(&c.cut_payload),
            stalls: l(&c.stalls),
            slow: l(&c.slow),
            refused: l(&c.refused),
            injected: l(&c.injected),
            responded: l(&c.responded),
            cut_all: l(&c.cut_all),
            bytes_down: l(&c.bytes_down),
        }
    }

    /// The fault chosen for each connection so far, in accept order.
    pub fn chosen(&self) -> Vec<Fault> {
        self.shared.log.lock().clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        drop(self.stop_tx.take());
        let threads = {
            let mut conns = self.shared.conns.lock();
            conns.closed = true;
            for socks in conns.socks.values() {
                for s in socks {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
            std::mem::take(&mut conns.threads)
        };
        // Unblocks accept().
        let _ = TcpStream::connect_timeout(&self.shared.addr, Duration::from_millis(500));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let late = std::mem::take(&mut self.shared.conns.lock().threads);
        for h in threads.into_iter().chain(late) {
            let _ = h.join();
        }
    }
}

fn accept_loop(sh: &Arc<Shared>, listener: TcpListener) {
    for incoming in listener.incoming() {
        let Ok(client) = incoming else {
            if sh.conns.lock().closed {
                return;
            }
            let _ = sh.stop.recv_timeout(Duration::from_millis(10));
            continue;
        };
        let fault = {
            let mut plan = sh.plan.lock();
            match plan.queue.pop_front() {
                Some(f) => f,
                None => match &mut plan.mix {
                    Some((mix, rng)) => mix.draw(rng),
                    None => Fault::Pass,
                },
            }
        };
        let mut conns = sh.conns.lock();
        if conns.closed {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        bump(&sh.counts.connections);
        sh.log.lock().push(fault.clone());
        let id = conns.next_id;
        conns.next_id += 1;
        if let Ok(c) = client.try_clone() {
            conns.socks.insert(id, vec![c]);
        }
        conns.threads.retain(|h| !h.is_finished());
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name("proxy-conn".into())
            .spawn(move || {
                serve(&sh2, id, client, fault);
                sh2.conns.lock().socks.remove(&id);
            });
        match spawned {
            Ok(h) => conns.threads.push(h),
            Err(_) => {
                if let Some(socks) = conns.socks.remove(&id) {
                    for s in socks {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                }
            }
        }
    }
}

fn close(a: &TcpStream, b: &TcpStream) {
    let _ = a.shutdown(Shutdown::Both);
    let _ = b.shutdown(Shutdown::Both);
}

/// Reads one request head (up to the blank line); false if the client went away first.
fn read_head(client: &mut TcpStream) -> bool {
    let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return false,
        }
        if head.len() > 64 << 10 {
            return false;
        }
    }
    true
}

fn serve(sh: &Arc<Shared>, id: u64, mut client: TcpStream, fault: Fault) {
    let _ = client.set_nodelay(true);
    match &fault {
        Fault::Refuse => {
            bump(&sh.counts.refused);
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Fault::Respond(bytes) => {
            if read_head(&mut client) {
                bump(&sh.counts.responded);
                let _ = client.write_all(bytes);
            }
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Fault::RespondInPieces(pieces) => {
            if read_head(&mut client) {
                bump(&sh.counts.responded);
                for (i, p) in pieces.iter().enumerate() {
                    if i > 0 && sh.stop.recv_timeout(Duration::from_millis(50)).is_ok() {
                        break;
                    }
                    if client.write_all(p).is_err() {
                        break;
                    }
                }
            }
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        _ => {}
    }
    let Ok(server) = TcpStream::connect_timeout(&sh.upstream, Duration::from_secs(2)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = server.set_nodelay(true);
    {
        let mut conns = sh.conns.lock();
        if conns.closed {
            close(&client, &server);
            return;
        }
        if let (Some(socks), Ok(s)) = (conns.socks.get_mut(&id), server.try_clone()) {
            socks.push(s);
        }
    }
    // Upstream: the client's requests, unchanged. Its end (client gone) ends everything.
    let (done_tx, done) = bounded::<()>(0);
    let up = {
        let (Ok(mut from), Ok(mut to)) = (client.try_clone(), server.try_clone()) else {
            close(&client, &server);
            return;
        };
        std::thread::Builder::new()
            .name("proxy-up".into())
            .spawn(move || {
                let mut buf = [0u8; 16 << 10];
                loop {
                    match from.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
                close(&from, &to);
                drop(done_tx);
            })
    };
    let Ok(up) = up else {
        close(&client, &server);
        return;
    };
    let mut down = Down {
        sh: sh.clone(),
        client,
        server,
        fault,
        parse: Parser::default(),
        forwarded: 0,
        payload_seen: 0,
        injected: false,
        done,
    };
    down.run();
    close(&down.client, &down.server);
    let _ = up.join();
}

/// What a byte of the response stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Head,
    /// Byte `pos` of the size line of chunk `chunk`.
    SizeLine {
        chunk: usize,
        pos: usize,
    },
    Payload,
    /// The CRLF after a chunk's payload; `last`: this byte completes a data chunk.
    PayloadEnd {
        last: bool,
    },
    Trailer,
    Body,
    /// A body without length (until close).
    Raw,
}

#[derive(Debug)]
enum Phase {
    Head(Vec<u8>),
    Size(Vec<u8>),
    Payload(u64),
    PayloadEnd(u8),
    Trailer(Vec<u8>),
    Body(u64),
    Raw,
}

/// Follows the framing of the responses on one connection.
struct Parser {
    phase: Phase,
    chunks: usize,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            phase: Phase::Head(Vec::new()),
            chunks: 0,
        }
    }
}

impl Parser {
    fn feed(&mut self, b: u8) -> Class {
        match &mut self.phase {
            Phase::Head(h) => {
                h.push(b);
                if h.ends_with(b"\r\n\r\n") {
                    let text = String::from_utf8_lossy(h).to_ascii_lowercase();
                    let chunked = text.contains("\r\ntransfer-encoding: chunked");
                    let length = text
                        .split("\r\n")
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<u64>().ok());
                    let no_body =
                        text.starts_with("http/1.1 304") || text.starts_with("http/1.1 204");
                    self.phase = if chunked {
                        Phase::Size(Vec::new())
                    } else if let Some(n) = length {
                        if n == 0 {
                            Phase::Head(Vec::new())
                        } else {
                            Phase::Body(n)
                        }
                    } else if no_body {
                        Phase::Head(Vec::new())
                    } else {
                        Phase::Raw
                    };
                }
                Class::Head
            }
            Phase::Size(line) => {
                let pos = line.len();
                line.push(b);
                let class = Class::SizeLine {
                    chunk: self.chunks,
                    pos,
                };
                if line.ends_with(b"\r\n") {
                    let text = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
                    let hex = text.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(hex, 16).unwrap_or(0);
                    self.chunks += 1;
                    self.phase = if size == 0 {
                        Phase::Trailer(Vec::new())
                    } else {
                        Phase::Payload(size)
                    };
                }
                class
            }
            Phase::Payload(left) => {
                *left -= 1;
                if *left == 0 {
                    self.phase = Phase::PayloadEnd(2);
                }
                Class::Payload
            }
            Phase::PayloadEnd(left) => {
                *left -= 1;
                let last = *left == 0;
                if last {
                    self.phase = Phase::Size(Vec::new());
                }
                Class::PayloadEnd { last }
            }
            Phase::Trailer(t) => {
                t.push(b);
                if t == b"\r\n" || t.ends_with(b"\r\n\r\n") {
                    self.phase = Phase::Head(Vec::new());
                }
                Class::Trailer
            }
            Phase::Body(left) => {
                *left -= 1;
                if *left == 0 {
                    self.phase = Phase::Head(Vec::new());
                }
                Class::Body
            }
            Phase::Raw => Class::Raw,
        }
    }
}

/// The response direction of one connection, where the faults happen.
struct Down {
    sh: Arc<Shared>,
    client: TcpStream,
    server: TcpStream,
    fault: Fault,
    parse: Parser,
    forwarded: u64,
    payload_seen: u64,
    injected: bool,
    /// Disconnects when the upstream pump ends (the client went away).
    done: Receiver<()>,
}

/// What to do at a byte.
enum Act {
    Go,
    /// Forward up to (not including) this byte, then close.
    Cut,
    /// Forward up to (not including) this byte, then stall.
    Stall,
    /// Forward up to and including this byte, then the injected chunk.
    Inject,
}

impl Down {
    fn run(&mut self) {
        let mut buf = vec![0u8; 16 << 10];
        let mut data_chunks = 0usize;
        loop {
            let n = match self.server.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut start = 0;
            let mut i = 0;
            while i < n {
                let b = buf[i];
                let class = self.parse.feed(b);
                let offset = self.forwarded + (i - start) as u64;
                let act = match &self.fault {
                    Fault::CutAt(at) if offset == *at => Act::Cut,
                    Fault::StallAfter(at) if offset == *at => Act::Stall,
                    Fault::CutInChunkSize { chunk, after } => match class {
                        Class::SizeLine { chunk: c, pos } if c == *chunk && pos == *after => {
                            Act::Cut
                        }
                        _ => Act::Go,
                    },
                    Fault::CutInPayload(at) if class == Class::Payload => {
                        self.payload_seen += 1;
                        if self.payload_seen == at + 1 {
                            Act::Cut
                        } else {
                            Act::Go
                        }
                    }
                    Fault::Inject { after, .. }
                        if !self.injected && class == (Class::PayloadEnd { last: true }) =>
                    {
                        data_chunks += 1;
                        if data_chunks == after + 1 {
                            Act::Inject
                        } else {
                            Act::Go
                        }
                    }
                    _ => Act::Go,
                };
                match act {
                    Act::Go => i += 1,
                    Act::Cut | Act::Stall => {
                        if !self.forward(&buf[start..i]) {
                            return;
                        }
                        let c = &self.sh.counts;
                        match self.fault {
                            Fault::CutAt(_) => bump(&c.cut_at),
                            Fault::CutInChunkSize { .. } => bump(&c.cut_chunk_size),
                            Fault::CutInPayload(_) => bump(&c.cut_payload),
                            _ => bump(&c.stalls),
                        }
                        if matches!(act, Act::Stall) {
                            self.stall();
                        }
                        return;
                    }
                    Act::Inject => {
                        if !self.forward(&buf[start..=i]) {
                            return;
                        }
                        start = i + 1;
                        i += 1;
                        self.injected = true;
                        let Fault::Inject { payload, .. } = &self.fault else {
                            unreachable!()
                        };
                        let payload = payload.clone();
                        let head = format!("{:x}\r\n", payload.len()).into_bytes();
                        if self.client.write_all(&head).is_err()
                            || !payload.write_to(&mut self.client)
                        {
                            return;
                        }
                        // The client may drop the connection as soon as it has read the
                        // bad frame, before the chunk's CRLF: it was injected all the same.
                        bump(&self.sh.counts.injected);
                        if self.client.write_all(b"\r\n").is_err() {
                            return;
                        }
                    }
                }
            }
            if !self.forward(&buf[start..n]) {
                return;
            }
        }
    }

    /// Forwards `data` (slowly, under a Slow fault); false once either side is gone.
    fn forward(&mut self, data: &[u8]) -> bool {
        if data.is_empty() {
            return true;
        }
        self.forwarded += data.len() as u64;
        self.sh
            .counts
            .bytes_down
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if let Fault::Slow { bytes, pause_us } = self.fault {
            if self.forwarded == data.len() as u64 {
                bump(&self.sh.counts.slow);
            }
            for piece in data.chunks(bytes.max(1)) {
                if self.client.write_all(piece).is_err() {
                    return false;
                }
                select! {
                    recv(self.sh.stop) -> _ => return false,
                    recv(self.done) -> _ => return false,
                    default(Duration::from_micros(pause_us)) => {}
                }
            }
            return true;
        }
        self.client.write_all(data).is_ok()
    }

    /// Forwards nothing more until the client goes away or the proxy stops.
    fn stall(&self) {
        select! {
            recv(self.sh.stop) -> _ => {}
            recv(self.done) -> _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// The consumer's view, shared by the fault, convergence and soak tests.

use kube_tattler::{Change, Entry};
use std::collections::{BTreeMap, HashSet};
use tattler_fakeapi::FakeApi;

/// One object as a consumer knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `namespace/name` (`/name` when cluster-scoped).
    pub key: String,
    pub rv: u64,
}

/// Tallies of what a consumer received.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub entries: u64,
    pub adds: u64,
    pub updates: u64,
    pub deletes: u64,
    pub inferred_deletes: u64,
    pub snapshots: u64,
    pub synced: u64,
    pub errors: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.entries += o.entries;
        self.adds += o.adds;
        self.updates += o.updates;
        self.deletes += o.deletes;
        self.inferred_deletes += o.inferred_deletes;
        self.snapshots += o.snapshots;
        self.synced += o.synced;
        self.errors += o.errors;
    }
}

/// What a consumer builds from entries, per resource (`pods`) and uid, with
/// every rule a consumer relies on checked as entries arrive: no second Add
/// for a known uid, no Add for a uid already deleted (a resurrection), no
/// Update, Snapshot or Delete for an unknown uid, no version going back, a
/// Snapshot repeats the version known, and an entry's object is the object
/// it names at the version it names.
#[derive(Debug, Default)]
pub struct Model {
    pub objects: BTreeMap<String, BTreeMap<String, Seen>>,
    /// The same objects folded as most consumers fold them, by
    /// `resource namespace/name`: the uid that holds each name.
    names: BTreeMap<String, String>,
    deleted: HashSet<String>,
    pub tally: Tally,
    /// Error entries of resources that failed for good, as `resource code reason message`.
    pub errors: Vec<String>,
    /// Error entries of skipped pieces (the stream went on), the same way.
    pub skipped: Vec<String>,
    /// `resource namespace/name` of skipped objects: their inferred Delete
    /// may be followed by an Add of the same uid (a good version again).
    skipped_names: HashSet<String>,
    /// Every entry, described, for a failure report.
    pub log: Vec<String>,
    /// Keep the log (costly in a soak).
    pub keep_log: bool,
}

impl Model {
    pub fn new() -> Model {
        Model {
            keep_log: true,
            ..Model::default()
        }
    }

    /// Applies one entry; `Err` names the rule it broke.
    pub fn apply(&mut self, e: &Entry) -> Result<(), String> {
        let res = e.resource().resource.clone();
        let key = format!("{}/{}", e.namespace().unwrap_or(""), e.name());
        self.tally.entries += 1;
        if self.keep_log {
            self.log.push(format!(
                "{} {res} {key} uid={} rv={}{}",
                e.change(),
                e.uid(),
                e.resource_version().unwrap_or(0),
                if e.inferred() { " inferred" } else { "" }
            ));
        }
        let what = |m: &str| {
            format!(
                "{m}: {} {res} {key} uid={} rv={}",
                e.change(),
                e.uid(),
                e.resource_version().unwrap_or(0)
            )
        };
        if let Some(obj) = e.object() {
            let v: serde_json::Value = serde_json::from_slice(obj)
                .map_err(|err| what(&format!("object is not JSON ({err})")))?;
            let m = &v["metadata"];
            if m["uid"].as_str() != Some(e.uid())
                || m["name"].as_str() != Some(e.name())
                || m["resourceVersion"].as_str() != Some(e.resource_version_str())
            {
                return Err(what("the object does not match the entry"));
            }
        }
        // Opaque resourceVersions (not integers) are only compared for equality.
        let ordered = e.resource_version_str().parse::<u64>().is_ok();
        let state = self.objects.entry(res.clone()).or_default();
        let tag = format!("{res} {}", e.uid());
        let place = format!("{res} {key}");
        let holder = self.names.get(&place).cloned();
        match e.change() {
            Change::Add | Change::Update | Change::Snapshot | Change::Delete => {
                if e.change() == Change::Add {
                    if let Some(h) = &holder {
                        return Err(what(&format!("Add for a name already held by uid {h}")));
                    }
                } else if holder.as_deref() != Some(e.uid()) {
                    return Err(what(&format!(
                        "the name is held by {holder:?}, not this uid"
                    )));
                }
            }
            _ => {}
        }
        match e.change() {
            Change::Add => {
                self.tally.adds += 1;
                if state.contains_key(e.uid()) {
                    return Err(what("second Add for a known uid"));
                }
                if self.deleted.contains(&tag) {
                    return Err(what("resurrection: Add for a deleted uid"));
                }
                self.names.insert(place, e.uid().to_string());
                state.insert(
                    e.uid().into(),
                    Seen {
                        key,
                        rv: e.resource_version().unwrap_or(0),
                    },
                );
            }
            Change::Update | Change::Snapshot => {
                let snapshot = e.change() == Change::Snapshot;
                if snapshot {
                    self.tally.snapshots += 1;
                } else {
                    self.tally.updates += 1;
                }
                let Some(old) = state.get_mut(e.uid()) else {
                    return Err(what("change for an unknown uid"));
                };
                if snapshot && ordered && e.resource_version().unwrap_or(0) != old.rv {
                    return Err(what(&format!(
                        "Snapshot at another version than {}",
                        old.rv
                    )));
                }
                if !snapshot
                    && ordered
                    && old.rv != 0
                    && e.resource_version().unwrap_or(0) <= old.rv
                {
                    return Err(what(&format!("stale Update: already at {}", old.rv)));
                }
                *old = Seen {
                    key,
                    rv: e.resource_version().unwrap_or(0),
                };
            }
            Change::Delete => {
                self.tally.deletes += 1;
                if e.inferred() {
                    self.tally.inferred_deletes += 1;
                }
                let Some(old) = state.remove(e.uid()) else {
                    return Err(what("Delete for an unknown uid"));
                };
                if ordered
                    && old.rv != 0
                    && (e.resource_version().unwrap_or(0) < old.rv
                        || (e.inferred() && e.resource_version().unwrap_or(0) != old.rv))
                {
                    return Err(what(&format!("Delete at a version before {}", old.rv)));
                }
                self.names.remove(&place);
                if !(e.inferred() && self.skipped_names.remove(&place)) {
                    self.deleted.insert(tag);
                }
            }
            Change::Synced => self.tally.synced += 1,
            Change::Error => {
                self.tally.errors += 1;
                let err = e.error().expect("an Error entry carries its error");
                let line = format!("{res} {} {} {}", err.code, err.reason, err.message);
                if err.ended {
                    self.errors.push(line);
                } else {
                    self.skipped.push(line);
                    if !e.name().is_empty() {
                        self.skipped_names.insert(place);
                    }
                }
            }
        }
        Ok(())
    }

    /// Forgets a resource (it was removed from the watch set and drained).
    pub fn forget(&mut self, resource: &str) {
        self.objects.remove(resource);
        let prefix = format!("{resource} ");
        self.deleted.retain(|t| !t.starts_with(&prefix));
        self.names.retain(|t, _| !t.starts_with(&prefix));
    }

    /// The consumer's objects of `resource`.
    pub fn state(&self, resource: &str) -> BTreeMap<String, Seen> {
        self.objects.get(resource).cloned().unwrap_or_default()
    }

    /// `None` when the consumer's objects of `resource` are the server's;
    /// otherwise what differs.
    pub fn differs(&self, api: &FakeApi, path: &str, resource: &str) -> Option<String> {
        let want = server_state(api, path);
        let got = self.state(resource);
        if want == got {
            return None;
        }
        let missing: Vec<String> = want
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v))
            .map(|(k, v)| format!("{} {k} rv={}", v.key, v.rv))
            .collect();
        let extra: Vec<String> = got
            .iter()
            .filter(|(k, v)| want.get(*k) != Some(v))
            .map(|(k, v)| format!("{} {k} rv={}", v.key, v.rv))
            .collect();
        Some(format!(
            "{resource}: server has (consumer lacks or differs) {missing:?}; consumer has (server lacks or differs) {extra:?}"
        ))
    }
}

/// The server's objects of `path` (`pods`, `group/version/resource`), as a consumer would hold them.
pub fn server_state(api: &FakeApi, path: &str) -> BTreeMap<String, Seen> {
    api.objects(path)
        .into_iter()
        .map(|o| {
            let m = &o["metadata"];
            let key = format!(
                "{}/{}",
                m["namespace"].as_str().unwrap_or(""),
                m["name"].as_str().unwrap()
            );
            let rv = m["resourceVersion"].as_str().unwrap().parse().unwrap();
            (m["uid"].as_str().unwrap().to_string(), Seen { key, rv })
        })
        .collect()
}

/// Peak and current resident memory (kB) and thread count of this process.
pub fn process_figures() -> (u64, u64, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0);
    (field("VmHWM:"), field("VmRSS:"), threads)
}

/// Names of this process's threads, counted (`tattler-watch-p` → 2, …); Linux cuts them to 15 bytes.
pub fn thread_names() -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    if let Ok(d) = std::fs::read_dir("/proc/self/task") {
        for t in d.flatten() {
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            *out.entry(name.trim().to_string()).or_default() += 1;
        }
    }
    out
}

/// This process's threads whose names start with `tattler-`.
pub fn tattler_threads() -> usize {
    thread_names()
        .iter()
        .filter(|(n, _)| n.starts_with("tattler-"))
        .map(|(_, c)| c)
        .sum()
}

/// Waits (at most 2 s) until no `tattler-` thread is listed; returns how many
/// still are. A thread that `close` has joined can stay listed in
/// `/proc/self/task` for a moment: the kernel wakes the joiner before it has
/// finished tearing the thread down, and on a busy 2-vCPU VM that moment has
/// been long enough to be seen (CI, once). A thread that was not joined —
/// blocked on a socket, in a retry loop — is still there after 2 s.
pub fn tattler_threads_after_close() -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let n = tattler_threads();
        if n == 0 || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
