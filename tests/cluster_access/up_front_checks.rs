//! Issue 13: certificates checked up front, client-go's TLS rules.

use super::*;
use kube_tattler::Access;

/// A cluster demanding client certificates, and its client CA as files for openssl.
fn mtls_cluster(dir: &TempDir) -> (Cluster, std::path::PathBuf, std::path::PathBuf) {
    let c = Cluster::with(&["127.0.0.1"], true);
    let ca = dir.path().join("client-ca.crt");
    let key = dir.path().join("client-ca.key");
    std::fs::write(&ca, &c.clients.ca_pem).unwrap();
    std::fs::write(&key, &c.clients.ca_key_pem).unwrap();
    (c, ca, key)
}

#[test]
fn a_v1_client_certificate_is_refused_up_front_with_how_to_reissue_it() {
    let _w = Watchdog::new("v1_client_cert", LIMIT);
    capture_log();
    let dir = TempDir::new("v1-cert");
    let (c, ca, ca_key) = mtls_cluster(&dir);
    let (v1, v1_key) = openssl_client_cert(dir.path(), &ca, &ca_key, "tutorial-user", false);
    let cert_file = dir.write("kube/alice.crt", &v1);
    dir.write("kube/alice.key", &v1_key);
    let cluster = format!(
        "server: {}\ncertificate-authority-data: {}\n",
        q(&c.url()),
        c.ca_data()
    );
    let want = |e: &str| {
        assert!(
            e.contains("is an X.509 v1 certificate")
                && e.contains("kubectl accepts it")
                && e.contains("openssl x509 -req")
                && e.contains("-extfile"),
            "{e}"
        );
        assert_hidden(&strs(&pem_lines(&v1_key)), &[e]);
    };
    // kubeconfig with files: the error names the certificate file and the user.
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &cluster,
            "client-certificate: alice.crt\nclient-key: alice.key\n",
            None,
        ),
    );
    let e = load_err(&path, None);
    want(&e);
    assert!(
        e.contains(&format!("client certificate {cert_file} of user \"u\"")),
        "{e}"
    );
    // kubeconfig with data.
    let path = dir.write(
        "kube/config2",
        kubeconfig(
            &cluster,
            &format!(
                "client-certificate-data: {}\nclient-key-data: {}\n",
                b64(v1.as_bytes()),
                b64(v1_key.as_bytes())
            ),
            None,
        ),
    );
    let e = load_err(&path, None);
    want(&e);
    assert!(e.contains("client-certificate-data of user \"u\""), "{e}");
    // JSON: refused when the document is read; the Rust API: Reader::open refuses it.
    let json = format!(
        r#"{{"server":{},"ca_data":{},"client_cert_file":{},"client_key_file":{},"resources":["pods"]}}"#,
        q(&c.url()),
        q(&c.pki.ca_pem),
        q(&cert_file),
        q(&dir.file("kube/alice.key"))
    );
    want(&Config::from_json(&json).unwrap_err().to_string());
    let mut config = quick(Config::new(Access::new(c.url())), &["pods"]);
    config.access.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.access.client_identity = Some(kube_tattler::ClientIdentity {
        cert_pem: v1.clone().into_bytes(),
        key_pem: v1_key.clone().into_bytes(),
    });
    want(&open_err(config));
    assert_eq!(c.front.handshakes(), [], "nothing was tried");
    assert!(capture_log().matching(&["panicked"]).is_empty());

    // Reissued as the message says (same CA, -extfile): it works.
    let (v3, v3_key) = openssl_client_cert(dir.path(), &ca, &ca_key, "tutorial-user", true);
    dir.write("kube/alice.crt", &v3);
    dir.write("kube/alice.key", &v3_key);
    let path = dir.write(
        "kube/config3",
        kubeconfig(
            &cluster,
            "client-certificate: alice.crt\nclient-key: alice.key\n",
            None,
        ),
    );
    let _r = streams_one_pod(&c.api, quick(load(&path, None), &["pods"]));
    assert_eq!(c.front.handshakes().len(), 1);
    assert!(c.front.handshakes()[0].is_some());
}

#[test]
fn a_client_key_that_does_not_match_its_certificate_is_refused_up_front() {
    let _w = Watchdog::new("key_mismatch", LIMIT);
    let pki = Pki::new("mismatch CA");
    let (a, b) = (
        pki.client("a", KeyKind::EcPkcs8),
        pki.client("b", KeyKind::EcPkcs8),
    );
    let dir = TempDir::new("key-mismatch");
    let path = dir.write(
        "config",
        kubeconfig(
            "server: https://127.0.0.1:1\n",
            &format!(
                "client-certificate-data: {}\nclient-key-data: {}\n",
                b64(a.cert_pem.as_bytes()),
                b64(b.key_pem.as_bytes())
            ),
            None,
        ),
    );
    let e = load_err(&path, None);
    assert!(e.contains("its key does not belong to it"), "{e}");
    assert_hidden(&strs(&pem_lines(&b.key_pem)), &[&e]);
}

#[test]
fn an_exec_plugin_handing_out_a_v1_certificate_is_an_error_entry() {
    let _w = Watchdog::new("exec_v1_cert", LIMIT);
    let dir = TempDir::new("exec-v1-cert");
    let (c, ca, ca_key) = mtls_cluster(&dir);
    let (v1, v1_key) = openssl_client_cert(dir.path(), &ca, &ca_key, "exec-user", false);
    let (cert, key) = (dir.write("e.crt", &v1), dir.write("e.key", &v1_key));
    let res = own_resource(&c.api, "execv1certs");
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &[("PLUGIN_CERT_FILE", &cert), ("PLUGIN_KEY_FILE", &key)],
        "interactiveMode: Never\n",
    );
    let path = dir.write(
        "config",
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
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    let m = credentials_error(&r);
    assert!(
        m.contains("the client certificate from exec plugin is an X.509 v1 certificate")
            && m.contains("-extfile"),
        "{m}"
    );
    assert_eq!(c.front.handshakes(), []);
    assert!(capture_log().matching(&["panicked"]).is_empty());
    assert_hidden(
        &strs(&pem_lines(&v1_key)),
        &[&m, &format!("{:?}", r.stats())],
    );
}

#[test]
fn insecure_skip_tls_verify_with_a_ca_is_refused_as_client_go_refuses_it() {
    let _w = Watchdog::new("insecure_with_ca", LIMIT);
    capture_log();
    let c = Cluster::start();
    let dir = TempDir::new("insecure-ca");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\ninsecure-skip-tls-verify: true\n",
                q(&c.url()),
                c.ca_data()
            ),
            "token: tok-insecure-ca-1a1a\n",
            None,
        ),
    );
    let want = "insecure-skip-tls-verify together with a certificate authority is not allowed";
    let e = load_err(&path, None);
    assert!(
        e.contains(&path) && e.contains("cluster \"c\"") && e.contains(want),
        "{e}"
    );
    let e = Config::from_json(&format!(
        r#"{{"server":{},"ca_data":{},"insecure":true,"token":"tok-insecure-ca-1a1a","resources":["pods"]}}"#,
        q(&c.url()),
        q(&c.pki.ca_pem)
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains(want), "{e}");
    let mut config = quick(
        Config::new(Access::new(c.url()).token("tok-insecure-ca-1a1a")),
        &["pods"],
    );
    config.access.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.access.insecure_skip_tls_verify = true;
    let e = open_err(config);
    assert!(e.contains(want), "{e}");
    assert_eq!(c.front.handshakes(), [], "the token went nowhere");
    assert_hidden(&["tok-insecure-ca-1a1a"], &[&e]);
}

#[test]
fn tls_server_name_changes_only_the_checked_name_not_the_proxy_target_or_host() {
    let _w = Watchdog::new("tls_server_name_proxy", LIMIT);
    capture_log();
    // The certificate is for kubernetes.internal; the URL names a host only the proxy knows.
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = ConnectProxy::start();
    let server = format!("https://api.cluster.invalid:{}", c.front.port());
    let dir = TempDir::new("tls-server-name-proxy");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\ntls-server-name: kubernetes.internal\nproxy-url: {}\n",
                q(&server),
                c.ca_data(),
                q(&proxy.url())
            ),
            "token: tok-sni-proxy-2e2e\n",
            None,
        ),
    );
    let _r = streams_one_pod(&c.api, quick(load(&path, None), &["pods"]));
    let authority = format!("api.cluster.invalid:{}", c.front.port());
    assert_eq!(
        proxy.targets(),
        std::slice::from_ref(&authority),
        "CONNECT names the server"
    );
    assert_eq!(
        c.front.header_values("host"),
        [authority],
        "Host names the server"
    );
    assert_eq!(
        c.front.server_names(),
        [Some("kubernetes.internal".to_string())],
        "SNI"
    );
    assert_eq!(c.front.handshake_errors(), Vec::<String>::new());
    assert_hidden(&["tok-sni-proxy-2e2e"], &[]);
}

#[test]
fn plain_http_to_localhost_goes_to_its_loopback_address() {
    let _w = Watchdog::new("http_localhost", LIMIT);
    let api = FakeApi::start();
    api.require_token(Some("tok-localhost-3b3b"));
    let port = api.url().rsplit(':').next().unwrap().to_string();
    let config = quick(
        Config::new(Access::new(format!("http://localhost:{port}")).token("tok-localhost-3b3b")),
        &["pods"],
    );
    let _r = streams_one_pod(&api, config);
    // A name that is not loopback is refused by name; one that resolves
    // elsewhere is refused by address (src/transport.rs unit tests).
    let e = open_err(quick(
        Config::new(Access::new("http://example.invalid:80")),
        &["pods"],
    ));
    assert!(e.contains("loopback"), "{e}");
}

#[test]
fn yaml_aliases_are_capped_and_merge_keys_work() {
    let _w = Watchdog::new("yaml_aliases", LIMIT);
    let dir = TempDir::new("yaml-aliases");
    // Nine levels of nine aliases: 443 bytes that would expand to 387 million strings.
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for w in names.windows(2) {
        bomb.push_str(&format!(
            "{}: &{} [{}]\n",
            w[1],
            w[1],
            vec![format!("*{}", w[0]); 9].join(",")
        ));
    }
    let path = dir.write("bomb", &bomb);
    let t = Instant::now();
    let e = load_err(&path, None);
    assert!(
        e.contains(&path) && e.contains("aliases expand to more than"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // A larger file than any kubeconfig: refused unread.
    let big = dir.write("big", vec![b'#'; (16 << 20) + 1]);
    let e = load_err(&big, None);
    assert!(e.contains(&big) && e.contains("larger than"), "{e}");
    // Anchors and merge keys as people write them.
    let api = FakeApi::start();
    let path = dir.write(
        "config",
        format!(
            "current-context: main\nclusters:\n- name: c\n  cluster: &cluster\n    server: {}\nusers:\n- name: base\n  user: &base\n    token: tok-merge-4c4c\n- name: u\n  user:\n    <<: *base\ncontexts:\n- name: main\n  context: {{cluster: c, user: u}}\n- name: other\n  context:\n    cluster: c\n",
            q(&api.url())
        ),
    );
    let config = load(&path, None);
    assert_eq!(
        config.access.auth,
        Auth::Token(Token::new("tok-merge-4c4c"))
    );
}

#[test]
fn exec_precedence_follows_client_go() {
    let _w = Watchdog::new("exec_precedence", LIMIT);
    let dir = TempDir::new("exec-precedence");
    let runs = dir.file("runs");
    let exec = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &[("PLUGIN_LOG", &runs)],
        "interactiveMode: Never\n",
    );
    let pki = Pki::new("precedence CA");
    let id = pki.client("u", KeyKind::EcPkcs8);
    let config_with = |user: &str| {
        dir.write(
            "config",
            kubeconfig("server: https://127.0.0.1:1\n", user, None),
        )
    };
    // A token, or a client certificate, makes client-go skip the plugin.
    let c = load(&config_with(&format!("token: tok-prec-5d5d\n{exec}")), None);
    assert_eq!(c.access.auth, Auth::Token(Token::new("tok-prec-5d5d")));
    let c = load(
        &config_with(&format!(
            "client-certificate-data: {}\nclient-key-data: {}\n{exec}",
            b64(id.cert_pem.as_bytes()),
            b64(id.key_pem.as_bytes())
        )),
        None,
    );
    assert_eq!(c.access.auth, Auth::None);
    assert!(c.access.client_identity.is_some());
    // A token and a password: "more than one authentication method".
    let e = load_err(
        &config_with("token: tok-prec-5d5d\nusername: a\npassword: pw-prec-6e6e\n"),
        None,
    );
    assert!(e.contains("only one is allowed"), "{e}");
    assert_hidden(&["tok-prec-5d5d", "pw-prec-6e6e"], &[&e]);
    assert!(
        !std::path::Path::new(&runs).exists(),
        "the plugin never ran"
    );
}

/// A shell command as an exec plugin (Rust API), answering `token` unless it hangs.
fn shell_plugin(script: &str, timeout: Duration) -> Auth {
    let mut e = kube_tattler::ExecConfig::new("/bin/sh", &["-c", script]);
    e.timeout = timeout;
    Auth::Exec(e)
}

const CRED: &str = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-shell-7f7f"}}"#;

/// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
    }
}

/// Waits (10 s at most) until `file` exists and is not empty; its text.
fn wait_file(file: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(t) = std::fs::read_to_string(file) {
            if t.ends_with('\n') {
                return t;
            }
        }
        assert!(Instant::now() < deadline, "{file} never written");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The plugin's exit, not its pipe's end, ends a run: a background child
/// (in its process group) that keeps stdout open neither holds the stream
/// until the deadline nor outlives the run.
#[test]
fn a_plugin_that_exits_answers_though_a_grandchild_keeps_stdout_open() {
    let _w = Watchdog::new("exec_grandchild", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-shell-7f7f"));
    let res = own_resource(&api, "grandchilds");
    let dir = TempDir::new("exec-grandchild");
    let pid = dir.file("pid");
    let script = format!("sleep 600 & echo $! > {pid}; printf '%s' '{CRED}'");
    let mut config = quick(Config::new(Access::new(api.url())), &[&res]);
    // A deadline far off: ending the run is the exit's doing.
    config.access.auth = shell_plugin(&script, Duration::from_secs(30));
    let t = Instant::now();
    let r = Reader::open(config).unwrap();
    assert_eq!(until_synced(&r), ["Synced grandchilds"]);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let pid = wait_file(&pid);
    assert!(ended(&pid), "the grandchild {pid} was not killed");
    assert!(capture_log()
        .matching(&["left its process group"])
        .iter()
        .all(|l| !l.contains(pid.trim())));
}

#[test]
fn close_interrupts_a_running_plugin_at_once_and_it_runs_once_for_all_streams() {
    let _w = Watchdog::new("exec_close", LIMIT);
    let api = FakeApi::start();
    let (a, b) = (own_resource(&api, "closeas"), own_resource(&api, "closebs"));
    let dir = TempDir::new("exec-close");
    let (pid, runs) = (dir.file("pid"), dir.file("runs"));
    let script = format!("echo $$ > {pid}; echo run >> {runs}; exec sleep 600");
    let mut config = quick(Config::new(Access::new(api.url())), &[&a, &b, "pods"]);
    config.access.auth = shell_plugin(&script, Duration::from_secs(60));
    let r = Reader::open(config).unwrap();
    let pid = wait_file(&pid);
    // Let every stream reach the plugin: they wait on the one run.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        r.stats()
            .iter()
            .all(|s| !s.failed && s.last_error.is_none()),
        "{:?}",
        r.stats()
    );
    let t = Instant::now();
    r.close();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "close took {:?}",
        t.elapsed()
    );
    assert!(ended(&pid), "the plugin {pid} still runs");
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "run\n",
        "one run for three streams"
    );
}

#[test]
fn a_token_file_that_cannot_be_reread_keeps_the_last_token() {
    let _w = Watchdog::new("token_file_reread", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, "rereads");
    api.require_token(Some("tok-last-good-8a8a"));
    let dir = TempDir::new("token-reread");
    let file = dir.write("token", "tok-last-good-8a8a\n");
    let config = quick(
        Config::new(Access::new(api.url()).token_file(&file).unwrap()),
        &[&res],
    );
    let r = Reader::open(config).unwrap();
    let synced = until_synced(&r);
    assert_eq!(synced.len(), 1, "{synced:?}");
    // The file goes away; a 401 makes tattler re-read it at once.
    std::fs::remove_file(&file).unwrap();
    api.push_fault(
        &res,
        tattler_fakeapi::Fault::Status {
            code: 401,
            reason: "Unauthorized".into(),
            message: String::new(),
            retry_after: None,
        },
    );
    reconnect(&api);
    let line = logged(&[
        "cannot read token file",
        &file,
        "using the token read before",
    ]);
    assert!(!line.contains("tok-last-good"), "{line}");
    // The stream goes on with the token it had.
    api.apply(&res, FakeApi::object(Some("a"), "o1"));
    assert_eq!(take(&r, 1), ["Add a/o1"]);
    assert!(!r.stats()[0].failed);
    assert_hidden(&["tok-last-good-8a8a"], &[&format!("{:?}", r.stats())]);
}

/// A plugin that writes 256 KiB to stderr (a secret among it) before it
/// answers: stderr goes to this process's stderr, as kubectl passes it on,
/// and never into a log line, an error or the stats. Run in a child process
/// so that its stderr can be read.
#[test]
fn exec_stderr_is_passed_through_whole_and_kept_out_of_logs() {
    let _w = Watchdog::new("exec_stderr", LIMIT);
    const SECRET: &str = "refresh-token-stderr-9b9b";
    if std::env::var_os("TATTLER_STDERR_CHILD").is_some() {
        capture_log();
        let api = FakeApi::start();
        api.require_token(Some("tok-shell-7f7f"));
        let script = format!(
            "i=0; while [ $i -lt 4096 ]; do echo 'noise {SECRET} ................................'; i=$((i+1)); done >&2; printf '%s' '{CRED}'"
        );
        let mut config = quick(Config::new(Access::new(api.url())), &["pods"]);
        config.access.auth = shell_plugin(&script, Duration::from_secs(30));
        let r = streams_one_pod(&api, config.clone());
        let texts = debug_texts(&config, &r);
        assert_hidden(&[SECRET], &strs(&texts));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "up_front_checks::exec_stderr_is_passed_through_whole_and_kept_out_of_logs",
            "--exact",
            "--nocapture",
        ])
        .env("TATTLER_STDERR_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        stderr.matches(SECRET).count(),
        4096,
        "the plugin's stderr, whole"
    );
}
