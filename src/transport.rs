//! The HTTP client side: TLS (trust, client identity, the name checked on the
//! server's certificate), proxies, the loopback rule for plain http, and one
//! ureq agent per stream that the reader can shut down.
//!
//! TLS is ours rather than ureq's: ureq's rustls connector takes the name it
//! checks from the URL and panics on a client certificate rustls refuses. Ours
//! checks every certificate and key once, up front, and changes only the
//! checked name (and SNI) for `tls-server-name`: the URL, the `Host` header
//! and a proxy's `CONNECT` keep naming the server, as client-go's do.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};

use crate::keepalive::KeepAliveTcp;
use parking_lot::Mutex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout,
    Transport as Wire, TransportAdapter,
};
use ureq::Agent;

use crate::auth::{ClientIdentity, Credentials, Current};
use crate::config::{ProxyConfig, ServerUrl};
use crate::{Config, Error};

/// Everything needed to make an agent, checked once at open.
pub(crate) struct Transport {
    /// The URL requests go to.
    pub base: String,
    pub credentials: Credentials,
    proxy: Option<ureq::Proxy>,
    accept_encoding: &'static str,
    connect_timeout: std::time::Duration,
    idle_timeout: std::time::Duration,
    tls: Option<TlsSetup>,
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

/// A client certificate chain and its key, checked as rustls will use them.
struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Identity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

impl Transport {
    pub(crate) fn new(config: &Config, server: &ServerUrl) -> Result<Transport, Error> {
        let uri: ureq::http::Uri = server
            .base
            .parse()
            .map_err(|_| Error::Config("server: not a URL".into()))?;
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if server.https { 443 } else { 80 });
        let tls = if server.https {
            Some(tls_setup(config, &host, port)?)
        } else {
            check_loopback_now(&host, port)?;
            None
        };
        if config.insecure_skip_tls_verify && server.https {
            log::warn!("TLS certificate verification is OFF (insecure_skip_tls_verify)");
        }
        Ok(Transport {
            base: server.base.clone(),
            credentials: Credentials::new(config.auth.clone()),
            // Plain http goes to loopback only, never through a proxy.
            proxy: if server.https {
                proxy(&config.proxy, &host, port)?
            } else {
                None
            },
            accept_encoding: if config.gzip { "gzip" } else { "identity" },
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            tls,
        })
    }

    /// A fresh agent; `identity` (from an exec plugin) replaces the configured one.
    fn agent(&self, identity: Option<&ClientIdentity>) -> Result<Agent, String> {
        let http = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(self.proxy.clone())
            .user_agent(concat!("tattler/", env!("CARGO_PKG_VERSION")))
            .accept_encoding(self.accept_encoding)
            // No resolve timeout: with one, ureq runs each DNS lookup in a
            // detached thread that could outlive close (tests/threads.rs).
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(Some(self.idle_timeout))
            .build();
        let Some(tls) = &self.tls else {
            let connector = ().chain(KeepAliveTcp);
            return Ok(Agent::with_parts(
                http,
                connector,
                LoopbackOnly(DefaultResolver::default()),
            ));
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
        let connector =
            ().chain(ConnectProxyConnector::default())
                .chain(KeepAliveTcp)
                .chain(TlsConnector {
                    config: Arc::new(client),
                    name: tls.name.clone(),
                    host: tls.host.clone(),
                    port: tls.port,
                });
        Ok(Agent::with_parts(
            http,
            connector,
            DefaultResolver::default(),
        ))
    }
}

fn tls_setup(config: &Config, host: &str, port: u16) -> Result<TlsSetup, Error> {
    if config.insecure_skip_tls_verify && config.ca_pem.is_some() {
        return Err(Error::Config(crate::config::INSECURE_WITH_CA.into()));
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

/// The certificates of a PEM bundle.
pub(crate) fn roots(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut certs = Vec::new();
    for item in CertificateDer::pem_slice_iter(pem) {
        certs.push(item.map_err(|_| "not valid PEM".to_string())?);
    }
    if certs.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(certs)
}

/// Checks a client certificate and key the way rustls will use them, so that
/// nothing fails later inside a handshake. `what` names the certificate.
pub(crate) fn check_identity(id: &ClientIdentity, what: &str) -> Result<(), String> {
    parse_identity(id, what).map(drop)
}

fn parse_identity(id: &ClientIdentity, what: &str) -> Result<Identity, String> {
    let chain = roots(&id.cert_pem).map_err(|e| format!("{what}: {e}"))?;
    // The key's parse error is not quoted: it could echo key material.
    let bad_key = || format!("{what}: its client key is not a PEM RSA, EC or PKCS#8 private key");
    let key = PrivateKeyDer::from_pem_slice(&id.key_pem).map_err(|_| bad_key())?;
    if x509_version(&chain[0]) == Some(1) {
        return Err(v1_message(what));
    }
    let checked = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(RootCertStore::empty())
        .with_client_auth_cert(chain.clone(), key.clone_key());
    match checked {
        Ok(_) => Ok(Identity { chain, key }),
        Err(rustls::Error::InconsistentKeys(_)) => Err(format!(
            "{what}: its key does not belong to it (the public keys differ)"
        )),
        Err(rustls::Error::InvalidCertificate(e)) => {
            Err(format!("{what}: not a usable X.509 certificate ({e:?})"))
        }
        Err(_) => Err(bad_key()),
    }
}

fn v1_message(what: &str) -> String {
    format!(
        "{what} is an X.509 v1 certificate: kubectl accepts it, but tattler's TLS library \
         (rustls) takes only v3 certificates. Reissue it as v3 from the same key, for example \
         `openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
         -extfile <(printf 'extendedKeyUsage=clientAuth') -out client.crt` (any -extfile gives \
         v3; without one openssl writes v1), or with `kubectl certificate approve` on a \
         CertificateSigningRequest"
    )
}

/// The X.509 version of a DER certificate (1, 2 or 3); `None` when it does
/// not parse that far.
fn x509_version(der: &[u8]) -> Option<u8> {
    /// The tag and the contents of the DER element at the start of `b`.
    fn element(b: &[u8]) -> Option<(u8, &[u8])> {
        let (&tag, rest) = b.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let len = rest[..n]
                .iter()
                .fold(0usize, |acc, &x| (acc << 8) | usize::from(x));
            (len, &rest[n..])
        };
        Some((tag, rest.get(..len)?))
    }
    let (0x30, cert) = element(der)? else {
        return None;
    };
    let (0x30, tbs) = element(cert)? else {
        return None;
    };
    match element(tbs)? {
        // [0] EXPLICIT Version: an INTEGER, 0 = v1, 2 = v3.
        (0xa0, v) => match element(v)? {
            (0x02, [n]) if *n <= 2 => Some(n + 1),
            _ => None,
        },
        // No version field: v1 (the serial number comes first).
        (0x02, _) => Some(1),
        _ => None,
    }
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
}

#[derive(Default)]
struct SlotState {
    agent: Option<(Agent, u64)>,
    stopped: bool,
}

impl AgentSlot {
    /// The agent for the credentials `current`; `None` once shut down.
    pub(crate) fn get(
        &self,
        transport: &Transport,
        current: &Current,
    ) -> Option<Result<Agent, String>> {
        let mut st = self.state.lock();
        if st.stopped {
            return None;
        }
        match &st.agent {
            Some((a, gen)) if *gen == current.identity_generation => Some(Ok(a.clone())),
            _ => match transport.agent(current.identity.as_ref()) {
                Ok(a) => {
                    st.agent = Some((a.clone(), current.identity_generation));
                    Some(Ok(a))
                }
                Err(e) => Some(Err(e)),
            },
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

/// A proxy URL; errors name `what` and never show the URL's credentials.
fn http_proxy(what: &str, u: &str) -> Result<ureq::Proxy, Error> {
    let shown = crate::config::redact_userinfo(u);
    let u = if u.contains("://") {
        u.to_string()
    } else {
        format!("http://{u}")
    };
    if !(u.starts_with("http://") || u.starts_with("https://")) {
        return Err(Error::Config(format!(
            "{what} {shown:?}: only http:// and https:// proxies are supported"
        )));
    }
    ureq::Proxy::new(&u).map_err(|_| Error::Config(format!("{what} {shown:?}: not a proxy URL")))
}

/// The proxy for an https server at `host:port` (bare host, no brackets).
fn proxy(setting: &ProxyConfig, host: &str, port: u16) -> Result<Option<ureq::Proxy>, Error> {
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match setting {
        ProxyConfig::None => Ok(None),
        _ if loopback => Ok(None),
        ProxyConfig::Url(u) => http_proxy("proxy-url", u).map(Some),
        ProxyConfig::FromEnv => {
            let var = |names: &[&str]| {
                names
                    .iter()
                    .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            };
            let no_proxy = var(&["NO_PROXY", "no_proxy"]).unwrap_or_default();
            if !use_proxy(host, port, &no_proxy) {
                return Ok(None);
            }
            // HTTPS_PROXY as Go reads it; ALL_PROXY (curl's) after it.
            match var(&["HTTPS_PROXY", "https_proxy"]).or_else(|| var(&["ALL_PROXY", "all_proxy"]))
            {
                Some(u) => http_proxy("the proxy from the environment", &u).map(Some),
                None => Ok(None),
            }
        }
    }
}

/// Whether a request to `host:port` goes through the proxy under a
/// `NO_PROXY` list, by Go's rules (`golang.org/x/net/http/httpproxy`, which
/// kubectl uses): never for `localhost` or a loopback IP; `*` exempts all;
/// IPs and CIDRs match IP hosts only; `foo.com` matches it and its
/// subdomains, `.foo.com` and `*.foo.com` subdomains only; a `:port` on an
/// entry must equal the request's. Names are compared in ASCII (no IDNA).
pub(crate) fn use_proxy(host: &str, port: u16, no_proxy: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return true;
    }
    if host == "localhost" {
        return false;
    }
    let ip: Option<IpAddr> = host.parse().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    let port = port.to_string();
    for entry in no_proxy.split(',') {
        let p = entry.trim().to_ascii_lowercase();
        if p.is_empty() {
            continue;
        }
        if p == "*" {
            return false;
        }
        if let Some((net, bits)) = parse_cidr(&p) {
            if ip.is_some_and(|ip| cidr_contains(net, bits, ip)) {
                return false;
            }
            continue;
        }
        let (phost, pport) = match split_host_port(&p) {
            Some(("", _)) => continue,
            Some((h, pp)) => (h.trim_start_matches('[').trim_end_matches(']'), pp),
            None => (p.as_str(), ""),
        };
        if let Ok(pip) = phost.parse::<IpAddr>() {
            if ip == Some(pip) && (pport.is_empty() || pport == port) {
                return false;
            }
            continue;
        }
        if phost.is_empty() || ip.is_some() {
            continue;
        }
        let phost = phost
            .strip_prefix('*')
            .filter(|h| h.starts_with('.'))
            .unwrap_or(phost);
        let (suffix, match_host) = match phost.strip_prefix('.') {
            Some(_) => (phost.to_string(), false),
            None => (format!(".{phost}"), true),
        };
        if (host.ends_with(&suffix) || (match_host && host == &suffix[1..]))
            && (pport.is_empty() || pport == port)
        {
            return false;
        }
    }
    true
}

/// Go's `net.SplitHostPort` for a NO_PROXY entry: `host:port` or
/// `[v6]:port`; `None` when there is no port.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':')?;
        return Some((h, port));
    }
    let (h, port) = s.rsplit_once(':')?;
    if h.contains(':') {
        return None; // a bare IPv6 address: too many colons
    }
    Some((h, port))
}

/// An IPv4 or IPv6 CIDR (`10.0.0.0/8`, `fd00::/8`), as Go's `net.ParseCIDR`.
fn parse_cidr(s: &str) -> Option<(IpAddr, u32)> {
    let (net, bits) = s.split_once('/')?;
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let net: IpAddr = net.parse().ok()?;
    let bits: u32 = bits.parse().ok()?;
    let max = if net.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((net, bits))
}

fn cidr_contains(net: IpAddr, bits: u32, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `UseProxyTests` of golang.org/x/net/http/httpproxy/proxy_test.go,
    /// every host at port 80 as there.
    const GO_NO_PROXY: &str = "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64";
    const GO_USE_PROXY: &[(&str, bool)] = &[
        ("localhost", false),
        ("127.0.0.1", false),
        ("127.0.0.2", false),
        ("[::1]", false),
        ("[::2]", true),
        ("192.168.1.1", false),
        ("192.168.1.2", true),
        ("192.168.1.3", false),
        ("192.168.1.4", true),
        ("10.0.0.2", false),
        ("[2001:db8::52:0:1]", false),
        ("[2001:db8::52:0:2]", true),
        ("[2001:db8::52:0:3]", false),
        ("[2002:db8:a::123]", false),
        ("[fe80::424b:c8be:1643:a1b6]", true),
        ("barbaz.net", true),
        ("www.barbaz.net", false),
        ("foobar.com", false),
        ("www.foobar.com", false),
        ("foofoobar.com", true),
        ("baz.com", true),
        ("localhost.net", true),
        ("local.localhost", true),
        ("barbarbaz.net", true),
        ("wildcard.io", true),
        ("nested.wildcard.io", false),
        ("awildcard.io", true),
    ];

    #[test]
    fn no_proxy_follows_go_httpproxy() {
        for (host, want) in GO_USE_PROXY {
            assert_eq!(
                use_proxy(host, 80, GO_NO_PROXY),
                *want,
                "TestUseProxy {host}"
            );
            // TestAllNoProxy
            assert!(!use_proxy(host, 80, "*"), "TestAllNoProxy {host}");
        }
        // TestInvalidNoProxy: a malformed entry is ignored, not a panic.
        assert!(use_proxy("example.com", 80, ":1"));
        // The NO_PROXY cases of TestProxyForURL (request to port 80).
        for (no_proxy, host, want) in [
            ("example.com", "example.com", false),
            (".example.com", "example.com", true),
            ("ample.com", "example.com", true),
            ("example.com", "foo.example.com", false),
            (".foo.com", "example.com", true),
        ] {
            assert_eq!(use_proxy(host, 80, no_proxy), want, "{no_proxy} {host}");
        }
        // Ports: an entry's port must match; case and spaces do not matter.
        assert!(!use_proxy("api.example.com", 6443, " EXAMPLE.com:6443 "));
        assert!(use_proxy("api.example.com", 443, "example.com:6443"));
        assert!(!use_proxy(
            "kubernetes.default.svc",
            443,
            "svc:443,.cluster.local"
        ));
        assert!(use_proxy("kubernetes.default.svc", 443, "svc:6443"));
        assert!(!use_proxy("kubernetes.default.svc", 443, ".svc"));
        assert!(use_proxy("svc", 443, ".svc"));
        assert!(!use_proxy("svc", 443, "svc"));
        assert!(use_proxy("10.0.0.9", 443, "10.0.0.0/30"));
        assert!(!use_proxy("10.96.0.1", 443, "10.0.0.0/8"));
        assert!(use_proxy("10.96.0.1", 443, "fd00::/8"));
        assert!(use_proxy("anything", 443, ""));
    }

    #[test]
    fn x509_versions() {
        // Headers only: SEQUENCE { SEQUENCE { [0] { INTEGER 2 } ... } }
        let v3 = [
            0x30, 0x09, 0x30, 0x07, 0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x00,
        ];
        assert_eq!(x509_version(&v3), Some(3));
        let v1 = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x07];
        assert_eq!(x509_version(&v1), Some(1));
        // Long-form lengths.
        let v1_long = [0x30, 0x81, 0x07, 0x30, 0x82, 0x00, 0x03, 0x02, 0x01, 0x07];
        assert_eq!(x509_version(&v1_long), Some(1));
        for bad in [
            &[][..],
            &[0x30],
            &[0x30, 0x85, 1, 1, 1, 1, 1],
            &[0x31, 0x00],
        ] {
            assert_eq!(x509_version(bad), None, "{bad:?}");
        }
    }

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
