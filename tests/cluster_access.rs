//! Cluster access the way kubectl and client-go do it (issue 3): every kubeconfig
//! field, exec credential plugins, token-file rotation, `proxy-url`, the JSON
//! configuration, bad input and secrets. The fake apiserver sits behind a TLS
//! front (tests/common/tls.rs) whose certificates are made at run time.
//!
//! Nothing here touches the process environment: those checks (`KUBECONFIG`
//! merging, in-cluster, `HTTPS_PROXY` / `NO_PROXY`) are in tests/proxy_env.rs.

mod common;

use std::time::{Duration, Instant};

use common::tls::*;
use common::*;
use tattler::{Auth, Backoff, Change, Config, ProxyConfig, Reader, Token};
use tattler_fakeapi::FakeApi;

const LIMIT: Duration = Duration::from_secs(60);
const V1: &str = "client.authentication.k8s.io/v1";
const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

/// Fast retries, so that failure cases log quickly.
fn quick(c: Config, names: &[&str]) -> Config {
    let mut c = c.watch(names).unwrap();
    c.backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(200),
        reset_after: Duration::from_secs(120),
    };
    c
}

/// The fake apiserver behind a TLS front. Client certificates, when the
/// front asks for them, come from a second CA (`clients`), as with kubeadm.
struct Cluster {
    front: TlsFront,
    api: FakeApi,
    pki: Pki,
    clients: Pki,
}

impl Cluster {
    /// Server certificate valid for `sans`; `mtls`: a client certificate is required.
    fn with(sans: &[&str], mtls: bool) -> Cluster {
        let api = FakeApi::start();
        let pki = Pki::new("test cluster CA");
        let clients = Pki::new("test client CA");
        let server = pki.server(sans);
        let front = TlsFront::start(&api.url(), &server, mtls.then_some(&clients));
        Cluster {
            front,
            api,
            pki,
            clients,
        }
    }

    /// The usual cluster: `https://127.0.0.1:PORT` with an IP SAN.
    fn start() -> Cluster {
        Cluster::with(&["127.0.0.1"], false)
    }

    fn url(&self) -> String {
        self.front.url()
    }

    fn ca_data(&self) -> String {
        b64(self.pki.ca_pem.as_bytes())
    }
}

/// Opens a reader for `config` on a cluster holding one pod and checks that
/// it streams: `Add a/p1`, then `Synced pods`.
fn streams_one_pod(api: &FakeApi, config: Config) -> Reader {
    if api.get("pods", Some("a"), "p1").is_none() {
        pod(api, "a", "p1");
    }
    let r = Reader::open(config).unwrap_or_else(|e| panic!("open: {e}"));
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    r
}

/// A resource of its own for a test whose log lines must be told apart from
/// the other tests' (they run in parallel and share the logger): log lines
/// and thread names carry the resource.
fn own_resource(api: &FakeApi, plural: &str) -> String {
    let kind: String = plural
        .trim_end_matches('s')
        .char_indices()
        .map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c })
        .collect();
    api.add_resource("access.test", "v1", plural, &kind, true);
    format!("access.test/v1/{plural}")
}

/// None of `secrets` appears in any of `texts`, nor in a log line of tattler
/// or its HTTP stack.
fn assert_hidden(secrets: &[&str], texts: &[&str]) {
    for s in secrets {
        assert!(s.len() >= 6, "secret {s:?} too short to search for");
        for t in texts {
            assert!(!t.contains(s), "secret {s:?} shows in: {t}");
        }
        let leaks = capture_log().leaks(s);
        assert!(leaks.is_empty(), "secret {s:?} logged: {leaks:#?}");
    }
}

/// `Config` and `Reader::stats` as a caller would print them.
fn debug_texts(config: &Config, r: &Reader) -> Vec<String> {
    vec![format!("{config:?}"), format!("{:?}", r.stats())]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A YAML double-quoted scalar.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn indent(body: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    body.lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>()
}

/// A kubeconfig with one cluster `c`, one user `u` and the current context `main`.
fn kubeconfig(cluster: &str, user: &str, namespace: Option<&str>) -> String {
    let ns = namespace
        .map(|n| format!("    namespace: {}\n", q(n)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\npreferences: {{}}\ncurrent-context: main\n\
         clusters:\n- name: c\n  cluster:\n{}\
         users:\n- name: u\n  user:\n{}\
         contexts:\n- name: main\n  context:\n    cluster: c\n    user: u\n{ns}",
        indent(cluster, 4),
        indent(user, 4),
    )
}

/// A user's `exec:` block.
fn exec_yaml(
    api_version: &str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
    extra: &str,
) -> String {
    let mut y = format!(
        "exec:\n  apiVersion: {api_version}\n  command: {}\n",
        q(command)
    );
    if !args.is_empty() {
        y.push_str("  args:\n");
        for a in args {
            y.push_str(&format!("  - {}\n", q(a)));
        }
    }
    if !env.is_empty() {
        y.push_str("  env:\n");
        for (k, v) in env {
            y.push_str(&format!("  - name: {k}\n    value: {}\n", q(v)));
        }
    }
    y.push_str(&indent(extra, 2));
    y
}

fn plugin() -> String {
    fixtures().join("exec-plugin.sh").display().to_string()
}

/// The run times the plugin logged (seconds since the epoch).
fn plugin_runs(log: &str) -> Vec<f64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

fn load(path: &str, context: Option<&str>) -> Config {
    Config::from_kubeconfig(Some(path), context).unwrap_or_else(|e| panic!("kubeconfig: {e}"))
}

fn load_err(path: &str, context: Option<&str>) -> String {
    match Config::from_kubeconfig(Some(path), context) {
        Ok(c) => panic!("kubeconfig {path} loaded: {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn open_err(config: Config) -> String {
    match Reader::open(config) {
        Ok(_) => panic!("Reader::open accepted the configuration"),
        Err(e) => e.to_string(),
    }
}

/// Waits for the reader's stream to log a line with all of `parts`; the line.
fn logged(parts: &[&str]) -> String {
    capture_log()
        .wait_for(parts, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("no log line with {parts:?}"))
}

/// Ends the open watch and waits for the client's next request. A watch that
/// ended a moment ago may still be listed as open, so end again until a new
/// request arrives.
fn reconnect(api: &FakeApi) {
    let n = api.requests().len();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        api.end_watches();
        if api.wait_requests(n + 1, Duration::from_millis(100)) {
            return;
        }
        assert!(Instant::now() < deadline, "no request after {n}");
    }
}

/// No entry at all has come out of the reader.
fn assert_no_entries(r: &Reader) {
    if let Ok(e) = r.try_next() {
        panic!("unexpected entry {}", show(&e));
    }
}

// ---------------------------------------------------------------------------
// Cluster fields

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
    assert_eq!(config.server, c.url());
    assert_eq!(config.ca_pem.as_deref(), Some(c.pki.ca_pem.as_bytes()));
    assert_eq!(config.namespace.as_deref(), Some("team-a"));
    assert_eq!(config.auth, Auth::Token(Token::new("tok-ca-file-4e1b")));
    assert!(
        config.source.contains(&path) && config.source.contains("\"main\""),
        "{}",
        config.source
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
    assert_eq!(config.ca_pem.as_deref(), Some(c.pki.ca_pem.as_bytes()));
    assert_eq!(config.namespace, None);
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
    assert!(config.insecure_skip_tls_verify);
    assert_eq!(config.ca_pem, None);
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
    assert!(!config.insecure_skip_tls_verify);
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
    assert_no_entries(&r);
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
        config.tls_server_name.as_deref(),
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
    assert_no_entries(&r);
    assert_eq!(c.api.requests().len(), before);
    assert_hidden(&["tok-sni-0f0f"], &[]);
}

// ---------------------------------------------------------------------------
// Users

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
        config.auth,
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
    assert_eq!(config.auth, Auth::TokenFile(dir.path().join("token")));
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
    let identity = config.client_identity.clone().expect("client identity");
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
    assert_no_entries(&r);
    assert_eq!(c.api.requests(), Vec::<String>::new());
    assert_hidden(&["tok-nocert-1a2b"], &[]);
}

// ---------------------------------------------------------------------------
// Exec credential plugins

/// The ExecCredential request the plugin was given (KUBERNETES_EXEC_INFO).
fn exec_info(file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).expect("the plugin ran"))
        .expect("KUBERNETES_EXEC_INFO is JSON")
}

#[test]
fn exec_plugin_v1_with_args_env_interactive_never_and_cluster_info() {
    let _w = Watchdog::new("exec_v1", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-exec-v1-2c3d"));
    let dir = TempDir::new("exec-v1");
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[
            &plugin(),
            "--client-secret=sec-arg-7a7a",
            "--region",
            "eu-1",
        ],
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-exec-v1-2c3d"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_INFO", &info),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
        "interactiveMode: Never\nprovideClusterInfo: true\n",
    );
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nextensions:\n- name: other\n  extension: {{x: 1}}\n- name: client.authentication.k8s.io/exec\n  extension:\n    audience: tattler-test\n    scopes: [a, b]\n",
                q(&c.url()),
                c.ca_data()
            ),
            &user,
            Some("exec-ns"),
        ),
    );
    let config = load(&path, None);
    match &config.auth {
        Auth::Exec(e) => {
            assert_eq!(e.api_version, V1);
            assert_eq!(e.command, "/bin/sh");
            assert_eq!(
                e.args,
                [
                    plugin().as_str(),
                    "--client-secret=sec-arg-7a7a",
                    "--region",
                    "eu-1"
                ]
            );
            assert_eq!(e.interactive_mode, "Never");
            assert!(e.env.contains(&("PLUGIN_LOG".to_string(), runs.clone())));
        }
        other => panic!("auth {other:?}"),
    }
    let config = quick(config, &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-exec-v1-2c3d"]
    );
    // One run, with the arguments; the env entries reached it (it wrote both files).
    let lines = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    // sh runs the script; the script sees the arguments after it.
    assert!(lines.trim_end().ends_with(" --region eu-1"), "{lines}");
    let info = exec_info(&info);
    assert_eq!(info["apiVersion"], V1);
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], c.url().as_str());
    // client-go's Cluster: the CA as []byte, so base64 in JSON; empty fields left out.
    assert_eq!(
        info["spec"]["cluster"]["certificate-authority-data"],
        b64(c.pki.ca_pem.as_bytes()).as_str()
    );
    assert_eq!(
        info["spec"]["cluster"]["config"],
        serde_json::json!({"audience": "tattler-test", "scopes": ["a", "b"]})
    );
    assert!(
        info["spec"]["cluster"].get("tls-server-name").is_none(),
        "{info}"
    );
    assert!(
        info["spec"]["cluster"]
            .get("insecure-skip-tls-verify")
            .is_none(),
        "{info}"
    );
    let texts = debug_texts(&config, &r);
    // Config's Debug shows the command, never the arguments' values.
    assert!(
        texts[0].contains("/bin/sh") && texts[0].contains("[4 hidden]"),
        "{}",
        texts[0]
    );
    assert_hidden(&["tok-exec-v1-2c3d", "sec-arg-7a7a"], &strs(&texts));
}

#[test]
fn exec_plugin_v1beta1_relative_command_without_cluster_info() {
    let _w = Watchdog::new("exec_v1beta1", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-exec-beta-8e7f"));
    let dir = TempDir::new("exec-v1beta1");
    // A command with a slash is relative to the kubeconfig's folder, as in kubectl.
    let script = dir.write("kube/bin/plugin.sh", std::fs::read(plugin()).unwrap());
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let user = exec_yaml(
        V1BETA1,
        "./bin/plugin.sh",
        &[],
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-exec-beta-8e7f"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_INFO", &info),
        ],
        "interactiveMode: Never\n",
    );
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
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(plugin_runs(&runs).len(), 1);
    let info = exec_info(&info);
    assert_eq!(info["apiVersion"], V1BETA1);
    assert_eq!(info["spec"]["interactive"], false);
    assert!(info["spec"].get("cluster").is_none(), "{info}");
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-exec-beta-8e7f"], &strs(&texts));
}

#[test]
fn exec_plugin_client_certificate_is_used_for_tls() {
    let _w = Watchdog::new("exec_client_cert", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let id = c.clients.client("exec-user", KeyKind::EcPkcs8);
    let dir = TempDir::new("exec-cert");
    let (cert, key, runs) = (
        dir.write("c.crt", &id.cert_pem),
        dir.write("c.key", &id.key_pem),
        dir.file("runs"),
    );
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &[
            ("PLUGIN_CERT_FILE", &cert),
            ("PLUGIN_KEY_FILE", &key),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
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
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(c.front.handshakes(), [Some(id.cert_der.clone())]);
    assert_eq!(plugin_runs(&runs).len(), 1);
    let texts = debug_texts(&config, &r);
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &strs(&texts));
}

/// A kubeconfig on the plain-HTTP fake whose user is the exec plugin with `env`.
fn exec_on_plain_fake(api: &FakeApi, dir: &TempDir, env: &[(&str, &str)]) -> Config {
    let user = exec_yaml(V1, "/bin/sh", &[&plugin()], env, "interactiveMode: Never\n");
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    quick(load(&path, None), &["pods"])
}

#[test]
fn exec_credential_is_cached_until_its_expiry() {
    let _w = Watchdog::new("exec_cached", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-cached-4d4d"));
    let dir = TempDir::new("exec-cached");
    let runs = dir.file("runs");
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-cached-4d4d"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
    );
    let r = streams_one_pod(&api, config);
    for _ in 0..3 {
        reconnect(&api);
    }
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert_eq!(api.requests().len(), 4);
    assert_eq!(
        plugin_runs(&runs).len(),
        1,
        "an unexpired credential is reused"
    );
}

/// tattler refreshes an exec credential this long before its expirationTimestamp.
const EXEC_REFRESH_MARGIN_SECS: f64 = 30.0;

#[test]
fn exec_credential_is_refreshed_when_it_nears_expiry_and_not_before() {
    let _w = Watchdog::new("exec_refreshed", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-expiring-5e5e"));
    let dir = TempDir::new("exec-expiry");
    let runs = dir.file("runs");
    // Expires 32 s after the run (whole seconds): due for refresh 1..2 s after it.
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-expiring-5e5e"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "32"),
        ],
    );
    let r = streams_one_pod(&api, config);
    assert_eq!(plugin_runs(&runs).len(), 1);
    // Reconnect over and over; each request asks for the credential.
    let deadline = Instant::now() + Duration::from_secs(10);
    while plugin_runs(&runs).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the credential was never refreshed"
        );
        reconnect(&api);
    }
    let n = api.requests().len();
    let t = plugin_runs(&runs);
    let gap = t[1] - t[0];
    assert!(
        gap > 32.0 - EXEC_REFRESH_MARGIN_SECS - 1.0 && gap < 32.0 - EXEC_REFRESH_MARGIN_SECS + 2.0,
        "second run {gap:.3} s after the first; {} requests meanwhile",
        n
    );
    assert!(
        n >= 4,
        "only {n} requests: the reuse before expiry was not exercised"
    );
    pod(&api, "a", "p2");
    // Watches ended at once, again and again, make the stream re-sync
    // (Snapshots of p1) on its way: what matters is that p2 comes.
    loop {
        match take(&r, 1)[0].as_str() {
            "Add a/p2" => break,
            "Snapshot a/p1" | "Synced pods" => {}
            other => panic!("unexpected entry {other}"),
        }
    }
    assert_hidden(&["tok-expiring-5e5e"], &[]);
}

#[test]
fn exec_credential_is_rerun_once_after_a_401() {
    let _w = Watchdog::new("exec_401", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-exec-one-aaaa"));
    let dir = TempDir::new("exec-401");
    let (runs, src) = (dir.file("runs"), dir.write("token", "tok-exec-one-aaaa"));
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[("PLUGIN_TOKEN_FILE", &src), ("PLUGIN_LOG", &runs)],
    );
    let r = streams_one_pod(&api, config);
    // The cluster now wants another token; the plugin would hand it out.
    std::fs::write(&src, "tok-exec-two-bbbb").unwrap();
    api.require_token(Some("tok-exec-two-bbbb"));
    api.end_watches();
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert_eq!(plugin_runs(&runs).len(), 2);
    assert_quiet(&r, Duration::from_millis(300));
    assert_hidden(&["tok-exec-one-aaaa", "tok-exec-two-bbbb"], &[]);
}

// ---------------------------------------------------------------------------
// Contexts

#[test]
fn current_context_or_a_named_one_with_its_namespace() {
    let _w = Watchdog::new("contexts", LIMIT);
    capture_log();
    let (a, b) = (Cluster::start(), Cluster::start());
    a.api.require_token(Some("tok-ctx-a-1111"));
    b.api.require_token(Some("tok-ctx-b-2222"));
    let dir = TempDir::new("contexts");
    let path = dir.write(
        "config",
        format!(
            "apiVersion: v1
kind: Config
current-context: alpha
clusters:
- name: ca
  cluster:
    server: {}
    certificate-authority-data: {}
- name: cb
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: ua
  user:
    token: tok-ctx-a-1111
- name: ub
  user:
    token: tok-ctx-b-2222
contexts:
- name: alpha
  context:
    cluster: ca
    user: ua
    namespace: ns-alpha
- name: beta
  context:
    cluster: cb
    user: ub
    namespace: ns-beta
",
            q(&a.url()),
            a.ca_data(),
            q(&b.url()),
            b.ca_data()
        ),
    );
    let current = load(&path, None);
    assert_eq!(
        (current.server.as_str(), current.namespace.as_deref()),
        (a.url().as_str(), Some("ns-alpha"))
    );
    assert!(current.source.contains("\"alpha\""), "{}", current.source);
    let r = streams_one_pod(&a.api, quick(current, &["pods"]));
    drop(r);
    let named = load(&path, Some("beta"));
    assert_eq!(
        (named.server.as_str(), named.namespace.as_deref()),
        (b.url().as_str(), Some("ns-beta"))
    );
    assert!(named.source.contains("\"beta\""), "{}", named.source);
    let before = a.api.requests().len();
    let r = streams_one_pod(&b.api, quick(named, &["pods"]));
    drop(r);
    assert_eq!(a.api.requests().len(), before);
    assert_eq!(
        b.front.header_values("authorization"),
        ["Bearer tok-ctx-b-2222"]
    );
}

// ---------------------------------------------------------------------------
// proxy-url

#[test]
fn proxy_url_tunnels_through_the_proxy() {
    let _w = Watchdog::new("proxy_url", LIMIT);
    capture_log();
    // A name only the proxy can reach (no DNS here): kubernetes.internal.
    let c = Cluster::with(&["kubernetes.internal"], false);
    c.api.require_token(Some("tok-proxy-3c3c"));
    let proxy = ConnectProxy::start();
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("proxy-url");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&server),
                c.ca_data(),
                q(&proxy.url())
            ),
            "token: tok-proxy-3c3c\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(config.proxy, ProxyConfig::Url(proxy.url()));
    let _r = streams_one_pod(&c.api, quick(config, &["pods"]));
    assert_eq!(
        proxy.targets(),
        [format!("kubernetes.internal:{}", c.front.port())]
    );
    assert_eq!(proxy.auth(), [None]);
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-proxy-3c3c"]
    );
}

#[test]
fn proxy_url_is_not_used_for_a_loopback_server() {
    let _w = Watchdog::new("proxy_url_loopback", LIMIT);
    let c = Cluster::start();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-loopback");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&c.url()),
                c.ca_data(),
                q(&proxy.url())
            ),
            "token: tok-proxy-lo-6a6a\n",
            None,
        ),
    );
    let _r = streams_one_pod(&c.api, quick(load(&path, None), &["pods"]));
    assert_eq!(proxy.targets(), Vec::<String>::new());
}

#[test]
fn proxy_url_credentials_are_sent_but_never_shown() {
    let _w = Watchdog::new("proxy_url_credentials", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = ConnectProxy::start();
    let proxy_url = proxy
        .url()
        .replace("http://", "http://puser:proxy-pw-7b7b@");
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("proxy-creds");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&server),
                c.ca_data(),
                q(&proxy_url)
            ),
            "token: tok-proxy-cred-8c8c\n",
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        proxy.auth(),
        [Some(format!("Basic {}", b64(b"puser:proxy-pw-7b7b")))]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["proxy-pw-7b7b", "tok-proxy-cred-8c8c"], &strs(&texts));
}

#[test]
fn an_unsupported_proxy_scheme_is_a_clear_error_without_the_password() {
    let _w = Watchdog::new("proxy_scheme", LIMIT);
    let dir = TempDir::new("proxy-scheme");
    let path = dir.write(
        "config",
        kubeconfig(
            "server: \"https://[::ffff:127.0.0.1]:1\"\nproxy-url: \"ftp://puser:proxy-pw-9d9d@proxy.internal:21\"\n",
            "token: tok-proxy-scheme-1e1e\n",
            None,
        ),
    );
    let e = open_err(quick(load(&path, None), &["pods"]));
    assert!(e.contains("proxy-url") && e.contains("http://"), "{e}");
    assert_hidden(&["proxy-pw-9d9d", "tok-proxy-scheme-1e1e"], &[&e]);
}

// ---------------------------------------------------------------------------
// Token-file rotation under a running stream

#[test]
fn token_file_rotation_under_a_running_stream() {
    let _w = Watchdog::new("token_file_rotation", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-rot-one-1111"));
    let dir = TempDir::new("rotation");
    let file = dir.write("token", "tok-rot-one-1111\n");
    let mut config = common::config(&api, &["pods"]).token_file(&file).unwrap();
    // Any pause would be long: a reload that is not immediate shows.
    config.backoff = Backoff {
        initial: Duration::from_secs(30),
        max: Duration::from_secs(30),
        reset_after: Duration::from_secs(120),
    };
    let r = streams_one_pod(&api, config.clone());
    let watch_from = |rv: u64| {
        format!("GET /api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion={rv}")
    };
    let rv: u64 = r.stats()[0].resource_version.parse().unwrap();
    // A watch that ends within 1 s of its start is paced by the backoff; let
    // this one live past that so that its end is an ordinary one.
    std::thread::sleep(Duration::from_millis(1100));

    // Rotate: the cached token is refused once, the file re-read, the request retried at once.
    std::fs::write(&file, "tok-rot-two-2222\n").unwrap();
    api.require_token(Some("tok-rot-two-2222"));
    let ended = Instant::now();
    api.end_watches();
    let rv2 = pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert!(
        ended.elapsed() < Duration::from_secs(5),
        "the 401 retry waited {:?}",
        ended.elapsed()
    );
    let reqs = requests(&api);
    assert_eq!(&reqs[1..], [watch_from(rv), watch_from(rv)], "{reqs:#?}");
    assert_eq!(r.stats()[0].reconnects, 1);
    assert!(!r.stats()[0].failed);
    assert_quiet(&r, Duration::from_millis(300));

    // A token that is wrong in the file too: one reload, then exactly one Error entry.
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(&file, "tok-rot-wrong-3333\n").unwrap();
    api.require_token(Some("tok-rot-four-4444"));
    api.end_watches();
    let e = next(&r);
    assert_eq!(show(&e), "Error pods 401 Unauthorized");
    assert_eq!(e.change(), Change::Error);
    assert_quiet(&r, Duration::from_millis(500));
    let reqs = requests(&api);
    assert_eq!(&reqs[3..], [watch_from(rv2), watch_from(rv2)], "{reqs:#?}");
    let s = &r.stats()[0];
    assert!(s.failed && s.synced, "{s:?}");
    let err = format!("{:?}", e.error());
    let texts = debug_texts(&config, &r);
    let mut all = strs(&texts);
    all.push(&err);
    assert_hidden(
        &[
            "tok-rot-one-1111",
            "tok-rot-two-2222",
            "tok-rot-wrong-3333",
            "tok-rot-four-4444",
        ],
        &all,
    );
}

// ---------------------------------------------------------------------------
// JSON configuration

#[test]
fn json_with_kubeconfig_and_context() {
    let _w = Watchdog::new("json_kubeconfig", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-json-kc-5f5f"));
    let dir = TempDir::new("json-kc");
    let path = dir.write(
        "config",
        format!(
            "current-context: other
clusters:
- name: c
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: u
  user:
    token: tok-json-kc-5f5f
contexts:
- name: other
  context: {{cluster: nowhere, user: u}}
- name: json
  context: {{cluster: c, user: u, namespace: from-json}}
",
            q(&c.url()),
            c.ca_data()
        ),
    );
    let json = format!(
        r#"{{"kubeconfig":{},"context":"json","resources":["pods"]}}"#,
        q(&path)
    );
    let config = Config::from_json(&json).unwrap();
    assert_eq!(config.namespace.as_deref(), Some("from-json"));
    assert_eq!(config.server, c.url());
    let r = streams_one_pod(&c.api, config.clone());
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-json-kc-5f5f"], &strs(&texts));
}

#[test]
fn json_with_an_exec_plugin() {
    let _w = Watchdog::new("json_exec", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-json-exec-6161"));
    let dir = TempDir::new("json-exec");
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let json = serde_json::json!({
        "server": c.url(),
        "ca_data": c.pki.ca_pem,
        "exec": {
            "command": "/bin/sh",
            "args": [plugin()],
            "env": {
                "PLUGIN_TOKEN_FILE": dir.write("plugin-token", "tok-json-exec-6161"),
                "PLUGIN_LOG": runs,
                "PLUGIN_INFO": info
            },
            "api_version": V1BETA1
        },
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(plugin_runs(&runs).len(), 1);
    let info = exec_info(&info);
    assert_eq!(
        (&info["apiVersion"], &info["spec"]["interactive"]),
        (&serde_json::json!(V1BETA1), &serde_json::json!(false))
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-json-exec-6161"], &strs(&texts));
}

#[test]
fn json_with_client_certificate_files() {
    let _w = Watchdog::new("json_client_cert", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let id = c.clients.client("json-user", KeyKind::RsaPkcs1);
    let dir = TempDir::new("json-cert");
    let json = serde_json::json!({
        "server": c.url(),
        "ca_file": dir.write("ca.crt", &c.pki.ca_pem),
        "client_cert_file": dir.write("c.crt", &id.cert_pem),
        "client_key_file": dir.write("c.key", &id.key_pem),
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(c.front.handshakes(), [Some(id.cert_der.clone())]);
    let texts = debug_texts(&config, &r);
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &strs(&texts));
}

#[test]
fn json_with_basic_auth_tls_server_name_and_a_proxy() {
    let _w = Watchdog::new("json_basic_proxy", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = ConnectProxy::start();
    let json = serde_json::json!({
        "server": format!("https://kubernetes.internal:{}", c.front.port()),
        "ca_data": c.pki.ca_pem,
        "tls_server_name": "kubernetes.internal",
        "proxy": proxy.url(),
        "username": "json-admin",
        "password": "pw-json-7272",
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        proxy.targets(),
        [format!("kubernetes.internal:{}", c.front.port())]
    );
    assert_eq!(
        c.front.header_values("authorization"),
        [format!("Basic {}", b64(b"json-admin:pw-json-7272"))]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["pw-json-7272"], &strs(&texts));
}

// ---------------------------------------------------------------------------
// Bad input: a clear error naming the file, field or command; never a panic

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
    let mut config = quick(Config::new(&c.url()), &[&res]);
    config.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.client_identity = Some(tattler::ClientIdentity {
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

/// The one entry a resource whose credentials cannot come gives: an Error
/// with reason `Credentials`; then nothing more.
fn credentials_error(r: &Reader) -> String {
    credentials_error_within(r, Duration::from_secs(20))
}

fn credentials_error_within(r: &Reader, limit: Duration) -> String {
    let e = r
        .next_timeout(limit)
        .unwrap_or_else(|e| panic!("no entry: {e}"));
    assert_eq!(e.change(), Change::Error, "{}", show(&e));
    let info = e.error().expect("an Error entry has its error").clone();
    assert_eq!(
        (info.code, info.reason.as_str()),
        (0, "Credentials"),
        "{info:?}"
    );
    assert_quiet(r, Duration::from_millis(300));
    assert!(r.stats()[0].failed, "{:?}", r.stats());
    info.message
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
        m.contains("executable /nonexistent/bin/kube-login not found")
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
        m.contains("\"/bin/sh\"") && m.contains("not an ExecCredential"),
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
        line.contains("exec plugin \"/bin/sh\" failed with exit code 1; retrying"),
        "{line}"
    );
    assert!(!line.contains("boom"), "{line}");
    assert_no_entries(&r);
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
    let e = load_err(&path_for(V1, "interactiveMode: Sometimes\n"), None);
    assert!(e.contains("invalid interactiveMode \"Sometimes\""), "{e}");
    match load(&path_for(V1BETA1, ""), None).auth {
        Auth::Exec(x) => assert_eq!(x.interactive_mode, "IfAvailable"),
        other => panic!("{other:?}"),
    }
    let e = load_err(
        &path_for(
            "client.authentication.k8s.io/v1alpha1",
            "interactiveMode: Never\n",
        ),
        None,
    );
    assert!(e.contains("invalid apiVersion"), "{e}");
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
    assert_no_entries(&r);
    // The explicit API checks the file up front.
    let e = Config::new(&api.url())
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

// ---------------------------------------------------------------------------
// Issue 13: certificates checked up front, client-go's TLS rules

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
    // JSON and the Rust API: Reader::open refuses it.
    let json = format!(
        r#"{{"server":{},"ca_data":{},"client_cert_file":{},"client_key_file":{},"resources":["pods"]}}"#,
        q(&c.url()),
        q(&c.pki.ca_pem),
        q(&cert_file),
        q(&dir.file("kube/alice.key"))
    );
    want(&open_err(Config::from_json(&json).unwrap()));
    let mut config = quick(Config::new(&c.url()), &["pods"]);
    config.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.client_identity = Some(tattler::ClientIdentity {
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
        m.contains(
            "the client certificate from exec plugin \"/bin/sh\" is an X.509 v1 certificate"
        ) && m.contains("-extfile"),
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
        Config::new(&c.url()).token("tok-insecure-ca-1a1a"),
        &["pods"],
    );
    config.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    config.insecure_skip_tls_verify = true;
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
        Config::new(&format!("http://localhost:{port}")).token("tok-localhost-3b3b"),
        &["pods"],
    );
    let _r = streams_one_pod(&api, config);
    // A name that is not loopback is refused by name; one that resolves
    // elsewhere is refused by address (src/transport.rs unit tests).
    let e = open_err(quick(Config::new("http://example.invalid:80"), &["pods"]));
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
    assert_eq!(config.auth, Auth::Token(Token::new("tok-merge-4c4c")));
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
    assert_eq!(c.auth, Auth::Token(Token::new("tok-prec-5d5d")));
    let c = load(
        &config_with(&format!(
            "client-certificate-data: {}\nclient-key-data: {}\n{exec}",
            b64(id.cert_pem.as_bytes()),
            b64(id.key_pem.as_bytes())
        )),
        None,
    );
    assert_eq!(c.auth, Auth::None);
    assert!(c.client_identity.is_some());
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
    let mut e = tattler::ExecConfig::new("/bin/sh", &["-c", script]);
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

#[test]
fn the_exec_deadline_covers_a_grandchild_that_keeps_stdout_open() {
    let _w = Watchdog::new("exec_grandchild", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, "grandchilds");
    let dir = TempDir::new("exec-grandchild");
    let pid = dir.file("pid");
    // The plugin answers and exits, but a background child keeps its stdout open.
    let script = format!("sleep 600 & echo $! > {pid}; printf '%s' '{CRED}'");
    let mut config = quick(Config::new(&api.url()), &[&res]);
    config.auth = shell_plugin(&script, Duration::from_secs(1));
    let t = Instant::now();
    let r = Reader::open(config).unwrap();
    let line = logged(&[&format!("{res}: credentials"), "no answer within 1s"]);
    assert!(
        line.contains("a process it started kept its output open"),
        "{line}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let pid = wait_file(&pid);
    assert!(ended(&pid), "the grandchild {pid} was not killed");
    assert_no_entries(&r);
    assert_eq!(api.requests(), Vec::<String>::new());
}

#[test]
fn close_interrupts_a_running_plugin_at_once_and_it_runs_once_for_all_streams() {
    let _w = Watchdog::new("exec_close", LIMIT);
    let api = FakeApi::start();
    let (a, b) = (own_resource(&api, "closeas"), own_resource(&api, "closebs"));
    let dir = TempDir::new("exec-close");
    let (pid, runs) = (dir.file("pid"), dir.file("runs"));
    let script = format!("echo $$ > {pid}; echo run >> {runs}; exec sleep 600");
    let mut config = quick(Config::new(&api.url()), &[&a, &b, "pods"]);
    config.auth = shell_plugin(&script, Duration::from_secs(60));
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
    let config = quick(Config::new(&api.url()).token_file(&file).unwrap(), &[&res]);
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
        let mut config = quick(Config::new(&api.url()), &["pods"]);
        config.auth = shell_plugin(&script, Duration::from_secs(30));
        let r = streams_one_pod(&api, config.clone());
        let texts = debug_texts(&config, &r);
        assert_hidden(&[SECRET], &strs(&texts));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "exec_stderr_is_passed_through_whole_and_kept_out_of_logs",
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
