//! The HTTP client side: TLS roots and client identity, proxy, server-name
//! override, and one ureq agent per stream that the reader can shut down.

use parking_lot::Mutex;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use ureq::Agent;

use crate::auth::{ClientIdentity, Credentials, Current};
use crate::config::{ProxyConfig, ServerUrl};
use crate::{Config, Error};

/// Everything needed to make an agent, checked once at open.
pub(crate) struct Transport {
    /// The URL requests go to (its host is the TLS server name when overridden).
    pub base: String,
    pub credentials: Credentials,
    proxy: Option<ureq::Proxy>,
    accept_encoding: &'static str,
    connect_timeout: std::time::Duration,
    idle_timeout: std::time::Duration,
    roots: Option<Vec<Certificate<'static>>>,
    insecure: bool,
    identity: Option<ClientCert>,
    rename: Option<Rename>,
}

/// Requests go to `name` (checked against the certificate) but connect to `host`.
#[derive(Debug, Clone)]
struct Rename {
    name: String,
    real: ureq::http::Uri,
}

impl Transport {
    pub(crate) fn new(config: &Config, server: &ServerUrl) -> Result<Transport, Error> {
        let roots = match &config.ca_pem {
            Some(pem) => {
                Some(certificates(pem).map_err(|e| Error::Tls(format!("CA bundle: {e}")))?)
            }
            None => None,
        };
        let identity = match &config.client_identity {
            Some(id) => Some(client_cert(id).map_err(Error::Tls)?),
            None => None,
        };
        let uri: ureq::http::Uri = server
            .base
            .parse()
            .map_err(|_| Error::Config("server: not a URL".into()))?;
        let host = uri.host().unwrap_or_default().to_string();
        let (base, rename) = match config.tls_server_name.as_deref() {
            Some(name) if name != host && server.https => {
                let port = uri.port_u16().unwrap_or(443);
                let real: ureq::http::Uri = format!(
                    "https://{}:{port}/",
                    uri.authority().expect("checked").host()
                )
                .parse()
                .map_err(|_| Error::Config("server: not a URL".into()))?;
                let base = server.base.replacen(
                    uri.authority().expect("checked").as_str(),
                    &format!("{name}:{port}"),
                    1,
                );
                (
                    base,
                    Some(Rename {
                        name: name.to_string(),
                        real,
                    }),
                )
            }
            _ => (server.base.clone(), None),
        };
        if config.insecure_skip_tls_verify && server.https {
            log::warn!("TLS certificate verification is OFF (insecure_skip_tls_verify)");
        }
        Ok(Transport {
            base,
            credentials: Credentials::new(config.auth.clone()),
            proxy: proxy(&config.proxy, &host, server.https)?,
            accept_encoding: if config.gzip { "gzip" } else { "identity" },
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            roots,
            insecure: config.insecure_skip_tls_verify,
            identity,
            rename,
        })
    }

    /// A fresh agent; `identity` (from an exec plugin) replaces the configured one.
    fn agent(&self, identity: Option<&ClientIdentity>) -> Result<Agent, String> {
        let mut tls = TlsConfig::builder().disable_verification(self.insecure);
        if let Some(roots) = &self.roots {
            tls = tls.root_certs(RootCerts::new_with_certs(roots));
        }
        let cert = match identity {
            Some(id) => Some(client_cert(id)?),
            None => self.identity.clone(),
        };
        tls = tls.client_cert(cert);
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
            .tls_config(tls.build())
            .build();
        Ok(match &self.rename {
            Some(r) => Agent::with_parts(
                http,
                DefaultConnector::new(),
                RenameResolver(r.clone(), DefaultResolver::default()),
            ),
            None => Agent::new_with_config(http),
        })
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

#[derive(Debug)]
struct RenameResolver(Rename, DefaultResolver);

impl Resolver for RenameResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if uri.host() == Some(self.0.name.as_str()) {
            self.1.resolve(&self.0.real, config, timeout)
        } else {
            self.1.resolve(uri, config, timeout)
        }
    }
}

pub(crate) fn certificates(pem: &[u8]) -> Result<Vec<Certificate<'static>>, String> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        if let PemItem::Certificate(c) = item.map_err(|e| format!("not valid PEM: {e}"))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(certs)
}

fn client_cert(id: &ClientIdentity) -> Result<ClientCert, String> {
    let chain = certificates(&id.cert_pem).map_err(|e| format!("client certificate: {e}"))?;
    // The key's parse error is not quoted: it could echo key material.
    let bad_key = || "client key: not a PEM RSA, EC or PKCS#8 private key".to_string();
    let key = PrivateKey::from_pem(&id.key_pem).map_err(|_| bad_key())?;
    // PEM parsing does not look inside the key; rustls would refuse it only
    // at the first handshake (a panic inside ureq). Check it now.
    let der =
        rustls::pki_types::PrivateKeyDer::try_from(key.der().to_vec()).map_err(|_| bad_key())?;
    rustls::crypto::ring::sign::any_supported_type(&der).map_err(|_| bad_key())?;
    Ok(ClientCert::new_with_certs(&chain, key))
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

fn proxy(setting: &ProxyConfig, host: &str, https: bool) -> Result<Option<ureq::Proxy>, Error> {
    let loopback = crate::config::is_loopback(host);
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
            if no_proxy_matches(host, &var(&["NO_PROXY", "no_proxy"]).unwrap_or_default()) {
                return Ok(None);
            }
            // The scheme's own variable first, then ALL_PROXY, as curl and Go do.
            let own: &[&str] = if https {
                &["HTTPS_PROXY", "https_proxy"]
            } else {
                &["HTTP_PROXY", "http_proxy"]
            };
            match var(own).or_else(|| var(&["ALL_PROXY", "all_proxy"])) {
                Some(u) => http_proxy("the proxy from the environment", &u).map(Some),
                None => Ok(None),
            }
        }
    }
}

/// Whether `host` is exempt from proxying under a `NO_PROXY` list: `*`,
/// exact hosts or IPs, domain suffixes (`example.com`, `.example.com`) and
/// IPv4/IPv6 CIDR ranges (`10.0.0.0/8`).
pub(crate) fn no_proxy_matches(host: &str, no_proxy: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip: Option<std::net::IpAddr> = host.parse().ok();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            let entry = entry.to_ascii_lowercase();
            if entry == "*" {
                return true;
            }
            if let (Some(ip), Some((net, bits))) = (ip, entry.split_once('/')) {
                return cidr_contains(net, bits, ip);
            }
            // A port in the entry ("host:443") is ignored: the host decides.
            let name = match entry.rsplit_once(':') {
                Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !h.contains(':') => {
                    h.to_string()
                }
                _ => entry.clone(),
            };
            let name = name.trim_start_matches('[').trim_end_matches(']');
            let suffix = name.trim_start_matches('.');
            host == suffix || host.ends_with(&format!(".{suffix}"))
        })
}

fn cidr_contains(net: &str, bits: &str, ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_rules() {
        let list = "localhost, .svc,example.com:443,10.0.0.0/8, fd00::/8, 192.168.1.5";
        for (host, exempt) in [
            ("kubernetes.default.svc", true),
            ("svc", true),
            ("api.example.com", true),
            ("example.com", true),
            ("badexample.com", false),
            ("10.96.0.1", true),
            ("11.0.0.1", false),
            ("[fd00::1]", true),
            ("192.168.1.5", true),
            ("192.168.1.6", false),
            ("LOCALHOST", true),
        ] {
            assert_eq!(no_proxy_matches(host, list), exempt, "{host}");
        }
        assert!(no_proxy_matches("anything", "*"));
        assert!(!no_proxy_matches("anything", ""));
    }
}
