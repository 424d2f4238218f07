//! Which proxy a request goes through: the configured one, or the
//! environment's (`HTTPS_PROXY`) unless `NO_PROXY` says otherwise, with the
//! rules of Go's `golang.org/x/net/http/httpproxy`, which kubectl uses. Like
//! Go, tattler reads no `ALL_PROXY` (curl's): a variable kubectl ignores
//! must not send tattler elsewhere.

use std::fmt;
use std::net::IpAddr;

use super::secret::{redact_userinfo, Token};
use super::url::Url;
use crate::error::Error;

/// Which proxy requests go through: an HTTP CONNECT proxy (`http://`,
/// `https://`) or a SOCKS5 one (`socks5://`, `socks5h://`), as kubectl
/// reaches them.
///
/// ```
/// use kube_tattler::{Access, ProxyConfig};
/// let mut access = Access::new("https://10.0.0.1:6443");
/// access.proxy = ProxyConfig::Url("http://user:pw@proxy.internal:3128".into());
/// assert!(format!("{:?}", access.proxy).contains("[redacted]@proxy.internal:3128"));
/// access.proxy = ProxyConfig::None;
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProxyConfig {
    /// `HTTPS_PROXY` (or `https_proxy`), as Go's `ProxyFromEnvironment`
    /// reads it for an https server, skipped for hosts matching `NO_PROXY`
    /// (or `no_proxy`: hosts, domain suffixes, IPs, CIDR ranges, `*`) and
    /// for loopback servers. `ALL_PROXY` is not read (Go does not); a plain
    /// http server (loopback only) is never proxied.
    #[default]
    FromEnv,
    /// Never a proxy.
    None,
    /// This proxy, as kubeconfig `proxy-url`: an HTTP CONNECT proxy
    /// (`http://[user:password@]host[:port]`, `https://…`) or a SOCKS5 one
    /// (`socks5://[user:password@]host[:port]`, port 1080 by default, with
    /// RFC 1929 username/password when given; `socks5h://` is the same:
    /// like Go, tattler sends the server's name to a SOCKS5 proxy and
    /// never resolves it itself).
    Url(String),
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyConfig::FromEnv => f.write_str("FromEnv"),
            ProxyConfig::None => f.write_str("None"),
            ProxyConfig::Url(u) => f.debug_tuple("Url").field(&redact_userinfo(u)).finish(),
        }
    }
}

/// How tattler talks to a proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProxyKind {
    /// HTTP CONNECT over plain TCP (`http://`).
    Http,
    /// HTTP CONNECT over TLS (`https://`), the proxy checked for its own name.
    Https,
    /// SOCKS5 (`socks5://`, `socks5h://`: the same on the wire, see
    /// `access::socks`).
    Socks5,
}

/// A proxy that tunnels to the server: by CONNECT or by SOCKS5.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Proxy {
    /// How it is spoken to.
    pub kind: ProxyKind,
    /// The URL's scheme, for messages.
    scheme: &'static str,
    /// The host, without brackets.
    pub host: String,
    /// The port (80 for http, 443 for https unless the URL says).
    pub port: u16,
    /// The user name and password, decoded once (Go's `url.User`); never
    /// shown (`Debug` says `[redacted]`).
    user: Option<(String, Option<String>)>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.scheme;
        let user = if self.user.is_some() {
            "[redacted]@"
        } else {
            ""
        };
        write!(f, "Proxy({scheme}://{user}{}:{})", self.host, self.port)
    }
}

impl Proxy {
    /// The user name and password for a SOCKS5 proxy's RFC 1929
    /// sub-negotiation (a missing password is empty, as Go's).
    pub(crate) fn socks_user(&self) -> Option<(&str, &str)> {
        let (name, password) = self.user.as_ref()?;
        Some((name, password.as_deref().unwrap_or_default()))
    }

    /// The `Proxy-Authorization` value its credentials give (basic auth).
    pub(crate) fn authorization(&self) -> Option<Token> {
        let (name, password) = self.user.as_ref()?;
        let pair = format!("{name}:{}", password.as_deref().unwrap_or_default());
        Some(Token::new(format!(
            "Basic {}",
            crate::access::go_base64::base64_encode(pair.as_bytes())
        )))
    }
}

/// A proxy URL read as Go's httpproxy reads it (`net/url`, `http://` put
/// in front of a bare `host:port`); errors name `what` and the malformed
/// part, and show the URL only with its userinfo redacted.
fn parse_proxy(what: &str, text: &str) -> Result<Proxy, Error> {
    let text = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let u =
        Url::parse(&text).map_err(|e| Error::Config(format!("{what}: not a proxy URL: {e}")))?;
    let bad = |why: &str| Error::Config(format!("{what} {:?}: {why}", u.redacted()));
    let (kind, scheme, default_port) = match u.scheme.as_str() {
        "http" => (ProxyKind::Http, "http", 80),
        "https" => (ProxyKind::Https, "https", 443),
        "socks5" => (ProxyKind::Socks5, "socks5", 1080),
        "socks5h" => (ProxyKind::Socks5, "socks5h", 1080),
        _ => {
            return Err(bad(
                "only http://, https://, socks5:// and socks5h:// proxies are supported",
            ))
        }
    };
    if u.at_after_authority() {
        return Err(Error::Config(format!(
            "{what}: an '@' follows the host: a password's '/', '?' or '#' must be percent-encoded"
        )));
    }
    let host = u.host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || !host.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("not a proxy URL"));
    }
    let port = u
        .port_number()
        .map_err(|e| bad(&e.to_string()))?
        .unwrap_or(default_port);
    let utf8 = |b: Vec<u8>| {
        String::from_utf8(b).map_err(|_| bad("the user name and password must be UTF-8"))
    };
    let user = match u.username() {
        Some(name) => Some((utf8(name)?, u.password().map(utf8).transpose()?)),
        None => None,
    };
    Ok(Proxy {
        kind,
        scheme,
        host: host.to_string(),
        port,
        user,
    })
}

/// The proxy for an https server at `host:port` (bare host, no brackets).
pub(crate) fn proxy(setting: &ProxyConfig, host: &str, port: u16) -> Result<Option<Proxy>, Error> {
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match setting {
        ProxyConfig::None => Ok(None),
        _ if loopback => Ok(None),
        ProxyConfig::Url(u) => parse_proxy("proxy-url", u).map(Some),
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
            // HTTPS_PROXY alone, as Go reads it for an https server.
            match var(&["HTTPS_PROXY", "https_proxy"]) {
                Some(u) => parse_proxy("the proxy from the environment", &u).map(Some),
                None => Ok(None),
            }
        }
    }
}

/// Whether a request to `host:port` goes through the proxy under a
/// `NO_PROXY` list, as Go's httpproxy `useProxy` decides (golang.org/x/net
/// v0.36 on, which kubectl uses): never for `localhost` or a loopback IP;
/// `*` exempts all. An IP host (a zone, `%eth0`, is not part of the address
/// and an IPv4-mapped IPv6 address is its IPv4 one, as `net.IP.Equal` and
/// `IPNet.Contains` see them) is checked against the IP and CIDR entries
/// only; a domain entry never matches an IP host. A name is checked against
/// the domain entries: `foo.com` matches it and its subdomains, `.foo.com`
/// and `*.foo.com` subdomains only. A `:port` on an entry must equal the
/// request's. Names are compared in ASCII (no IDNA).
pub(crate) fn use_proxy(host: &str, port: u16, no_proxy: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return true;
    }
    if host == "localhost" {
        return false;
    }
    let ip = host_ip(host);
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
            if ip == Some(pip.to_canonical()) && (pport.is_empty() || pport == port) {
                return false;
            }
            continue;
        }
        // Go's domainMatch: never an IP host (CVE-2025-22870's fix).
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

/// The IP a URL host names, as Go's `netip.ParseAddr` reads it: a zone
/// (`fe80::1%eth0`, or `%25eth0` as a URL writes it) is dropped, and an
/// IPv4-mapped IPv6 address is its IPv4 one (Go's `net.IP` keeps both
/// forms as one).
fn host_ip(host: &str) -> Option<IpAddr> {
    let (addr, zone) = match host.split_once('%') {
        Some((addr, zone)) => (addr, Some(zone)),
        None => (host, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    // netip.ParseAddr takes a zone on IPv6 only, and never an empty one.
    if zone.is_some_and(|z| z.is_empty() || ip.is_ipv4()) {
        return None;
    }
    Some(ip.to_canonical())
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
    if bits > max {
        return None;
    }
    // An IPv4-mapped network is an IPv4 one to Go's `IPNet.Contains`, its
    // mask's last 32 bits kept.
    match net.to_canonical() {
        IpAddr::V4(v4) if net.is_ipv6() => Some((IpAddr::V4(v4), bits.saturating_sub(96))),
        _ => Some((net, bits)),
    }
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

    /// What golang.org/x/net v0.36 changed (CVE-2025-22870) and what Go's
    /// `net.IP` does with IPv4-mapped addresses: an IP host is matched by IP
    /// and CIDR entries only, its zone is no hostname, a mapped address is
    /// its IPv4 one.
    #[test]
    fn an_ip_host_never_matches_a_domain_entry() {
        for (host, no_proxy, want) in [
            // A domain entry that an IP's text ends with: no match for an IP.
            ("10.0.0.1", "0.1", true),
            ("10.0.0.1", ".0.1", true),
            ("10.0.0.1", "*.0.1", true),
            ("[2001:db8::1]", "db8::1", true),
            // Go's ProxyForURL case: a zone is not a hostname component.
            ("[1000::%25.example.com]", "example.com", true),
            ("[1000::%.example.com]", ".example.com", true),
            ("[fe80::1%25eth0]", "fe80::1", false),
            ("[fe80::1%25eth0]", "fe80::/16", false),
            // A name is still matched by its domain entries.
            ("api.example.com", "example.com", false),
            // IPv4-mapped: the IPv4 address, to entries of either form.
            ("[::ffff:10.0.0.1]", "10.0.0.1", false),
            ("[::ffff:10.0.0.1]", "10.0.0.0/8", false),
            ("10.0.0.1", "::ffff:10.0.0.1", false),
            ("10.9.0.1", "::ffff:10.0.0.0/104", false),
            ("10.9.0.1", "::ffff:10.0.0.0/112", true),
            ("[::ffff:127.0.0.1]", "", false),
            // An IPv4 address with a zone is no address: a name.
            ("10.0.0.1%25x", "0.1%25x", false),
        ] {
            assert_eq!(use_proxy(host, 443, no_proxy), want, "{host} {no_proxy}");
        }
    }

    #[test]
    fn proxy_urls_of_every_supported_scheme() {
        let read = |u: &str| parse_proxy("proxy-url", u).map(|p| format!("{p:?}"));
        for (url, want) in [
            ("http://p:3128", "Proxy(http://p:3128)"),
            ("p:3128", "Proxy(http://p:3128)"),
            ("https://p", "Proxy(https://p:443)"),
            ("socks5://p", "Proxy(socks5://p:1080)"),
            (
                "socks5h://u:pw-5x@p:1081",
                "Proxy(socks5h://[redacted]@p:1081)",
            ),
            ("socks5://[::1]:9", "Proxy(socks5://::1:9)"),
        ] {
            assert_eq!(read(url).unwrap(), want, "{url}");
        }
        let p = parse_proxy("proxy-url", "socks5://us%2Fer:p%40w@p").unwrap();
        assert_eq!(
            (p.kind, p.socks_user()),
            (ProxyKind::Socks5, Some(("us/er", "p@w")))
        );
        let p = parse_proxy("proxy-url", "socks5://user@p").unwrap();
        assert_eq!(p.socks_user(), Some(("user", "")));
        let e = read("socks4://u:pw-6y@p:1080").unwrap_err().to_string();
        assert!(e.contains("socks5://") && !e.contains("pw-6y"), "{e}");
    }
}
