//! The way to the server: TLS (trust, client identity, the name checked on
//! the server's certificate), proxies, the loopback rule for plain http,
//! and the connections tattler's HTTP client (`access::client`) sends its
//! requests on ([`Transport::open`], [`Conn`]).
//!
//! TLS is tattler's: every certificate and key is checked once, up front,
//! and `tls-server-name` changes only the checked name (and SNI): the URL,
//! the `Host` header and a proxy's `CONNECT` keep naming the server, as
//! client-go's do.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};

use crate::access::cluster::{Access, ServerUrl};
use crate::access::credentials::Credentials;
use crate::access::keepalive::Socket;
use crate::access::pem::{parse_identity, provider, Identity};
use crate::access::proxy::{Proxy, ProxyKind};
use crate::access::reach::Reach;
use crate::access::secret::ClientIdentity;
use crate::access::url::Url;
use crate::access::verify::server_verifier;
use crate::error::Error;
use crate::sync::Mutex;
use crate::wire::http::{connect_head, request_head, Get, HttpError};
use crate::wire::http_read::Responses;

/// Everything needed to reach the server, checked once at open.
pub(crate) struct Transport {
    /// The credentials requests carry (refreshed as they expire).
    pub credentials: Credentials,
    /// Whether the server answers, as the reader's requests find it.
    pub reach: Reach,
    proxy: Option<Proxy>,
    accept_encoding: &'static str,
    connect_timeout: Duration,
    idle_timeout: Duration,
    tls: Option<TlsSetup>,
    /// The server's host (no brackets) and port: where plain http
    /// connects, what a proxy's CONNECT names.
    host: String,
    port: u16,
    /// The server as its URL names it (`host[:port]`): the `Host` header.
    authority: String,
    /// The URL's path, which every request's path follows.
    prefix: String,
    /// The TLS configuration of the current client identity generation,
    /// shared by every stream's connections, and with it its TLS session
    /// cache (rustls resumes a session only under the configuration it
    /// was made in): after one full handshake with a (restarted) server,
    /// the others resume, at about a third of a full handshake's server
    /// CPU (bench/fleet's TLS probe). A new identity gets a new one: no
    /// session made with an older certificate is resumed.
    config: Mutex<Option<(u64, Arc<ClientConfig>)>>,
}

/// The TLS side of a transport, for an https server.
struct TlsSetup {
    verifier: Arc<dyn ServerCertVerifier>,
    /// The configured client certificate, checked.
    identity: Option<Identity>,
    /// The name checked on the server's certificate and sent as SNI (an
    /// https proxy's own connection is checked for the proxy's name).
    name: ServerName<'static>,
}

/// How connections are made and read: the part of the configuration's
/// tuning the transport takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Connecting {
    /// Ask for gzip bodies.
    pub gzip: bool,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Transport {
    /// The way to `server` as `access` says, every certificate, key, proxy
    /// and the loopback rule checked now.
    pub(crate) fn new(
        access: &Access,
        server: &ServerUrl,
        tuning: Connecting,
    ) -> Result<Transport, Error> {
        let url = Url::parse(&server.base)
            .map_err(|e| Error::Config(format!("server: not a URL: {e}")))?;
        let host = url
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url
            .port_number()
            .map_err(|e| Error::Config(format!("server: {e}")))?
            .unwrap_or(if server.https { 443 } else { 80 });
        let authority = match url.port {
            Some(p) => format!("{}:{p}", url.host),
            None => url.host.to_string(),
        };
        let prefix = url.path.to_string();
        let tls = if server.https {
            Some(tls_setup(access, &host)?)
        } else {
            check_loopback_now(&host, port)?;
            None
        };
        if access.insecure_skip_tls_verify && server.https {
            log::warn!("TLS certificate verification is OFF (insecure_skip_tls_verify)");
        }
        Ok(Transport {
            credentials: Credentials::new(access.auth.clone()),
            reach: Reach::default(),
            // Plain http goes to loopback only, never through a proxy.
            proxy: if server.https {
                crate::access::proxy::proxy(&access.proxy, &host, port)?
            } else {
                None
            },
            accept_encoding: if tuning.gzip { "gzip" } else { "identity" },
            connect_timeout: tuning.connect_timeout,
            idle_timeout: tuning.idle_timeout,
            tls,
            host,
            port,
            authority,
            prefix,
            config: Mutex::new(None),
        })
    }

    /// The TLS configuration of an https server's connections (`None` for
    /// plain http); `identity` (from an exec plugin, of the identity
    /// generation `generation`) replaces the configured client
    /// certificate. One per generation, shared by every stream (the
    /// transport keeps it, with its TLS sessions).
    pub(crate) fn tls_config(
        &self,
        identity: Option<&ClientIdentity>,
        generation: u64,
    ) -> Result<Option<Arc<ClientConfig>>, String> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        if let Some((g, config)) = &*self.config.lock() {
            if *g == generation {
                return Ok(Some(config.clone()));
            }
        }
        let identity = match identity {
            Some(id) => Some(parse_identity(id, "the exec plugin's client certificate")?),
            None => tls.identity.clone(),
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(tls.verifier.clone());
        let mut client = match identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain, id.key)
                .map_err(|e| format!("client certificate: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        // As Go's client offers it (kubectl's also offers h2, which tattler
        // does not speak): a server or load balancer that wants ALPN gets it.
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        let client = Arc::new(client);
        // Two streams may build one at once: the first kept is everyone's
        // (and an older generation's never replaces a newer one's).
        let mut kept = self.config.lock();
        match &*kept {
            Some((g, config)) if *g == generation => Ok(Some(config.clone())),
            Some((g, _)) if *g > generation => Ok(Some(client)),
            _ => {
                *kept = Some((generation, client.clone()));
                Ok(Some(client))
            }
        }
    }

    /// How long a read may wait for a byte, unless a request says less.
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The head of a request of `path` (from the server URL's path on)
    /// with `method`, the credentials' `authorization` when there is one,
    /// and for a JSON body of `content` bytes its type and length.
    pub(crate) fn request_head(
        &self,
        method: &str,
        path: &str,
        accept: &str,
        authorization: Option<&str>,
        content: Option<usize>,
    ) -> Result<Vec<u8>, HttpError> {
        request_head(
            method,
            &Get {
                target: &format!("{}{path}", self.prefix),
                authority: &self.authority,
                accept,
                accept_encoding: self.accept_encoding,
                authorization,
            },
            content,
        )
    }

    /// A new connection to the server, through its proxy when it has one,
    /// over TLS with `tls` for https. `stopped` is looked at while the TCP
    /// connect is under way (every `dial::STOP_POLL`): true ends it with
    /// `ConnectionAborted`. `register` gets the TCP socket as soon as it
    /// connects (before any handshake), so that a stop can shut it down;
    /// an error from it ends the attempt.
    ///
    /// Each phase is bounded in total, not per read (a peer that sends a
    /// byte now and then cannot hold it): the TCP connect (Go's dialer over
    /// every address, `access::dial`) and then a proxy's answer (its TLS
    /// handshake for an https proxy, CONNECT or the SOCKS5 negotiation)
    /// share one deadline, the connect timeout after the start; the
    /// server's TLS handshake has the connect timeout of its own. With a
    /// connect timeout of 0 the TCP connect has no limit but the system's
    /// (and a stop), and each of the other two phases has client-go's 10 s.
    pub(crate) fn open(
        &self,
        tls: Option<&Arc<ClientConfig>>,
        stopped: &dyn Fn() -> bool,
        register: &dyn Fn(&Arc<TcpStream>) -> io::Result<()>,
    ) -> io::Result<Conn> {
        let started = Instant::now();
        let limit = Some(self.connect_timeout).filter(|t| !t.is_zero());
        let connect_until = limit.map(|t| started + t);
        let (host, port) = match &self.proxy {
            Some(p) => (p.host.as_str(), p.port),
            None => (self.host.as_str(), self.port),
        };
        let named =
            |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", authority(host, port)));
        let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(named)?.collect();
        let addrs = match self.tls {
            Some(_) => addrs,
            // Plain http: every connection goes to loopback only.
            None => loopback_only(host, addrs)?,
        };
        let socket = crate::access::dial::connect(&addrs, connect_until, stopped).map_err(named)?;
        let handle = Arc::new(socket.try_clone()?);
        register(&handle)?;
        let clock = Arc::new(Clock::default());
        let mut wire: Box<dyn ByteStream> = Box::new(Timed {
            socket: Socket(socket),
            clock: clock.clone(),
        });
        if let (Some(proxy), Some(config)) = (&self.proxy, tls) {
            let phase_limit = limit.unwrap_or(HANDSHAKE_LIMIT);
            let until = connect_until.unwrap_or_else(|| Instant::now() + phase_limit);
            let what = match proxy.kind {
                ProxyKind::Socks5 => "the SOCKS5 proxy's negotiation",
                ProxyKind::Https => "the proxy's TLS handshake and answer to CONNECT",
                ProxyKind::Http => "the proxy's answer to CONNECT",
            };
            clock.arm(what, phase_limit, until);
            match proxy.kind {
                ProxyKind::Http => wire = self.tunnel(wire, proxy)?,
                ProxyKind::Https => {
                    wire = handshake(wire, config, &proxy.host)?;
                    wire = self.tunnel(wire, proxy)?;
                }
                ProxyKind::Socks5 => {
                    crate::access::socks::connect(
                        &mut wire,
                        &self.host,
                        self.port,
                        proxy.socks_user(),
                    )?;
                }
            }
        }
        if let (Some(setup), Some(config)) = (&self.tls, tls) {
            let phase_limit = limit.unwrap_or(HANDSHAKE_LIMIT);
            clock.arm(
                "the TLS handshake",
                phase_limit,
                Instant::now() + phase_limit,
            );
            wire = handshake_for(wire, config, setup.name.clone())?;
        }
        clock.disarm();
        Ok(Conn {
            wire,
            socket: handle,
        })
    }

    /// Asks `proxy` for a tunnel to the server over `wire`: CONNECT naming
    /// the server (never `tls_server_name`), with the proxy's credentials;
    /// its answer is read with the same head reader as the server's.
    fn tunnel(
        &self,
        mut wire: Box<dyn ByteStream>,
        proxy: &Proxy,
    ) -> io::Result<Box<dyn ByteStream>> {
        let target = authority(&self.host, self.port);
        let credentials = proxy.authorization();
        let head = connect_head(&target, credentials.as_ref().map(|t| t.expose()))?;
        wire.write_all(&head)?;
        wire.flush()?;
        let mut input = Responses::new(&mut wire);
        let answer = input.read_head()?;
        let extra = !input.buffered().is_empty();
        drop(input);
        if !(200..300).contains(&answer.status) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!(
                    "the proxy {} answered CONNECT {target} with {}",
                    authority(&proxy.host, proxy.port),
                    answer.status
                ),
            ));
        }
        if extra {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the proxy sent bytes after its answer to CONNECT",
            ));
        }
        Ok(wire)
    }
}

/// `host:port`, an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The addresses a plain-http connection may use: loopback ones only, so
/// that `/etc/hosts` cannot send a token elsewhere.
fn loopback_only(host: &str, addrs: Vec<SocketAddr>) -> io::Result<Vec<SocketAddr>> {
    let kept: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| a.ip().is_loopback())
        .collect();
    if kept.is_empty() {
        let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{host} resolves to {}, not to a loopback address: plain http is only allowed to loopback",
                shown.join(", ")
            ),
        ));
    }
    Ok(kept)
}

/// A TLS client over `wire` for the name `host` (an https proxy's).
fn handshake(
    wire: Box<dyn ByteStream>,
    config: &Arc<ClientConfig>,
    host: &str,
) -> io::Result<Box<dyn ByteStream>> {
    let name = ServerName::try_from(host.to_string()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{host}: not a DNS name or IP address"),
        )
    })?;
    handshake_for(wire, config, name)
}

/// A TLS client over `wire`, its handshake done: the server's certificate
/// checked by tattler's verifier for `name`, which is also the SNI.
fn handshake_for(
    wire: Box<dyn ByteStream>,
    config: &Arc<ClientConfig>,
    name: ServerName<'static>,
) -> io::Result<Box<dyn ByteStream>> {
    let conn = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    let mut stream = StreamOwned::new(conn, wire);
    while stream.conn.is_handshaking() {
        if stream.conn.complete_io(&mut stream.sock)? == (0, 0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed during the TLS handshake",
            ));
        }
    }
    let resumed = stream.conn.handshake_kind() == Some(HandshakeKind::Resumed);
    log::trace!(
        "TLS handshake: {}",
        if resumed { "resumed" } else { "full" }
    );
    Ok(Box::new(stream))
}

/// A TLS handshake's limit when the connect timeout is 0: client-go's
/// `TLSHandshakeTimeout`.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The deadline of the phase of a connection's setup under way (`None`
/// once it is set up), which [`Timed`] holds every read and write to.
#[derive(Default)]
struct Clock {
    /// Whether a phase is under way: after setup, every read checks this
    /// alone.
    armed: AtomicBool,
    phase: Mutex<Option<Phase>>,
}

#[derive(Clone, Copy)]
struct Phase {
    what: &'static str,
    limit: Duration,
    until: Instant,
}

impl Clock {
    /// The phase `what` may last until `until` (`limit` after its start).
    fn arm(&self, what: &'static str, limit: Duration, until: Instant) {
        *self.phase.lock() = Some(Phase { what, limit, until });
        self.armed.store(true, Ordering::Release);
    }

    /// Set up: reads and writes are the HTTP client's to time.
    fn disarm(&self) {
        self.armed.store(false, Ordering::Release);
        *self.phase.lock() = None;
    }

    fn phase(&self) -> Option<Phase> {
        if !self.armed.load(Ordering::Acquire) {
            return None;
        }
        *self.phase.lock()
    }
}

/// The socket under a connection: during its setup each read and write
/// waits at most what is left of the phase's time (the socket's timeout is
/// set to it before each), so that a total, not a per-read, limit holds.
struct Timed {
    socket: Socket,
    clock: Arc<Clock>,
}

impl Timed {
    /// Sets `set` (the read or the write timeout) to the phase's time left.
    fn left(&self, set: fn(&TcpStream, Option<Duration>) -> io::Result<()>) -> io::Result<()> {
        let Some(phase) = self.clock.phase() else {
            return Ok(());
        };
        let left = phase.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{} did not end within {:?}", phase.what, phase.limit),
            ));
        }
        set(&self.socket.0, Some(left))
    }

    /// A timeout during setup says which phase ran out of time.
    fn named(&self, e: io::Error) -> io::Error {
        match (e.kind(), self.clock.phase()) {
            (io::ErrorKind::TimedOut, Some(phase)) => io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{} did not end within {:?}", phase.what, phase.limit),
            ),
            _ => e,
        }
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.left(TcpStream::set_read_timeout)?;
        self.socket.read(buf).map_err(|e| self.named(e))
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.left(TcpStream::set_write_timeout)?;
        self.socket.write(buf).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.flush()
    }
}

/// A connection's bytes: TCP, or TLS over TCP or over a proxy's tunnel.
pub(crate) trait ByteStream: Read + Write + Send {}

impl<T: Read + Write + Send> ByteStream for T {}

/// One connection to the server, as tattler's HTTP client uses it: its
/// bytes (through TLS and tunnels), and the TCP socket under them, to set
/// its timeouts, see whether it is still open, and shut it down from
/// another thread.
pub(crate) struct Conn {
    wire: Box<dyn ByteStream>,
    socket: Arc<TcpStream>,
}

impl Conn {
    /// The socket, to shut down.
    pub(crate) fn socket(&self) -> &Arc<TcpStream> {
        &self.socket
    }

    /// How long a read and a write may wait.
    pub(crate) fn set_timeouts(&self, read: Duration, write: Duration) -> io::Result<()> {
        self.socket
            .set_read_timeout(Some(read).filter(|t| !t.is_zero()))?;
        self.socket
            .set_write_timeout(Some(write).filter(|t| !t.is_zero()))
    }

    /// Whether a kept connection can carry another request: open, and
    /// nothing arrived since its last response (a close, a TLS alert, stray
    /// bytes).
    pub(crate) fn idle_and_open(&self) -> bool {
        if self.socket.set_nonblocking(true).is_err() {
            return false;
        }
        let idle = matches!(
            self.socket.peek(&mut [0u8; 1]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock
        );
        idle && self.socket.set_nonblocking(false).is_ok()
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.wire.read(buf)
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.wire.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.wire.flush()
    }
}

fn tls_setup(config: &Access, host: &str) -> Result<TlsSetup, Error> {
    if config.insecure_skip_tls_verify && config.ca_pem.is_some() {
        return Err(Error::Config(
            crate::access::cluster::INSECURE_WITH_CA.into(),
        ));
    }
    let verifier = server_verifier(config)?;
    let identity = match &config.client_identity {
        Some(id) => Some(parse_identity(id, "the client certificate").map_err(Error::Tls)?),
        None => None,
    };
    let name_text = config.tls_server_name.as_deref().unwrap_or(host);
    let name = ServerName::try_from(name_text.to_string()).map_err(|_| {
        Error::Config(format!(
            "tls_server_name {name_text:?}: not a DNS name or IP address"
        ))
    })?;
    Ok(TlsSetup {
        verifier,
        identity,
        name,
    })
}

/// Plain http is allowed only to loopback. The URL's host was checked by
/// name; a name (`localhost`) is resolved now, and again by [`Transport::open`]
/// at every connect, so that `/etc/hosts` cannot send a token elsewhere.
fn check_loopback_now(host: &str, port: u16) -> Result<(), Error> {
    if host.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::Config(format!("server {host:?}: cannot resolve it: {e}")))?
        .collect();
    if !addrs.iter().any(|a| a.ip().is_loopback()) {
        let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
        return Err(Error::Config(format!(
            "server {host:?} resolves to {}, not to a loopback address: plain http is only allowed to loopback",
            shown.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_keeps_only_resolved_loopback_addresses() {
        // What a resolver says about `localhost` when /etc/hosts points it elsewhere.
        let keep = |addrs: &[&str]| {
            loopback_only(
                "localhost",
                addrs.iter().map(|a| a.parse().unwrap()).collect(),
            )
            .map(|a| a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let e = keep(&["10.1.2.3:8080"]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(
            e.to_string()
                .contains("localhost resolves to 10.1.2.3, not to a loopback address"),
            "{e}"
        );
        assert_eq!(
            keep(&["10.1.2.3:8080", "127.0.0.1:8080", "[::1]:8080"]).unwrap(),
            ["127.0.0.1:8080", "[::1]:8080"]
        );
    }

    /// A peer that accepts one connection and sends `bytes` one at a time,
    /// one every `gap`, until they run out or the client goes.
    fn dribbler(bytes: Vec<u8>, gap: Duration) -> (u16, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let Ok((mut c, _)) = l.accept() else { return };
            for b in bytes {
                if c.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(gap);
            }
        });
        (port, t)
    }

    fn transport(server: &str, proxy: Option<String>, connect_timeout: Duration) -> Transport {
        let mut access = Access::new(server);
        access.insecure_skip_tls_verify = true;
        if let Some(p) = proxy {
            access.proxy = crate::access::proxy::ProxyConfig::Url(p);
        }
        let url = ServerUrl::parse(server).unwrap();
        let tuning = Connecting {
            gzip: false,
            connect_timeout,
            idle_timeout: Duration::from_secs(150),
        };
        Transport::new(&access, &url, tuning).unwrap()
    }

    /// Opens a connection; the error and how long it took.
    fn open_err(t: &Transport) -> (io::Error, Duration) {
        let tls = t.tls_config(None, 0).unwrap();
        let start = Instant::now();
        let e = t
            .open(tls.as_ref(), &|| false, &|_| Ok(()))
            .err()
            .expect("a failed open");
        (e, start.elapsed())
    }

    /// A byte every 0.3 s for 12 s: every read gets one well within any
    /// per-read limit; only a total limit ends the phase.
    const GAP: Duration = Duration::from_millis(300);
    const LIMIT: Duration = Duration::from_secs(1);

    fn assert_ended_in_time(e: &io::Error, took: Duration, phase: &str) {
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        let want = format!("{phase} did not end within 1s");
        assert!(e.to_string().contains(&want), "{e}");
        // At the limit; the bound is generous for a loaded machine, and far
        // below the dribbler's 12 s.
        assert!(took >= LIMIT - Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_secs(6), "{took:?}");
    }

    #[test]
    fn a_dribbled_tls_handshake_ends_at_its_total_limit() {
        // A TLS record header announcing 16 KiB of handshake, then zeros.
        let mut bytes = vec![0x16, 0x03, 0x03, 0x40, 0x00];
        bytes.resize(40, 0);
        let (port, peer) = dribbler(bytes, GAP);
        let t = transport(&format!("https://127.0.0.1:{port}"), None, LIMIT);
        let (e, took) = open_err(&t);
        assert_ended_in_time(&e, took, "the TLS handshake");
        peer.join().unwrap();
    }

    #[test]
    fn a_dribbled_connect_answer_ends_at_the_connect_deadline() {
        let mut bytes = b"HTTP/1.1 200 Connection established\r\nX-A: ".to_vec();
        bytes.resize(40, b'a');
        let (port, peer) = dribbler(bytes, GAP);
        let proxy = Some(format!("http://127.0.0.1:{port}"));
        let t = transport("https://kubernetes.internal:6443", proxy, LIMIT);
        let (e, took) = open_err(&t);
        assert_ended_in_time(&e, took, "the proxy's answer to CONNECT");
        peer.join().unwrap();
    }

    #[test]
    fn a_dribbled_socks5_negotiation_ends_at_the_connect_deadline() {
        // Method chosen, CONNECT succeeded, a 255-byte bound name to come.
        let mut bytes = vec![5, 0, 5, 0, 0, 3, 255];
        bytes.resize(40, b'a');
        let (port, peer) = dribbler(bytes, GAP);
        let proxy = Some(format!("socks5://127.0.0.1:{port}"));
        let t = transport("https://kubernetes.internal:6443", proxy, LIMIT);
        let (e, took) = open_err(&t);
        assert_ended_in_time(&e, took, "the SOCKS5 proxy's negotiation");
        peer.join().unwrap();
    }

    /// `connect_timeout` 0 is no limit of tattler's own on the TCP connect,
    /// as Go's `Dialer` with no `Timeout`: std's `connect_timeout` refuses
    /// a zero duration, and every connect failed.
    #[test]
    fn a_zero_connect_timeout_connects() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = transport(&format!("http://127.0.0.1:{port}"), None, Duration::ZERO);
        let conn = t.open(None, &|| false, &|_| Ok(())).unwrap();
        let (peer, _) = l.accept().unwrap();
        assert_eq!(
            conn.socket().local_addr().unwrap(),
            peer.peer_addr().unwrap()
        );
    }
}
