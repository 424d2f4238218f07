//! The same scenarios against a real kube-apiserver and etcd on loopback
//! (tests/k8s builds them from Go modules and brings them up).
//!
//! Each test gets a fresh cluster; the tests run one at a time (a cluster
//! start costs a few seconds of both cores).

use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::show;
use kube_tattler::{Access, Change, Config, Encoding, Entry, Reader, ResourceSpec};

use crate::fixture::{Cluster, SERIAL};
use crate::told;

/// An admin config for `names`.
fn admin(c: &Cluster, names: &[&str]) -> Config {
    let mut cfg = Access::from_kubeconfig(Some(c.kubeconfig().as_ref()), None)
        .map(Config::new)
        .unwrap()
        .watch(names)
        .unwrap();
    cfg.tuning.backoff.initial = Duration::from_millis(100);
    cfg.tuning.backoff.max = Duration::from_secs(2);
    cfg
}

/// A reader of wire-a's configmaps, synced, and the view it built.
fn synced_configmaps(c: &Cluster) -> (Reader, HashMap<String, View>) {
    let mut cfg = admin(c, &[]);
    cfg.resources = vec![ResourceSpec::parse("configmaps")
        .unwrap()
        .remove(0)
        .in_namespace("wire-a")];
    let r = Reader::open(cfg).unwrap();
    let mut views = HashMap::new();
    consume(&r, &mut views, |v| {
        v.get("configmaps").is_some_and(|x| x.synced)
    });
    (r, views)
}

/// What a consumer builds from the entries of one resource.
#[derive(Default)]
struct View {
    objects: BTreeMap<String, (String, u64)>,
    synced: bool,
}

impl View {
    fn apply(&mut self, e: &Entry) {
        let key = format!("{}/{}", e.namespace().unwrap_or(""), e.name());
        match e.change() {
            Change::Add => {
                assert!(
                    !self.objects.contains_key(e.uid()),
                    "duplicate Add for {key}"
                );
                self.objects
                    .insert(e.uid().into(), (key, e.resource_version().unwrap_or(0)));
            }
            Change::Update | Change::Snapshot => {
                assert!(
                    self.objects.contains_key(e.uid()),
                    "{:?} for unknown {key}",
                    e.change()
                );
                self.objects
                    .insert(e.uid().into(), (key, e.resource_version().unwrap_or(0)));
            }
            Change::Delete => {
                assert!(
                    self.objects.remove(e.uid()).is_some(),
                    "Delete for unknown {key}"
                );
            }
            Change::Synced => self.synced = true,
            // Not current until its next Synced (an apiserver restart, say).
            Change::Stale => self.synced = false,
            Change::Error => panic!("unexpected error entry: {:?}", e.error()),
            // Other notices (leadership, kinds to come) leave the view as it is.
            _ => {}
        }
    }
}

/// Consumes entries into per-resource views until `done` says so (30 s at most).
fn consume(
    r: &Reader,
    views: &mut HashMap<String, View>,
    mut done: impl FnMut(&HashMap<String, View>) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while !done(views) {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = r
            .next_timeout(left)
            .unwrap_or_else(|e| panic!("waiting for entries: {e}; got {seen:?}"));
        seen.push(format!("{} {}", e.resource().resource, show(&e)));
        views
            .entry(e.resource().resource.clone())
            .or_default()
            .apply(&e);
    }
    seen
}

fn in_namespace(v: &View, ns: &str) -> BTreeMap<String, (String, u64)> {
    v.objects
        .iter()
        .filter(|(_, (k, _))| k.starts_with(&format!("{ns}/")))
        .map(|(u, x)| (u.clone(), x.clone()))
        .collect()
}

const SEED: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: wire-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-1, namespace: wire-a}
data: {k: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-2, namespace: wire-a}
data: {k: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-3, namespace: wire-a}
data: {k: "3"}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-a1, namespace: wire-a}
spec:
  containers:
  - name: c
    image: busybox
    env: [{name: PASSWORD, value: hunter2}]
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
"#;

/// The Widget custom resource (`widgets.example.com`, namespaced, any fields).
pub(crate) const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

fn widget(name: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: wire-a}}\nsize: 3\n")
}

fn crd_with_widgets(c: &Cluster, names: &[&str]) {
    c.apply(CRD);
    c.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/widgets.example.com",
    ]);
    for n in names {
        c.apply(&widget(n));
    }
}

#[test]
fn initial_state_of_several_kinds_then_live_changes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    crd_with_widgets(&c, &["w1", "w2"]);
    let r = Reader::open(admin(
        &c,
        &[
            "pods",
            "nodes",
            "namespaces",
            "configmaps",
            "example.com/v1/widgets",
        ],
    ))
    .unwrap();
    let mut views = HashMap::new();
    consume(&r, &mut views, |v| {
        v.len() == 5 && v.values().all(|x| x.synced)
    });
    for (res, ns) in [
        ("pods", None),
        ("nodes", None),
        ("namespaces", None),
        ("configmaps", None),
        ("widgets", None),
    ] {
        assert_eq!(
            views[res].objects,
            c.state(res, ns),
            "{res}: the initial state equals kubectl get"
        );
    }
    // The pod's env value never leaves tattler.
    assert_eq!(in_namespace(&views["pods"], "wire-a").len(), 1);

    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-4, namespace: wire-a}\n");
    c.kubectl(&["label", "configmap", "cm-1", "-n", "wire-a", "x=y"]);
    c.kubectl(&["delete", "configmap", "cm-2", "-n", "wire-a"]);
    c.apply(&widget("w3"));
    let want = c.state("configmaps", Some("wire-a"));
    let seen = consume(&r, &mut views, |v| {
        in_namespace(&v["configmaps"], "wire-a") == want && v["widgets"].objects.len() == 3
    });
    let cms: Vec<&String> = seen
        .iter()
        .filter(|s| s.starts_with("configmaps") && s.contains("wire-a"))
        .collect();
    assert_eq!(
        cms,
        [
            "configmaps Add wire-a/cm-4",
            "configmaps Update wire-a/cm-1",
            "configmaps Delete wire-a/cm-2"
        ]
    );
    assert_eq!(views["widgets"].objects, c.state("widgets", None));
}

#[test]
fn the_bookmark_ends_the_initial_state_and_env_values_are_scrubbed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(120), &[]);
    c.apply(SEED);
    let mut cfg = admin(&c, &[]);
    cfg.resources = vec![ResourceSpec::parse("pods")
        .unwrap()
        .remove(0)
        .in_namespace("wire-a")];
    let r = Reader::open(cfg).unwrap();
    let e = r.next_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(show(&e), "Add wire-a/pod-a1");
    let text = String::from_utf8_lossy(e.object().unwrap()).into_owned();
    assert!(
        text.contains(r#""name":"PASSWORD","value":"REDACTED""#),
        "{text}"
    );
    assert!(!text.contains("hunter2"));
    let synced = r.next_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(synced.change(), Change::Synced);
    assert!(synced.resource_version().unwrap_or(0) >= e.resource_version().unwrap_or(0));
    assert!(!r.stats()[0].list_fallback);
}

#[test]
fn a_forbidden_resource_is_one_error_entry_and_the_others_stream() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(120), &[]);
    c.apply(SEED);
    c.kubectl(&[
        "create",
        "clusterrole",
        "cm-reader",
        "--verb=get,list,watch",
        "--resource=configmaps",
    ]);
    c.kubectl(&[
        "create",
        "clusterrolebinding",
        "nobody-cm",
        "--clusterrole=cm-reader",
        "--user=nobody",
    ]);
    let mut cfg = Access::from_kubeconfig(Some(&c.dir.join("kubeconfig-nobody")), None)
        .map(Config::new)
        .unwrap()
        .watch(["configmaps", "pods"])
        .unwrap();
    cfg.tuning.backoff.initial = Duration::from_millis(100);
    let r = Reader::open(cfg).unwrap();
    let mut error = None;
    let mut synced = false;
    while error.is_none() || !synced {
        let e = r.next_timeout(Duration::from_secs(30)).unwrap();
        match e.change() {
            Change::Error => error = Some(e),
            Change::Synced => synced = true,
            _ => assert_eq!(e.resource().resource, "configmaps"),
        }
    }
    let e = error.unwrap();
    let err = e.error().unwrap();
    assert_eq!(
        (
            e.resource().resource.as_str(),
            err.code,
            err.reason.as_str()
        ),
        ("pods", 403, "Forbidden")
    );
    assert!(
        err.message.contains(r#"User "nobody" cannot"#),
        "{}",
        err.message
    );
    c.kubectl(&["label", "configmap", "cm-3", "-n", "wire-a", "x=y"]);
    loop {
        let e = r.next_timeout(Duration::from_secs(30)).unwrap();
        if e.name() == "cm-3" {
            assert_eq!(e.change(), Change::Update);
            break;
        }
    }
    let s = r.stats();
    assert_eq!((s[0].failed, s[1].failed), (false, true));
}

#[test]
fn an_apiserver_restart_under_a_running_reader_loses_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    let (r, mut views) = synced_configmaps(&c);
    c.kubectl(&[
        "label",
        "configmap",
        "cm-1",
        "-n",
        "wire-a",
        "before=restart",
    ]);
    c.script("restart-apiserver");
    c.kubectl(&[
        "label",
        "configmap",
        "cm-2",
        "-n",
        "wire-a",
        "after=restart",
    ]);
    c.kubectl(&["delete", "configmap", "cm-3", "-n", "wire-a"]);
    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-5, namespace: wire-a}\n");
    let want = c.state("configmaps", Some("wire-a"));
    consume(&r, &mut views, |v| v["configmaps"].objects == want);
    assert!(r.stats()[0].reconnects >= 1, "{:?}", r.stats());
}

#[test]
fn deletes_while_the_apiserver_was_down_are_inferred_after_compaction() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    let (r, mut views) = synced_configmaps(&c);
    c.script("stop-apiserver");
    // Behind the apiserver's back: delete cm-2 in etcd, write twice more, compact.
    let etcd = &c.env["ETCD_ENDPOINT"];
    let b64 = |s: &str| {
        let out = Command::new("base64")
            .arg("-w0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        out.stdin.as_ref().unwrap().write_all(s.as_bytes()).unwrap();
        String::from_utf8(out.wait_with_output().unwrap().stdout).unwrap()
    };
    let post = |path: &str, body: String| {
        let out = Command::new("curl")
            .args(["-fsS", "-X", "POST", &format!("{etcd}{path}"), "-d", &body])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "etcd {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let deleted = post(
        "/v3/kv/deleterange",
        format!(r#"{{"key":"{}"}}"#, b64("/registry/configmaps/wire-a/cm-2")),
    );
    assert!(deleted.contains(r#""deleted":"1""#), "{deleted}");
    post(
        "/v3/kv/put",
        format!(
            r#"{{"key":"{}","value":"{}"}}"#,
            b64("/tattler-test/a"),
            b64("1")
        ),
    );
    post(
        "/v3/kv/put",
        format!(
            r#"{{"key":"{}","value":"{}"}}"#,
            b64("/tattler-test/a"),
            b64("2")
        ),
    );
    c.script("compact");
    c.script("start-apiserver");
    views.get_mut("configmaps").unwrap().synced = false;
    let seen = consume(&r, &mut views, |v| {
        v["configmaps"].objects.len() == 2 && v["configmaps"].synced
    });
    let objects: Vec<String> = told::objects(&seen)
        .into_iter()
        .filter(|s| !s.contains("Snapshot"))
        .collect();
    assert_eq!(
        objects,
        [
            "configmaps Delete(inferred) wire-a/cm-2",
            "configmaps Synced configmaps"
        ]
    );
    // The outage is told (the reconnects refused, or the apiserver's
    // answers while it starts), once, before anything else.
    let stale = told::notices(&seen, &["Stale"]);
    assert!(
        stale.len() == 1 && stale[0].starts_with("configmaps Stale configmaps@wire-a "),
        "{seen:?}"
    );
    assert_eq!(
        seen.iter().position(|s| *s == stale[0]),
        Some(0),
        "{seen:?}"
    );
    assert_eq!(
        views["configmaps"].objects,
        c.state("configmaps", Some("wire-a"))
    );
    let s = &r.stats()[0];
    assert!(s.resyncs >= 1, "{s:?}");
}

#[test]
fn a_crd_created_after_start_is_picked_up_by_set_resources() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    let r = Reader::open(admin(&c, &["namespaces"])).unwrap();
    let mut views = HashMap::new();
    consume(&r, &mut views, |v| {
        v.get("namespaces").is_some_and(|x| x.synced)
    });
    let mut specs = ResourceSpec::parse("namespaces").unwrap();
    specs.extend(ResourceSpec::parse("example.com/v1 Widget").unwrap());
    assert!(r.set_resources(&specs).unwrap());
    // The kind is not served yet: discovery is retried until it is.
    crd_with_widgets(&c, &["w1"]);
    let seen = consume(&r, &mut views, |v| {
        v.get("widgets")
            .is_some_and(|x| x.synced && x.objects.len() == 1)
    });
    assert!(
        seen.contains(&"widgets Add wire-a/w1".to_string()),
        "{seen:?}"
    );
    assert_eq!(views["widgets"].objects, c.state("widgets", None));
}

#[test]
fn with_watch_list_off_list_and_watch_give_the_same_entries() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = |extra: &[&str]| {
        let c = Cluster::up(Duration::from_secs(240), extra);
        c.apply(SEED);
        let mut cfg = admin(&c, &[]);
        cfg.tuning.page_size = 2;
        cfg.resources = vec![ResourceSpec::parse("configmaps")
            .unwrap()
            .remove(0)
            .in_namespace("wire-a")];
        let r = Reader::open(cfg).unwrap();
        let mut views = HashMap::new();
        let mut seen = consume(&r, &mut views, |v| {
            v.get("configmaps").is_some_and(|x| x.synced)
        });
        seen.sort();
        let first = r.next_timeout(Duration::from_millis(1)).ok();
        assert!(first.is_none());
        c.kubectl(&["label", "configmap", "cm-1", "-n", "wire-a", "x=y"]);
        let e = r.next_timeout(Duration::from_secs(30)).unwrap();
        seen.push(show(&e));
        let obj: serde_json::Value = serde_json::from_slice(e.object().unwrap()).unwrap();
        assert_eq!(
            (obj["kind"].as_str(), obj["apiVersion"].as_str()),
            (Some("ConfigMap"), Some("v1"))
        );
        (seen, r.stats()[0].list_fallback)
    };
    let (with, fallback_with) = run(&[]);
    let (without, fallback_without) = run(&["--feature-gates=WatchList=false"]);
    assert_eq!((fallback_with, fallback_without), (false, true));
    assert_eq!(with, without);
    assert_eq!(
        with,
        [
            "configmaps Add wire-a/cm-1",
            "configmaps Add wire-a/cm-2",
            "configmaps Add wire-a/cm-3",
            "configmaps Synced configmaps",
            "Update wire-a/cm-1"
        ]
    );
}

/// A LIST page's continue token expires between pages (etcd compacted past
/// it while the consumer held the stream back): the same full state goes on
/// in one unpaged LIST, each object delivered once, then Synced; protobuf
/// and JSON alike. The cache's list snapshots are off so that the pages come
/// from etcd, where a compaction expires a token.
#[test]
fn an_expired_continue_token_lists_again_in_one_answer() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(
        Duration::from_secs(240),
        &["--feature-gates=WatchList=false,ListFromCacheSnapshot=false"],
    );
    c.apply(SEED);
    for (n, encoding) in [(1, Encoding::Auto), (2, Encoding::Json)] {
        let mut cfg = admin(&c, &[]);
        cfg.tuning.page_size = 1;
        cfg.tuning.channel_capacity = 1;
        cfg.resources = vec![ResourceSpec::parse("configmaps")
            .unwrap()
            .remove(0)
            .in_namespace("wire-a")
            .with_encoding(encoding)];
        let r = Reader::open(cfg).unwrap();
        // Page 1's object waits in the channel, page 2's in the send: the
        // stream holds page 2's continue token.
        let deadline = Instant::now() + Duration::from_secs(60);
        while r.stats()[0].events < 2 {
            assert!(Instant::now() < deadline, "no second page: {:?}", r.stats());
            std::thread::sleep(Duration::from_millis(20));
        }
        // A write elsewhere, then a compaction past the token's revision.
        c.kubectl(&["create", "configmap", &format!("bump-{n}"), "-n", "default"]);
        c.script("compact");
        let mut views = HashMap::new();
        let seen = consume(&r, &mut views, |v| {
            v.get("configmaps").is_some_and(|x| x.synced)
        });
        assert_eq!(
            told::objects(&seen),
            [
                "configmaps Add wire-a/cm-1",
                "configmaps Add wire-a/cm-2",
                "configmaps Add wire-a/cm-3",
                "configmaps Synced configmaps"
            ],
            "{encoding:?}"
        );
        // An expired continue token is retried within the same full state:
        // the view stays current, nothing is told.
        assert!(told::notices(&seen, &["Stale"]).is_empty(), "{seen:?}");
        let stats = &r.stats()[0];
        assert!(stats.list_fallback, "{stats:?}");
        // One retry (the expired page), no re-sync.
        assert_eq!(
            (stats.reconnects, stats.resyncs),
            (1, 0),
            "{encoding:?}: {stats:?}"
        );
        assert_eq!(
            views["configmaps"].objects,
            c.state("configmaps", Some("wire-a"))
        );
        r.close();
    }
}

/// POSTs `body` (JSON) to `path` as admin, with curl (kubectl would parse the
/// object itself, and its own limits would be what is tested).
fn post_json(c: &Cluster, path: &str, body: &str) {
    let mut child = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-o", "/dev/null", "-X", "POST"])
        .arg("--cacert")
        .arg(&c.env["K8S_CA"])
        .arg("-H")
        .arg(format!(
            "Authorization: Bearer {}",
            std::fs::read_to_string(&c.env["K8S_TOKEN_FILE"])
                .unwrap()
                .trim()
        ))
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ])
        .arg(format!("{}{path}", c.env["K8S_SERVER"]))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "POST {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What any tenant can create: a ConfigMap whose last-applied annotation is
/// `{"env":` and 20,000 `[` (only a string to the apiserver), and a custom
/// resource nested 9,000 levels deep (the apiserver accepts 10,000). Both are
/// delivered, the annotation withheld whole; the process lives (a stack
/// overflow would abort this binary).
#[test]
fn deep_objects_a_tenant_can_create_are_delivered_without_harm() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: wire-a}\n");
    crd_with_widgets(&c, &[]);
    let applied = format!("{{\"env\":{}", "[".repeat(20_000));
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "deep-annotation", "namespace": "wire-a",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}},
        "data": {"k": "v"}
    });
    post_json(&c, "/api/v1/namespaces/wire-a/configmaps", &cm.to_string());
    const DEPTH: usize = 9_000;
    // The object, its spec, then arrays: DEPTH levels in all.
    let spec = format!("{}1{}", "[".repeat(DEPTH - 2), "]".repeat(DEPTH - 2));
    let widget = format!(
        "{{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{{\"name\":\"deep-widget\",\"namespace\":\"wire-a\"}},\"spec\":{{\"x\":{spec}}}}}"
    );
    post_json(
        &c,
        "/apis/example.com/v1/namespaces/wire-a/widgets",
        &widget,
    );
    let mut cfg = admin(&c, &[]);
    cfg.resources = vec![
        ResourceSpec::parse("configmaps")
            .unwrap()
            .remove(0)
            .in_namespace("wire-a"),
        ResourceSpec::parse("example.com/v1/widgets")
            .unwrap()
            .remove(0)
            .in_namespace("wire-a"),
    ];
    let r = Reader::open(cfg).unwrap();
    let mut got = BTreeMap::new();
    let mut synced = 0;
    while synced < 2 {
        let e = r.next_timeout(Duration::from_secs(30)).expect("entries");
        match e.change() {
            Change::Synced => synced += 1,
            Change::Add => {
                got.insert(e.name().to_string(), e.object().unwrap().to_vec());
            }
            other => panic!("unexpected {other}: {:?}", e),
        }
    }
    let keys: Vec<&String> = got.keys().collect();
    assert_eq!(keys, ["deep-annotation", "deep-widget"]);
    let cm: serde_json::Value = serde_json::from_slice(&got["deep-annotation"]).unwrap();
    assert_eq!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "REDACTED"
    );
    let w = String::from_utf8_lossy(&got["deep-widget"]);
    let spec = &w[w.find("\"spec\":").expect("a spec")..];
    assert_eq!(spec.matches('[').count(), DEPTH - 2, "the widget as stored");
    assert!(r.stats().iter().all(|s| s.skipped == 0 && !s.failed));
}

/// Reads entries until `done` says so (60 s at most); every entry described,
/// and the objects by `resource name` (the last version of each).
fn collect(
    r: &Reader,
    mut done: impl FnMut(&[String]) -> bool,
) -> (Vec<String>, BTreeMap<String, serde_json::Value>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut seen, mut objects) = (Vec::new(), BTreeMap::new());
    while !done(&seen) {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = r
            .next_timeout(left)
            .unwrap_or_else(|e| panic!("waiting for entries: {e}; got {seen:?}"));
        if let Some(o) = e.object() {
            objects.insert(
                format!("{} {}", e.resource().resource, e.name()),
                serde_json::from_slice(o).unwrap(),
            );
        }
        seen.push(format!("{} {}", e.resource().resource, show(&e)));
    }
    (seen, objects)
}

fn synced_count(seen: &[String]) -> usize {
    seen.iter().filter(|s| s.contains(" Synced ")).count()
}

/// Issue 15: metadata-only streams of pods and of a custom resource: no
/// spec reaches the consumer, the objects are kubectl's, and the
/// last-applied annotation (which holds the spec) is still scrubbed.
#[test]
fn metadata_only_streams_carry_the_same_objects_without_their_spec() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    crd_with_widgets(&c, &["w1", "w2"]);
    let mut cfg = admin(&c, &[]);
    cfg.resources = vec![
        ResourceSpec::parse("pods")
            .unwrap()
            .remove(0)
            .metadata_only(),
        ResourceSpec::parse("example.com/v1/widgets")
            .unwrap()
            .remove(0)
            .metadata_only(),
    ];
    // The server is asked to drop managedFields too (KEP-5958): a 1.36
    // apiserver, which does not know the parameter, must still serve.
    cfg.shaping.drop_managed_fields = true;
    let r = Reader::open(cfg).unwrap();
    let (_, objects) = collect(&r, |s| synced_count(s) == 2);
    let mut views: HashMap<String, View> = HashMap::new();
    for (key, o) in &objects {
        assert_eq!(o["kind"], "PartialObjectMetadata", "{key}");
        assert!(o["metadata"].get("managedFields").is_none(), "{key}");
        assert!(
            o.get("spec").is_none() && o.get("size").is_none(),
            "{key}: {o}"
        );
        let text = o.to_string();
        assert!(
            !text.contains("hunter2"),
            "{key}: the last-applied annotation is scrubbed"
        );
        let m = &o["metadata"];
        let res = key.split(' ').next().unwrap().to_string();
        views.entry(res).or_default().objects.insert(
            m["uid"].as_str().unwrap().into(),
            (
                format!(
                    "{}/{}",
                    m["namespace"].as_str().unwrap_or(""),
                    m["name"].as_str().unwrap()
                ),
                m["resourceVersion"].as_str().unwrap().parse().unwrap(),
            ),
        );
    }
    assert_eq!(views["pods"].objects, c.state("pods", None));
    assert_eq!(views["widgets"].objects, c.state("widgets", None));
}

/// Issue 15: a node agent's configuration, as C and Go pass it: pods of one
/// node, that node, and the configmaps of one namespace by label.
#[test]
fn a_node_agent_streams_its_node_pods_and_a_labelled_namespace() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    let pod = |name: &str, node: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: wire-a}}\nspec:\n  nodeName: {node}\n  containers: [{{name: c, image: busybox}}]\n")
    };
    c.apply(&pod("on-1", "node-1"));
    c.apply(&pod("on-2", "node-2"));
    c.kubectl(&["label", "configmap", "cm-1", "-n", "wire-a", "team=x"]);
    let json = format!(
        r#"{{"kubeconfig":"{}","resources":[
            {{"resource":"pods","field_selector":"spec.nodeName=node-1"}},
            {{"resource":"no","field_selector":"metadata.name=node-1"}},
            {{"resource":"cm","namespace":"wire-a","label_selector":"team=x"}}]}}"#,
        c.kubeconfig()
    );
    let r = Reader::open(Config::from_json(&json).unwrap()).unwrap();
    let (mut seen, _) = collect(&r, |s| synced_count(s) == 3);
    seen.sort();
    assert!(told::notices(&seen, &["Stale"]).is_empty(), "{seen:?}");
    assert_eq!(
        told::objects(&seen),
        [
            "configmaps Add wire-a/cm-1",
            "configmaps Synced configmaps",
            "nodes Add node-1",
            "nodes Synced nodes",
            "pods Add wire-a/on-1",
            "pods Synced pods"
        ]
    );
}

/// Issues 13 and 15: kubectl's names resolved as kubectl resolves them
/// (podtemplates is not in tattler's table), and secrets in objects: env
/// values in PodTemplates and ControllerRevisions, a Secret's data and
/// stringData (also in last-applied), never reach the consumer.
#[test]
fn kubectl_names_resolve_and_no_secret_of_any_kind_is_delivered() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    crd_with_widgets(&c, &["w1"]);
    c.apply(
        r#"
apiVersion: v1
kind: PodTemplate
metadata: {name: tpl, namespace: wire-a}
template:
  metadata: {labels: {app: x}}
  spec:
    containers: [{name: c, image: busybox, env: [{name: A, value: s3cret-template}]}]
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: rev-1, namespace: wire-a}
revision: 1
data:
  spec:
    template:
      spec:
        containers: [{name: c, image: busybox, env: [{name: B, value: s3cret-revision}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: wire-a}
stringData: {token: s3cret-token}
data: {password: czNjcmV0LXBhc3N3b3Jk}
"#,
    );
    let r = Reader::open(admin(
        &c,
        &[
            "podtemplates",
            "controllerrevisions",
            "secret",
            "widget",
            "PodTemplate",
        ],
    ))
    .unwrap();
    let (seen, objects) = collect(&r, |s| synced_count(s) == 5);
    let mut adds: Vec<&String> = seen.iter().filter(|s| s.contains(" Add ")).collect();
    adds.sort();
    assert_eq!(
        adds,
        [
            "controllerrevisions Add wire-a/rev-1",
            "podtemplates Add wire-a/tpl",
            "podtemplates Add wire-a/tpl",
            "secrets Add wire-a/creds",
            "widgets Add wire-a/w1"
        ]
    );
    let all: String = objects.values().map(|o| o.to_string()).collect();
    for secret in [
        "s3cret-template",
        "s3cret-revision",
        "s3cret-token",
        "czNjcmV0LXBhc3N3b3Jk",
    ] {
        assert!(!all.contains(secret), "{secret} reached the consumer");
    }
    let creds = &objects["secrets creds"];
    assert_eq!(
        creds["data"]["token"], "REDACTED",
        "stringData is stored as data"
    );
    assert_eq!(creds["data"]["password"], "REDACTED");
    assert_eq!(creds["type"], "Opaque");
    let stats = r.stats();
    assert_eq!(stats[0].resource, "v1/podtemplates");
    assert_eq!(stats[1].resource, "apps/v1/controllerrevisions");
}

/// Issue 15: a restart from a checkpoint delivers only what changed while
/// down, deletes included — with the resourceVersion still served, and
/// after a compaction and an apiserver restart (a re-sync against the
/// restored state).
#[test]
fn a_restart_from_a_checkpoint_delivers_only_what_changed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(240), &[]);
    c.apply(SEED);
    for compacted in [false, true] {
        let cfg = || {
            let mut cfg = admin(&c, &[]);
            cfg.resources = vec![ResourceSpec::parse("configmaps")
                .unwrap()
                .remove(0)
                .in_namespace("wire-a")];
            cfg
        };
        let r = Reader::open(cfg()).unwrap();
        collect(&r, |s| synced_count(s) == 1);
        r.stop();
        while r.next().is_ok() {}
        let cp = r.checkpoint();
        drop(r);
        // While down.
        let n = if compacted { "b" } else { "a" };
        c.kubectl(&[
            "delete",
            "configmap",
            "cm-2",
            "-n",
            "wire-a",
            "--ignore-not-found",
        ]);
        c.kubectl(&[
            "delete",
            "configmap",
            "cm-9a",
            "-n",
            "wire-a",
            "--ignore-not-found",
        ]);
        c.apply(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-9{n}, namespace: wire-a}}\n"
        ));
        c.kubectl(&[
            "label",
            "configmap",
            "cm-1",
            "-n",
            "wire-a",
            &format!("round={n}"),
            "--overwrite",
        ]);
        if compacted {
            c.script("compact");
            c.script("restart-apiserver");
        }
        let mut cfg = cfg();
        cfg.resume = Some(kube_tattler::Checkpoint::from_bytes(&cp.to_bytes()).unwrap());
        let r = Reader::open(cfg).unwrap();
        // One Synced either way: after the replayed changes, or after the
        // re-sync a compacted resourceVersion calls for.
        let (mut seen, _) = collect(&r, |s| {
            synced_count(s) == 1
                && s.iter().any(|x| x.contains("cm-9"))
                && s.iter().any(|x| x.contains("Update wire-a/cm-1"))
        });
        if !compacted {
            while let Ok(e) = r.next_timeout(Duration::from_millis(1500)) {
                seen.push(format!("{} {}", e.resource().resource, show(&e)));
            }
        }
        seen.sort();
        if compacted {
            assert_eq!(
                told::objects(&seen),
                [
                    "configmaps Add wire-a/cm-9b",
                    "configmaps Delete(inferred) wire-a/cm-9a",
                    "configmaps Snapshot wire-a/cm-3",
                    "configmaps Synced configmaps",
                    "configmaps Update wire-a/cm-1"
                ],
                "after the compaction"
            );
            // The compacted resume point calls for a re-sync, told.
            assert_eq!(
                told::notices(&seen, &["Stale"]),
                ["configmaps Stale configmaps@wire-a Resyncing"]
            );
        } else {
            assert!(told::notices(&seen, &["Stale"]).is_empty(), "{seen:?}");
            assert_eq!(
                told::objects(&seen),
                [
                    "configmaps Add wire-a/cm-9a",
                    "configmaps Delete wire-a/cm-2",
                    "configmaps Synced configmaps",
                    "configmaps Update wire-a/cm-1"
                ],
                "the resourceVersion still served"
            );
        }
    }
}

/// Issue 15: `"*.example.com"` picks up a CRD created after start, and drops
/// one that is deleted.
#[test]
fn every_resource_of_a_group_follows_crds_as_they_come_and_go() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    crd_with_widgets(&c, &["w1"]);
    let mut cfg = admin(&c, &["*.example.com"]);
    cfg.tuning.discovery_interval = Duration::from_secs(1);
    let r = Reader::open(cfg).unwrap();
    let (seen, _) = collect(&r, |s| synced_count(s) == 1);
    assert_eq!(
        told::objects(&seen),
        ["widgets Add wire-a/w1", "widgets Synced widgets"]
    );
    c.apply(
        &CRD.replace("widgets", "gadgets")
            .replace("widget", "gadget")
            .replace("Widget", "Gadget"),
    );
    c.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/gadgets.example.com",
    ]);
    c.apply("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: wire-a}\n");
    // Found before or after g1 was made: Synced, and g1's Add, in either order.
    let (seen, _) = collect(&r, |s| {
        s.iter().any(|x| x == "gadgets Synced gadgets")
            && s.iter().any(|x| x == "gadgets Add wire-a/g1")
    });
    // A new CRD's watch cache may not be ready at the first request: the
    // apiserver answers 429 (kubernetes#139766), told once as Stale.
    let stale = told::notices(&seen, &["Stale"]);
    assert!(
        stale
            .iter()
            .all(|x| x == "gadgets Stale gadgets Throttled 429")
            && stale.len() <= 1,
        "{seen:?}"
    );
    assert_eq!(told::objects(&seen).len(), 2, "{seen:?}");
    c.kubectl(&["delete", "crd", "widgets.example.com", "--wait=true"]);
    // Its objects go with it (the apiserver deletes them), then its stream.
    let (seen, _) = collect(&r, |s| s.iter().any(|x| x.contains("Delete wire-a/w1")));
    assert!(seen.iter().all(|s| !s.contains("Error")), "{seen:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while r.stats().iter().any(|s| s.resource.contains("widgets")) {
        assert!(Instant::now() < deadline, "{:?}", r.stats());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(r.stats().len(), 1);
}

/// GETs `path` as admin with `accept`, with curl: the server's own bytes.
fn get_as(c: &Cluster, path: &str, accept: &str) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-A", "tattler-test"])
        .arg("--cacert")
        .arg(&c.env["K8S_CA"])
        .arg("-H")
        .arg(format!(
            "Authorization: Bearer {}",
            std::fs::read_to_string(&c.env["K8S_TOKEN_FILE"])
                .unwrap()
                .trim()
        ))
        .arg("-H")
        .arg(format!("Accept: {accept}"))
        .arg(format!("{}{path}", c.env["K8S_SERVER"]))
        .output()
        .unwrap();
    assert!(out.status.success(), "GET {path}: {:?}", out);
    out.stdout
}

/// Issue 23: a metadata-only stream over protobuf delivers, byte for byte,
/// the JSON the server sends for each object (labels and annotations that
/// Go escapes, owners, finalizers, a deletion, managedFields with a
/// subresource; pods and a custom resource), and the same as the stream
/// that opts out with `Encoding::Json`; the protobuf one reads fewer bytes.
#[test]
fn metadata_only_over_protobuf_is_byte_equal_to_the_servers_json() {
    protobuf_and_json_agree(&[], false);
}

/// The same by paged LIST (a `PartialObjectMetadataList` over protobuf),
/// from a server without watch-list.
#[test]
fn metadata_only_lists_over_protobuf_are_byte_equal_to_the_servers_json() {
    protobuf_and_json_agree(&["--feature-gates=WatchList=false"], true);
}

fn protobuf_and_json_agree(extra: &[&str], by_list: bool) {
    use kube_tattler::Encoding;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(240), extra);
    c.apply(SEED);
    crd_with_widgets(&c, &["w1", "w2"]);
    c.apply(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: odd
  namespace: wire-a
  labels: {app: web, tier: front}
  annotations: {note: "a <b> & \u2028 tab\there", z: "é ü", a: ""}
  finalizers: [example.com/keep]
spec:
  containers: [{name: c, image: busybox, env: [{name: TOKEN, value: hunter2}]}]
"#,
    );
    let cm_uid = c.kubectl(&[
        "-n",
        "wire-a",
        "get",
        "cm",
        "cm-1",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    c.kubectl_in(
        &["create", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: owned-\n  namespace: wire-a\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: cm-1, uid: {cm_uid}, controller: true, blockOwnerDeletion: false}}\nspec:\n  containers: [{{name: c, image: busybox}}]\n"
        )),
    );
    c.kubectl(&[
        "-n",
        "wire-a",
        "patch",
        "pod",
        "pod-a1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"message":"hi"}}"#,
    ]);
    c.kubectl(&["-n", "wire-a", "delete", "pod", "odd", "--wait=false"]);

    let stream = |encoding: Encoding| {
        let mut cfg = admin(&c, &[]);
        cfg.resources = ["pods", "example.com/v1/widgets"]
            .iter()
            .map(|n| {
                ResourceSpec::parse(n)
                    .unwrap()
                    .remove(0)
                    .metadata_only()
                    .with_encoding(encoding)
            })
            .collect();
        // Objects as the server sent them.
        cfg.shaping.scrub = false;
        cfg.tuning.page_size = 2;
        let r = Reader::open(cfg).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut synced, mut objects) = (0, BTreeMap::new());
        while synced < 2 {
            let e = r
                .next_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap();
            match e.change() {
                Change::Synced => synced += 1,
                Change::Add => {
                    let path = format!(
                        "{} {} {}",
                        e.resource().resource,
                        e.namespace().unwrap_or(""),
                        e.name()
                    );
                    objects.insert(path, e.object().unwrap().to_vec());
                }
                other => panic!("{other:?}: {}", show(&e)),
            }
        }
        let bytes: u64 = r.stats().iter().map(|s| s.bytes).sum();
        assert!(r.stats().iter().all(|s| s.skipped == 0 && !s.failed));
        assert!(r.stats().iter().all(|s| s.list_fallback == by_list));
        (objects, bytes)
    };
    let (proto, proto_bytes) = stream(Encoding::Auto);
    let (json, json_bytes) = stream(Encoding::Json);
    assert_eq!(proto.len(), 5, "{:?}", proto.keys());
    for (key, bytes) in &proto {
        let text = String::from_utf8_lossy(bytes);
        assert_eq!(Some(bytes), json.get(key), "{key}: {text}");
        let mut parts = key.split(' ');
        let (res, ns, name) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let base = if res == "pods" {
            "/api/v1".to_string()
        } else {
            "/apis/example.com/v1".to_string()
        };
        let server = get_as(
            &c,
            &format!("{base}/namespaces/{ns}/{res}/{name}"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        );
        assert_eq!(
            String::from_utf8_lossy(server.trim_ascii_end()),
            text,
            "{key}: the server's JSON"
        );
    }
    let odd = String::from_utf8_lossy(&proto["pods wire-a odd"]).into_owned();
    for needle in [
        "\\u003cb\\u003e \\u0026 \\u2028",
        "\"deletionTimestamp\":",
        "\"finalizers\":[\"example.com/keep\"]",
    ] {
        assert!(odd.contains(needle), "{needle}: {odd}");
    }
    assert!(proto
        .values()
        .any(|o| String::from_utf8_lossy(o).contains("\"subresource\":\"status\"")));
    assert!(proto
        .values()
        .any(|o| String::from_utf8_lossy(o)
            .contains("\"controller\":true,\"blockOwnerDeletion\":false")));
    // Protobuf on the wire: fewer bytes for the same objects.
    assert!(
        proto_bytes * 10 < json_bytes * 9,
        "protobuf read {proto_bytes} bytes, JSON {json_bytes}"
    );
}

/// Issue 23: built-in objects of every kind the tests create
/// (`tests/real/builtins.yaml`: pods with most fields, services,
/// configmaps, secrets, nodes, events of both groups, leases, the apps and
/// batch kinds, RBAC, networking, policy, autoscaling, storage, webhooks,
/// endpoint slices), and those the apiserver makes itself, read over
/// protobuf and written as JSON by tattler, are byte-equal to the JSON the
/// server sends for them; a custom resource beside them comes as JSON.
#[test]
fn built_in_objects_over_protobuf_are_byte_equal_to_the_servers_json() {
    use kube_tattler::Encoding;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(300), &[]);
    c.apply(SEED);
    c.apply(include_str!("builtins.yaml"));
    crd_with_widgets(&c, &["w1"]);
    const RESOURCES: &[&str] = &[
        "pods",
        "services",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "resourcequotas",
        "limitranges",
        "persistentvolumes",
        "persistentvolumeclaims",
        "nodes",
        "namespaces",
        "v1/events",
        "events.k8s.io/v1/events",
        "leases",
        "deployments",
        "statefulsets",
        "daemonsets",
        "controllerrevisions",
        "jobs",
        "cronjobs",
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
        "networkpolicies",
        "ingresses",
        "poddisruptionbudgets",
        "autoscaling/v2/horizontalpodautoscalers",
        "priorityclasses",
        "storageclasses",
        "validatingwebhookconfigurations",
        "endpointslices",
        "example.com/v1/widgets",
    ];
    let stream = |encoding: Encoding| {
        let mut cfg = admin(&c, &[]);
        cfg.resources = RESOURCES
            .iter()
            .map(|n| {
                ResourceSpec::parse(n)
                    .unwrap()
                    .remove(0)
                    .with_encoding(encoding)
            })
            .collect();
        cfg.shaping.scrub = false;
        let r = Reader::open(cfg).unwrap();
        let deadline = Instant::now() + Duration::from_secs(90);
        let (mut synced, mut objects) = (0, BTreeMap::new());
        while synced < RESOURCES.len() {
            let e = r
                .next_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap();
            match e.change() {
                Change::Synced => synced += 1,
                Change::Add => {
                    let key = format!(
                        "{}/{} {} {}",
                        e.resource().group,
                        e.resource().resource,
                        e.namespace().unwrap_or(""),
                        e.name()
                    );
                    let rv = e.resource_version_str().to_string();
                    objects.insert(key, (rv, e.object().unwrap().to_vec()));
                }
                other => panic!("{other:?}: {}", show(&e)),
            }
        }
        let stats = r.stats();
        assert!(
            stats.iter().all(|s| s.skipped == 0 && !s.failed),
            "{stats:?}"
        );
        let bytes: BTreeMap<String, u64> = stats
            .iter()
            .map(|s| (s.resource.clone(), s.bytes))
            .collect();
        (objects, bytes)
    };
    let (proto, proto_bytes) = stream(Encoding::Auto);
    let (json, json_bytes) = stream(Encoding::Json);
    let (mut same, mut moved) = (0, Vec::new());
    for (key, (rv, bytes)) in &proto {
        let Some((json_rv, json_obj)) = json.get(key) else {
            moved.push(key.clone());
            continue;
        };
        if rv != json_rv {
            // Changed between the two streams (a lease renewed).
            moved.push(key.clone());
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(json_obj),
            "{key}"
        );
        same += 1;
    }
    assert!(
        moved.iter().all(|k| !k.contains(" pb ")),
        "objects of the test's namespace moved: {moved:?}"
    );
    assert!(
        same >= 80 && moved.len() * 10 <= same,
        "{same} equal, moved: {moved:?}"
    );
    for name in RESOURCES {
        let plural = name.rsplit('/').next().unwrap();
        assert!(
            proto.keys().any(|k| k
                .split(' ')
                .next()
                .unwrap()
                .ends_with(&format!("/{plural}"))),
            "no {name} object: {:?}",
            proto.keys().collect::<Vec<_>>()
        );
    }
    // Protobuf on the wire for the built-in kinds, JSON for the widgets.
    let (p, j) = (proto_bytes["v1/pods"], json_bytes["v1/pods"]);
    assert!(p * 10 < j * 9, "pods: protobuf {p} bytes, JSON {j}");
    let (p, j) = (
        proto_bytes["example.com/v1/widgets"],
        json_bytes["example.com/v1/widgets"],
    );
    assert_eq!(p, j, "widgets come as JSON either way");
}
