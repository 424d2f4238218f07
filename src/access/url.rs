//! URLs read as Go's `net/url.Parse` reads them, since kubectl and client-go
//! read a kubeconfig's `server` and `proxy-url` (and the proxy variables)
//! with it: the fragment is cut at the first `#`, the query at the first
//! `?`, the authority at the first `/`, and the userinfo is everything
//! before the *last* `@` of the authority. So a password holding a `/`
//! (base64 does) ends the authority early and is refused, as Go refuses it,
//! instead of being read as a host named after the user.
//!
//! Pure, and an error is a fixed text naming the part that is wrong: it can
//! never quote the URL, whose userinfo is a secret.

use std::fmt;

/// A URL, split; every part borrowed from the text, still percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url<'a> {
    /// Lower-cased, as Go keeps it.
    pub scheme: String,
    /// Everything before the authority's last `@`.
    pub userinfo: Option<&'a str>,
    /// The host name or address; an IPv6 address keeps its brackets.
    pub host: &'a str,
    /// The port's digits (`h:` gives an empty port, as in Go).
    pub port: Option<&'a str>,
    /// From the `/` after the authority on, before any `?` or `#`.
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub fragment: Option<&'a str>,
}

/// Why a URL was refused: which part is malformed, never its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlError(&'static str);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Go: "net/url: invalid userinfo"; said with what usually causes it.
const BAD_USERINFO: UrlError = UrlError(
    "invalid userinfo: a user name or password must percent-encode '/', '?', '#', spaces and other reserved characters",
);

impl<'a> Url<'a> {
    /// Splits `text` with Go's rules; also refuses what Go would read as a
    /// relative or opaque URL, since tattler needs `scheme://host`.
    pub(crate) fn parse(text: &'a str) -> Result<Url<'a>, UrlError> {
        // Go: "net/url: invalid control character in URL".
        if text.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(UrlError("invalid control character in the URL"));
        }
        let (text, fragment) = match text.split_once('#') {
            Some((t, f)) => (t, Some(f)),
            None => (text, None),
        };
        let (scheme, rest) = scheme(text)?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let Some(rest) = rest.strip_prefix("//") else {
            return Err(UrlError("no host: the URL must read scheme://host"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
            None => (None, authority),
        };
        let (host, port) = host_port(hostport)?;
        if let Some(u) = userinfo {
            if !u.bytes().all(userinfo_byte) {
                return Err(BAD_USERINFO);
            }
            unescape(u, Mode::Other)
                .map_err(|()| UrlError("invalid percent-encoding in the userinfo"))?;
        }
        unescape(path, Mode::Other)
            .map_err(|()| UrlError("invalid percent-encoding in the path"))?;
        if let Some(f) = fragment {
            unescape(f, Mode::Other)
                .map_err(|()| UrlError("invalid percent-encoding in the fragment"))?;
        }
        Ok(Url {
            scheme: scheme.to_ascii_lowercase(),
            userinfo,
            host,
            port,
            path,
            query,
            fragment,
        })
    }

    /// The user name, decoded (Go: `User.Username()`).
    pub(crate) fn username(&self) -> Option<Vec<u8>> {
        let u = self.userinfo?;
        unescape(u.split_once(':').map_or(u, |(name, _)| name), Mode::Other).ok()
    }

    /// The password, decoded, if the userinfo has a `:`.
    pub(crate) fn password(&self) -> Option<Vec<u8>> {
        let (_, pw) = self.userinfo?.split_once(':')?;
        unescape(pw, Mode::Other).ok()
    }

    /// The port as a number; `Err` when it does not fit (Go leaves that to
    /// the dialer, which refuses it).
    pub(crate) fn port_number(&self) -> Result<Option<u16>, UrlError> {
        match self.port {
            None | Some("") => Ok(None),
            Some(p) => p
                .parse()
                .map(Some)
                .map_err(|_| UrlError("invalid port: it must be 0 to 65535")),
        }
    }

    /// The URL with its whole userinfo replaced by `[redacted]`.
    pub(crate) fn redacted(&self) -> String {
        let mut s = format!("{}://", self.scheme);
        if self.userinfo.is_some() {
            s.push_str("[redacted]@");
        }
        s.push_str(self.host);
        if let Some(p) = self.port {
            s.push(':');
            s.push_str(p);
        }
        s.push_str(self.path);
        if let Some(q) = self.query {
            s.push('?');
            s.push_str(q);
        }
        if let Some(f) = self.fragment {
            s.push('#');
            s.push_str(f);
        }
        s
    }

    /// Whether an `@` follows the authority: most likely a password with a
    /// `/`, `?` or `#` that Go accepted because what preceded it looked like
    /// `host:port` (`https://user:123/x@h` is host `user`, port 123).
    pub(crate) fn at_after_authority(&self) -> bool {
        self.path.contains('@')
            || self.query.is_some_and(|q| q.contains('@'))
            || self.fragment.is_some_and(|f| f.contains('@'))
    }
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-` or `.`, then `:`.
fn scheme(text: &str) -> Result<(&str, &str), UrlError> {
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i > 0 => return Ok((&text[..i], &text[i + 1..])),
            _ => break,
        }
    }
    Err(UrlError("missing protocol scheme"))
}

/// Go's `parseHost`, with the IP-literal check of recent Go, and what tattler
/// needs besides: a host that is not empty.
fn host_port(hostport: &str) -> Result<(&str, Option<&str>), UrlError> {
    const BAD_PORT: UrlError = UrlError("invalid port after the host");
    let (host, port) = if hostport.starts_with('[') {
        let close = hostport
            .rfind(']')
            .ok_or(UrlError("missing ']' in the host"))?;
        let (host, after) = hostport.split_at(close + 1);
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(BAD_PORT),
        };
        // RFC 6874: `%25` introduces a zone, which may escape what it likes.
        let inner = &host[1..host.len() - 1];
        let (addr, zone) = match inner.find("%25") {
            Some(z) => (&inner[..z], Some(&inner[z + 3..])),
            None => (inner, None),
        };
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(UrlError("invalid IP-literal in the host"));
        }
        if zone.is_some_and(|z| z.is_empty() || unescape(z, Mode::Other).is_err()) {
            return Err(UrlError("invalid zone in the host"));
        }
        (host, port)
    } else {
        match hostport.rfind(':') {
            Some(i) => (&hostport[..i], Some(&hostport[i + 1..])),
            None => (hostport, None),
        }
    };
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return Err(BAD_PORT);
    }
    if !host.starts_with('[') {
        if host.contains(':') {
            return Err(UrlError("invalid host: an IPv6 address needs brackets"));
        }
        unescape(host, Mode::Host).map_err(|()| UrlError("invalid character in the host"))?;
    }
    if host.is_empty() {
        return Err(UrlError("no host"));
    }
    Ok((host, port))
}

/// Go's `validUserinfo` (RFC 3986 §3.2.1; `@` allowed, the last one ends it).
fn userinfo_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b':'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
                | b'@'
        )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Go's `encodeHost`: ASCII may not be escaped (bar `%25`), and only
    /// RFC 3986 reg-name characters may appear.
    Host,
    /// Userinfo, path, fragment: every `%` starts two hex digits.
    Other,
}

/// Go's `unescape`, checking as it does; the decoded bytes.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(hi), Some(lo)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err(());
                };
                if mode == Mode::Host && hi < 8 && &b[i..i + 3] != b"%25" {
                    return Err(());
                }
                out.push(u8::try_from(hi * 16 + lo).map_err(|_| ())?);
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && !host_byte(c) {
                    return Err(());
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The ASCII that Go's `shouldEscape(c, encodeHost)` lets stand in a host.
fn host_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go's `url.Parse` gives (go1.24): (scheme, userinfo, host, port,
    /// path, query, fragment), or the part its error names.
    type Parts = (
        &'static str,
        Option<&'static str>,
        &'static str,
        Option<&'static str>,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    );

    const GO_ACCEPTS: &[(&str, Parts)] = &[
        (
            "http://u:p@h:3128/x",
            ("http", Some("u:p"), "h", Some("3128"), "/x", None, None),
        ),
        (
            "https://h:6443/",
            ("https", None, "h", Some("6443"), "/", None, None),
        ),
        (
            "https://[::1]:6443",
            ("https", None, "[::1]", Some("6443"), "", None, None),
        ),
        (
            "https://u@h",
            ("https", Some("u"), "h", None, "", None, None),
        ),
        (
            "https://h?x=1",
            ("https", None, "h", None, "", Some("x=1"), None),
        ),
        (
            "https://h#f",
            ("https", None, "h", None, "", None, Some("f")),
        ),
        ("HTTPS://H:", ("https", None, "H", Some(""), "", None, None)),
        (
            "https://u:pa%2Fss%40x@h",
            ("https", Some("u:pa%2Fss%40x"), "h", None, "", None, None),
        ),
        // The last `@` ends the userinfo; the `@`s before it are its own.
        (
            "https://u:p@ss@h:1",
            ("https", Some("u:p@ss"), "h", Some("1"), "", None, None),
        ),
        (
            "https://[fe80::1%25en0]:6443/p",
            (
                "https",
                None,
                "[fe80::1%25en0]",
                Some("6443"),
                "/p",
                None,
                None,
            ),
        ),
        (
            "socks5://u:p@proxy:1080",
            ("socks5", Some("u:p"), "proxy", Some("1080"), "", None, None),
        ),
        // Go reads a numeric start of a password as a port, the rest as path.
        (
            "https://user:123/ss@h",
            ("https", None, "user", Some("123"), "/ss@h", None, None),
        ),
        // Spaces are allowed in a path (Go escapes them when it sends it).
        (
            "https://h/a b",
            ("https", None, "h", None, "/a b", None, None),
        ),
    ];

    const GO_REFUSES: &[(&str, &str)] = &[
        // The password's `/` ends the authority: port ":Xq" is not a port.
        ("https://user:Xq/Zk@h", "invalid port"),
        ("https://user:Xq?Zk@h", "invalid port"),
        ("https://user:Xq#Zk@h", "invalid port"),
        ("https://h:notaport", "invalid port"),
        ("https://u:Xq Zk@h", "invalid userinfo"),
        ("https://u:Xq\"@h", "invalid userinfo"),
        ("https://u:Xq%Zk@h", "percent-encoding in the userinfo"),
        ("https://h\n", "control character"),
        ("https://u:Xq\x7f@h", "control character"),
        ("https://h x", "invalid character in the host"),
        ("https://h%41", "invalid character in the host"),
        ("https://[::1", "missing ']'"),
        ("https://[::1]x", "invalid port"),
        ("https://[1.2.3.4]", "IP-literal"),
        ("https://h/Xq%Zk", "percent-encoding in the path"),
        ("https://h#Xq%Zk", "percent-encoding in the fragment"),
        ("://h", "missing protocol scheme"),
        ("not a url", "missing protocol scheme"),
        // Go accepts these as relative or opaque URLs; tattler needs a host.
        ("h:3128", "no host"),
        ("https:/h", "no host"),
        ("https://", "no host"),
        ("https://u:Xq@", "no host"),
        // Go reads the last colon as the port's; tattler wants brackets.
        ("https://::1", "brackets"),
    ];

    #[test]
    fn urls_split_as_go_splits_them() {
        for (text, want) in GO_ACCEPTS {
            let u = Url::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let got = (
                u.scheme.as_str(),
                u.userinfo,
                u.host,
                u.port,
                u.path,
                u.query,
                u.fragment,
            );
            assert_eq!(&got, want, "{text}");
        }
    }

    #[test]
    fn malformed_urls_are_refused_by_the_part_without_quoting_it() {
        for (text, want) in GO_REFUSES {
            let e = Url::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            for secret in ["Xq", "Zk"] {
                assert!(!e.contains(secret), "{text:?}: {e}");
            }
        }
    }

    #[test]
    fn userinfo_decodes_and_redacts() {
        let u = Url::parse("http://us%40r:pa%2Fss:x@h:3128/x?q#f").unwrap();
        assert_eq!(u.username().as_deref(), Some(&b"us@r"[..]));
        assert_eq!(u.password().as_deref(), Some(&b"pa/ss:x"[..]));
        assert_eq!(u.redacted(), "http://[redacted]@h:3128/x?q#f");
        assert_eq!(u.port_number(), Ok(Some(3128)));
        let u = Url::parse("https://u@h").unwrap();
        assert_eq!(
            (u.username().as_deref(), u.password()),
            (Some(&b"u"[..]), None)
        );
        assert!(Url::parse("https://h:65536")
            .unwrap()
            .port_number()
            .is_err());
        assert!(Url::parse("https://user:123/ss@h")
            .unwrap()
            .at_after_authority());
        assert!(!Url::parse("https://u:p@h/x").unwrap().at_after_authority());
    }
}
