//! TLS trust as kubectl's (issue 38 item 5): a pinned self-signed CA
//! certificate as the server's own, CA bundles with a certificate that
//! cannot be used, P-521 server keys, X25519MLKEM768 and ALPN `http/1.1`.

use super::*;

/// The fake apiserver behind a front serving `server`.
fn front(api: &FakeApi, server: &Issued, tls: FrontTls) -> TlsFront {
    TlsFront::start_with(&api.url(), server, None, tls)
}

/// A config for `front` trusting `ca_pem`.
fn trusting(front: &TlsFront, ca_pem: &str, names: &[&str]) -> Config {
    let mut config = quick(Config::new(Access::new(front.url())), names);
    config.access.ca_pem = Some(ca_pem.as_bytes().to_vec());
    config
}

/// `front`'s certificate is refused by a client trusting `ca_pem`: one more
/// failed handshake, nothing reaches the apiserver, and the stream's failure
/// says `why` (rustls's words).
fn refused(api: &FakeApi, front: &TlsFront, ca_pem: &str, plural: &str, why: &str) {
    let res = own_resource(api, plural);
    let (before, failed) = (api.requests().len(), front.handshake_errors().len());
    let r = Reader::open(trusting(front, ca_pem, &[&res])).unwrap();
    assert!(
        front.wait_handshake_errors(failed + 1, Duration::from_secs(10)),
        "{:?}",
        front.handshakes()
    );
    let line = logged(&[&format!("{res}: request failed")]);
    assert!(line.contains(why), "{line}");
    assert_only_not_current(&r, "Unreachable");
    assert_eq!(
        api.requests().len(),
        before,
        "nothing may reach the apiserver"
    );
}

/// Go trusts a server certificate that is itself in the root pool (chain
/// `[leaf]`, no chain built), after checking its dates and names; webpki
/// alone refuses any `CA:TRUE` certificate as a server's.
#[test]
fn a_pinned_self_signed_ca_certificate_is_trusted_as_the_servers_as_go_trusts_it() {
    let _w = Watchdog::new("pinned_self_signed_ca", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let own = self_signed_ca_server(&["127.0.0.1"], Validity::Now);
    let f = front(&api, &own, FrontTls::default());
    let _r = streams_one_pod(&api, trusting(&f, &own.cert_pem, &["pods"]));
    assert_eq!(f.handshake_errors(), Vec::<String>::new());
    drop(_r);
    // As one certificate of a bundle, too.
    let other = Pki::new("another CA");
    let bundle = format!("{}{}", other.ca_pem, own.cert_pem);
    let _r = streams_one_pod(&api, trusting(&f, &bundle, &["pods"]));
    assert_eq!(f.handshakes().len(), 2);

    // Not pinned: refused, as webpki refuses it.
    refused(&api, &f, &other.ca_pem, "unpinneds", "CaUsedAsEndEntity");
    // Pinned, but for another name: Go checks the names all the same.
    let elsewhere = self_signed_ca_server(&["kubernetes.internal"], Validity::Now);
    let f = front(&api, &elsewhere, FrontTls::default());
    refused(
        &api,
        &f,
        &elsewhere.cert_pem,
        "misnameds",
        "not valid for name",
    );
    // Pinned, but expired: Go checks the dates all the same (webpki checks
    // them before it looks at CA:TRUE; this keeps that true).
    let old = self_signed_ca_server(&["127.0.0.1"], Validity::Expired);
    let f = front(&api, &old, FrontTls::default());
    refused(&api, &f, &old.cert_pem, "expireds", "certificate expired");
}

/// Go's `AppendCertsFromPEM` skips a block it cannot use and keeps the
/// others; so does tattler, with a warning naming the block's place (never
/// its bytes). With nothing usable the bundle is refused, as before.
#[test]
fn a_ca_bundle_skips_a_certificate_it_cannot_use_with_a_warning() {
    let _w = Watchdog::new("ca_bundle_skips", LIMIT);
    capture_log();
    let c = Cluster::start();
    // ASN.1 that is no certificate, and base64 that is no base64.
    let not_x509 = "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n";
    let not_pem = "-----BEGIN CERTIFICATE-----\nQ0xVU1RFUi1@@@\n-----END CERTIFICATE-----\n";
    let bundle = format!("{not_x509}{}{not_pem}", c.pki.ca_pem);
    let _r = streams_one_pod(&c.api, trusting(&c.front, &bundle, &["pods"]));
    let warned = logged(&["CA bundle: PEM block 1 skipped"]);
    assert!(
        warned.ends_with("not an X.509 certificate tattler can read (BadEncoding)"),
        "{warned}"
    );
    let warned = logged(&["CA bundle: PEM block 3 skipped"]);
    assert!(warned.ends_with("not valid PEM"), "{warned}");
    assert!(capture_log().matching(&["MAMCAQE"]).is_empty());
    assert!(capture_log().matching(&["Q0xVU1RFUi1"]).is_empty());

    // The same bundle in a kubeconfig loads, and streams.
    let dir = TempDir::new("ca-bundle-skips");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                b64(bundle.as_bytes())
            ),
            "token: tok-bundle-7d1a\n",
            None,
        ),
    );
    let _r2 = streams_one_pod(&c.api, quick(load(&path, None), &["pods"]));

    // Nothing usable: refused up front, as any bad bundle is.
    let e = open_err(trusting(
        &c.front,
        &format!("{not_x509}{not_pem}"),
        &["pods"],
    ));
    assert_eq!(
        e,
        "TLS setup failed: CA bundle: holds no usable certificate (PEM block 1: not an X.509 \
         certificate tattler can read (BadEncoding); PEM block 2: not valid PEM)"
    );
}

/// A server whose key (and CA) is ECDSA P-521: its handshake is signed with
/// ECDSA P-521 SHA-512, which Go takes and ring cannot check.
#[test]
fn a_p521_server_key_is_accepted() {
    let _w = Watchdog::new("p521_server_key", LIMIT);
    let api = FakeApi::start();
    let pki = Pki::with_key("P-521 CA", P521);
    let server = pki.server_with_key(&["127.0.0.1"], P521);
    let f = front(&api, &server, FrontTls::default());
    let _r = streams_one_pod(&api, trusting(&f, &pki.ca_pem, &["pods"]));
    assert_eq!(f.handshakes().len(), 1);
    assert_eq!(f.handshake_errors(), Vec::<String>::new());
}

/// As Go 1.24+ (and so kubectl): X25519MLKEM768 is offered, so a server
/// that takes only it is reached; and ALPN offers `http/1.1` (and not `h2`,
/// which tattler does not speak), so a server preferring h2 chooses
/// http/1.1.
#[test]
fn x25519mlkem768_and_alpn_http_1_1_are_offered_as_go_offers_them() {
    let _w = Watchdog::new("x25519mlkem768_alpn", LIMIT);
    let api = FakeApi::start();
    let pki = Pki::new("kx CA");
    let server = pki.server(&["127.0.0.1"]);
    let tls = FrontTls {
        kx_groups: Some(vec![rustls::NamedGroup::X25519MLKEM768]),
        alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    let f = front(&api, &server, tls);
    let _r = streams_one_pod(&api, trusting(&f, &pki.ca_pem, &["pods"]));
    assert_eq!(
        f.key_exchanges(),
        [Some(rustls::NamedGroup::X25519MLKEM768)]
    );
    assert_eq!(f.alpn(), [Some(b"http/1.1".to_vec())]);
    // A server with the provider's defaults takes the hybrid one first, too.
    let f = front(&api, &server, FrontTls::default());
    let _r2 = streams_one_pod(&api, trusting(&f, &pki.ca_pem, &["pods"]));
    assert_eq!(
        f.key_exchanges(),
        [Some(rustls::NamedGroup::X25519MLKEM768)]
    );
}
