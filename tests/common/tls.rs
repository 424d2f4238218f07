//! Cluster-access test support: certificates made at run time, a TLS front
//! for the plain-HTTP fake apiserver (optionally demanding a client
//! certificate, and recording what the client sent), an HTTP CONNECT proxy,
//! a capturing logger and a temporary folder.
//!
//! Everything listens on 127.0.0.1 only and stops promptly when dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SignatureAlgorithm,
};
use rustls::crypto::{aws_lc_rs, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{NamedGroup, RootCertStore, ServerConfig, ServerConnection};

/// ECDSA P-256 with SHA-256: the key of every certificate made here unless a
/// test asks for another.
pub const P256: &SignatureAlgorithm = &rcgen::PKCS_ECDSA_P256_SHA256;
/// ECDSA P-521 with SHA-512.
pub const P521: &SignatureAlgorithm = &rcgen::PKCS_ECDSA_P521_SHA512;

/// The folder of the fixture files.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture(name: &str) -> String {
    let p = fixtures().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

// ---------------------------------------------------------------------------
// Certificates

/// The private key of a client certificate, in the PEM form a kubeconfig holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA P-256 made now, PKCS#8 (`BEGIN PRIVATE KEY`).
    EcPkcs8,
    /// The fixture ECDSA P-256 key as SEC1 (`BEGIN EC PRIVATE KEY`).
    EcSec1,
    /// The fixture RSA 2048 key as PKCS#1 (`BEGIN RSA PRIVATE KEY`), as kubeadm writes it.
    /// (ring cannot make RSA keys, hence the fixture.)
    RsaPkcs1,
    /// The same RSA key as PKCS#8.
    RsaPkcs8,
}

/// A certificate and its key.
pub struct Issued {
    pub cert_pem: String,
    /// The key as the client side (kubeconfig) gets it; see [`KeyKind`].
    pub key_pem: String,
    pub cert_der: CertificateDer<'static>,
    /// PKCS#8 DER of the same key, for the server side.
    key_pkcs8: Vec<u8>,
}

impl Issued {
    fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_pkcs8.clone()))
    }
}

/// A certificate authority made at run time (ECDSA P-256).
pub struct Pki {
    pub ca_pem: String,
    pub ca_der: CertificateDer<'static>,
    /// The CA's private key, PEM (for signing with `openssl x509 -req`).
    pub ca_key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        Pki::with_key(name, P256)
    }

    /// A CA whose key is of `alg`.
    pub fn with_key(name: &str, alg: &'static SignatureAlgorithm) -> Pki {
        let key = KeyPair::generate_for(alg).expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("self-signed CA");
        Pki {
            ca_pem: cert.pem(),
            ca_der: cert.der().clone(),
            ca_key_pem: key.serialize_pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for these names: IP addresses become IP SANs,
    /// anything else DNS SANs.
    pub fn server(&self, sans: &[&str]) -> Issued {
        self.server_with_key(sans, P256)
    }

    /// [`Pki::server`] with a key of `alg`.
    pub fn server_with_key(&self, sans: &[&str], alg: &'static SignatureAlgorithm) -> Issued {
        let key = KeyPair::generate_for(alg).expect("server key");
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("SANs");
        params.distinguished_name.push(
            DnType::CommonName,
            sans.first().copied().unwrap_or("server"),
        );
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.issuer).expect("server cert");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_pkcs8: key.serialize_der(),
        }
    }

    /// A client certificate for `cn` with a key of the given kind.
    pub fn client(&self, cn: &str, kind: KeyKind) -> Issued {
        let (key, key_pem) = match kind {
            KeyKind::EcPkcs8 => {
                let k = KeyPair::generate().expect("client key");
                let pem = k.serialize_pem();
                (k, pem)
            }
            KeyKind::EcSec1 => (
                KeyPair::from_pem(&fixture("client-ec.pkcs8.key")).expect("EC fixture"),
                fixture("client-ec.sec1.key"),
            ),
            KeyKind::RsaPkcs1 => (
                KeyPair::from_pem(&fixture("client-rsa.pkcs8.key")).expect("RSA fixture"),
                fixture("client-rsa.pkcs1.key"),
            ),
            KeyKind::RsaPkcs8 => {
                let pem = fixture("client-rsa.pkcs8.key");
                (KeyPair::from_pem(&pem).expect("RSA fixture"), pem)
            }
        };
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.issuer).expect("client cert");
        Issued {
            cert_pem: cert.pem(),
            key_pem,
            cert_der: cert.der().clone(),
            key_pkcs8: key.serialize_der(),
        }
    }
}

/// When a certificate made here is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// rcgen's default: from 1975 to 4096.
    Now,
    /// Through 2020 only.
    Expired,
}

/// A self-signed serving certificate that is also a CA (`CA:TRUE`, as
/// `openssl req -x509` makes one with its default configuration and some
/// installers do), for `sans`; pinned as a cluster's CA, Go trusts it.
pub fn self_signed_ca_server(sans: &[&str], validity: Validity) -> Issued {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("SANs");
    params.distinguished_name.push(
        DnType::CommonName,
        sans.first().copied().unwrap_or("server"),
    );
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    if validity == Validity::Expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2020, 12, 31);
    }
    let cert = params.self_signed(&key).expect("self-signed");
    Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().clone(),
        key_pkcs8: key.serialize_der(),
    }
}

/// A client certificate for `cn` signed with `openssl x509 -req` by the CA
/// in `ca_crt` / `ca_key` (files), as tutorials do: without `-extfile` it is
/// an X.509 **v1** certificate; with `v3` an extension file makes it v3.
/// Files go to `dir`; returns (certificate PEM, key PEM).
pub fn openssl_client_cert(
    dir: &Path,
    ca_crt: &Path,
    ca_key: &Path,
    cn: &str,
    v3: bool,
) -> (String, String) {
    let tag = if v3 { "v3" } else { "v1" };
    let (key, csr, crt, ext) = (
        dir.join(format!("{tag}.key")),
        dir.join(format!("{tag}.csr")),
        dir.join(format!("{tag}.crt")),
        dir.join(format!("{tag}.ext")),
    );
    let run = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl (the tests need it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    run(&[
        &os("req"),
        &os("-newkey"),
        &os("ec"),
        &os("-pkeyopt"),
        &os("ec_paramgen_curve:P-256"),
        &os("-nodes"),
        &os("-keyout"),
        key.as_os_str(),
        &os("-out"),
        csr.as_os_str(),
        &os("-subj"),
        &os(&format!("/CN={cn}/O=system:masters")),
    ]);
    let mut args: Vec<std::ffi::OsString> =
        ["x509", "-req", "-days", "2", "-CAcreateserial", "-in"]
            .iter()
            .map(|s| os(s))
            .collect();
    args.push(csr.clone().into());
    args.extend([
        os("-CA"),
        ca_crt.into(),
        os("-CAkey"),
        ca_key.into(),
        os("-out"),
        crt.clone().into(),
    ]);
    if v3 {
        std::fs::write(&ext, "extendedKeyUsage=clientAuth\n").unwrap();
        args.extend([os("-extfile"), ext.into()]);
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run(&refs);
    (
        std::fs::read_to_string(&crt).unwrap(),
        std::fs::read_to_string(&key).unwrap(),
    )
}

// ---------------------------------------------------------------------------
// Shared plumbing of the two servers

/// Sockets and threads of a test server, so that dropping it stops everything.
#[derive(Default)]
struct Registry {
    stop: AtomicBool,
    sockets: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Registry {
    /// Keeps a clone of `s` to shut down at the end; false (and `s` shut) when stopping.
    fn track(&self, s: &TcpStream) -> bool {
        let mut socks = self.sockets.lock().unwrap();
        if self.stop.load(Ordering::SeqCst) {
            let _ = s.shutdown(Shutdown::Both);
            return false;
        }
        if let Ok(c) = s.try_clone() {
            socks.push(c);
        }
        true
    }

    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) {
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .expect("spawn");
        self.threads.lock().unwrap().push(h);
    }

    /// Stops the accept loop at `addr` and every connection; joins all threads.
    fn shutdown(&self, addr: SocketAddr, accept: Option<JoinHandle<()>>) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(500));
        if let Some(h) = accept {
            let _ = h.join();
        }
        loop {
            for s in self.sockets.lock().unwrap().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
            let threads: Vec<_> = self.threads.lock().unwrap().drain(..).collect();
            if threads.is_empty() {
                return;
            }
            for h in threads {
                let _ = h.join();
            }
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    reg: Arc<Registry>,
    name: &'static str,
    handle: impl Fn(TcpStream) + Send + Sync + 'static,
) -> JoinHandle<()> {
    let handle = Arc::new(handle);
    std::thread::Builder::new()
        .name(format!("{name}-accept"))
        .spawn(move || {
            for s in listener.incoming() {
                if reg.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(s) = s else { continue };
                if !reg.track(&s) {
                    return;
                }
                let h = handle.clone();
                reg.spawn(name, move || h(s));
            }
        })
        .expect("spawn accept thread")
}

// ---------------------------------------------------------------------------
// The TLS front

/// What the front saw.
#[derive(Default)]
struct Seen {
    /// Per connection: the plaintext the client sent (request lines and headers).
    sent: Vec<Vec<u8>>,
    /// Per completed handshake: the client's leaf certificate, if it gave one.
    handshakes: Vec<Option<CertificateDer<'static>>>,
    /// Failed handshakes: rustls's reason.
    errors: Vec<String>,
    /// Per completed handshake: the server name the client sent (SNI).
    sni: Vec<Option<String>>,
    /// Per completed handshake: the protocol ALPN chose.
    alpn: Vec<Option<Vec<u8>>>,
    /// Per completed handshake: the key exchange.
    groups: Vec<Option<NamedGroup>>,
}

/// How the front's TLS differs from aws-lc-rs's defaults.
#[derive(Default, Clone)]
pub struct FrontTls {
    /// The only key exchanges it takes (`None`: the provider's defaults).
    pub kx_groups: Option<Vec<NamedGroup>>,
    /// The ALPN protocols it chooses from, in its order of preference.
    pub alpn: Vec<Vec<u8>>,
}

struct FrontShared {
    reg: Registry,
    seen: Mutex<Seen>,
    cond: Condvar,
}

/// A TLS-terminating proxy on 127.0.0.1 in front of a plain-HTTP backend
/// (the fake apiserver): the stand-in for a real kube-apiserver's TLS.
pub struct TlsFront {
    addr: SocketAddr,
    shared: Arc<FrontShared>,
    accept: Option<JoinHandle<()>>,
}

impl TlsFront {
    /// Serves `server`'s certificate and forwards to `backend` (`http://127.0.0.1:PORT`).
    /// With `client_ca`, a client certificate issued by it is required.
    pub fn start(backend: &str, server: &Issued, client_ca: Option<&Pki>) -> TlsFront {
        TlsFront::start_with(backend, server, client_ca, FrontTls::default())
    }

    /// [`TlsFront::start`] with the TLS of `tls`.
    pub fn start_with(
        backend: &str,
        server: &Issued,
        client_ca: Option<&Pki>,
        tls: FrontTls,
    ) -> TlsFront {
        let backend: SocketAddr = backend
            .strip_prefix("http://")
            .expect("backend is http://")
            .trim_end_matches('/')
            .parse()
            .expect("backend address");
        let mut provider = aws_lc_rs::default_provider();
        if let Some(groups) = &tls.kx_groups {
            provider.kx_groups = aws_lc_rs::ALL_KX_GROUPS
                .iter()
                .copied()
                .filter(|g| groups.contains(&g.name()))
                .collect();
        }
        let provider: Arc<CryptoProvider> = Arc::new(provider);
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                roots.add(ca.ca_der.clone()).unwrap();
                let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .unwrap();
                builder.with_client_cert_verifier(v)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(vec![server.cert_der.clone()], server.key_der())
            .expect("server config");
        config.alpn_protocols = tls.alpn;
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(FrontShared {
            reg: Registry::default(),
            seen: Mutex::new(Seen::default()),
            cond: Condvar::new(),
        });
        let accept = {
            let sh2 = shared.clone();
            std::thread::Builder::new()
                .name("tls-front-accept".into())
                .spawn(move || {
                    for s in listener.incoming() {
                        if sh2.reg.stop.load(Ordering::SeqCst) {
                            return;
                        }
                        let Ok(s) = s else { continue };
                        if !sh2.reg.track(&s) {
                            return;
                        }
                        let (sh3, cfg) = (sh2.clone(), config.clone());
                        sh2.reg
                            .spawn("tls-front", move || serve_tls(sh3, s, cfg, backend));
                    }
                })
                .unwrap()
        };
        TlsFront {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Every value of request header `name` (any case) the clients sent, in order.
    pub fn header_values(&self, name: &str) -> Vec<String> {
        let seen = self.shared.seen.lock().unwrap();
        let mut out = Vec::new();
        for conn in &seen.sent {
            for line in String::from_utf8_lossy(conn).split("\r\n") {
                if let Some((k, v)) = line.split_once(':') {
                    if k.trim().eq_ignore_ascii_case(name) {
                        out.push(v.trim().to_string());
                    }
                }
            }
        }
        out
    }

    /// The request lines (`GET /api/v1/pods?... HTTP/1.1`) that went through.
    pub fn request_lines(&self) -> Vec<String> {
        let seen = self.shared.seen.lock().unwrap();
        let mut out = Vec::new();
        for conn in &seen.sent {
            for line in String::from_utf8_lossy(conn).split("\r\n") {
                if line.starts_with("GET ") {
                    out.push(line.to_string());
                }
            }
        }
        out
    }

    /// The client certificates of the completed handshakes (`None`: none given).
    pub fn handshakes(&self) -> Vec<Option<CertificateDer<'static>>> {
        self.shared.seen.lock().unwrap().handshakes.clone()
    }

    /// The server name (SNI) of each completed handshake; `None`: none sent
    /// (an IP address is never sent as SNI).
    pub fn server_names(&self) -> Vec<Option<String>> {
        self.shared.seen.lock().unwrap().sni.clone()
    }

    /// The protocol ALPN chose in each completed handshake.
    pub fn alpn(&self) -> Vec<Option<Vec<u8>>> {
        self.shared.seen.lock().unwrap().alpn.clone()
    }

    /// The key exchange of each completed handshake.
    pub fn key_exchanges(&self) -> Vec<Option<NamedGroup>> {
        self.shared.seen.lock().unwrap().groups.clone()
    }

    /// Why handshakes failed, as rustls on the server side saw it.
    pub fn handshake_errors(&self) -> Vec<String> {
        self.shared.seen.lock().unwrap().errors.clone()
    }

    /// Waits until at least `n` handshakes have failed; false on timeout.
    pub fn wait_handshake_errors(&self, n: usize, timeout: Duration) -> bool {
        self.wait(timeout, |s| s.errors.len() >= n)
    }

    /// Waits until at least `n` handshakes have completed; false on timeout.
    pub fn wait_handshakes(&self, n: usize, timeout: Duration) -> bool {
        self.wait(timeout, |s| s.handshakes.len() >= n)
    }

    fn wait(&self, timeout: Duration, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut seen = self.shared.seen.lock().unwrap();
        while !done(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            seen = self.shared.cond.wait_timeout(seen, left).unwrap().0;
        }
        true
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.shared.reg.shutdown(self.addr, self.accept.take());
    }
}

/// One client connection: TLS in, plain bytes to the backend and back.
fn serve_tls(sh: Arc<FrontShared>, tcp: TcpStream, config: Arc<ServerConfig>, backend: SocketAddr) {
    let Ok(conn) = ServerConnection::new(config) else {
        return;
    };
    let Ok(writer) = tcp.try_clone() else { return };
    let tls = Arc::new(Mutex::new((conn, writer)));
    let index = {
        let mut seen = sh.seen.lock().unwrap();
        seen.sent.push(Vec::new());
        seen.sent.len() - 1
    };
    let mut reader = tcp;
    let mut up: Option<TcpStream> = None;
    // A handshake failure already recorded.
    let mut failed = false;
    let mut buf = vec![0u8; 32 << 10];
    let mut plain_buf = vec![0u8; 32 << 10];
    'conn: loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut plain = Vec::new();
        let mut closed = false;
        {
            let mut g = tls.lock().unwrap();
            let (conn, w) = &mut *g;
            let mut rd = &buf[..n];
            while !rd.is_empty() {
                if conn.read_tls(&mut rd).is_err() {
                    break 'conn;
                }
                if let Err(e) = conn.process_new_packets() {
                    let _ = conn.write_tls(w);
                    if conn.is_handshaking() {
                        failed = true;
                        sh.seen.lock().unwrap().errors.push(e.to_string());
                        sh.cond.notify_all();
                    }
                    break 'conn;
                }
                loop {
                    match conn.reader().read(&mut plain_buf) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Ok(k) => plain.extend_from_slice(&plain_buf[..k]),
                        Err(_) => break,
                    }
                }
            }
            while conn.wants_write() {
                if conn.write_tls(w).is_err() {
                    break 'conn;
                }
            }
            if up.is_none() && !conn.is_handshaking() {
                let peer = conn.peer_certificates().and_then(|c| c.first().cloned());
                let sni = conn.server_name().map(String::from);
                let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
                let group = conn.negotiated_key_exchange_group().map(|g| g.name());
                {
                    let mut seen = sh.seen.lock().unwrap();
                    seen.handshakes.push(peer);
                    seen.sni.push(sni);
                    seen.alpn.push(alpn);
                    seen.groups.push(group);
                }
                sh.cond.notify_all();
                let Ok(u) = TcpStream::connect(backend) else {
                    break 'conn;
                };
                if !sh.reg.track(&u) {
                    break 'conn;
                }
                let (Ok(u_read), Ok(client)) = (u.try_clone(), reader.try_clone()) else {
                    break 'conn;
                };
                let tls2 = tls.clone();
                sh.reg
                    .spawn("tls-front-down", move || pump_down(tls2, u_read, client));
                up = Some(u);
            }
        }
        if !plain.is_empty() {
            sh.seen.lock().unwrap().sent[index].extend_from_slice(&plain);
            let sent = up.as_mut().is_some_and(|u| u.write_all(&plain).is_ok());
            if !sent {
                break;
            }
        }
        if closed {
            break;
        }
    }
    let _ = reader.shutdown(Shutdown::Both);
    match up {
        Some(u) => {
            let _ = u.shutdown(Shutdown::Both);
        }
        None if !failed => {
            // A client that rejects the server's certificate may just hang up.
            let mut seen = sh.seen.lock().unwrap();
            seen.errors
                .push("connection closed during the handshake".into());
            sh.cond.notify_all();
        }
        None => {}
    }
}

/// Backend bytes to the client, encrypted.
fn pump_down(tls: Arc<Mutex<(ServerConnection, TcpStream)>>, mut up: TcpStream, client: TcpStream) {
    let mut buf = vec![0u8; 32 << 10];
    'pump: loop {
        let n = match up.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut g = tls.lock().unwrap();
        let (conn, w) = &mut *g;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            match conn.writer().write(rest) {
                Ok(k) => rest = &rest[k..],
                Err(_) => break 'pump,
            }
            while conn.wants_write() {
                if conn.write_tls(w).is_err() {
                    break 'pump;
                }
            }
        }
    }
    {
        let mut g = tls.lock().unwrap();
        let (conn, w) = &mut *g;
        conn.send_close_notify();
        let _ = conn.write_tls(w);
    }
    let _ = client.shutdown(Shutdown::Both);
}

// ---------------------------------------------------------------------------
// The CONNECT proxy

#[derive(Default)]
struct ProxySeen {
    /// `host:port` of each CONNECT.
    targets: Vec<String>,
    /// The `Proxy-Authorization` header of each CONNECT, if any.
    auth: Vec<Option<String>>,
}

/// An HTTP CONNECT proxy on 127.0.0.1 that records each target and tunnels
/// to 127.0.0.1 at the target's port, whatever host was asked for (so that
/// names such as `kubernetes.internal` need no DNS).
pub struct ConnectProxy {
    addr: SocketAddr,
    reg: Arc<Registry>,
    seen: Arc<Mutex<ProxySeen>>,
    accept: Option<JoinHandle<()>>,
}

impl ConnectProxy {
    pub fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reg = Arc::new(Registry::default());
        let seen = Arc::new(Mutex::new(ProxySeen::default()));
        let (r, s) = (reg.clone(), seen.clone());
        let accept = accept_loop(listener, reg.clone(), "connect-proxy", move |c| {
            tunnel(&r, &s, c)
        });
        ConnectProxy {
            addr,
            reg,
            seen,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The CONNECT targets asked for, in order.
    pub fn targets(&self) -> Vec<String> {
        self.seen.lock().unwrap().targets.clone()
    }

    /// The `Proxy-Authorization` header of each CONNECT.
    pub fn auth(&self) -> Vec<Option<String>> {
        self.seen.lock().unwrap().auth.clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.reg.shutdown(self.addr, self.accept.take());
    }
}

fn tunnel(reg: &Arc<Registry>, seen: &Mutex<ProxySeen>, mut c: TcpStream) {
    // The request head, byte by byte so nothing after it is consumed.
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut b) {
            Ok(1) if head.len() < 16 << 10 => head.push(b[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
        let _ = c.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let auth = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, v)| v.trim().to_string());
    {
        let mut s = seen.lock().unwrap();
        s.targets.push(target.to_string());
        s.auth.push(auth);
    }
    let port: u16 = match target.rsplit_once(':').and_then(|(_, p)| p.parse().ok()) {
        Some(p) => p,
        None => return,
    };
    let Ok(up) = TcpStream::connect(("127.0.0.1", port)) else {
        let _ = c.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if !reg.track(&up) {
        return;
    }
    if c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let (Ok(mut up_r), Ok(mut c_w)) = (up.try_clone(), c.try_clone()) else {
        return;
    };
    reg.spawn("connect-proxy-down", move || {
        let _ = std::io::copy(&mut up_r, &mut c_w);
        let _ = c_w.shutdown(Shutdown::Both);
    });
    let mut up_w = up;
    let _ = std::io::copy(&mut c, &mut up_w);
    let _ = up_w.shutdown(Shutdown::Both);
}

// ---------------------------------------------------------------------------
// Capturing logger

/// Every log record of the process, as `LEVEL target [thread]: message`.
pub struct CaptureLog {
    lines: Mutex<Vec<String>>,
    cond: Condvar,
}

static CAPTURE: CaptureLog = CaptureLog {
    lines: Mutex::new(Vec::new()),
    cond: Condvar::new(),
};
static INSTALL: Once = Once::new();
/// Set by [`capture_trace`]: trace lines are captured too.
static TRACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl log::Log for CaptureLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Debug || TRACE.load(Ordering::Relaxed)
    }

    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let t = std::thread::current();
        let line = format!(
            "{} {} [{}]: {}",
            r.level(),
            r.target(),
            t.name().unwrap_or("?"),
            r.args()
        );
        self.lines.lock().unwrap().push(line);
        self.cond.notify_all();
    }

    fn flush(&self) {}
}

/// Installs the capturing logger (once per process, at Debug level).
pub fn capture_log() -> &'static CaptureLog {
    INSTALL.call_once(|| {
        log::set_logger(&CAPTURE).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Debug);
    });
    &CAPTURE
}

/// [`capture_log`], from now on at trace level: what a host logging
/// everything gets (ureq-proto's rows of raw bytes included).
pub fn capture_trace() -> &'static CaptureLog {
    let log = capture_log();
    TRACE.store(true, Ordering::Relaxed);
    log::set_max_level(log::LevelFilter::Trace);
    log
}

impl CaptureLog {
    /// All lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Lines so far that contain every one of `parts`.
    pub fn matching(&self, parts: &[&str]) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| parts.iter().all(|p| l.contains(p)))
            .cloned()
            .collect()
    }

    /// Waits for a line containing every one of `parts`.
    pub fn wait_for(&self, parts: &[&str], timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(l) = lines.iter().find(|l| parts.iter().all(|p| l.contains(p))) {
                return Some(l.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            lines = self.cond.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// Lines written by the library and its HTTP stack (not the fake apiserver,
    /// which is the test's server) that contain `secret`.
    /// Also the bytes of ureq-proto's trace rows (16 a row, in hex), joined
    /// per thread: a secret split across rows is found too.
    pub fn leaks(&self, secret: &str) -> Vec<String> {
        let lines = self.lines.lock().unwrap();
        let mut found: Vec<String> = lines
            .iter()
            .filter(|l| !l.contains(" tattler_fakeapi") && l.contains(secret))
            .cloned()
            .collect();
        for (thread, bytes) in wire_rows(&lines) {
            let at = bytes
                .windows(secret.len())
                .position(|w| w == secret.as_bytes());
            if let Some(at) = at {
                let from = at.saturating_sub(40);
                found.push(format!(
                    "ureq_proto rows of [{thread}]: {}",
                    String::from_utf8_lossy(
                        &bytes[from..(at + secret.len() + 40).min(bytes.len())]
                    )
                ));
            }
        }
        found
    }

    /// The bytes ureq-proto logged at trace level, per thread, joined.
    pub fn wire_bytes(&self) -> Vec<(String, Vec<u8>)> {
        wire_rows(&self.lines.lock().unwrap())
    }
}

/// ureq-proto's rows (`TRACE ureq_proto::util [t]: 4745 5420 … GET …`:
/// eight groups of two bytes in hex, `--` past the end, then the text), as
/// an HTTP library that logs its bytes writes them.
pub fn wire_rows(lines: &[String]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for l in lines {
        let Some(rest) = l.strip_prefix("TRACE ureq_proto::util [") else {
            continue;
        };
        let Some((thread, row)) = rest.split_once("]: ") else {
            continue;
        };
        let bytes: Vec<u8> = row
            .split(' ')
            .take(8)
            .flat_map(|g| [g.get(0..2), g.get(2..4)])
            .flatten()
            .filter_map(|h| u8::from_str_radix(h, 16).ok())
            .collect();
        match out.iter_mut().find(|(t, _)| t == thread) {
            Some((_, b)) => b.extend_from_slice(&bytes),
            None => out.push((thread.to_string(), bytes)),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Small helpers

/// A fresh folder under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "tattler-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `name` (folders made as needed) and returns its path as a string.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> String {
        let p = self.0.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p.display().to_string()
    }

    pub fn file(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Standard base64, padded: kubeconfig `*-data` fields.
pub fn b64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The base64 lines of a PEM block (the key material): none may appear in a message.
pub fn pem_lines(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 16)
        .map(String::from)
        .collect()
}
