//! Pure TLS checks, made before any handshake: CA bundles and client
//! certificates parsed and judged as rustls will use them (a version-1
//! certificate is refused with a reissue hint rather than a panic later).

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use super::secret::ClientIdentity;

/// A client certificate chain and its key, checked as rustls will use them.
pub(crate) struct Identity {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Identity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

pub(crate) fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
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

pub(crate) fn parse_identity(id: &ClientIdentity, what: &str) -> Result<Identity, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
