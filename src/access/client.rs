//! tattler's HTTP client: one stream's exchanges, each a request in (a GET;
//! the elector's PUT and POST of a Lease or a ConfigMap) and a
//! status, headers and a body reader out ([`Exchange::send`], [`Answer`]).
//! The stream sees no socket. The bytes go through tattler's code only: the
//! request head (credentials included) is written by `wire::http` straight
//! to the connection, and responses are read by `wire::http_read`; no
//! library under them parses or logs a byte of HTTP.
//!
//! Each stream has an [`AgentSlot`]: its kept-alive connection (a pool of
//! one, reused by the next request once a body was read to its end; a
//! body left unread closes its connection) and the sockets it is using,
//! which [`interrupt`](AgentSlot::interrupt) and
//! [`shutdown`](AgentSlot::shutdown) shut down from another thread so that
//! a blocked read returns at once.
//!
//! HTTP/2 would replace [`Exchange`]'s insides, not its shape: an exchange on
//! a shared, multiplexed connection also takes a [`Request`] and gives a
//! [`Answer`] with a `Read + Send` body.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crate::sync::Mutex;
use rustls::ClientConfig;

use crate::access::credentials::Current;
use crate::access::secret::Token;
use crate::access::transport::{Conn, Transport};
use crate::wire::http::{framing, reusable, Head, HttpError};
use crate::wire::http_read::{http_error, BodyReader, Responses};

/// One stream's connection state; the reader keeps it to stop the stream.
#[derive(Default)]
pub(crate) struct AgentSlot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Shut down for good: no connection is made or kept any more.
    stopped: bool,
    /// Counts interrupts: a connection from before one is not kept.
    epoch: u64,
    /// The kept-alive connection, with the identity generation and epoch
    /// it was made in.
    idle: Option<(Conn, u64, u64)>,
    /// The sockets of the connections in use, by ticket.
    busy: Vec<(u64, Arc<TcpStream>)>,
    next_ticket: u64,
}

impl AgentSlot {
    /// A client for the credentials `current`; `None` once shut down.
    pub(crate) fn client(
        self: &Arc<Self>,
        transport: &Arc<Transport>,
        current: &Current,
    ) -> Option<Result<Exchange, String>> {
        let generation = current.identity_generation;
        if self.state.lock().stopped {
            return None;
        }
        // The transport keeps one configuration per identity generation,
        // for every stream: their TLS sessions resume one another's.
        let tls = match transport.tls_config(current.identity.as_ref(), generation) {
            Ok(tls) => tls,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(Exchange {
            slot: self.clone(),
            transport: transport.clone(),
            tls,
            generation,
            authorization: current.header.as_deref().map(Token::new),
        }))
    }

    /// Ends the connections in use (a read blocked on one fails at once)
    /// and the kept one; the next request connects afresh.
    pub(crate) fn interrupt(&self) {
        let idle = {
            let mut st = self.state.lock();
            st.epoch += 1;
            for (_, socket) in &st.busy {
                let _ = socket.shutdown(Shutdown::Both);
            }
            st.idle.take()
        };
        drop(idle);
    }

    /// As [`interrupt`](Self::interrupt), for good: no client is handed
    /// out and no connection made from now on.
    pub(crate) fn shutdown(&self) {
        self.state.lock().stopped = true;
        self.interrupt();
    }

    /// The kept connection, when it was made for `generation` and is still
    /// open and quiet.
    fn take_idle(&self, generation: u64) -> Option<Conn> {
        let (conn, made_for, _) = self.state.lock().idle.take()?;
        (made_for == generation && conn.idle_and_open()).then_some(conn)
    }

    /// Counts `socket` as in use under a new ticket, unless the slot was
    /// stopped or interrupted since `epoch`.
    fn register(&self, socket: &Arc<TcpStream>, epoch: u64) -> io::Result<u64> {
        let mut st = self.state.lock();
        if st.stopped || st.epoch != epoch {
            let _ = socket.shutdown(Shutdown::Both);
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the connection was ended by a stop or a relist",
            ));
        }
        st.next_ticket += 1;
        let ticket = st.next_ticket;
        st.busy.push((ticket, socket.clone()));
        Ok(ticket)
    }

    /// A connection is no longer in use: kept for the next request when
    /// `keep` (its response read to its end, nothing left over) and no stop
    /// or interrupt came since `epoch`; otherwise closed.
    fn release(&self, ticket: u64, conn: Option<Conn>, keep: bool, generation: u64, epoch: u64) {
        let dropped = {
            let mut st = self.state.lock();
            st.busy.retain(|(t, _)| *t != ticket);
            match conn {
                Some(conn) if keep && !st.stopped && st.epoch == epoch => {
                    st.idle.replace((conn, generation, epoch)).map(|(c, ..)| c)
                }
                other => other,
            }
        };
        drop(dropped);
    }

    /// Whether a stop or an interrupt came since `epoch`: a connect under
    /// way then ends (no socket is registered yet to shut down).
    fn ended(&self, epoch: u64) -> bool {
        let st = self.state.lock();
        st.stopped || st.epoch != epoch
    }

    /// The interrupts so far.
    fn epoch(&self) -> u64 {
        self.state.lock().epoch
    }
}

/// One stream's HTTP client for one set of credentials.
pub(crate) struct Exchange {
    slot: Arc<AgentSlot>,
    transport: Arc<Transport>,
    tls: Option<Arc<ClientConfig>>,
    /// The client identity's generation its connections are made with.
    generation: u64,
    /// The credentials' `Authorization` value.
    authorization: Option<Token>,
}

/// A GET, as the stream asks for it.
pub(crate) struct Request<'a> {
    /// Path and query, from the server URL's path on.
    pub path: &'a str,
    /// The media types asked for.
    pub accept: &'a str,
    /// A shorter wait for each read than the idle timeout.
    pub read_timeout: Option<Duration>,
}

impl Exchange {
    /// One exchange: the request written, the response's head read
    /// (interim answers skipped); the body is the response's to read. A
    /// kept-alive connection is used when there is one; if it turns out to
    /// have been closed before the response began, the request goes once
    /// more on a new connection (a GET can be repeated). Errors are the
    /// connection's (timeouts as `TimedOut`) or HTTP's, and never quote the
    /// request head.
    #[cfg(test)]
    pub(crate) fn get(&self, req: &Request<'_>) -> io::Result<Answer> {
        self.send(req, "GET", None)
    }

    /// One request with `method` and, for a write, a JSON `body` (the
    /// elector's PUT and POST of a Lease or a ConfigMap). Repeated once on
    /// a connection the server had closed, as a GET: a write carries the
    /// resourceVersion it expects (a repeat of one that went through gets
    /// 409 Conflict) or creates (409 AlreadyExists), and the elector reads
    /// the object again after either.
    pub(crate) fn send(
        &self,
        req: &Request<'_>,
        method: &str,
        body: Option<&[u8]>,
    ) -> io::Result<Answer> {
        let mut head = self.transport.request_head(
            method,
            req.path,
            req.accept,
            self.authorization.as_ref().map(Token::expose),
            body.map(<[u8]>::len),
        )?;
        head.extend_from_slice(body.unwrap_or_default());
        let epoch = self.slot.epoch();
        if let Some(conn) = self.slot.take_idle(self.generation) {
            let ticket = self.slot.register(conn.socket(), epoch)?;
            match self.exchange(conn, ticket, epoch, &head, req) {
                Err(Failed::BeforeAnswer(_)) => {}
                Err(Failed::Other(e)) => return Err(e),
                Ok(answer) => return Ok(answer),
            }
        }
        let ticket = std::cell::Cell::new(None);
        let conn = self
            .transport
            .open(self.tls.as_ref(), &|| self.slot.ended(epoch), &|socket| {
                ticket.set(Some(self.slot.register(socket, epoch)?));
                Ok(())
            })
            .inspect_err(|_| {
                if let Some(t) = ticket.get() {
                    self.slot.release(t, None, false, self.generation, epoch);
                }
            })?;
        let ticket = ticket
            .get()
            .ok_or_else(|| io::Error::other("a connection was made without its ticket"))?;
        self.exchange(conn, ticket, epoch, &head, req)
            .map_err(Failed::into_inner)
    }

    /// The request written on `conn` and the response's head read.
    fn exchange(
        &self,
        mut conn: Conn,
        ticket: u64,
        epoch: u64,
        head: &[u8],
        req: &Request<'_>,
    ) -> Result<Answer, Failed> {
        let idle = self.transport.idle_timeout();
        let sent = conn
            .set_timeouts(req.read_timeout.unwrap_or(idle), idle)
            .and_then(|()| conn.write_all(head))
            .and_then(|()| conn.flush());
        let socket = conn.socket().clone();
        let mut input = Responses::new(conn);
        let answer = sent.and_then(|()| input.read_head()).and_then(|h| {
            let f = framing(&h)?;
            Ok((h, f))
        });
        let (head, framing) = match answer {
            Ok(got) => got,
            Err(e) => {
                let before_answer = input.nothing_received() && cut(&e);
                self.slot
                    .release(ticket, None, false, self.generation, epoch);
                return Err(if before_answer {
                    Failed::BeforeAnswer(e)
                } else {
                    Failed::Other(e)
                });
            }
        };
        let mut body = AnswerBody {
            reader: Some(BodyReader::new(input, framing)),
            slot: self.slot.clone(),
            ticket,
            keep: reusable(&head, framing),
            generation: self.generation,
            epoch,
        };
        if body.reader.as_ref().is_some_and(BodyReader::done) {
            body.release();
        }
        Ok(Answer {
            head,
            body,
            timeout: ReadTimeout(socket),
        })
    }
}

/// How an exchange failed.
enum Failed {
    /// The connection ended (see [`cut`]) before any byte of a response
    /// came: on a kept-alive connection, the server (or a load balancer
    /// before it) closed it while it was idle, maybe as the request went.
    /// Worth one retry on a new connection, as Go's `persistConn` retries
    /// (`shouldRetryRequest`: `errServerClosedIdle`, a
    /// `transportReadFromServerError` before the response, or
    /// `nothingWrittenError`).
    BeforeAnswer(io::Error),
    /// Anything else: a timeout, a response begun and cut, bad HTTP.
    Other(io::Error),
}

impl Failed {
    fn into_inner(self) -> io::Error {
        match self {
            Failed::BeforeAnswer(e) | Failed::Other(e) => e,
        }
    }
}

/// Whether `e` says the connection ended: its clean close
/// ([`HttpError::Closed`]), a close without TLS's close_notify (rustls's
/// `UnexpectedEof`, what a load balancer that drops idle connections
/// leaves), a reset, or a write to a closed socket.
fn cut(e: &io::Error) -> bool {
    http_error(e) == Some(&HttpError::Closed)
        || matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        )
}

/// What the stream gets back: the status, the headers, and the body.
pub(crate) struct Answer {
    head: Head,
    body: AnswerBody,
    timeout: ReadTimeout,
}

/// How long each read of a response's body may wait, changed while it is
/// read (a watch-list's short wait for its initial events, then the idle
/// timeout once they are in). A read that waits past it fails `TimedOut`.
pub(crate) struct ReadTimeout(Arc<TcpStream>);

impl ReadTimeout {
    /// Each read from now on waits at most `d`.
    pub(crate) fn set(&self, d: Duration) {
        // A socket already shut down keeps failing its reads: nothing to set.
        let _ = self.0.set_read_timeout(Some(d).filter(|t| !t.is_zero()));
    }
}

impl Answer {
    /// The status code of the final answer (interim ones were skipped).
    pub(crate) fn status(&self) -> u16 {
        self.head.status
    }

    /// The first header named `name` (ASCII case-insensitive) as text,
    /// `None` when absent or not visible ASCII.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.text(name)
    }

    /// The body, decoded from its framing (not from its Content-Encoding).
    pub(crate) fn into_body(self) -> AnswerBody {
        self.body
    }

    /// The body, and what changes how long its reads may wait.
    pub(crate) fn into_parts(self) -> (AnswerBody, ReadTimeout) {
        (self.body, self.timeout)
    }
}

/// A response body being read from its connection. Read to its end, the
/// connection goes back to the slot for the next request; dropped before,
/// it is closed (unless only framing was left, already received).
pub(crate) struct AnswerBody {
    reader: Option<BodyReader<Conn>>,
    slot: Arc<AgentSlot>,
    ticket: u64,
    /// The response allows the connection's reuse.
    keep: bool,
    generation: u64,
    epoch: u64,
}

impl AnswerBody {
    /// Hands the connection back to the slot: kept when the body was read
    /// to its end and the response allows it.
    fn release(&mut self) {
        let Some(reader) = self.reader.take() else {
            return;
        };
        let done = reader.done();
        let (conn, all_used) = reader.into_responses().into_inner();
        self.slot.release(
            self.ticket,
            Some(conn),
            self.keep && done && all_used,
            self.generation,
            self.epoch,
        );
    }
}

impl Read for AnswerBody {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let Some(reader) = &mut self.reader else {
            return Ok(0);
        };
        let n = reader.read(out)?;
        if n == 0 && !out.is_empty() {
            self.release();
        }
        Ok(n)
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        if let Some(reader) = &mut self.reader {
            reader.finish_buffered();
        }
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::credentials::Current;
    use std::io::BufRead;
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// A server on 127.0.0.1 that answers each request head with the next
    /// of `answers` (raw bytes) and reports every request head and which
    /// connection (counted from 1) it came on.
    fn serve(answers: Vec<Vec<u8>>) -> (String, mpsc::Receiver<(usize, String)>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut answers = answers.into_iter();
            for (n, s) in l.incoming().enumerate() {
                let Ok(s) = s else { return };
                let mut r = io::BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            break;
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    if head.is_empty() {
                        break;
                    }
                    let _ = tx.send((n + 1, head));
                    let Some(a) = answers.next() else { return };
                    if a.is_empty() {
                        break; // hang up without an answer
                    }
                    if w.write_all(&a).is_err() {
                        break;
                    }
                }
            }
        });
        (url, rx)
    }

    /// What a TLS server does with a request.
    #[derive(Clone)]
    enum Script {
        /// Answers with these bytes.
        Answer(&'static [u8]),
        /// Writes these bytes, then closes the TCP connection without TLS's
        /// close_notify, as a load balancer dropping an idle connection.
        Drop(&'static [u8]),
    }

    /// A TLS server on 127.0.0.1 for `Script`s, one request each, and the
    /// CA's PEM; reports which connection (from 1) each request came on.
    /// An https server answering as `script` says: its URL, its CA, the
    /// connection number of each request, and per connection whether its
    /// handshake resumed a TLS session.
    #[allow(clippy::type_complexity)]
    fn serve_tls(
        script: Vec<Script>,
    ) -> (String, Vec<u8>, mpsc::Receiver<usize>, mpsc::Receiver<bool>) {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem().into_bytes();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap(),
        );
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}", l.local_addr().unwrap());
        let (tx, rx) = mpsc::channel();
        let (resumed_tx, resumed) = mpsc::channel();
        std::thread::spawn(move || {
            let mut script = script.into_iter();
            for (n, s) in l.incoming().enumerate() {
                let Ok(s) = s else { return };
                let tls = rustls::ServerConnection::new(config.clone()).unwrap();
                let mut r = io::BufReader::new(rustls::StreamOwned::new(tls, s));
                let mut told = false;
                loop {
                    let mut line = String::new();
                    match r.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line != "\r\n" => continue,
                        Ok(_) => {}
                    }
                    if !std::mem::replace(&mut told, true) {
                        let kind = r.get_ref().conn.handshake_kind();
                        let _ = resumed_tx.send(kind == Some(rustls::HandshakeKind::Resumed));
                    }
                    let _ = tx.send(n + 1);
                    let w = r.get_mut();
                    match script.next() {
                        Some(Script::Answer(a)) => {
                            if w.write_all(a).and_then(|()| w.flush()).is_err() {
                                break;
                            }
                        }
                        Some(Script::Drop(a)) => {
                            let _ = w.write_all(a).and_then(|()| w.flush());
                            let _ = w.sock.shutdown(Shutdown::Both);
                            break;
                        }
                        None => return,
                    }
                }
            }
        });
        (url, ca_pem, rx, resumed)
    }

    fn transport(url: &str) -> Arc<Transport> {
        transport_with(url, None)
    }

    fn transport_with(url: &str, ca_pem: Option<Vec<u8>>) -> Arc<Transport> {
        let mut access = crate::access::cluster::Access::new(url);
        access.ca_pem = ca_pem;
        access.proxy = crate::access::proxy::ProxyConfig::None;
        let server = access.validate().unwrap();
        let tuning = crate::access::transport::Connecting {
            gzip: false,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        };
        Arc::new(Transport::new(&access, &server, tuning).unwrap())
    }

    fn current(header: Option<&str>) -> Current {
        Current {
            header: header.map(String::from),
            identity: None,
            identity_generation: 0,
        }
    }

    fn body(r: Answer) -> String {
        let mut s = String::new();
        r.into_body().read_to_string(&mut s).unwrap();
        s
    }

    const OK: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn requests_reuse_one_connection_while_bodies_are_read_to_their_end() {
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n".to_vec();
        let closing =
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}".to_vec();
        let (url, rx) = serve(vec![
            OK.to_vec(),
            chunked,
            OK.to_vec(),
            closing,
            OK.to_vec(),
        ]);
        let t = transport(&url);
        let slot = Arc::new(AgentSlot::default());
        let c = slot
            .client(&t, &current(Some("Bearer t0k")))
            .unwrap()
            .unwrap();
        let get = |path| Request {
            path,
            accept: "application/json",
            read_timeout: None,
        };
        let r = c.get(&get("/api")).unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(body(r), "{}");
        assert_eq!(body(c.get(&get("/apis")).unwrap()), "[]");
        assert_eq!(body(c.get(&get("/api/v1")).unwrap()), "{}");
        assert_eq!(body(c.get(&get("/api/v2")).unwrap()), "{}");
        assert_eq!(body(c.get(&get("/api/v3")).unwrap()), "{}");
        let heads: Vec<(usize, String)> = rx.try_iter().collect();
        let conns: Vec<usize> = heads.iter().map(|(n, _)| *n).collect();
        assert_eq!(conns, [1, 1, 1, 1, 2], "Connection: close ends the first");
        let (_, first) = &heads[0];
        assert_eq!(
            first,
            &format!(
                "GET /api HTTP/1.1\r\nHost: {}\r\nUser-Agent: tattler/{}\r\nAccept: application/json\r\nAccept-Encoding: identity\r\nAuthorization: Bearer t0k\r\nConnection: keep-alive\r\n\r\n",
                url.trim_start_matches("http://"),
                env!("CARGO_PKG_VERSION")
            )
        );
    }

    #[test]
    fn a_body_left_unread_closes_its_connection_and_a_closed_one_is_retried() {
        let long = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}".to_vec();
        // Connection 2 answers once, then hangs up on the next request.
        let (url, rx) = serve(vec![long, OK.to_vec(), Vec::new(), OK.to_vec()]);
        let t = transport(&url);
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: None,
        };
        let mut b = c.get(&get).unwrap().into_body();
        let mut two = [0; 2];
        b.read_exact(&mut two).unwrap();
        drop(b);
        assert_eq!(body(c.get(&get).unwrap()), "{}");
        assert_eq!(body(c.get(&get).unwrap()), "{}");
        let conns: Vec<usize> = rx.try_iter().map(|(n, _)| n).collect();
        assert_eq!(conns, [1, 2, 2, 3]);
    }

    /// A load balancer that dropped a kept TLS connection, without
    /// close_notify, as the next request went: that request goes again on
    /// a new connection, once, as Go retries it. A response begun and cut,
    /// or a new connection's failure, is not retried.
    #[test]
    fn a_kept_tls_connection_closed_without_close_notify_is_retried_once() {
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: None,
        };
        let (url, ca, rx, _) = serve_tls(vec![
            Script::Answer(OK),
            Script::Drop(b""),
            Script::Answer(OK),
            Script::Answer(OK),
        ]);
        let t = transport_with(&url, Some(ca));
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        assert_eq!(body(c.get(&get).unwrap()), "{}");
        assert_eq!(body(c.get(&get).unwrap()), "{}", "retried");
        assert_eq!(body(c.get(&get).unwrap()), "{}");
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 1, 2, 2]);

        // Part of a head came before the close: not retried.
        let (url, ca, rx, _) = serve_tls(vec![
            Script::Answer(OK),
            Script::Drop(b"HTTP/1.1 200 OK\r\nContent-"),
            Script::Answer(OK),
        ]);
        let t = transport_with(&url, Some(ca));
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        assert_eq!(body(c.get(&get).unwrap()), "{}");
        let e = c.get(&get).err().expect("a cut head is an error");
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 1]);

        // A new connection dropped before its answer: not retried.
        let (url, ca, rx, _) = serve_tls(vec![Script::Drop(b""), Script::Answer(OK)]);
        let t = transport_with(&url, Some(ca));
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        let e = c.get(&get).err().expect("not retried");
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1]);
    }

    /// Every stream of a reader shares the TLS sessions of its identity: a
    /// second stream's first connection resumes the first one's session;
    /// a new identity generation starts with none.
    #[test]
    fn streams_resume_one_another_s_tls_sessions_within_an_identity() {
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: None,
        };
        let (url, ca, _, resumed) = serve_tls(vec![Script::Answer(OK); 3]);
        let t = transport_with(&url, Some(ca));
        for generation in [0, 0, 1] {
            let slot = Arc::new(AgentSlot::default());
            let mut who = current(None);
            who.identity_generation = generation;
            let c = slot.client(&t, &who).unwrap().unwrap();
            assert_eq!(body(c.get(&get).unwrap()), "{}");
        }
        assert_eq!(resumed.try_iter().collect::<Vec<_>>(), [false, true, false]);
    }

    /// An HTTP/1.0 answer with Transfer-Encoding closes its connection
    /// after its body (RFC 9112 §6.1), even with `Connection: keep-alive`.
    #[test]
    fn an_http_1_0_answer_with_transfer_encoding_is_not_reused() {
        let te10 = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".to_vec();
        let kept10 =
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}".to_vec();
        let (url, rx) = serve(vec![kept10, te10, OK.to_vec()]);
        let t = transport(&url);
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: None,
        };
        for _ in 0..3 {
            assert_eq!(body(c.get(&get).unwrap()), "{}");
        }
        let conns: Vec<usize> = rx.try_iter().map(|(n, _)| n).collect();
        assert_eq!(conns, [1, 1, 2]);
    }

    #[test]
    fn shutdown_unblocks_a_read_at_once_and_stops_the_slot() {
        let hang = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n".to_vec();
        let (url, _rx) = serve(vec![hang]);
        let t = transport(&url);
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: None,
        };
        let mut b = c.get(&get).unwrap().into_body();
        let mut two = [0; 2];
        b.read_exact(&mut two).unwrap();
        let stopper = {
            let slot = slot.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                slot.shutdown();
            })
        };
        let started = std::time::Instant::now();
        assert!(b.read(&mut two).is_err(), "a cut chunked body is an error");
        assert!(started.elapsed() < Duration::from_secs(5));
        stopper.join().unwrap();
        assert!(slot.client(&t, &current(None)).is_none());
        assert!(c.get(&get).is_err(), "no new connection after a stop");
    }

    #[test]
    fn a_read_past_the_requests_timeout_is_timed_out() {
        let hang = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let (url, _rx) = serve(vec![hang]);
        let t = transport(&url);
        let slot = Arc::new(AgentSlot::default());
        let c = slot.client(&t, &current(None)).unwrap().unwrap();
        let get = Request {
            path: "/api",
            accept: "application/json",
            read_timeout: Some(Duration::from_millis(50)),
        };
        let e = c
            .get(&get)
            .unwrap()
            .into_body()
            .read(&mut [0; 8])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    /// A stop ends a TCP connect under way at once, though the connect
    /// timeout is 0 (no limit of tattler's own: only the system's, about
    /// two minutes), and so a close need not wait for it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_stop_ends_a_connect_under_way() {
        let Some((_hole, _filler, dead)) = crate::access::dial::tests::black_hole("127.0.0.1")
        else {
            return;
        };
        let mut access = crate::access::cluster::Access::new(format!("http://{dead}"));
        access.proxy = crate::access::proxy::ProxyConfig::None;
        let server = access.validate().unwrap();
        let tuning = crate::access::transport::Connecting {
            gzip: false,
            connect_timeout: Duration::ZERO,
            idle_timeout: Duration::from_secs(60),
        };
        let t = Arc::new(Transport::new(&access, &server, tuning).unwrap());
        for stop in [AgentSlot::shutdown, AgentSlot::interrupt] {
            let slot = Arc::new(AgentSlot::default());
            let c = slot.client(&t, &current(None)).unwrap().unwrap();
            let stopper = {
                let slot = slot.clone();
                std::thread::spawn(move || {
                    // Under way by then (the black hole answers no SYN).
                    std::thread::sleep(Duration::from_millis(300));
                    stop(&slot);
                    std::time::Instant::now()
                })
            };
            let get = Request {
                path: "/api",
                accept: "application/json",
                read_timeout: None,
            };
            let e = c.get(&get).err().expect("no connection to a black hole");
            let ended = std::time::Instant::now();
            let stopped = stopper.join().unwrap();
            assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "{e}");
            assert!(e.to_string().contains("ended by a stop or a relist"), "{e}");
            // One look at the stop (100 ms), and a margin for a loaded machine.
            let late = ended.saturating_duration_since(stopped);
            assert!(late < Duration::from_millis(600), "{late:?}");
        }
    }
}
