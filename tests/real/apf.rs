//! The APF kit for a DaemonSet of agents (bench/fleet/apf.yaml) on a real
//! kube-apiserver: an agent's requests, made with its ServiceAccount's token,
//! are classified under the kit's FlowSchema and priority level, and a 429
//! from that level is honoured: tattler backs off while the level is
//! saturated and syncs once there is room.
//!
//! `cargo test -p kube-tattler --test real apf -- --nocapture`

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube_tattler::{Access, Change, Config, NextTimeoutError, Reader, Reason, ResourceSpec};

use crate::fixture::{Cluster, SERIAL};

/// The kit, applied as users get it.
const KIT: &str = include_str!("../../bench/fleet/apf.yaml");
const LEVEL: &str = "tattler-node-agents";

/// The agent's identity (the kit's subject) and what it may read: every
/// configmap; `small` holds what tattler streams, `bulk` what holds a seat.
const SETUP: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: tattler}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tattler-agent, namespace: tattler}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tattler-agent}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tattler-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tattler-agent}
subjects:
- {kind: ServiceAccount, name: tattler-agent, namespace: tattler}
---
apiVersion: v1
kind: Namespace
metadata: {name: small}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: small}
data: {k: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: small}
data: {k: "2"}
"#;

/// The cluster with the kit applied, the agent's token and a kubeconfig
/// holding it, and a header file for curl (the token stays off the command line).
struct Agent {
    kubeconfig: PathBuf,
    auth_header: PathBuf,
}

fn setup(c: &Cluster) -> Agent {
    c.apply(SETUP);
    c.apply(KIT);
    // The TokenRequest API (the apiserver signs with cluster.sh's sa.key).
    let token = c
        .kubectl(&[
            "create",
            "token",
            "tattler-agent",
            "-n",
            "tattler",
            "--duration=1h",
        ])
        .trim()
        .to_string();
    let kubeconfig = c.dir.join("agent.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{}\", certificate-authority: \"{}\"}}\nusers:\n- name: agent\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: agent\n  context: {{cluster: c, user: agent}}\ncurrent-context: agent\n",
            c.env["K8S_SERVER"], c.env["K8S_CA"]
        ),
    )
    .unwrap();
    let auth_header = c.dir.join("agent.header");
    std::fs::write(&auth_header, format!("Authorization: Bearer {token}\n")).unwrap();
    Agent {
        kubeconfig,
        auth_header,
    }
}

/// `curl` as the agent: the response's headers and its status code.
fn curl_as(c: &Cluster, a: &Agent, path: &str) -> (String, u16) {
    let out = Command::new("curl")
        .args(["-sS", "--http1.1", "-D", "-", "-o", "/dev/null", "--cacert"])
        .arg(&c.env["K8S_CA"])
        .arg("-H")
        .arg(format!("@{}", a.auth_header.display()))
        .arg(format!("{}{path}", c.env["K8S_SERVER"]))
        .output()
        .expect("curl");
    let head = String::from_utf8_lossy(&out.stdout).to_string();
    let code = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (head, code)
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// The sum of a metric's samples whose labels contain `label` (admin's /metrics).
fn metric(c: &Cluster, name: &str, label: &str) -> f64 {
    let out = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(&c.env["K8S_CA"])
        .arg("-H")
        .arg(format!(
            "Authorization: Bearer {}",
            std::fs::read_to_string(&c.env["K8S_TOKEN_FILE"])
                .unwrap()
                .trim()
        ))
        .arg(format!("{}/metrics", c.env["K8S_SERVER"]))
        .output()
        .expect("curl /metrics");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Asks again until `ok` holds: the apiserver applies APF objects and counts
/// requests asynchronously (the fixture's limit bounds the whole test).
fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..600 {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within 60 s");
}

#[test]
fn an_agents_requests_are_classified_under_the_kits_flowschema() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    let a = setup(&c);
    let fs = c.kubectl(&["get", "flowschema", LEVEL, "-o", "jsonpath={.metadata.uid}"]);
    let pl = c.kubectl(&[
        "get",
        "prioritylevelconfiguration",
        LEVEL,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert!(!fs.is_empty() && !pl.is_empty());
    let mut last = String::new();
    until("the agent's request under the kit's FlowSchema", || {
        let (head, code) = curl_as(&c, &a, "/api/v1/namespaces/small/configmaps");
        last = head.clone();
        code == 200 && header(&head, "X-Kubernetes-PF-FlowSchema-UID").as_deref() == Some(&fs)
    });
    assert_eq!(
        header(&last, "X-Kubernetes-PF-PriorityLevel-UID").as_deref(),
        Some(pl.as_str()),
        "{last}"
    );
    eprintln!("apf: the agent's request: FlowSchema uid {fs}, priority level uid {pl}");

    // tattler's own watch-list with that token lands there too.
    let before = metric(
        &c,
        "apiserver_flowcontrol_dispatched_requests_total",
        &format!("flow_schema=\"{LEVEL}\""),
    );
    let r = Reader::open(agent_config(&a)).unwrap();
    let synced = until_synced(&r, Duration::from_secs(30));
    assert_eq!(synced, 2, "the two configmaps of `small`, then Synced");
    let after = metric(
        &c,
        "apiserver_flowcontrol_dispatched_requests_total",
        &format!("flow_schema=\"{LEVEL}\""),
    );
    assert!(
        after > before,
        "tattler's request was dispatched under {LEVEL} ({before} -> {after})"
    );
    r.close();
}

fn agent_config(a: &Agent) -> Config {
    let mut cfg = Config::new(Access::from_kubeconfig(Some(&a.kubeconfig), None).unwrap());
    cfg.resources = vec![ResourceSpec::parse("configmaps")
        .unwrap()
        .remove(0)
        .in_namespace("small")];
    // The default backoff (0.8 s doubling to 30 s) with a shorter ceiling, so
    // that the sync after the level frees comes within seconds.
    cfg.tuning.backoff.max = Duration::from_secs(4);
    cfg
}

/// Objects delivered before the first Synced (no Error entry on the way).
fn until_synced(r: &Reader, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut objects = 0;
    loop {
        let e = r
            .next_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("no Synced within {within:?}: {e}"));
        match e.change() {
            Change::Synced => return objects,
            Change::Error => panic!("error entry: {:?}", e.error()),
            Change::Add | Change::Update | Change::Delete | Change::Snapshot => objects += 1,
            // Notices (a Stale while APF queues, say) are no objects.
            _ => {}
        }
    }
}

/// A slow reader of a large LIST made as the agent: it holds the level's one
/// seat while the apiserver writes a response curl takes in at 20 kB/s.
fn hold_a_seat(c: &Cluster, a: &Agent) -> Child {
    Command::new("curl")
        .args([
            "-sS",
            "--http1.1",
            "--limit-rate",
            "20k",
            "-o",
            "/dev/null",
            "--cacert",
        ])
        .arg(&c.env["K8S_CA"])
        .arg("-H")
        .arg(format!("@{}", a.auth_header.display()))
        .arg(format!(
            "{}/api/v1/namespaces/bulk/configmaps",
            c.env["K8S_SERVER"]
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("curl")
}

/// 40 configmaps of 900 KB in `bulk`: a 36 MB LIST, more than loopback's
/// socket buffers take, so its writer blocks on the slow reader.
fn bulk(c: &Cluster) {
    let value = "x".repeat(900 * 1024);
    let items: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big-{i}","namespace":"bulk"}},"data":{{"v":"{value}"}}}}"#
            )
        })
        .collect();
    c.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: bulk}\n");
    c.kubectl_in(
        &["create", "-f", "-"],
        Some(&format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )),
    );
}

#[test]
fn a_429_from_the_agents_priority_level_is_honoured() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(240), &[]);
    let a = setup(&c);
    bulk(&c);
    // The level rejects what it cannot run at once, and can run one request
    // only when none runs (no nominal seat, nothing lent or borrowed).
    c.kubectl(&[
        "patch",
        "prioritylevelconfiguration",
        LEVEL,
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":0,"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Reject","queuing":null}}}}"#,
    ]);
    let level = format!("priority_level=\"{LEVEL}\"");
    until("the level's limit at 0 seats", || {
        let (_, code) = curl_as(&c, &a, "/api/v1/namespaces/small/configmaps");
        code == 200 && metric(&c, "apiserver_flowcontrol_nominal_limit_seats", &level) == 0.0
    });

    // Saturated: the holder runs, and a request of the agent's is refused.
    let mut holder = hold_a_seat(&c, &a);
    until("the holder executing in the level", || {
        metric(
            &c,
            "apiserver_flowcontrol_current_executing_requests",
            &level,
        ) >= 1.0
    });
    let (head, code) = curl_as(&c, &a, "/api/v1/namespaces/small/configmaps");
    assert_eq!(code, 429, "the saturated level rejects: {head}");
    let retry_after = header(&head, "Retry-After");
    let rejected = |c: &Cluster| metric(c, "apiserver_flowcontrol_rejected_requests_total", &level);
    let r0 = rejected(&c);

    // tattler streams as the agent while the level stays saturated.
    let t0 = Instant::now();
    let r = Reader::open(agent_config(&a)).unwrap();
    let hold = Duration::from_secs(10);
    // One entry says the resource is not current (Stale, Throttled, 429);
    // nothing else comes while the level stays saturated.
    let mut told = Vec::new();
    loop {
        match r.next_timeout(hold.saturating_sub(t0.elapsed())) {
            Err(NextTimeoutError::Timeout) => break,
            Ok(e) if e.change() == Change::Stale => {
                told.push(e.error().map(|i| (i.kind, i.code)));
            }
            // Notices of kinds this test does not state say nothing of it.
            Ok(e)
                if !matches!(
                    e.change(),
                    Change::Add
                        | Change::Update
                        | Change::Delete
                        | Change::Snapshot
                        | Change::Synced
                        | Change::Error
                ) => {}
            other => panic!(
                "only Stale while the level is saturated, got {:?}",
                other.map(|e| format!("{:?} {:?}", e.change(), e.error()))
            ),
        }
    }
    assert_eq!(
        told,
        [Some((Reason::Throttled, 429))],
        "told once: throttled"
    );
    let held = t0.elapsed();
    let refused = rejected(&c) - r0;
    let stats = r.stats();
    eprintln!(
        "apf: saturated for {:.1} s (Retry-After {retry_after:?}): tattler's requests refused {refused}, reconnects {}, last error {:?}",
        held.as_secs_f64(),
        stats[0].reconnects,
        stats[0].last_error
    );
    assert!(refused >= 1.0, "tattler was refused by the level");
    // Retry-After is at least 1 s and tattler waits max(hint, backoff):
    // one request at once, then at most one a second.
    assert!(
        refused <= held.as_secs_f64().ceil() + 1.0,
        "{refused} requests refused in {held:?}: Retry-After not honoured"
    );
    assert!(!stats[0].synced && !stats[0].failed);
    assert!(
        metric(
            &c,
            "apiserver_flowcontrol_current_executing_requests",
            &level
        ) >= 1.0,
        "the holder kept the level saturated throughout"
    );

    // Freed: tattler syncs once there is room, within its backoff's ceiling.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let freed = Instant::now();
    let objects = until_synced(&r, Duration::from_secs(30));
    assert_eq!(objects, 2, "the two configmaps of `small`, then Synced");
    eprintln!(
        "apf: freed, then Synced after {:.1} s; refused in all {}",
        freed.elapsed().as_secs_f64(),
        rejected(&c) - r0
    );
    r.close();
}
