//! Cluster fields.

use super::*;

#[test]
fn certificate_authority_file_is_resolved_against_the_kubeconfig_folder() {
    let _w = Watchdog::new("certificate_authority_file", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-ca-file-4e1b"));
    let dir = TempDir::new("ca-file");
    dir.write("kube/pki/ca.crt", &c.pki.ca_pem);
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority: pki/ca.crt\n",
                q(&c.url())
            ),
            "token: tok-ca-file-4e1b\n",
            Some("team-a"),
        ),
    );
    let config = load(&path, None);
    assert_eq!(config.access.server, c.url());
    assert_eq!(
        config.access.ca_pem.as_deref(),
        Some(c.pki.ca_pem.as_bytes())
    );
    assert_eq!(config.access.namespace.as_deref(), Some("team-a"));
    assert_eq!(
        config.access.auth,
        Auth::Token(Token::new("tok-ca-file-4e1b"))
    );
    assert!(
        config.access.source.contains(&path) && config.access.source.contains("\"main\""),
        "{}",
        config.access.source
    );
    let config = quick(config, &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-ca-file-4e1b"]
    );
    assert_eq!(c.front.handshakes(), [None]);
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-ca-file-4e1b"], &strs(&texts));
}

#[test]
fn certificate_authority_data_wins_over_the_file() {
    let _w = Watchdog::new("certificate_authority_data", LIMIT);
    let c = Cluster::start();
    let dir = TempDir::new("ca-data");
    // kubectl: the -data field wins; the file named beside it is not read at all.
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority: does-not-exist.crt\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-ca-data-77aa\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(
        config.access.ca_pem.as_deref(),
        Some(c.pki.ca_pem.as_bytes())
    );
    assert_eq!(config.access.namespace, None);
    let _r = streams_one_pod(&c.api, quick(config, &["pods"]));
}

#[test]
fn insecure_skip_tls_verify_connects_without_a_ca_and_its_absence_does_not() {
    let _w = Watchdog::new("insecure_skip_tls_verify", LIMIT);
    capture_log();
    let c = Cluster::start();
    let dir = TempDir::new("insecure");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!("server: {}\ninsecure-skip-tls-verify: true\n", q(&c.url())),
            "token: tok-insecure-5c2d\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert!(config.access.insecure_skip_tls_verify);
    assert_eq!(config.access.ca_pem, None);
    let r = streams_one_pod(&c.api, quick(config, &["pods"]));
    drop(r);
    logged(&["TLS certificate verification is OFF"]);

    // Without the flag and without a CA the cluster's certificate is not trusted.
    let res = own_resource(&c.api, "untrusteds");
    let path = dir.write(
        "config2",
        kubeconfig(
            &format!("server: {}\n", q(&c.url())),
            "token: tok-insecure-5c2d\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert!(!config.access.insecure_skip_tls_verify);
    let before = c.api.requests().len();
    let r = Reader::open(quick(config, &[&res])).unwrap();
    assert!(
        c.front.wait_handshake_errors(1, Duration::from_secs(10)),
        "{:?} {:#?}",
        c.front.handshakes(),
        capture_log().lines()
    );
    let line = logged(&[&format!("{res}: request failed")]);
    assert!(line.to_lowercase().contains("certificate"), "{line}");
    assert_only_not_current(&r, "Unreachable");
    assert_eq!(
        c.api.requests().len(),
        before,
        "nothing may reach the apiserver"
    );
    assert!(!r.stats()[0].synced);
    assert_hidden(&["tok-insecure-5c2d"], &[]);
}

#[test]
fn tls_server_name_checks_the_certificate_for_that_name() {
    let _w = Watchdog::new("tls_server_name", LIMIT);
    capture_log();
    // The certificate is valid for kubernetes.internal only; the URL has the IP.
    let c = Cluster::with(&["kubernetes.internal"], false);
    let dir = TempDir::new("tls-server-name");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\ntls-server-name: kubernetes.internal\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-sni-0f0f\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(
        config.access.tls_server_name.as_deref(),
        Some("kubernetes.internal")
    );
    let r = streams_one_pod(&c.api, quick(config, &["pods"]));
    drop(r);
    assert_eq!(c.front.handshake_errors(), Vec::<String>::new());
    // Only the checked name changes: SNI says it, the Host header names the URL's host.
    assert_eq!(
        c.front.server_names(),
        [Some("kubernetes.internal".to_string())]
    );
    assert_eq!(
        c.front.header_values("host"),
        [c.url().trim_start_matches("https://").to_string()]
    );

    // The same without tls-server-name: a TLS error, nothing reaches the server.
    let res = own_resource(&c.api, "wrongnames");
    let path = dir.write(
        "config2",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-sni-0f0f\n",
            None,
        ),
    );
    let before = c.api.requests().len();
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    assert!(c.front.wait_handshake_errors(1, Duration::from_secs(10)));
    let line = logged(&[&format!("{res}: request failed")]);
    let l = line.to_lowercase();
    assert!(l.contains("certificate") && l.contains("name"), "{line}");
    assert_only_not_current(&r, "Unreachable");
    assert_eq!(c.api.requests().len(), before);
    assert_hidden(&["tok-sni-0f0f"], &[]);
}
