//! Users.

use super::*;

#[test]
fn token_reaches_the_server_as_a_bearer_header() {
    let _w = Watchdog::new("token", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-bearer-9d8c"));
    let dir = TempDir::new("token");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-bearer-9d8c\n",
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-bearer-9d8c"]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-bearer-9d8c"], &strs(&texts));
}

#[test]
fn token_file_is_resolved_against_the_kubeconfig_folder() {
    let _w = Watchdog::new("token_file", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-file-31ab"));
    let dir = TempDir::new("token-file");
    dir.write("kube/secrets/token", "tok-file-31ab\n");
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "tokenFile: secrets/token\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(
        config.access.auth,
        Auth::TokenFile(dir.path().join("kube/secrets/token"))
    );
    let config = quick(config, &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-file-31ab"]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-file-31ab"], &strs(&texts));
}

#[test]
fn token_file_wins_over_token_as_in_client_go() {
    // client-go, transport.Config.BearerTokenFile: "If set, the contents are
    // periodically read. The last successfully read value takes precedence
    // over BearerToken." kubectl with both fields sends the file's token.
    let _w = Watchdog::new("token_file_precedence", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-from-file-2d2d"));
    let dir = TempDir::new("token-precedence");
    dir.write("token", "tok-from-file-2d2d\n");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-stale-static-1c1c\ntokenFile: token\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(
        config.access.auth,
        Auth::TokenFile(dir.path().join("token"))
    );
    let _r = streams_one_pod(&c.api, quick(config, &["pods"]));
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-from-file-2d2d"]
    );
}

#[test]
fn username_and_password_go_out_as_basic_auth() {
    let _w = Watchdog::new("basic_auth", LIMIT);
    capture_log();
    let c = Cluster::start();
    let dir = TempDir::new("basic");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "username: admin\npassword: \"pw-basic-6b1e:x\"\n",
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        [format!("Basic {}", b64(b"admin:pw-basic-6b1e:x"))]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["pw-basic-6b1e"], &strs(&texts));
}

/// One client certificate case: `files` names the files instead of inlining them.
fn client_certificate_case(kind: KeyKind, files: bool, tag: &'static str) {
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let id = c.clients.client(&format!("user-{tag}"), kind);
    let dir = TempDir::new(tag);
    let user = if files {
        dir.write("kube/pki/client.crt", &id.cert_pem);
        dir.write("kube/pki/client.key", &id.key_pem);
        "client-certificate: pki/client.crt\nclient-key: pki/client.key\n".to_string()
    } else {
        format!(
            "client-certificate-data: {}\nclient-key-data: {}\n",
            b64(id.cert_pem.as_bytes()),
            b64(id.key_pem.as_bytes())
        )
    };
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            &user,
            None,
        ),
    );
    let config = load(&path, None);
    let identity = config
        .access
        .client_identity
        .clone()
        .expect("client identity");
    assert_eq!(identity.cert_pem, id.cert_pem.as_bytes());
    assert_eq!(identity.key_pem, id.key_pem.as_bytes());
    let config = quick(config, &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(c.front.handshakes(), [Some(id.cert_der.clone())]);
    assert_eq!(c.front.header_values("authorization"), Vec::<String>::new());
    let texts = debug_texts(&config, &r);
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &strs(&texts));
}

#[test]
fn client_certificate_files_with_an_rsa_pkcs1_key() {
    let _w = Watchdog::new("client_cert_rsa_pkcs1", LIMIT);
    client_certificate_case(KeyKind::RsaPkcs1, true, "mtls-rsa1");
}

#[test]
fn client_certificate_data_with_an_rsa_pkcs8_key() {
    let _w = Watchdog::new("client_cert_rsa_pkcs8", LIMIT);
    client_certificate_case(KeyKind::RsaPkcs8, false, "mtls-rsa8");
}

#[test]
fn client_certificate_data_with_an_ec_sec1_key() {
    let _w = Watchdog::new("client_cert_ec_sec1", LIMIT);
    client_certificate_case(KeyKind::EcSec1, false, "mtls-ec1");
}

#[test]
fn client_certificate_files_with_an_ec_pkcs8_key() {
    let _w = Watchdog::new("client_cert_ec_pkcs8", LIMIT);
    client_certificate_case(KeyKind::EcPkcs8, true, "mtls-ec8");
}

#[test]
fn a_server_that_demands_a_client_certificate_rejects_a_client_without_one() {
    let _w = Watchdog::new("mtls_without_cert", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let res = own_resource(&c.api, "nocerts");
    let dir = TempDir::new("mtls-none");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-nocert-1a2b\n",
            None,
        ),
    );
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    assert!(c.front.wait_handshake_errors(1, Duration::from_secs(10)));
    let errors = c.front.handshake_errors();
    assert!(
        errors[0].to_lowercase().contains("certificate"),
        "{errors:?}"
    );
    logged(&[&format!("{res}: request failed")]);
    assert_only_not_current(&r, "Unreachable");
    assert_eq!(c.api.requests(), Vec::<String>::new());
    assert_hidden(&["tok-nocert-1a2b"], &[]);
}
