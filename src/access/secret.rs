//! Secrets as values that never print: a bearer token, a client identity,
//! and URLs whose credentials are redacted before they are shown.

use std::fmt;

/// A bearer token. Its `Debug` output never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token; surrounding white space (a token file's newline) is dropped.
    #[must_use]
    pub fn new(token: &str) -> Self {
        Token(token.trim().to_string())
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

/// A URL with any `user:password@` replaced by `[redacted]@`.
pub(crate) fn redact_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}[redacted]{}", &rest[at..]),
        None => url.to_string(),
    }
}
