//! Cluster access the way kubectl and client-go do it (issue 3): every kubeconfig
//! field, exec credential plugins, token-file rotation, `proxy-url`, the JSON
//! configuration, bad input and secrets. The fake apiserver sits behind a TLS
//! front (tests/common/tls.rs) whose certificates are made at run time.
//!
//! Nothing here touches the process environment: those checks (`KUBECONFIG`
//! merging, in-cluster, `HTTPS_PROXY` / `NO_PROXY`) are in tests/proxy_env.rs.

#[path = "../common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::tls::*;
use common::*;
use kube_tattler::{Access, Auth, Backoff, Change, Config, ProxyConfig, Reader, Token};
use tattler_fakeapi::FakeApi;

const LIMIT: Duration = Duration::from_secs(60);
const V1: &str = "client.authentication.k8s.io/v1";
const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

/// Fast retries, so that failure cases log quickly.
fn quick(c: Config, names: &[&str]) -> Config {
    let mut c = c.watch(names).unwrap();
    c.tuning.backoff = Backoff {
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
    Access::from_kubeconfig(Some(path.as_ref()), context)
        .map(Config::new)
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"))
}

/// The error as a user prints it: the message (what failed), then each
/// source (why).
fn load_err(path: &str, context: Option<&str>) -> String {
    match Access::from_kubeconfig(Some(path.as_ref()), context).map(Config::new) {
        Ok(c) => panic!("kubeconfig {path} loaded: {c:?}"),
        Err(e) => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
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

/// What a resource retrying a failure it may recover from gives: one
/// notice that it is not current (reason `reason`; the stream goes on), and
/// nothing more.
fn assert_only_not_current(r: &Reader, reason: &str) {
    let e = r
        .next_timeout(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("no Stale entry: {e}"));
    assert_eq!(e.change(), Change::Stale, "{}", show(&e));
    let info = e.error().expect("a Stale entry says why");
    assert_eq!(info.reason, reason, "{info:?}");
    assert!(!info.ended, "{info:?}");
    if let Ok(e) = r.try_next() {
        panic!("unexpected entry {}", show(&e));
    }
}

/// The ExecCredential request the plugin was given (KUBERNETES_EXEC_INFO).
fn exec_info(file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).expect("the plugin ran"))
        .expect("KUBERNETES_EXEC_INFO is JSON")
}

/// The one entry a resource whose credentials cannot come gives: an Error
/// with reason `Credentials`; then nothing more.
fn credentials_error(r: &Reader) -> String {
    credentials_error_within(r, Duration::from_secs(20))
}

fn credentials_error_within(r: &Reader, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    // Failures it may recover from first say the resource is not current.
    let e = loop {
        let e = r
            .next_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("no entry: {e}"));
        if e.change() != Change::Stale {
            break e;
        }
    };
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

mod bad_input;
mod cluster_fields;
mod contexts;
mod exec_plugins;
mod json_config;
mod proxy_url;
mod tls_trust;
mod token_rotation;
mod up_front_checks;
mod users;
