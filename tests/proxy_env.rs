//! Cluster access that depends on the process environment: `KUBECONFIG`
//! merging, `HOME`, in-cluster (`KUBERNETES_SERVICE_HOST` / `_PORT`),
//! `Config::infer`, `HTTPS_PROXY` / `NO_PROXY` (HTTP CONNECT and SOCKS5;
//! `ALL_PROXY` ignored, as Go ignores it), and the system trust store
//! (`SSL_CERT_FILE`) used when no CA is configured.
//!
//! The environment is global to the process, so this binary has exactly one
//! test, which runs the checks one after the other. Each check runs to its end
//! even when an earlier one failed; the test fails at the end with every
//! failure listed. A capturing logger sees the whole run, and no secret may
//! appear in any line it caught.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use common::socks::{SocksMode, SocksProxy};
use common::tls::*;
use common::*;
use kube_tattler::{Access, Auth, Backoff, Config, ProxyConfig, Reader};
use tattler_fakeapi::FakeApi;

/// Every variable these checks set, cleared before each check.
const VARS: &[&str] = &[
    "KUBECONFIG",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

fn set(k: &str, v: &str) {
    std::env::set_var(k, v);
}

fn clear_env(home: &TempDir) {
    for k in VARS {
        std::env::remove_var(k);
    }
    // Never the machine's own ~/.kube/config.
    set("HOME", &home.path().display().to_string());
}

/// The fake apiserver behind a TLS front with a server certificate for `sans`.
struct Cluster {
    front: TlsFront,
    api: FakeApi,
    pki: Pki,
}

impl Cluster {
    fn with(sans: &[&str]) -> Cluster {
        let api = FakeApi::start();
        let pki = Pki::new("env test CA");
        let front = TlsFront::start(&api.url(), &pki.server(sans), None);
        Cluster { front, api, pki }
    }
}

fn quick(c: Config) -> Config {
    let mut c = c.watch(["pods"]).unwrap();
    c.tuning.backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(200),
        reset_after: Duration::from_secs(120),
    };
    c
}

/// Opens a reader and checks that it streams the cluster's one pod.
fn streams_one_pod(api: &FakeApi, config: Config) -> Reader {
    if api.get("pods", Some("a"), "p1").is_none() {
        pod(api, "a", "p1");
    }
    let r = Reader::open(config).unwrap_or_else(|e| panic!("open: {e}"));
    assert_eq!(until_synced(&r), ["Add a/p1", "Synced pods"]);
    r
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Runs the checks, each to its end; the failures.
struct Checks {
    failures: Vec<String>,
    home: TempDir,
}

impl Checks {
    fn run(&mut self, name: &str, f: impl FnOnce()) {
        clear_env(&self.home);
        if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            self.failures.push(format!("{name}: {why}"));
        }
        clear_env(&self.home);
    }
}

#[test]
fn environment_dependent_cluster_access() {
    let _w = Watchdog::new(
        "environment_dependent_cluster_access",
        Duration::from_secs(180),
    );
    let log = capture_log();
    let mut checks = Checks {
        failures: Vec::new(),
        home: TempDir::new("env-home"),
    };
    // First: the system trust store is read once per process.
    checks.run("system trust store without a CA", system_trust_store);
    checks.run("KUBECONFIG merge precedence", kubeconfig_merge);
    checks.run("HOME fallback", home_fallback);
    checks.run("in-cluster", in_cluster);
    checks.run("in-cluster errors", in_cluster_errors);
    checks.run("infer order", infer_order);
    checks.run("HTTPS_PROXY and NO_PROXY", https_proxy_and_no_proxy);
    checks.run("ALL_PROXY is not read", all_proxy_is_not_read);
    checks.run("HTTPS_PROXY naming a SOCKS5 proxy", https_proxy_socks5);

    // After the whole run: no secret in any line tattler or its HTTP stack logged.
    let mut leaks = Vec::new();
    for s in SECRETS {
        leaks.extend(log.leaks(s));
    }
    assert!(leaks.is_empty(), "secrets logged: {leaks:#?}");
    // Which configuration was used is said in a log line.
    for source in [
        "cluster access from kubeconfig ",
        "cluster access from in-cluster service account (",
    ] {
        assert!(
            !log.matching(&[source]).is_empty(),
            "no log line {source:?}"
        );
    }
    assert!(
        checks.failures.is_empty(),
        "{} check(s) failed:\n{}",
        checks.failures.len(),
        checks.failures.join("\n\n")
    );
}

/// Every secret used below; none may be logged.
const SECRETS: &[&str] = &[
    "tok-merge-first-1a1a",
    "tok-merge-second-2b2b",
    "tok-merge-u2-3c3c",
    "tok-merge-u9-4d4d",
    "tok-home-5e5e",
    "tok-incluster-one-6f6f",
    "tok-incluster-two-7a7a",
    "tok-env-proxy-8b8b",
    "env-proxy-pw-9c9c",
    "env-socks-pw-1b1b",
    "tok-trust-store-0d0d",
];

/// With no CA configured tattler trusts the system's store, as kubectl does:
/// here `SSL_CERT_FILE` (read by the system store loader, as by Go) names a
/// bundle holding the cluster's CA. A cluster signed by another CA is refused.
fn system_trust_store() {
    let c = Cluster::with(&["127.0.0.1"]);
    c.api.require_token(Some("tok-trust-store-0d0d"));
    let dir = TempDir::new("trust-store");
    let bundle = dir.write(
        "bundle.pem",
        format!("{}{}", Pki::new("unrelated CA").ca_pem, c.pki.ca_pem),
    );
    set("SSL_CERT_FILE", &bundle);
    set(
        "SSL_CERT_DIR",
        &dir.path().join("no-such-dir").display().to_string(),
    );
    let config = quick(Config::new(
        Access::new(c.front.url()).token("tok-trust-store-0d0d"),
    ));
    assert_eq!(config.access.ca_pem, None);
    drop(streams_one_pod(&c.api, config));
    // Another cluster, another CA: not in the store, nothing reaches it.
    let other = Cluster::with(&["127.0.0.1"]);
    let r = Reader::open(quick(Config::new(
        Access::new(other.front.url()).token("tok-trust-store-0d0d"),
    )))
    .unwrap();
    assert!(
        other
            .front
            .wait_handshake_errors(1, Duration::from_secs(10)),
        "{:?}",
        other.front.handshakes()
    );
    assert_eq!(other.api.requests(), Vec::<String>::new());
    drop(r);
}

fn kubeconfig_merge() {
    let one = Cluster::with(&["127.0.0.1"]);
    let two = Cluster::with(&["127.0.0.1"]);
    let dir = TempDir::new("merge");
    // Each cluster's CA sits beside the file that defines the cluster.
    dir.write("a/ca.crt", &one.pki.ca_pem);
    dir.write("b/ca.crt", &two.pki.ca_pem);
    let file0 = dir.write(
        "c/config",
        "apiVersion: v1
kind: Config
users:
- name: u9
  user:
    token: tok-merge-u9-4d4d
contexts:
- name: ctx-c
  context:
    cluster: c2
    user: u2
    namespace: ns-c
",
    );
    let file1 = dir.write(
        "a/config",
        format!(
            "apiVersion: v1
kind: Config
current-context: ctx-a
clusters:
- name: c1
  cluster:
    server: {}
    certificate-authority: ca.crt
users:
- name: u1
  user:
    token: tok-merge-first-1a1a
contexts:
- name: ctx-a
  context:
    cluster: c1
    user: u1
    namespace: ns-first
",
            q(&one.front.url())
        ),
    );
    let file2 = dir.write(
        "b/config",
        format!(
            "apiVersion: v1
kind: Config
current-context: ctx-b
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:1
- name: c2
  cluster:
    server: {}
    certificate-authority: ca.crt
users:
- name: u1
  user:
    token: tok-merge-second-2b2b
- name: u2
  user:
    token: tok-merge-u2-3c3c
contexts:
- name: ctx-a
  context:
    cluster: c2
    user: u2
- name: ctx-b
  context:
    cluster: c1
    user: u2
    namespace: ns-b
",
            q(&two.front.url())
        ),
    );
    let missing = dir.file("nowhere/config");
    set(
        "KUBECONFIG",
        &[missing.as_str(), &file0, &file1, &file2].join(":"),
    );

    // current-context from the first file that sets it (file0 has none); ctx-a,
    // c1 and u1 from file1, where they first appear; the missing file is skipped.
    let c = Access::from_kubeconfig(None, None)
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, one.front.url());
    assert_eq!(c.access.namespace.as_deref(), Some("ns-first"));
    assert_eq!(c.access.ca_pem.as_deref(), Some(one.pki.ca_pem.as_bytes()));
    assert!(
        c.access.source.contains(&file1)
            && c.access.source.contains("\"ctx-a\"")
            && !c.access.source.contains(&missing),
        "{}",
        c.access.source
    );
    one.api.require_token(Some("tok-merge-first-1a1a"));
    drop(streams_one_pod(&one.api, quick(c)));
    assert_eq!(
        one.front.header_values("authorization"),
        ["Bearer tok-merge-first-1a1a"]
    );

    // A context only file2 has, naming c1 (file1's wins) and u2 (file2's only one).
    let c = Access::from_kubeconfig(None, Some("ctx-b"))
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, one.front.url());
    assert_eq!(c.access.namespace.as_deref(), Some("ns-b"));
    one.api.require_token(Some("tok-merge-u2-3c3c"));
    drop(streams_one_pod(&one.api, quick(c)));
    assert_eq!(
        one.front
            .header_values("authorization")
            .last()
            .map(String::as_str),
        Some("Bearer tok-merge-u2-3c3c")
    );

    // A context in file0 naming a cluster from file2: the CA path resolves
    // against file2's folder, not the context's.
    let c = Access::from_kubeconfig(None, Some("ctx-c"))
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, two.front.url());
    assert_eq!(c.access.ca_pem.as_deref(), Some(two.pki.ca_pem.as_bytes()));
    assert_eq!(c.access.namespace.as_deref(), Some("ns-c"));
    two.api.require_token(Some("tok-merge-u2-3c3c"));
    drop(streams_one_pod(&two.api, quick(c)));

    // Order matters: file2 first makes its current-context and its c1 win.
    set("KUBECONFIG", &[file2.as_str(), &file1].join(":"));
    let c = Access::from_kubeconfig(None, None)
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, "https://127.0.0.1:1");
    assert_eq!(c.access.namespace.as_deref(), Some("ns-b"));
    assert_eq!(
        c.access.auth,
        Auth::Token(kube_tattler::Token::new("tok-merge-u2-3c3c"))
    );
    let c = Access::from_kubeconfig(None, Some("ctx-a"))
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, two.front.url());

    // One name twice within one file is refused (client-go cannot decode
    // it), even where an earlier file would have won: only across files
    // does the first one win.
    let dup = dir.write(
        "dup/config",
        "clusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:2\n- name: c1\n  cluster:\n    server: https://127.0.0.1:3\n",
    );
    set("KUBECONFIG", &[file1.as_str(), &dup].join(":"));
    let e = Access::from_kubeconfig(None, None)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&dup) && e.contains("two clusters named \"c1\""),
        "{e}"
    );

    // An explicit path ignores KUBECONFIG.
    set("KUBECONFIG", &file2);
    let c = Access::from_kubeconfig(Some(file1.as_ref()), None)
        .map(Config::new)
        .unwrap();
    assert_eq!(c.access.server, one.front.url());

    // Only missing files: an error that names them.
    let other = dir.file("also/missing");
    set("KUBECONFIG", &[missing.as_str(), &other].join(":"));
    let e = Access::from_kubeconfig(None, None)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&missing) && e.contains(&other), "{e}");
    // ... and an explicit file that is missing is an error too, not skipped.
    let e = Access::from_kubeconfig(Some(missing.as_ref()), None)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&missing), "{e}");
}

fn home_fallback() {
    let c = Cluster::with(&["127.0.0.1"]);
    let home = TempDir::new("home");
    home.write(
        ".kube/config",
        format!(
            "current-context: home
clusters:
- name: c
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: u
  user:
    token: tok-home-5e5e
contexts:
- name: home
  context: {{cluster: c, user: u}}
",
            q(&c.front.url()),
            b64(c.pki.ca_pem.as_bytes())
        ),
    );
    set("HOME", &home.path().display().to_string());
    // Unset and empty KUBECONFIG both mean ~/.kube/config.
    for kubeconfig in [None, Some("")] {
        match kubeconfig {
            None => std::env::remove_var("KUBECONFIG"),
            Some(v) => set("KUBECONFIG", v),
        }
        let config = Access::from_kubeconfig(None, None)
            .map(Config::new)
            .unwrap();
        let want = home.path().join(".kube/config").display().to_string();
        assert!(
            config.access.source.contains(&want),
            "{}",
            config.access.source
        );
        c.api.require_token(Some("tok-home-5e5e"));
        drop(streams_one_pod(&c.api, quick(config)));
    }
}

/// A service-account folder: token, ca.crt, namespace.
fn service_account(c: &Cluster, token: &str, namespace: Option<&str>) -> TempDir {
    let dir = TempDir::new("serviceaccount");
    dir.write("token", token);
    dir.write("ca.crt", &c.pki.ca_pem);
    if let Some(ns) = namespace {
        dir.write("namespace", format!("{ns}\n"));
    }
    dir
}

fn in_cluster() {
    let c = Cluster::with(&["127.0.0.1"]);
    let sa = service_account(&c, "tok-incluster-one-6f6f", Some("team-a"));
    set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    set("KUBERNETES_SERVICE_PORT", &c.front.port().to_string());
    let dir = sa.path().display().to_string();
    let config = Access::in_cluster_at(&dir).map(Config::new).unwrap();
    assert_eq!(config.access.server, c.front.url());
    assert_eq!(config.access.namespace.as_deref(), Some("team-a"));
    assert_eq!(config.access.auth, Auth::TokenFile(sa.path().join("token")));
    assert_eq!(
        config.access.ca_pem.as_deref(),
        Some(c.pki.ca_pem.as_bytes())
    );
    assert!(
        config.access.source.starts_with("in-cluster") && config.access.source.contains(&dir),
        "{}",
        config.access.source
    );
    c.api.require_token(Some("tok-incluster-one-6f6f"));
    let r = streams_one_pod(&c.api, quick(config));

    // The projected token rotates: a 401 reloads it at once, with no Error entry.
    std::fs::write(sa.path().join("token"), "tok-incluster-two-7a7a").unwrap();
    c.api.require_token(Some("tok-incluster-two-7a7a"));
    c.api.end_watches();
    pod(&c.api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert_quiet(&r, Duration::from_millis(300));
    assert_eq!(
        c.front.header_values("authorization"),
        [
            "Bearer tok-incluster-one-6f6f",
            "Bearer tok-incluster-one-6f6f",
            "Bearer tok-incluster-two-7a7a"
        ]
    );
    let debug = format!("{:?}", r.stats());
    assert!(!debug.contains("tok-incluster"), "{debug}");

    // An IPv6 service address is bracketed.
    set("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
    set("KUBERNETES_SERVICE_PORT", "443");
    let config = Access::in_cluster_at(&dir).map(Config::new).unwrap();
    assert_eq!(config.access.server, "https://[fd00:10:96::1]:443");

    // No namespace file: no namespace.
    let sa2 = service_account(&c, "tok-incluster-one-6f6f", None);
    let config = Access::in_cluster_at(sa2.path()).map(Config::new).unwrap();
    assert_eq!(config.access.namespace, None);
}

fn in_cluster_errors() {
    let c = Cluster::with(&["127.0.0.1"]);
    let sa = service_account(&c, "tok-incluster-one-6f6f", Some("team-a"));
    let dir = sa.path().display().to_string();
    // Not in a cluster: the variables are named.
    let e = Access::in_cluster_at(&dir)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains("KUBERNETES_SERVICE_HOST"), "{e}");
    set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    let e = Access::in_cluster_at(&dir)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains("KUBERNETES_SERVICE_PORT"), "{e}");
    set("KUBERNETES_SERVICE_PORT", "6443");
    // No token, no CA: the file is named.
    std::fs::remove_file(sa.path().join("token")).unwrap();
    let e = Access::in_cluster_at(&dir)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&sa.file("token")), "{e}");
    std::fs::write(sa.path().join("token"), "tok-incluster-one-6f6f").unwrap();
    std::fs::remove_file(sa.path().join("ca.crt")).unwrap();
    let e = Access::in_cluster_at(&dir)
        .map(Config::new)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&sa.file("ca.crt")), "{e}");
    assert!(!e.contains("tok-incluster"), "{e}");
    // JSON `in_cluster` uses the real service-account folder (absent here).
    let e = Config::from_json(r#"{"in_cluster":true,"resources":["pods"]}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/var/run/secrets/kubernetes.io/serviceaccount/token"),
        "{e}"
    );
}

fn infer_order() {
    let c = Cluster::with(&["127.0.0.1"]);
    let dir = TempDir::new("infer");
    let kc = dir.write(
        "config",
        format!(
            "current-context: x
clusters: [{{name: c, cluster: {{server: {}, certificate-authority-data: {}}}}}]
users: [{{name: u, user: {{token: tok-merge-first-1a1a}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u, namespace: inferred}}}}]
",
            q(&c.front.url()),
            b64(c.pki.ca_pem.as_bytes())
        ),
    );
    // kubeconfig first, even inside a cluster.
    set("KUBECONFIG", &kc);
    set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    set("KUBERNETES_SERVICE_PORT", "1");
    let config = Access::infer().map(Config::new).unwrap();
    assert!(
        config.access.source.starts_with("kubeconfig "),
        "{}",
        config.access.source
    );
    assert_eq!(config.access.namespace.as_deref(), Some("inferred"));
    // The JSON form with no cluster keys infers the same way.
    let config = Config::from_json(r#"{"resources":["pods"]}"#).unwrap();
    assert_eq!(config.access.server, c.front.url());
    c.api.require_token(Some("tok-merge-first-1a1a"));
    drop(streams_one_pod(&c.api, config));

    // No kubeconfig: in-cluster, whose token file is absent here; both are named.
    let missing = dir.file("missing");
    set("KUBECONFIG", &missing);
    let e = Access::infer().map(Config::new).unwrap_err().to_string();
    assert!(
        e.contains(&missing) && e.contains("/var/run/secrets/kubernetes.io/serviceaccount/token"),
        "{e}"
    );
    std::env::remove_var("KUBERNETES_SERVICE_HOST");
    let e = Access::infer().map(Config::new).unwrap_err().to_string();
    assert!(
        e.contains(&missing) && e.contains("KUBERNETES_SERVICE_HOST"),
        "{e}"
    );
}

/// A cluster whose URL host is not loopback to tattler but reaches this
/// machine: 0.0.0.0 (Linux connects it to the local host). No other address
/// is ever connected to.
fn not_loopback_cluster() -> (Cluster, String) {
    let c = Cluster::with(&["0.0.0.0", "127.0.0.1"]);
    c.api.require_token(Some("tok-env-proxy-8b8b"));
    let server = format!("https://0.0.0.0:{}", c.front.port());
    (c, server)
}

fn env_config(c: &Cluster, server: &str) -> Config {
    let mut config = Config::new(Access::new(server).token("tok-env-proxy-8b8b"));
    config.access.ca_pem = Some(c.pki.ca_pem.clone().into_bytes());
    assert_eq!(config.access.proxy, ProxyConfig::FromEnv);
    quick(config)
}

fn https_proxy_and_no_proxy() {
    let (c, server) = not_loopback_cluster();
    let proxy = ConnectProxy::start();
    let target = format!("0.0.0.0:{}", c.front.port());
    let through = |want_proxied: bool, what: &str| {
        let before = proxy.targets().len();
        drop(streams_one_pod(&c.api, env_config(&c, &server)));
        let after = proxy.targets();
        let proxied = after.len() > before;
        assert_eq!(proxied, want_proxied, "{what}: CONNECTs {after:?}");
        if proxied {
            assert_eq!(after[before..], *std::slice::from_ref(&target), "{what}");
        }
    };
    through(false, "no proxy variable");
    set("HTTPS_PROXY", &proxy.url());
    through(true, "HTTPS_PROXY");
    for (no_proxy, exempt) in [
        ("0.0.0.0", true),
        ("0.0.0.0/8", true),
        ("example.com, .svc,10.0.0.0/8", false),
        (
            &format!("example.com,0.0.0.0:{}", c.front.port()) as &str,
            true,
        ),
        // Go's rules: an entry's port must be the request's.
        (&format!("0.0.0.0:{}", c.front.port() + 1) as &str, false),
        ("*", true),
    ] {
        set("NO_PROXY", no_proxy);
        through(!exempt, &format!("NO_PROXY={no_proxy:?}"));
    }
    std::env::remove_var("NO_PROXY");
    set("no_proxy", "0.0.0.0");
    through(false, "no_proxy (lower case)");
    std::env::remove_var("no_proxy");

    // ProxyConfig::None ignores the environment.
    let mut config = env_config(&c, &server);
    config.access.proxy = ProxyConfig::None;
    let before = proxy.targets().len();
    drop(streams_one_pod(&c.api, config));
    assert_eq!(proxy.targets().len(), before, "ProxyConfig::None");

    // A loopback server is never proxied.
    let before = proxy.targets().len();
    drop(streams_one_pod(&c.api, env_config(&c, &c.front.url())));
    assert_eq!(proxy.targets().len(), before, "loopback server");

    // Lower-case https_proxy, with credentials: sent to the proxy, logged nowhere.
    std::env::remove_var("HTTPS_PROXY");
    set(
        "https_proxy",
        &proxy
            .url()
            .replace("http://", "http://envuser:env-proxy-pw-9c9c@"),
    );
    through(true, "https_proxy with credentials");
    assert_eq!(
        proxy.auth().last().cloned().flatten(),
        Some(format!("Basic {}", b64(b"envuser:env-proxy-pw-9c9c")))
    );
}

/// Go's `ProxyFromEnvironment` reads no `ALL_PROXY` (curl's), so kubectl
/// goes direct where it is set, and so does tattler: a SOCKS5 or an HTTP
/// proxy in `ALL_PROXY` neither stops `Reader::open` nor gets a connection.
/// `HTTPS_PROXY` still wins with `ALL_PROXY` beside it.
fn all_proxy_is_not_read() {
    let (c, server) = not_loopback_cluster();
    let other = ConnectProxy::start();
    let socks = SocksProxy::start(SocksMode::Tunnel);
    for (name, value) in [
        ("ALL_PROXY", socks.url()),
        ("all_proxy", socks.url()),
        ("ALL_PROXY", other.url()),
        ("all_proxy", other.url()),
    ] {
        set(name, &value);
        drop(streams_one_pod(&c.api, env_config(&c, &server)));
        std::env::remove_var(name);
    }
    let wanted = ConnectProxy::start();
    set("HTTPS_PROXY", &wanted.url());
    set("ALL_PROXY", &other.url());
    drop(streams_one_pod(&c.api, env_config(&c, &server)));
    assert_eq!(
        (wanted.targets().len(), other.targets().len()),
        (1, 0),
        "only HTTPS_PROXY is used"
    );
    assert_eq!(socks.seen(|s| s.greetings.len()), 0, "ALL_PROXY=socks5://");
}

/// `HTTPS_PROXY=socks5://user:password@host:port`, as Go's net/http takes
/// it: RFC 1929 credentials, the server's host sent as it is; `socks5h://`
/// the same; `NO_PROXY` still exempts.
fn https_proxy_socks5() {
    let (c, server) = not_loopback_cluster();
    let socks = SocksProxy::start(SocksMode::Login(
        "envsocks".into(),
        "env-socks-pw-1b1b".into(),
    ));
    let port = c.front.port();
    let mut want = vec![5, 1, 0, 1, 0, 0, 0, 0];
    want.extend_from_slice(&port.to_be_bytes());
    for scheme in ["socks5", "socks5h"] {
        let url = socks.url().replace(
            "socks5://",
            &format!("{scheme}://envsocks:env-socks-pw-1b1b@"),
        );
        set("HTTPS_PROXY", &url);
        drop(streams_one_pod(&c.api, env_config(&c, &server)));
    }
    socks.seen(|s| {
        assert_eq!(s.greetings, [vec![5, 2, 0, 2], vec![5, 2, 0, 2]]);
        assert_eq!(s.logins.len(), 2);
        assert!(s
            .logins
            .iter()
            .all(|l| *l == ("envsocks".to_string(), "env-socks-pw-1b1b".to_string())));
        // 0.0.0.0 is an IP literal: ATYP 01.
        assert_eq!(s.connects, [want.clone(), want.clone()]);
    });
    set("NO_PROXY", "0.0.0.0");
    drop(streams_one_pod(&c.api, env_config(&c, &server)));
    assert_eq!(socks.seen(|s| s.connects.len()), 2, "NO_PROXY exempts");
}
