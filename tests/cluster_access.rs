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
        &[&plugin(), "--region", "eu-1"],
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
                "server: {}\ncertificate-authority-data: {}\n",
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
            assert_eq!(e.args, [plugin().as_str(), "--region", "eu-1"]);
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
    assert_eq!(
        info["spec"]["cluster"]["certificate-authority-data"],
        c.pki.ca_pem.as_str()
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-exec-v1-2c3d"], &strs(&texts));
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
    let e = open_err(quick(load(&path, None), &["pods"]));
    assert!(e.contains("client certificate") && e.contains("PEM"), "{e}");
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &[&e]);

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
    match Reader::open(quick(load(&path, None), &[&res])) {
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("client key"), "{e}");
            assert_hidden(&["c2VjcmV0LWdhcmJhZ2Uta2V5LTQ0NTU2Njc3"], &[&e]);
        }
        Ok(r) => {
            let e = next(&r);
            panic!(
                "Reader::open accepted a malformed client key; the stream then gave {}: {:?}",
                show(&e),
                e.error()
            );
        }
    }
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
    if let Err(e) = Config::from_kubeconfig(Some(&path), None) {
        let e = e.to_string();
        assert!(e.contains(&path) && e.contains("password"), "{e}");
        assert_hidden(&["20240917"], &[&e]);
    }
}

/// A kubeconfig whose user is the exec plugin `command args…` with `env`,
/// on the plain fake, watching a resource of the test's own.
fn failing_exec(
    tag: &'static str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (FakeApi, TempDir, String, Reader) {
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, tag);
    let dir = TempDir::new(tag);
    let user = exec_yaml(V1, command, args, env, "interactiveMode: Never\n");
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    (api, dir, res, r)
}

#[test]
fn an_exec_command_that_does_not_exist_is_named() {
    let _w = Watchdog::new("exec_missing", LIMIT);
    let (api, dir, res, r) = failing_exec("execmissings", "/nonexistent/bin/kube-login", &[], &[]);
    let line = logged(&[
        &format!("{res}: credentials"),
        "\"/nonexistent/bin/kube-login\"",
    ]);
    assert!(line.contains("cannot start"), "{line}");
    assert_no_entries(&r);
    assert_eq!(api.requests(), Vec::<String>::new());
    assert!(!r.stats()[0].synced);
    drop(dir);
}

#[test]
fn an_exec_plugin_printing_non_json_never_shows_its_output() {
    let _w = Watchdog::new("exec_garbage", LIMIT);
    let (api, _dir, res, r) = failing_exec(
        "execgarbages",
        "/bin/sh",
        &[&plugin()],
        &[
            ("PLUGIN_MODE", "garbage"),
            ("PLUGIN_TOKEN", "tok-garbage-4b4b"),
        ],
    );
    let line = logged(&[&format!("{res}: credentials"), "not an ExecCredential"]);
    assert!(line.contains("\"/bin/sh\""), "{line}");
    assert_no_entries(&r);
    assert_eq!(api.requests(), Vec::<String>::new());
    let texts = vec![format!("{:?}", r.stats())];
    assert_hidden(&["tok-garbage-4b4b", "this is not JSON"], &strs(&texts));
}

#[test]
fn an_exec_plugin_that_fails_has_its_stderr_in_the_error() {
    let _w = Watchdog::new("exec_boom", LIMIT);
    let (api, _dir, res, r) = failing_exec(
        "execbooms",
        "/bin/sh",
        &[&plugin()],
        &[("PLUGIN_MODE", "fail"), ("PLUGIN_TOKEN", "tok-boom-5c5c")],
    );
    let line = logged(&[&format!("{res}: credentials"), "boom"]);
    assert!(
        line.contains("\"/bin/sh\"") && line.contains("exit status: 1"),
        "{line}"
    );
    assert_no_entries(&r);
    assert_eq!(api.requests(), Vec::<String>::new());
    assert_hidden(&["tok-boom-5c5c"], &[]);
}

#[test]
fn an_exec_plugin_that_wants_a_terminal_is_refused() {
    let _w = Watchdog::new("exec_always", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, "execalways");
    let dir = TempDir::new("exec-always");
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &[("PLUGIN_TOKEN", "tok-always-6d6d")],
        "interactiveMode: Always\n",
    );
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    let r = Reader::open(quick(load(&path, None), &[&res])).unwrap();
    let line = logged(&[&format!("{res}: credentials"), "interactiveMode Always"]);
    assert!(line.contains("\"/bin/sh\""), "{line}");
    assert_no_entries(&r);
    assert_eq!(api.requests(), Vec::<String>::new());
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
