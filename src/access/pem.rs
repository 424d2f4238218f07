//! Pure TLS checks, made before any handshake: CA bundles and client
//! certificates parsed and judged as rustls will use them (a version-1
//! certificate is refused with a reissue hint rather than a panic later),
//! and the cryptography every TLS connection uses ([`provider`]).

use std::sync::{Arc, OnceLock};

use rustls::crypto::aws_lc_rs::{self, kx_group};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{PemObject, SectionKind};
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

/// The cryptography of every connection: aws-lc-rs (Cargo.toml says why),
/// its key exchanges offered in Go 1.24's order (kubectl's): the hybrid
/// post-quantum X25519MLKEM768 first, then X25519, P-256 and P-384 (rustls
/// sends an X25519MLKEM768 and an X25519 key share, as Go does, so a server
/// without ML-KEM costs no extra round trip).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| {
        Arc::new(CryptoProvider {
            kx_groups: vec![
                kx_group::X25519MLKEM768,
                kx_group::X25519,
                kx_group::SECP256R1,
                kx_group::SECP384R1,
            ],
            ..aws_lc_rs::default_provider()
        })
    })
    .clone()
}

/// A CA bundle as Go's `CertPool.AppendCertsFromPEM` takes it (kubectl's):
/// each PEM block on its own, one that cannot be used skipped rather than
/// failing the whole bundle.
#[derive(Debug)]
pub(crate) struct CaBundle {
    /// The usable certificates, in order.
    pub(crate) certs: Vec<CertificateDer<'static>>,
    /// The certificate blocks skipped: their place among the bundle's PEM
    /// blocks (from 1) and why, never their bytes.
    pub(crate) skipped: Vec<(usize, String)>,
}

/// Reads a CA bundle: every `CERTIFICATE` block that rustls can take as a
/// trust anchor; other kinds of block (a key pasted in) are passed over, as
/// Go passes them. An error when no certificate is usable.
pub(crate) fn ca_bundle(bundle: &[u8]) -> Result<CaBundle, String> {
    let mut out = CaBundle {
        certs: Vec::new(),
        skipped: Vec::new(),
    };
    let mut blocks = 0;
    for (i, block) in pem_blocks(bundle).enumerate() {
        blocks = i + 1;
        let why = match <(SectionKind, Vec<u8>)>::from_pem_slice(block) {
            Ok((SectionKind::Certificate, der)) => {
                let cert = CertificateDer::from(der);
                match RootCertStore::empty().add(cert.clone()) {
                    Ok(()) => {
                        out.certs.push(cert);
                        continue;
                    }
                    Err(rustls::Error::InvalidCertificate(e)) => {
                        format!("not an X.509 certificate tattler can read ({e:?})")
                    }
                    Err(_) => "not an X.509 certificate tattler can read".to_string(),
                }
            }
            Ok(_) => continue,
            Err(_) => "not valid PEM".to_string(),
        };
        out.skipped.push((i + 1, why));
    }
    if !out.certs.is_empty() {
        return Ok(out);
    }
    match out.skipped.as_slice() {
        [] if blocks == 0 => Err("holds no PEM certificate".into()),
        [] => Err("holds no PEM certificate (only other kinds of PEM block)".into()),
        [(_, why)] if blocks == 1 => Err(why.clone()),
        all => Err(format!(
            "holds no usable certificate ({})",
            all.iter()
                .map(|(i, why)| format!("PEM block {i}: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The PEM blocks of `text`, each from its `-----BEGIN ` line to the next
/// one: pki-types reads each, but its iterator cannot go on past a block it
/// cannot read, and Go's decoder goes on.
fn pem_blocks(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| (i == 0 || text[i - 1] == b'\n') && text[i..].starts_with(BEGIN))
        .collect();
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([text.len()]).collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |(from, to)| &text[from..to])
}

/// The certificates of a PEM bundle, all of them readable (a client
/// certificate's chain).
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

    const CA: &str = include_str!("../../tests/fixtures/ca.crt");

    /// A PEM block of `der`, as `label`.
    fn block(label: &str, b64: &str) -> String {
        format!("-----BEGIN {label}-----\n{b64}\n-----END {label}-----\n")
    }

    #[test]
    fn a_ca_bundle_skips_what_it_cannot_use_as_go_does() {
        // ASN.1 that is not a certificate; base64 that is not base64; a key.
        let not_x509 = block("CERTIFICATE", "MAMCAQE=");
        let not_pem = block("CERTIFICATE", "@@@@");
        let key = block("PRIVATE KEY", "MAMCAQE=");
        let bundle = format!("# a comment\n{CA}{not_x509}{key}{not_pem}{CA}");
        let got = ca_bundle(bundle.as_bytes()).unwrap();
        assert_eq!(got.certs.len(), 2);
        assert_eq!(got.certs[0], got.certs[1]);
        let skipped: Vec<(usize, &str)> =
            got.skipped.iter().map(|(i, w)| (*i, w.as_str())).collect();
        assert_eq!(
            skipped,
            [
                (2, "not an X.509 certificate tattler can read (BadEncoding)"),
                (4, "not valid PEM")
            ]
        );
        // No bytes of a skipped block are quoted.
        assert!(got.skipped.iter().all(|(_, w)| !w.contains("MAMC")));
    }

    #[test]
    fn a_ca_bundle_with_nothing_usable_is_an_error() {
        let not_x509 = block("CERTIFICATE", "MAMCAQE=");
        let not_pem = block("CERTIFICATE", "@@@@");
        let key = block("PRIVATE KEY", "MAMCAQE=");
        for (bundle, want) in [
            (String::new(), "holds no PEM certificate"),
            ("just text\n".to_string(), "holds no PEM certificate"),
            (
                key.clone(),
                "holds no PEM certificate (only other kinds of PEM block)",
            ),
            (not_pem.clone(), "not valid PEM"),
            (
                not_x509.clone(),
                "not an X.509 certificate tattler can read (BadEncoding)",
            ),
            (
                format!("{not_x509}{key}{not_pem}"),
                "holds no usable certificate (PEM block 1: not an X.509 certificate tattler \
                 can read (BadEncoding); PEM block 3: not valid PEM)",
            ),
        ] {
            assert_eq!(
                ca_bundle(bundle.as_bytes()).unwrap_err(),
                want,
                "{bundle:?}"
            );
        }
    }

    /// Go's order of key exchanges (kubectl's), the hybrid post-quantum one first.
    #[test]
    fn key_exchanges_are_offered_in_gos_order() {
        let names: Vec<_> = provider().kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(
            names,
            [
                rustls::NamedGroup::X25519MLKEM768,
                rustls::NamedGroup::X25519,
                rustls::NamedGroup::secp256r1,
                rustls::NamedGroup::secp384r1
            ]
        );
    }
}
