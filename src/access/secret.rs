//! Secrets as values that never print: a bearer token, a client identity,
//! and URLs whose credentials are redacted before they are shown.

use std::fmt;

/// A bearer token. Its `Debug` output never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token; surrounding white space (a token file's newline) is dropped.
    ///
    /// ```
    /// let t = kube_tattler::Token::new("s3cr3t\n");
    /// assert_eq!(format!("{t:?}"), "Token([redacted])");
    /// ```
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        let token = token.into();
        match token.trim() {
            t if t.len() == token.len() => Token(token),
            t => Token(t.to_string()),
        }
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// A client certificate and key, PEM.
///
/// ```no_run
/// use kube_tattler::{Access, ClientIdentity};
/// let mut access = Access::new("https://10.0.0.1:6443");
/// access.client_identity = Some(ClientIdentity {
///     cert_pem: std::fs::read("client.crt")?,
///     key_pem: std::fs::read("client.key")?,
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// The private key (RSA, EC or PKCS#8), PEM. Never logged.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientIdentity { cert_pem: .., key_pem: [redacted] }")
    }
}

/// A URL, for a message or a log line, with its whole userinfo replaced by
/// `[redacted]`: the userinfo Go's `net/url` finds, when the text parses and
/// no `@` follows its host; otherwise, conservatively, everything from the
/// scheme's `//` to the last `@` of the text (`https://user:pa/ss@h` is
/// malformed, its password is still `pa/ss`).
pub(crate) fn redact_userinfo(url: &str) -> String {
    if let Ok(u) = super::url::Url::parse(url) {
        if !u.at_after_authority() {
            return u.redacted();
        }
    }
    let start = url.find("://").map_or(0, |i| i + 3);
    match url[start..].rfind('@') {
        Some(at) => format!("{}[redacted]{}", &url[..start], &url[start + at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_userinfo;

    #[test]
    fn userinfo_never_shows_whatever_its_shape() {
        for (url, shown) in [
            ("http://u:p@h:3128/x", "http://[redacted]@h:3128/x"),
            ("h:3128", "h:3128"),
            // Over-redacted, never under-: an `@` after the host hides what precedes it.
            ("https://h:6443/a@b", "https://[redacted]@b"),
            (
                "https://user:pa/ss-k3y@127.0.0.1",
                "https://[redacted]@127.0.0.1",
            ),
            ("https://user:pa?ss-k3y@h/x", "https://[redacted]@h/x"),
            ("https://user:pa#ss-k3y@h", "https://[redacted]@h"),
            ("https://user:123/ss-k3y@h", "https://[redacted]@h"),
            ("https://u:p@ss-k3y@h", "https://[redacted]@h"),
            ("socks5://u:pa/ss-k3y@h:1080", "socks5://[redacted]@h:1080"),
            ("u:pa/ss-k3y@h:3128", "[redacted]@h:3128"),
            ("https://u:pa ss-k3y@h", "https://[redacted]@h"),
            ("HTTPS://u:k3y@H", "https://[redacted]@H"),
        ] {
            assert_eq!(redact_userinfo(url), shown, "{url}");
        }
    }
}
