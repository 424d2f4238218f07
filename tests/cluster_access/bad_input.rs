//! Bad input: a clear error naming the file, field or command; never a panic.

use super::*;
use kube_tattler::Access;

#[test]
fn a_missing_kubeconfig_file_is_named() {
    let _w = Watchdog::new("a_missing_kubeconfig_file_is_named", LIMIT);
    let e = load_err("/nonexistent/tattler/kubeconfig", None);
    assert!(e.contains("/nonexistent/tattler/kubeconfig"), "{e}");
    let e =
        Config::from_json(r#"{"kubeconfig":"/nonexistent/tattler/kc.yaml","resources":["pods"]}"#)
            .unwrap_err()
            .to_string();
    assert!(e.contains("/nonexistent/tattler/kc.yaml"), "{e}");
}

#[test]
fn a_yaml_syntax_error_names_the_file() {
    let _w = Watchdog::new("a_yaml_syntax_error_names_the_file", LIMIT);
    let dir = TempDir::new("bad-yaml");
    let path = dir.write(
        "config",
        "current-context: main\nusers:\n- name: u\n  user:\n    token: tok-yaml-2b2b\n  - [unclosed\n",
    );
    let e = load_err(&path, None);
    assert!(e.contains(&path) && e.contains("YAML"), "{e}");
    assert_hidden(&["tok-yaml-2b2b"], &[&e]);
}

#[test]
fn a_context_that_does_not_exist_lists_the_ones_that_do() {
    let _w = Watchdog::new(
        "a_context_that_does_not_exist_lists_the_ones_that_do",
        LIMIT,
    );
    let dir = TempDir::new("no-context");
    let path = dir.write(
        "config",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            "token: tok-noctx-3c4d\n",
            None,
        ),
    );
    let e = load_err(&path, Some("staging"));
    assert!(
        e.contains(&path) && e.contains("\"staging\"") && e.contains("have: main"),
        "{e}"
    );
    assert_hidden(&["tok-noctx-3c4d"], &[&e]);
    // The current context pointing nowhere is the same error.
    let path = dir.write(
        "config2",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            "token: tok-noctx-3c4d\n",
            None,
        )
        .replace("current-context: main", "current-context: gone"),
    );
    let e = load_err(&path, None);
    assert!(e.contains("\"gone\"") && e.contains("have: main"), "{e}");
}

#[test]
fn a_cluster_without_a_server_is_named() {
    let _w = Watchdog::new("a_cluster_without_a_server_is_named", LIMIT);
    let dir = TempDir::new("no-server");
    let path = dir.write(
        "config",
        kubeconfig(
            "insecure-skip-tls-verify: true\n",
            "token: tok-noserver-5d6e\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains(&path) && e.contains("\"c\"") && e.contains("server"),
        "{e}"
    );
    assert_hidden(&["tok-noserver-5d6e"], &[&e]);
}

#[test]
fn malformed_certificate_data_is_named() {
    let _w = Watchdog::new("malformed_certificate_data_is_named", LIMIT);
    let dir = TempDir::new("bad-certs");
    let server = "server: https://127.0.0.1:1\n";
    // Not base64.
    let path = dir.write(
        "config",
        kubeconfig(
            &format!("{server}certificate-authority-data: \"not*base64!\"\n"),
            "token: tok-badcert-7f80\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains(&path) && e.contains("certificate-authority-data"),
        "{e}"
    );
    assert_hidden(&["tok-badcert-7f80"], &[&e]);

    let key_secret = "c2VjcmV0LWtleS1tYXRlcmlhbC05MTkx"; // base64 of "secret-key-material-9191"
    let path = dir.write(
        "config2",
        kubeconfig(
            server,
            &format!(
                "client-certificate-data: {}\nclient-key-data: \"{key_secret}%%\"\n",
                b64(b"-----BEGIN CERTIFICATE-----\n")
            ),
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(e.contains(&path) && e.contains("client-key-data"), "{e}");
    assert_hidden(&[key_secret, "secret-key-material-9191"], &[&e]);

    // Base64, but not PEM: found when the kubeconfig is read, naming file and field.
    let path = dir.write(
        "config3",
        kubeconfig(
            &format!(
                "{server}certificate-authority-data: {}\n",
                b64(b"hello, not a certificate")
            ),
            "token: tok-badcert-7f80\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains(&path) && e.contains("certificate-authority") && e.contains("PEM"),
        "{e}"
    );

    let pki = Pki::new("bad-key CA");
    let id = pki.client("u", KeyKind::EcPkcs8);
    let path = dir.write(
        "config4",
        kubeconfig(
            server,
            &format!(
                "client-certificate-data: {}\nclient-key-data: {}\n",
                b64(b"not a certificate at all"),
                b64(id.key_pem.as_bytes())
            ),
            None,
        ),
    );
    // Checked when the kubeconfig is read, naming the field and the user.
    let e = load_err(&path, None);
    assert!(
        e.contains(&path)
            && e.contains("client-certificate-data of user \"u\"")
            && e.contains("PEM"),
        "{e}"
    );
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &[&e]);

    // Base64 as strict as Go's: trailing garbage after the padding is refused.
    let path = dir.write(
        "config5",
        kubeconfig(
            &format!("{server}certificate-authority-data: \"YQ==garbage!!\"\n"),
            "token: tok-badcert-7f80\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains("certificate-authority-data") && e.contains("not valid base64"),
        "{e}"
    );

    // A certificate-authority file that is not there: the resolved path is named.
    let path = dir.write(
        "kube/config6",
        kubeconfig(
            &format!("{server}certificate-authority: pki/missing.crt\n"),
            "token: tok-badcert-7f80\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains(
            &dir.path()
                .join("kube/pki/missing.crt")
                .display()
                .to_string()
        ),
        "{e}"
    );
}

#[test]
fn a_malformed_client_key_is_a_clear_error_not_a_panic() {
    let _w = Watchdog::new("malformed_client_key", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let res = own_resource(&c.api, "garbagekeys");
    let id = c.clients.client("u", KeyKind::EcPkcs8);
    // PEM framing around bytes that are no key at all.
    let garbage_key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWdhcmJhZ2Uta2V5LTQ0NTU2Njc3\n-----END PRIVATE KEY-----\n";
    let dir = TempDir::new("garbage-key");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            &format!(
                "client-certificate-data: {}\nclient-key-data: {}\n",
                b64(id.cert_pem.as_bytes()),
                b64(garbage_key.as_bytes())
            ),
            None,
        ),
    );
    // Refused when the kubeconfig is read, before any handshake.
    let e = load_err(&path, None);
    assert!(e.contains(&path) && e.contains("client key"), "{e}");
    assert_hidden(&["c2VjcmV0LWdhcmJhZ2Uta2V5LTQ0NTU2Njc3"], &[&e]);
    // The same identity given through the Rust API: refused by Reader::open.
    let mut config = quick(Config::new(Access::new(c.url())), &[&res]);
    config.access.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.access.client_identity = Some(kube_tattler::ClientIdentity {
        cert_pem: id.cert_pem.clone().into_bytes(),
        key_pem: garbage_key.as_bytes().to_vec(),
    });
    let e = open_err(config);
    assert!(e.contains("client key"), "{e}");
    assert_eq!(c.front.handshakes(), [], "no handshake was tried");
}

#[test]
fn a_client_certificate_without_a_key_is_an_error() {
    let _w = Watchdog::new("a_client_certificate_without_a_key_is_an_error", LIMIT);
    let dir = TempDir::new("cert-no-key");
    let pki = Pki::new("no-key CA");
    let id = pki.client("u", KeyKind::EcPkcs8);
    dir.write("u.crt", &id.cert_pem);
    let path = dir.write(
        "config",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            "client-certificate: u.crt\ntoken: tok-nokey-9a9a\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(e.contains(&path) && e.contains("client key"), "{e}");
    assert_hidden(&["tok-nokey-9a9a"], &[&e]);
    let e = Config::from_json(&format!(
        r#"{{"server":"https://127.0.0.1:1","client_cert_file":{},"resources":["pods"]}}"#,
        q(&dir.file("u.crt"))
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("client_key_file"), "{e}");
}

#[test]
fn a_numeric_password_is_not_echoed_in_the_error() {
    let _w = Watchdog::new("a_numeric_password_is_not_echoed_in_the_error", LIMIT);
    // YAML reads `password: 20240917` as a number. kubectl refuses it too
    // ("cannot unmarshal number into ... of type string"), without the value.
    let dir = TempDir::new("numeric-password");
    let path = dir.write(
        "config",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            "username: admin\npassword: 20240917\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    // The place, never the value.
    assert!(
        e.contains(&path)
            && e.contains("line 13 column 15: `users[].user.password` must be a string, not a number (quote it)"),
        "{e}"
    );
    assert_hidden(&["20240917"], &[&e]);
    // A value with an escaped quote in it is not quoted back either.
    let path = dir.write(
        "config2",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            "token: [\"tok-\\\"quoted-6f6f\"]\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(
        e.contains("`users[].user.token` must be a string, not a list"),
        "{e}"
    );
    assert_hidden(&["quoted-6f6f"], &[&e]);
}

/// A kubeconfig whose user is the exec plugin `command args…` with `env`,
/// on the plain fake, watching a resource of the test's own.
fn failing_exec(
    tag: &'static str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
    extra: &str,
) -> (FakeApi, TempDir, String, Reader) {
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, tag);
    let dir = TempDir::new(tag);
    let user = exec_yaml(
        V1,
        command,
        args,
        env,
        &format!("interactiveMode: Never\n{extra}"),
    );
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    (api, dir, res, r)
}

#[test]
fn an_exec_command_that_does_not_exist_is_an_error_entry_with_its_install_hint() {
    let _w = Watchdog::new("exec_missing", LIMIT);
    let (api, _dir, _res, r) = failing_exec(
        "execmissings",
        "/nonexistent/bin/kube-login",
        &[],
        &[],
        "installHint: \"\\e[1mbrew install kube-login\\e[0m, or see https://example.invalid/kube-login\"\n",
    );
    let m = credentials_error(&r);
    assert!(
        m.contains("exec plugin: its executable (exec.command) was not found")
            && !m.contains("/nonexistent/bin/kube-login")
            && m.contains("client-go credential plugin that is not installed")
            && m.contains("\n\nbrew install kube-login, or see https://example.invalid/kube-login"),
        "{m}"
    );
    assert!(!m.contains('\u{1b}'), "terminal escapes are dropped: {m:?}");
    assert_eq!(api.requests(), Vec::<String>::new());
}

#[test]
fn an_exec_plugin_printing_non_json_is_an_error_entry_that_never_shows_its_output() {
    let _w = Watchdog::new("exec_garbage", LIMIT);
    let (api, dir, _res, r) = failing_exec(
        "execgarbages",
        "/bin/sh",
        &[&plugin()],
        &[
            ("PLUGIN_MODE", "garbage"),
            ("PLUGIN_TOKEN", "tok-garbage-4b4b"),
        ],
        "",
    );
    let m = credentials_error(&r);
    assert!(
        m.contains("exec plugin: its output is not an ExecCredential"),
        "{m}"
    );
    assert_eq!(api.requests(), Vec::<String>::new());
    let texts = vec![m, format!("{:?}", r.stats())];
    assert_hidden(&["tok-garbage-4b4b", "this is not JSON"], &strs(&texts));
    drop(dir);
}

#[test]
fn an_exec_plugin_that_fails_is_retried_and_its_stderr_is_never_kept() {
    let _w = Watchdog::new("exec_boom", LIMIT);
    let dir_runs = TempDir::new("exec-boom-runs");
    let runs = dir_runs.file("runs");
    let (api, _dir, res, r) = failing_exec(
        "execexits",
        "/bin/sh",
        &[&plugin()],
        &[
            ("PLUGIN_MODE", "fail"),
            ("PLUGIN_TOKEN", "tok-boom-5c5c"),
            ("PLUGIN_LOG", &runs),
        ],
        "",
    );
    // client-go's words, with no stderr in them; retried, not final.
    let line = logged(&[&format!("{res}: credentials"), "failed with exit code 1"]);
    assert!(
        line.contains("exec plugin failed with exit code 1; retrying"),
        "{line}"
    );
    assert!(!line.contains("boom"), "{line}");
    assert_only_not_current(&r, "Credentials");
    let last = r.stats()[0].last_error.clone().unwrap_or_default();
    assert!(
        last.contains("exit code 1") && !last.contains("boom"),
        "{last}"
    );
    // A failure is kept for a while: the streams retry every few ms, the plugin ran once.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(r.stats()[0].reconnects >= 3, "{:?}", r.stats());
    assert_eq!(
        plugin_runs(&runs).len(),
        1,
        "a failure is cached for a few seconds"
    );
    assert_eq!(api.requests(), Vec::<String>::new());
    let texts = vec![format!("{:?}", r.stats())];
    assert_hidden(&["tok-boom-5c5c"], &strs(&texts));
    assert!(capture_log().matching(&["boom"]).is_empty());
}

#[test]
fn an_exec_plugin_that_keeps_failing_becomes_an_error_entry() {
    let _w = Watchdog::new("exec_keeps_failing", Duration::from_secs(90));
    // (about 20 s: five runs, each failure kept 5 s)
    let dir_runs = TempDir::new("exec-fail-runs");
    let runs = dir_runs.file("runs");
    let started = Instant::now();
    let (api, _dir, _res, r) = failing_exec(
        "execfailings",
        "/bin/sh",
        &[&plugin()],
        &[("PLUGIN_MODE", "fail"), ("PLUGIN_LOG", &runs)],
        "",
    );
    let m = credentials_error_within(&r, Duration::from_secs(60));
    // Five runs, a failure kept 5 s each time: final after about 20 s, not forever.
    assert_eq!(plugin_runs(&runs).len(), 5, "{m}");
    assert!(
        started.elapsed() >= Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(m.contains("failed with exit code 1"), "{m}");
    assert_eq!(api.requests(), Vec::<String>::new());
}

#[test]
fn interactive_mode_is_checked_as_client_go_does() {
    let _w = Watchdog::new("exec_interactive", LIMIT);
    let dir = TempDir::new("exec-interactive");
    let path_for = |api_version: &str, extra: &str| {
        let user = exec_yaml(api_version, "/bin/sh", &[&plugin()], &[], extra);
        dir.write(
            "config",
            kubeconfig("server: https://127.0.0.1:1\n", &user, None),
        )
    };
    // Always: a library has no terminal on stdin.
    let e = load_err(&path_for(V1, "interactiveMode: Always\n"), None);
    assert!(e.contains("interactiveMode Always needs a terminal"), "{e}");
    // v1 must say; v1beta1 defaults to IfAvailable (never interactive here).
    let e = load_err(&path_for(V1, ""), None);
    assert!(e.contains("interactiveMode must be specified"), "{e}");
    let e = load_err(&path_for(V1, "interactiveMode: Sometimes-9f9f\n"), None);
    assert!(
        e.contains("invalid interactiveMode (Never, IfAvailable or Always)")
            && !e.contains("Sometimes-9f9f"),
        "{e}"
    );
    match load(&path_for(V1BETA1, ""), None).access.auth {
        Auth::Exec(x) => assert_eq!(x.interactive_mode, "IfAvailable"),
        other => panic!("{other:?}"),
    }
    let e = load_err(
        &path_for(
            "client.authentication.k8s.io/v1alpha1-8e8e",
            "interactiveMode: Never\n",
        ),
        None,
    );
    assert!(
        e.contains("exec plugin: invalid apiVersion (want") && !e.contains("v1alpha1-8e8e"),
        "{e}"
    );
}

#[test]
fn a_missing_token_file_is_named() {
    let _w = Watchdog::new("token_file_missing", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, "tokenlesses");
    let dir = TempDir::new("token-missing");
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &format!("server: {}\n", q(&api.url())),
            "tokenFile: gone/token\n",
            None,
        ),
    );
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    let missing = dir.path().join("kube/gone/token").display().to_string();
    logged(&[&format!("{res}: credentials"), &missing]);
    assert_only_not_current(&r, "Credentials");
    // The explicit API checks the file up front.
    let e = Access::new(api.url())
        .token_file(&missing)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&missing), "{e}");
}

#[test]
fn json_errors_name_the_key() {
    let _w = Watchdog::new("json_errors_name_the_key", LIMIT);
    let e = |j: &str| Config::from_json(j).unwrap_err().to_string();
    assert!(
        e(r#"{"server":"https://h","resources":["pods"],"exec":{"args":["x"]}}"#)
            .contains("exec.command")
    );
    assert!(
        e(r#"{"server":"https://h","resources":["pods"],"client_key_file":"k"}"#)
            .contains("client_cert_file")
    );
    assert!(
        e(r#"{"server":"https://h","resources":["pods"],"tls_server_nam":"x"}"#)
            .contains("`tls_server_nam`")
    );
    let err = e(
        r#"{"server":"https://h","resources":["pods"],"client_cert_file":"/nonexistent/c.crt","client_key_file":"/nonexistent/c.key"}"#,
    );
    assert!(err.contains("/nonexistent/c.crt"), "{err}");
}

/// A password holding a `/` (base64 does) ends the URL's authority where Go's
/// `net/url` ends it: kubectl refuses such a server or proxy-url, and so does
/// tattler, without printing the password anywhere (issue 21).
#[test]
fn urls_with_a_slash_in_the_password_are_refused_unseen() {
    let _w = Watchdog::new("urls_with_a_slash_in_the_password", LIMIT);
    capture_log();
    let dir = TempDir::new("url-slash");
    for (field, url) in [
        ("server", "https://user:pa/ss-url-5e5e@127.0.0.1"),
        ("server", "https://user:123/ss-url-5e5e@127.0.0.1"),
        ("server", "https://user:pa ss-url-5e5e@127.0.0.1"),
        (
            "proxy-url",
            "http://puser:pa/ss-url-5e5e@proxy.internal:3128",
        ),
        (
            "proxy-url",
            "socks5://puser:pa/ss-url-5e5e@proxy.internal:1080",
        ),
    ] {
        let cluster = match field {
            "server" => format!("server: {}\n", q(url)),
            _ => format!("server: https://10.1.2.3:6443\nproxy-url: {}\n", q(url)),
        };
        let path = dir.write(
            "config",
            kubeconfig(&cluster, "token: tok-url-6f6f\n", None),
        );
        let mut texts = Vec::new();
        match Access::from_kubeconfig(Some(path.as_ref()), None).map(Config::new) {
            Ok(c) => {
                let c = c.watch(["pods"]).unwrap();
                texts.push(format!("{c:?}"));
                texts.push(open_err(c));
            }
            Err(e) => texts.push(format!("{e} {e:?}")),
        }
        let e = texts.last().unwrap().clone();
        assert!(
            e.contains("userinfo") || e.contains("port") || e.contains("'@' follows"),
            "{url}: {e}"
        );
        assert_hidden(&["ss-url-5e5e", "tok-url-6f6f"], &strs(&texts));
    }
    // Percent-encoded, the same password is fine (proxy_url.rs sends one) and still unseen.
    let mut access = Access::new("https://10.1.2.3:6443");
    access.proxy = ProxyConfig::Url("http://puser:pa%2Fss-url-5e5e@proxy.internal:3128".into());
    let shown = format!("{access:?}");
    assert!(shown.contains("[redacted]@proxy.internal:3128"), "{shown}");
    assert_hidden(&["ss-url-5e5e"], &[&shown]);
}
