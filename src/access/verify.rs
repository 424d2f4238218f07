//! Whether the server's certificate is trusted, as kubectl decides it (Go's
//! `crypto/tls` and `crypto/x509`): webpki's path to the configured CA
//! bundle (a certificate in it that cannot be used skipped, as Go skips it)
//! or to the system's store; a server whose certificate is itself one of
//! the configured CA certificates, as Go trusts it; or, with
//! `insecure_skip_tls_verify`, anything.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore};

use crate::access::cluster::Access;
use crate::access::pem::{ca_bundle, provider};
use crate::error::Error;

/// The verifier of `access`'s server certificates; a CA certificate that
/// cannot be used is logged (its place in the bundle, never its bytes) and
/// skipped, a bundle with none usable is an error.
pub(crate) fn server_verifier(access: &Access) -> Result<Arc<dyn ServerCertVerifier>, Error> {
    if access.insecure_skip_tls_verify {
        return Ok(Arc::new(NoVerification(provider())));
    }
    let Some(pem) = &access.ca_pem else {
        let webpki = WebPkiServerVerifier::builder_with_provider(system_roots(), provider())
            .build()
            .map_err(|e| Error::Tls(format!("the system's trust store: {e}")))?;
        return Ok(webpki);
    };
    let bundle = ca_bundle(pem).map_err(|e| Error::Tls(format!("CA bundle: {e}")))?;
    for (place, why) in &bundle.skipped {
        log::warn!("CA bundle: PEM block {place} skipped: {why}");
    }
    // ca_bundle kept only what a store takes.
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(bundle.certs.iter().cloned());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| Error::Tls(format!("CA bundle: {e}")))?;
    Ok(Arc::new(Configured {
        webpki,
        cas: bundle.certs,
    }))
}

/// With no CA configured: the system's trust store, as kubectl (Go's
/// `SystemCertPool`) uses, read once per process; the public web roots only
/// when the system has none.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut store = RootCertStore::empty();
            let (added, ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                log::warn!(
                    "no CA certificates in the system trust store ({} errors, {ignored} unusable); trusting the public web roots",
                    found.errors.len()
                );
                store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            } else {
                log::debug!("system trust store: {added} CA certificates ({ignored} unusable)");
            }
            Arc::new(store)
        })
        .clone()
}

/// A configured CA bundle: webpki's verdict, and Go's one exception to it.
#[derive(Debug)]
struct Configured {
    webpki: Arc<WebPkiServerVerifier>,
    /// The bundle's usable certificates, DER.
    cas: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Configured {
    /// A server certificate that is byte for byte one of the configured CA
    /// certificates (a self-signed serving certificate with `CA:TRUE`,
    /// pinned as `certificate-authority-data`, as some installers and
    /// tutorials make it) is trusted as Go trusts it; webpki refuses any
    /// `CA:TRUE` certificate as a server's (`CaUsedAsEndEntity`).
    ///
    /// Go (`crypto/x509` `Certificate.Verify`, which `crypto/tls` calls with
    /// the server name as `DNSName`): `isValid` on the leaf checks its
    /// unhandled critical extensions and its validity dates; then
    /// `VerifyHostname` its names (SANs only, never the CN, since Go 1.15);
    /// then, when `opts.Roots.contains(leaf)` (the same bytes), the chain is
    /// `[leaf]` with no chain building and no signature checked on it; last,
    /// `checkChainForKeyUsage` wants serverAuth (or any) among its extended
    /// key usages, if it lists any.
    ///
    /// Here: the parse (critical extensions, as strict as webpki is for any
    /// leaf) and the dates are webpki's own, made before it looks at basic
    /// constraints, so `CaUsedAsEndEntity` means they passed (a test with an
    /// expired pinned certificate keeps that true); the names are checked
    /// now by rustls's `verify_server_name`. Not checked, unlike Go: the
    /// extended key usages of such a certificate (webpki has no call for
    /// them alone). The handshake's signature is checked against its key as
    /// for any server.
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(e) if ca_used_as_end_entity(&e) && self.is_configured(end_entity) => {
                let cert = ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.webpki.root_hint_subjects()
    }
}

impl Configured {
    fn is_configured(&self, cert: &CertificateDer<'_>) -> bool {
        self.cas.iter().any(|ca| ca.as_ref() == cert.as_ref())
    }
}

/// Whether webpki refused a certificate only for being a CA's.
fn ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        _ => false,
    }
}

/// `insecure_skip_tls_verify`: any certificate is accepted.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
