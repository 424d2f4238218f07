//! The HTTP client side: TLS (trust, client identity, the name checked on the
//! server's certificate), proxies, the loopback rule for plain http, and one
//! ureq agent per stream that the reader can shut down.
//!
//! TLS is ours rather than ureq's: ureq's rustls connector takes the name it
//! checks from the URL and panics on a client certificate rustls refuses. Ours
//! checks every certificate and key once, up front, and changes only the
//! checked name (and SNI) for `tls-server-name`: the URL, the `Host` header
//! and a proxy's `CONNECT` keep naming the server, as client-go's do.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::access::authorize::{Authorize, HeaderSlot};
use crate::access::keepalive::{KeepAliveTcp, Socket};
use crate::access::proxy::Proxy;
use parking_lot::Mutex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout,
    Transport as Wire, TransportAdapter,
};
use ureq::Agent;

use crate::access::cluster::{Access, ServerUrl};
use crate::access::credentials::{Credentials, Current};
use crate::access::pem::{parse_identity, provider, roots, Identity};
use crate::access::secret::ClientIdentity;
use crate::access::url::Url;
use crate::wire::http::{connect_head, get_head, Get, HttpError};
use crate::wire::http_read::Input;
use crate::{Config, Error};

/// Everything needed to make an agent, checked once at open.
pub(crate) struct Transport {
    /// The URL requests go to.
    pub base: String,
    pub credentials: Credentials,
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
}

/// The TLS side of a transport, for an https server.
struct TlsSetup {
    verifier: Arc<dyn ServerCertVerifier>,
    /// The configured client certificate, checked.
    identity: Option<Identity>,
    /// The name checked on the server's certificate and sent as SNI.
    name: ServerName<'static>,
    /// The server's host and port: the connection `name` applies to (an
    /// https proxy's own connection is checked for the proxy's name).
    host: String,
    port: u16,
}

impl Transport {
    pub(crate) fn new(config: &Config, server: &ServerUrl) -> Result<Transport, Error> {
        let (access, tuning) = (&config.access, &config.tuning);
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
            Some(tls_setup(access, &host, port)?)
        } else {
            check_loopback_now(&host, port)?;
            None
        };
        if access.insecure_skip_tls_verify && server.https {
            log::warn!("TLS certificate verification is OFF (insecure_skip_tls_verify)");
        }
        Ok(Transport {
            base: server.base.clone(),
            credentials: Credentials::new(access.auth.clone()),
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
        })
    }

    /// A fresh agent; `identity` (from an exec plugin) replaces the configured one.
    fn agent(
        &self,
        identity: Option<&ClientIdentity>,
        header: &Arc<HeaderSlot>,
    ) -> Result<Agent, String> {
        let http = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(self.proxy.as_ref().map(Proxy::ureq))
            .user_agent(concat!("tattler/", env!("CARGO_PKG_VERSION")))
            .accept_encoding(self.accept_encoding)
            // No resolve timeout: with one, ureq runs each DNS lookup in a
            // detached thread that could outlive close (tests/threads.rs).
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(Some(self.idle_timeout))
            .build();
        let (Some(tls), Some(client)) = (&self.tls, self.tls_config(identity)?) else {
            let connector = ().chain(KeepAliveTcp).chain(Authorize(header.clone()));
            return Ok(Agent::with_parts(
                http,
                connector,
                LoopbackOnly(DefaultResolver::default()),
            ));
        };
        let connector = ()
            .chain(ConnectProxyConnector::default())
            .chain(KeepAliveTcp)
            .chain(TlsConnector {
                config: client,
                name: tls.name.clone(),
                host: tls.host.clone(),
                port: tls.port,
            })
            .chain(Authorize(header.clone()));
        Ok(Agent::with_parts(
            http,
            connector,
            DefaultResolver::default(),
        ))
    }

    /// The TLS configuration of an https server's connections (`None` for
    /// plain http); `identity` (from an exec plugin) replaces the
    /// configured client certificate. Kept per identity by the caller: it
    /// holds the TLS session cache.
    pub(crate) fn tls_config(
        &self,
        identity: Option<&ClientIdentity>,
    ) -> Result<Option<Arc<ClientConfig>>, String> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let identity = match identity {
            Some(id) => Some(parse_identity(id, "the exec plugin's client certificate")?),
            None => tls.identity.clone(),
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(tls.verifier.clone());
        let client = match identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain, id.key)
                .map_err(|e| format!("client certificate: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(client)))
    }

    /// How long a read may wait for a byte, unless a request says less.
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The head of a GET of `path` (from the server URL's path on), with
    /// the credentials' `authorization` when there is one.
    pub(crate) fn get_head(
        &self,
        path: &str,
        accept: &str,
        authorization: Option<&str>,
    ) -> Result<Vec<u8>, HttpError> {
        get_head(&Get {
            target: &format!("{}{path}", self.prefix),
            authority: &self.authority,
            accept,
            accept_encoding: self.accept_encoding,
            authorization,
        })
    }

    /// A new connection to the server, through its proxy when it has one,
    /// over TLS with `tls` for https. `register` gets the TCP socket as
    /// soon as it connects (before any handshake), so that a stop can shut
    /// it down; an error from it ends the attempt. Connecting, the
    /// handshakes and the proxy's answer each wait at most the connect
    /// timeout for a byte.
    pub(crate) fn open(
        &self,
        tls: Option<&Arc<ClientConfig>>,
        register: &dyn Fn(&Arc<TcpStream>) -> io::Result<()>,
    ) -> io::Result<Conn> {
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
        let socket = crate::access::keepalive::tcp(&addrs, self.connect_timeout).map_err(named)?;
        let handle = Arc::new(socket.try_clone()?);
        register(&handle)?;
        let setup = Some(self.connect_timeout).filter(|t| !t.is_zero());
        socket.set_read_timeout(setup)?;
        socket.set_write_timeout(setup)?;
        let mut wire: Box<dyn ByteStream> = Box::new(Socket(socket));
        if let (Some(proxy), Some(config)) = (&self.proxy, tls) {
            if proxy.tls {
                wire = handshake(wire, config, &proxy.host)?;
            }
            wire = self.tunnel(wire, proxy)?;
        }
        if let (Some(setup), Some(config)) = (&self.tls, tls) {
            wire = handshake_for(wire, config, setup.name.clone())?;
        }
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
        let mut input = Input::new(&mut wire);
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
    Ok(Box::new(stream))
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

fn tls_setup(config: &Access, host: &str, port: u16) -> Result<TlsSetup, Error> {
    if config.insecure_skip_tls_verify && config.ca_pem.is_some() {
        return Err(Error::Config(
            crate::access::cluster::INSECURE_WITH_CA.into(),
        ));
    }
    let verifier: Arc<dyn ServerCertVerifier> = if config.insecure_skip_tls_verify {
        Arc::new(NoVerification(provider()))
    } else {
        let store = match &config.ca_pem {
            Some(pem) => {
                let mut store = RootCertStore::empty();
                for (i, cert) in roots(pem)
                    .map_err(|e| Error::Tls(format!("CA bundle: {e}")))?
                    .into_iter()
                    .enumerate()
                {
                    store.add(cert).map_err(|e| {
                        Error::Tls(format!("CA bundle: certificate {}: {e}", i + 1))
                    })?;
                }
                Arc::new(store)
            }
            None => system_roots(),
        };
        WebPkiServerVerifier::builder_with_provider(store, provider())
            .build()
            .map_err(|e| Error::Tls(format!("CA bundle: {e}")))?
    };
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
        host: host.to_string(),
        port,
    })
}

/// With no CA configured: the system's trust store, as kubectl (Go's
/// `SystemCertPool`) uses, read once per process; the public web roots only
/// when the system has none.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut store = RootCertStore::empty();
            let (added, ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                log::warn!(
                    "no CA certificates in the system trust store ({} errors, {ignored} unusable); trusting the public web roots",
                    found.errors.len()
                );
                store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            } else {
                log::debug!("system trust store: {added} CA certificates ({ignored} unusable)");
            }
            Arc::new(store)
        })
        .clone()
}

/// Plain http is allowed only to loopback. The URL's host was checked by
/// name; a name (`localhost`) is resolved now, and again by [`LoopbackOnly`]
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

/// For plain http: resolves as usual and keeps only loopback addresses.
#[derive(Debug)]
struct LoopbackOnly<R>(R);

impl<R: Resolver> Resolver for LoopbackOnly<R> {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let all = self.0.resolve(uri, config, timeout)?;
        let mut kept = self.0.empty();
        for a in all.iter().filter(|a| a.ip().is_loopback()) {
            kept.push(*a);
        }
        if kept.is_empty() {
            let shown: Vec<String> = all.iter().map(|a| a.ip().to_string()).collect();
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to {}, not to a loopback address: plain http is only allowed to loopback",
                    uri.host().unwrap_or_default(),
                    shown.join(", ")
                ),
            )));
        }
        Ok(kept)
    }

    fn empty(&self) -> ResolvedSocketAddrs {
        self.0.empty()
    }
}

/// TLS over the connection the chain made (direct or through a CONNECT
/// tunnel), checked by our verifier for our name.
#[derive(Debug)]
struct TlsConnector {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    host: String,
    port: u16,
}

impl<In: Wire> Connector<In> for TlsConnector {
    type Out = Either<In, TlsWire>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details
            .uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = details.uri.port_u16().unwrap_or(443);
        let name = if host.eq_ignore_ascii_case(&self.host) && port == self.port {
            self.name.clone()
        } else {
            // An https proxy: its own name.
            ServerName::try_from(host.to_string())
                .map_err(|_| ureq::Error::Tls("not a DNS name or IP address"))?
        };
        let mut conn = ClientConnection::new(self.config.clone(), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock)?;
        Ok(Some(Either::B(TlsWire {
            buffers: LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A TLS connection as a ureq transport.
struct TlsWire {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl std::fmt::Debug for TlsWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsWire")
    }
}

impl Wire for TlsWire {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// `insecure_skip_tls_verify`: any certificate is accepted.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One stream's agent. The reader shuts it down to unblock the stream's
/// socket; after that no new agent is handed out, so a stream about to
/// connect cannot slip past a stop.
#[derive(Default)]
pub(crate) struct AgentSlot {
    state: Mutex<SlotState>,
    /// The credentials' header for the agent's next request.
    header: Arc<HeaderSlot>,
}

#[derive(Default)]
struct SlotState {
    agent: Option<(Agent, u64)>,
    stopped: bool,
}

impl AgentSlot {
    /// The agent for the credentials `current`, whose next request carries
    /// `current`'s header; `None` once shut down.
    pub(crate) fn get(
        &self,
        transport: &Transport,
        current: &Current,
    ) -> Option<Result<Agent, String>> {
        let mut st = self.state.lock();
        if st.stopped {
            return None;
        }
        self.header.set(current.header.as_deref());
        match &st.agent {
            Some((a, gen)) if *gen == current.identity_generation => Some(Ok(a.clone())),
            _ => match transport.agent(current.identity.as_ref(), &self.header) {
                Ok(a) => {
                    st.agent = Some((a.clone(), current.identity_generation));
                    Some(Ok(a))
                }
                Err(e) => Some(Err(e)),
            },
        }
    }

    /// Ends the current connections (a read blocked on one fails at once);
    /// the next request makes a new agent.
    pub(crate) fn interrupt(&self) {
        let agent = self.state.lock().agent.take();
        if let Some((a, _)) = agent {
            a.shutdown();
        }
    }

    /// Shuts the agent down: reads blocked on its sockets fail at once.
    pub(crate) fn shutdown(&self) {
        let mut st = self.state.lock();
        st.stopped = true;
        if let Some((a, _)) = st.agent.take() {
            a.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(Vec<SocketAddr>);

    impl Resolver for Fixed {
        fn resolve(
            &self,
            _: &ureq::http::Uri,
            _: &ureq::config::Config,
            _: NextTimeout,
        ) -> Result<ResolvedSocketAddrs, ureq::Error> {
            let mut out = self.empty();
            for a in &self.0 {
                out.push(*a);
            }
            Ok(out)
        }
    }

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

    #[test]
    fn plain_http_connects_only_to_resolved_loopback_addresses() {
        // What a resolver says about `localhost` when /etc/hosts points it elsewhere.
        let uri: ureq::http::Uri = "http://localhost:8080/api".parse().unwrap();
        let config = ureq::config::Config::default();
        let resolve = |addrs: &[&str]| {
            let r = LoopbackOnly(Fixed(addrs.iter().map(|a| a.parse().unwrap()).collect()));
            r.resolve(&uri, &config, NextTimeout::default())
                .map(|a| a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let e = resolve(&["10.1.2.3:8080"]).unwrap_err().to_string();
        assert!(
            e.contains("localhost resolves to 10.1.2.3, not to a loopback address"),
            "{e}"
        );
        assert_eq!(
            resolve(&["10.1.2.3:8080", "127.0.0.1:8080", "[::1]:8080"]).unwrap(),
            ["127.0.0.1:8080", "[::1]:8080"]
        );
    }
}
