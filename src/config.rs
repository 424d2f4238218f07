//! How to reach the cluster and what to stream from it.

use std::time::Duration;

use crate::access::auth::Auth;
use crate::access::proxy::ProxyConfig;
use crate::access::secret::{ClientIdentity, Token};
use crate::{Error, ResourceSpec};

/// client-go's refusal of a CA together with `insecure-skip-tls-verify`.
pub(crate) const INSECURE_WITH_CA: &str =
    "insecure-skip-tls-verify together with a certificate authority is not allowed (client-go: \"specifying a root certificates file with the insecure flag is not allowed\"); drop one";

/// Retry pacing for a failing stream: exponential with full jitter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay's upper bound.
    pub initial: Duration,
    /// No delay is longer than this.
    pub max: Duration,
    /// A stream healthy for this long starts again from `initial`.
    pub reset_after: Duration,
}

impl Backoff {
    /// The upper bound of the delay after `n` failures in a row:
    /// `initial · 2^(n-1)`, at most `max`.
    pub(crate) fn cap(&self, n: u32) -> Duration {
        self.initial
            .saturating_mul(
                1u32.checked_shl(n.saturating_sub(1).min(20))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Everything [`Reader::open`](crate::Reader::open) needs.
///
/// Start from [`Config::new`] and set what differs from the defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
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
    /// Which HTTP proxy to use. Default: `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY`
    /// with `NO_PROXY` honoured; loopback servers are never proxied.
    pub proxy: ProxyConfig,
    /// Skip TLS certificate verification. Never on by default; logs a warning;
    /// refused together with `ca_pem`, as client-go refuses it.
    pub insecure_skip_tls_verify: bool,
    /// The namespace of the kubeconfig context or of the pod's service account,
    /// for the caller's use: tattler watches the namespaces each
    /// [`ResourceSpec`] names (all of them by default).
    pub namespace: Option<String>,
    /// Where this configuration came from, for logs (`explicit`, `kubeconfig …`, `in-cluster …`).
    pub source: String,
    /// The resources to stream, one thread each.
    pub resources: Vec<ResourceSpec>,
    /// Capacity of the output channel; a full channel slows the streams down,
    /// it never drops an entry. Default 1024.
    pub channel_capacity: usize,
    /// A stream that receives no byte (bookmarks included) for this long is
    /// taken as dead and reconnected. Default 150 s: the server bookmarks a
    /// watch about once a minute, so a dead peer is noticed within about two
    /// bookmark intervals (TCP keepalive probes, every connection's, usually
    /// notice it sooner).
    pub idle_timeout: Duration,
    /// Limit on establishing a TCP connection. Default 5 s. A thread in the
    /// middle of a connect finishes it before [`Reader::close`](crate::Reader::close)
    /// can join it, so this also bounds how long a close can take.
    pub connect_timeout: Duration,
    /// During a watch-list's initial state, a stream that receives nothing
    /// for this long without the initial-events-end bookmark takes the
    /// server to ignore `sendInitialEvents` (some aggregated servers and
    /// fakes do) and falls back to LIST + WATCH. Default 30 s.
    pub initial_events_timeout: Duration,
    /// At most this many bytes of objects wait in the output channel; a
    /// stream with more to send waits for the consumer (an object larger than
    /// this still goes, alone). With `channel_capacity`, and per stream
    /// `max_frame_bytes` plus a batch of at most 1 MiB, this bounds the memory
    /// tattler holds for a slow consumer. Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// Ask the server for gzip-compressed bodies. Off by default: it costs the
    /// apiserver CPU and saves bandwidth only off-host.
    pub gzip: bool,
    /// Objects per page when the server has no watch-list and tattler falls
    /// back to paged LIST + WATCH. Default 500.
    pub page_size: u32,
    /// A single object (one watch frame or list page item) larger than this is
    /// not buffered: it is reported as an Error entry and skipped. Default 64 MiB.
    pub max_frame_bytes: usize,
    /// Retry pacing.
    pub backoff: Backoff,
    /// Relist every resource this often by swapping in a fresh stream (off by
    /// default; 1 minute to 7 days). The new stream syncs while the old one
    /// runs on; unchanged objects come out as Snapshot, changed ones as
    /// Update, vanished ones as inferred Delete, then Synced.
    pub relist_interval: Option<Duration>,
    /// Secret scrubbing (on by default), managedFields, event filtering and a
    /// transform hook, applied before an entry enters the output channel.
    pub shaping: crate::Shaping,
    /// How often the resources of a wildcard (`"*"`, `"*.apps"`) are looked
    /// for again through discovery: a CRD established meanwhile gets a
    /// stream, one deleted loses its. Default 5 minutes (two requests each
    /// time).
    pub discovery_interval: Duration,
    /// Resume from a [`Checkpoint`](crate::Checkpoint) of an earlier reader.
    /// Each resource it holds (same group, version, resource, namespace,
    /// selectors and metadata-only) starts from it: a Synced entry at once,
    /// then a watch from its resourceVersion — only what changed meanwhile,
    /// deletes included. When the server no longer has that version, a
    /// re-sync against the restored state follows (unchanged objects as
    /// Snapshot, vanished ones as inferred Delete, then Synced). Other
    /// resources sync as usual.
    pub resume: Option<crate::Checkpoint>,
}

impl Config {
    /// A configuration for `server` with every other field at its default.
    #[must_use]
    pub fn new(server: &str) -> Self {
        Config {
            server: server.to_string(),
            ca_pem: None,
            tls_server_name: None,
            auth: Auth::None,
            client_identity: None,
            proxy: ProxyConfig::FromEnv,
            insecure_skip_tls_verify: false,
            namespace: None,
            source: "explicit".into(),
            resources: Vec::new(),
            channel_capacity: 1024,
            idle_timeout: Duration::from_secs(150),
            connect_timeout: Duration::from_secs(5),
            initial_events_timeout: Duration::from_secs(30),
            max_buffered_bytes: 64 << 20,
            gzip: false,
            page_size: 500,
            max_frame_bytes: 64 << 20,
            backoff: Backoff::default(),
            relist_interval: None,
            shaping: crate::Shaping::default(),
            resume: None,
            discovery_interval: Duration::from_secs(300),
        }
    }

    /// Adds resources by name, as [`ResourceSpec::parse`] reads them.
    pub fn watch(mut self, names: &[&str]) -> Result<Self, Error> {
        for name in names {
            self.resources.extend(ResourceSpec::parse(name)?);
        }
        Ok(self)
    }

    /// Reads the CA bundle from a file.
    pub fn ca_file(mut self, path: &str) -> Result<Self, Error> {
        self.ca_pem = Some(read_file(path)?);
        Ok(self)
    }

    /// Authenticates with a fixed bearer token.
    #[must_use]
    pub fn token(mut self, token: &str) -> Self {
        self.auth = Auth::Token(Token::new(token));
        self
    }

    /// Authenticates with the bearer token in a file, re-read at least once a
    /// minute and after a 401 (rotating service-account tokens). The file must
    /// be readable now.
    pub fn token_file(mut self, path: &str) -> Result<Self, Error> {
        read_file(path)?;
        self.auth = Auth::TokenFile(path.into());
        Ok(self)
    }

    /// Checks what can be checked without the network.
    pub(crate) fn validate(&self) -> Result<ServerUrl, Error> {
        if self.resources.is_empty() {
            return Err(Error::Config("resources: nothing to watch".into()));
        }
        if self.channel_capacity == 0 {
            return Err(Error::Config("channel_capacity must be at least 1".into()));
        }
        if self.idle_timeout < Duration::from_secs(1) {
            return Err(Error::Config("idle_timeout must be at least 1 s".into()));
        }
        if self.initial_events_timeout < Duration::from_millis(100) {
            return Err(Error::Config(
                "initial_events_timeout must be at least 100 ms".into(),
            ));
        }
        if self.discovery_interval < Duration::from_secs(1) {
            return Err(Error::Config(
                "discovery_interval must be at least 1 s".into(),
            ));
        }
        if self.max_buffered_bytes == 0 {
            return Err(Error::Config(
                "max_buffered_bytes must be at least 1".into(),
            ));
        }
        if self.page_size == 0 {
            return Err(Error::Config("page_size must be at least 1".into()));
        }
        if let Some(r) = self.relist_interval {
            if r < Duration::from_secs(60) || r > Duration::from_secs(7 * 86_400) {
                return Err(Error::Config(
                    "relist_interval must be between 1 minute and 7 days".into(),
                ));
            }
        }
        if self.backoff.initial.is_zero() || self.backoff.max < self.backoff.initial {
            return Err(Error::Config("backoff: need 0 < initial <= max".into()));
        }
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
    pub(crate) fn parse(server: &str) -> Result<ServerUrl, Error> {
        let shown = crate::access::secret::redact_userinfo(server);
        let bad = |why: &str| Error::Config(format!("server {shown:?}: {why}"));
        let uri: ureq::http::Uri = server.parse().map_err(|_| bad("not a URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad("the scheme must be https (or http for loopback)")),
        };
        let host = uri.host().ok_or_else(|| bad("no host"))?;
        if !https {
            if !is_loopback(host) {
                return Err(bad("plain http is only allowed to a loopback address"));
            }
            log::warn!("talking plain http to {host}: no TLS");
        }
        let path = uri.path().trim_end_matches('/');
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("credentials in the URL are not supported"));
        }
        if uri.query().is_some() {
            return Err(bad("a query string is not allowed"));
        }
        Ok(ServerUrl {
            base: format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or("https"),
                authority,
                path
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

fn read_file(path: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::ReadFile {
        path: path.to_string(),
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
            ("not a url", "not a URL"),
        ] {
            let e = ServerUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(bad), "{e}");
        }
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
    fn proxy_credentials_are_redacted() {
        assert_eq!(
            crate::access::secret::redact_userinfo("http://u:p@h:3128/x"),
            "http://[redacted]@h:3128/x"
        );
        assert_eq!(crate::access::secret::redact_userinfo("h:3128"), "h:3128");
        let d = format!(
            "{:?}",
            ProxyConfig::Url("http://u:s3cr3t@proxy:3128".into())
        );
        assert!(!d.contains("s3cr3t"), "{d}");
    }

    #[test]
    fn token_debug_is_redacted() {
        let c = Config::new("https://h").token("s3cr3t\n");
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert_eq!(c.auth, Auth::Token(Token::new("s3cr3t")));
    }

    #[test]
    fn validation_names_the_field() {
        let c = Config::new("https://h");
        assert!(c.validate().unwrap_err().to_string().contains("resources"));
        let mut c = Config::new("https://h").watch(&["pods"]).unwrap();
        c.channel_capacity = 0;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("channel_capacity"));
        let e = Config::new("h")
            .ca_file("/nonexistent/ca.crt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/ca.crt"), "{e}");
    }
}
