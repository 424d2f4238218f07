//! How to reach the cluster: the apiserver's URL, whom to trust, who we are
//! and the way there. Filled by hand or from a kubeconfig or the pod's
//! service account; checked without the network by [`Access::validate`].

use std::path::Path;

use crate::access::auth::Auth;
use crate::access::proxy::ProxyConfig;
use crate::access::secret::{ClientIdentity, Token};
use crate::access::url::Url;
use crate::error::Error;

/// client-go's refusal of a CA together with `insecure-skip-tls-verify`.
pub(crate) const INSECURE_WITH_CA: &str =
    "insecure-skip-tls-verify together with a certificate authority is not allowed (client-go: \"specifying a root certificates file with the insecure flag is not allowed\"); drop one";

/// How to reach the cluster: the part of a [`Config`](crate::Config) that a
/// kubeconfig context or an in-cluster service account gives (kube-rs keeps
/// it apart as `kube::Config`).
///
/// ```
/// let access = kube_tattler::Access::new("https://10.0.0.1:6443").token("…");
/// assert_eq!(access.server, "https://10.0.0.1:6443");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Access {
    /// The apiserver's URL, `https://host:port`. Plain `http://` is accepted
    /// only for loopback addresses (tests, a local proxy), with a warning.
    pub server: String,
    /// PEM bundle of the CA certificates to trust; `None` trusts the system's
    /// trust store, as kubectl does. Not allowed with `insecure_skip_tls_verify`.
    pub ca_pem: Option<Vec<u8>>,
    /// Check the server's certificate for this name instead of the URL's host,
    /// and send it as SNI (kubeconfig `tls-server-name`). The URL, the `Host`
    /// header and a proxy's `CONNECT` still name the server.
    pub tls_server_name: Option<String>,
    /// How requests authenticate: a token, a token file, basic auth or an exec plugin.
    pub auth: Auth,
    /// A client certificate and key for TLS client authentication.
    pub client_identity: Option<ClientIdentity>,
    /// Which proxy to use: HTTP CONNECT (`http://`, `https://`) or SOCKS5
    /// (`socks5://`, `socks5h://`). Default: `HTTPS_PROXY` with `NO_PROXY`
    /// honoured, as Go reads them (`ALL_PROXY` is not read); loopback
    /// servers are never proxied.
    pub proxy: ProxyConfig,
    /// Skip TLS certificate verification. Never on by default; logs a warning;
    /// refused together with `ca_pem`, as client-go refuses it.
    pub insecure_skip_tls_verify: bool,
    /// The namespace of the kubeconfig context or of the pod's service account,
    /// for the caller's use: tattler watches the namespaces each
    /// [`ResourceSpec`](crate::ResourceSpec) names (all of them by default).
    pub namespace: Option<String>,
    /// Where this came from, for logs (`explicit`, `kubeconfig …`, `in-cluster …`).
    pub source: String,
}

/// As derived, with the server URL's userinfo redacted (a user may put a
/// password there, which `Access::validate` then refuses).
impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field(
                "server",
                &crate::access::secret::redact_userinfo(&self.server),
            )
            .field("ca_pem", &self.ca_pem)
            .field("tls_server_name", &self.tls_server_name)
            .field("auth", &self.auth)
            .field("client_identity", &self.client_identity)
            .field("proxy", &self.proxy)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("namespace", &self.namespace)
            .field("source", &self.source)
            .finish()
    }
}

impl Access {
    /// Access to `server` with no credentials, the system's trust store and
    /// the proxy from the environment. The URL is checked by
    /// [`Reader::open`](crate::Reader::open).
    ///
    /// ```
    /// let url = String::from("https://10.0.0.1:6443");
    /// let access = kube_tattler::Access::new(url).token("…");
    /// assert_eq!(access.source, "explicit");
    /// ```
    #[must_use]
    pub fn new(server: impl Into<String>) -> Self {
        Access {
            server: server.into(),
            ca_pem: None,
            tls_server_name: None,
            auth: Auth::None,
            client_identity: None,
            proxy: ProxyConfig::FromEnv,
            insecure_skip_tls_verify: false,
            namespace: None,
            source: "explicit".into(),
        }
    }

    /// Reads the CA bundle (PEM) to trust from a file, now.
    ///
    /// ```no_run
    /// use std::path::PathBuf;
    /// let ca = PathBuf::from("/etc/kubernetes/pki/ca.crt");
    /// let access = kube_tattler::Access::new("https://10.0.0.1:6443").ca_file(&ca)?;
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ReadFile`] when the file cannot be read. Its contents are
    /// checked by [`Reader::open`](crate::Reader::open).
    pub fn ca_file(mut self, path: impl AsRef<Path>) -> Result<Self, Error> {
        self.ca_pem = Some(read_file(path.as_ref())?);
        Ok(self)
    }

    /// Authenticates with a fixed bearer token (white space around it is
    /// dropped).
    ///
    /// ```
    /// let token = std::env::var("TOKEN").unwrap_or_default();
    /// let access = kube_tattler::Access::new("https://10.0.0.1:6443").token(token);
    /// ```
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.auth = Auth::Token(Token::new(token));
        self
    }

    /// Authenticates with the bearer token in a file, re-read at least once a
    /// minute and after a 401 (rotating service-account tokens). The file must
    /// be readable now.
    ///
    /// ```no_run
    /// let access = kube_tattler::Access::new("https://10.0.0.1:6443")
    ///     .token_file("/var/run/secrets/kubernetes.io/serviceaccount/token")?;
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ReadFile`] when the file cannot be read now.
    pub fn token_file(mut self, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        read_file(path)?;
        self.auth = Auth::TokenFile(path.to_path_buf());
        Ok(self)
    }

    /// Checks what can be checked without the network.
    pub(crate) fn validate(&self) -> Result<ServerUrl, Error> {
        match &self.auth {
            Auth::Token(t)
                if t.expose().is_empty() || t.expose().bytes().any(|b| b.is_ascii_control()) =>
            {
                return Err(Error::Config(
                    "token is empty or has control characters".into(),
                ));
            }
            Auth::Exec(e) => e.check().map_err(Error::Config)?,
            _ => {}
        }
        if self.insecure_skip_tls_verify && self.ca_pem.is_some() {
            return Err(Error::Config(INSECURE_WITH_CA.into()));
        }
        ServerUrl::parse(&self.server)
    }
}

/// The server URL, checked.
#[derive(Debug, Clone)]
pub(crate) struct ServerUrl {
    /// Scheme, host and port, without a trailing slash.
    pub base: String,
    pub https: bool,
}

impl ServerUrl {
    /// Reads the URL as Go's `net/url` does (kubectl would refuse what this
    /// refuses), then what tattler allows: https, or http to loopback; no
    /// credentials, query or fragment. Errors name the part, and show the
    /// URL only once it parsed, with its userinfo redacted.
    pub(crate) fn parse(server: &str) -> Result<ServerUrl, Error> {
        let u = Url::parse(server).map_err(|e| Error::Config(format!("server: not a URL: {e}")))?;
        let shown = u.redacted();
        let bad = |why: &str| Error::Config(format!("server {shown:?}: {why}"));
        let https = match u.scheme.as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(bad("the scheme must be https (or http for loopback)")),
        };
        if u.userinfo.is_some() {
            return Err(bad("credentials in the URL are not supported"));
        }
        if u.at_after_authority() {
            // Go reads `https://user:123/pw@h` as host `user`; never send a
            // token there.
            return Err(Error::Config(
                "server: an '@' follows the host: credentials in the URL are not supported (a password's '/' ends the host)".into(),
            ));
        }
        if u.query.is_some() {
            return Err(bad("a query string is not allowed"));
        }
        if u.fragment.is_some() {
            return Err(bad("a fragment is not allowed"));
        }
        let port = u.port_number().map_err(|e| bad(&e.to_string()))?;
        // The base is sent as an HTTP request target: visible ASCII only.
        if !u.host.is_ascii() {
            return Err(bad("the host must be ASCII (its punycode form)"));
        }
        if !u.path.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad(
                "the path must percent-encode spaces and non-ASCII characters",
            ));
        }
        if !https {
            if !is_loopback(u.host) {
                return Err(bad("plain http is only allowed to a loopback address"));
            }
            log::warn!("talking plain http to {}: no TLS", u.host);
        }
        let port = port.map(|p| format!(":{p}")).unwrap_or_default();
        Ok(ServerUrl {
            base: format!(
                "{}://{}{port}{}",
                u.scheme,
                u.host,
                u.path.trim_end_matches('/')
            ),
            https,
        })
    }
}

pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls() {
        let u = ServerUrl::parse("https://10.0.0.1:6443/").unwrap();
        assert_eq!((u.base.as_str(), u.https), ("https://10.0.0.1:6443", true));
        let u = ServerUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((u.base.as_str(), u.https), ("http://127.0.0.1:8080", false));
        assert!(ServerUrl::parse("http://[::1]:80").is_ok());
        assert_eq!(
            ServerUrl::parse("https://h.example/prefix/").unwrap().base,
            "https://h.example/prefix"
        );
        for (bad, why) in [
            ("http://10.0.0.1:8080", "loopback"),
            ("ftp://x", "scheme"),
            ("https://h?x=1", "query"),
            ("https://h#f", "fragment"),
            ("https://h:70000", "port"),
        ] {
            let e = ServerUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(bad), "{e}");
        }
        // Malformed: the part is named, the text is not quoted.
        for (bad, why) in [
            ("not a url", "not a URL: missing protocol scheme"),
            ("https://h:notaport", "invalid port"),
            ("https://user:pw/s3cr3t@h", "invalid port"),
            ("https://user:pw s3cr3t@h", "invalid userinfo"),
            ("https://user:123/s3cr3t@h", "'@' follows the host"),
            ("https://h/a b", "percent-encode"),
        ] {
            let e = ServerUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("s3cr3t") && !e.contains("notaport"), "{e}");
        }
        let u = ServerUrl::parse("HTTPS://[::1]:6443").unwrap();
        assert_eq!(u.base, "https://[::1]:6443");
        let e = ServerUrl::parse("https://u:pw-s3cr3t@h")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("credentials")
                && e.contains("https://[redacted]@h")
                && !e.contains("s3cr3t"),
            "{e}"
        );
    }

    #[test]
    fn debug_never_shows_url_credentials() {
        for url in [
            "http://u:s3cr3t@proxy:3128",
            "http://u:pa/s3cr3t@proxy:3128",
        ] {
            let d = format!("{:?}", ProxyConfig::Url(url.into()));
            assert!(!d.contains("s3cr3t"), "{d}");
            let mut a = Access::new(url.replace("http:", "https:"));
            a.proxy = ProxyConfig::Url(url.into());
            let d = format!("{a:?}");
            assert!(
                !d.contains("s3cr3t") && d.contains("[redacted]@proxy:3128"),
                "{d}"
            );
        }
    }

    #[test]
    fn token_debug_is_redacted() {
        let a = Access::new("https://h").token("s3cr3t\n");
        assert!(!format!("{a:?}").contains("s3cr3t"));
        assert_eq!(a.auth, Auth::Token(Token::new("s3cr3t")));
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let e = Access::new("h")
            .ca_file("/nonexistent/ca.crt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/ca.crt"), "{e}");
    }
}
