//! `kubectl-tattler` run as a user runs it, against the fake apiserver:
//! each flag's output, the exit codes, the failures within the timeout, a
//! checkpoint resumed.

mod support;

use std::net::TcpListener;
use std::time::Duration;

use support::{kubeconfig, pod, run, short, sorted, start, start_with, tmp_dir, Finished};
use tattler_fakeapi::FakeApi;

/// The AGE cell ends a table row: (the row before it, whether it is an age).
fn split_age(line: &str) -> (&str, bool) {
    let (row, age) = line.rsplit_once(' ').unwrap_or(("", line));
    let is_age = age.ends_with('s') && age[..age.len() - 1].bytes().all(|b| b.is_ascii_digit());
    (row, is_age)
}

fn assert_ok(f: &Finished) {
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.stderr, "", "{f:?}");
}

#[test]
fn help_version_and_usage_errors() {
    let help = run(&["--help"]);
    assert_ok(&help);
    let text = help.lines.join("\n");
    assert!(
        text.starts_with("kubectl-tattler streams the full state"),
        "{text}"
    );
    assert!(
        text.contains("Usage:\n  kubectl-tattler [flags] RESOURCE..."),
        "{text}"
    );
    for flag in [
        "-A, --all-namespaces",
        "-n, --namespace",
        "-l, --selector",
        "--field-selector",
        "-o, --output",
        "--request-timeout",
        "--until-synced",
        "--checkpoint",
        "--metadata-only",
        "--config",
        "--all ",
        "--objects",
        "--kubeconfig",
        "--context",
        "--demo",
        "--version",
    ] {
        assert!(text.contains(flag), "{flag} is not in --help");
    }
    assert_eq!(run(&["-h"]).lines, help.lines);
    let version = run(&["--version"]);
    assert_ok(&version);
    assert_eq!(
        version.lines,
        [format!("kubectl-tattler {}", env!("CARGO_PKG_VERSION"))]
    );

    // kubectl's form: the error naming the flag, then where help is; exit 1.
    let cases: &[(&[&str], &str)] = &[
        (&["--bogus", "pods"], "unknown flag: --bogus"),
        (&["pods", "-x"], "unknown shorthand flag: 'x' in -x"),
        (&["pods", "-n"], "flag needs an argument: -n"),
        (
            &["pods", "-o", "xml"],
            "invalid argument \"xml\" for \"-o\" flag: want table, wide, json, yaml or name",
        ),
        (
            &["pods", "--request-timeout=soon"],
            "invalid argument \"soon\" for \"--request-timeout\" flag: want a duration (30s, 1m, 2m30s) or 0",
        ),
        (
            &[],
            "you must name the resources to watch (pods, deploy, …), or give --all or --config FILE",
        ),
        (&["pods", "--objects"], "--objects needs -o json or -o yaml"),
    ];
    for (args, want) in cases {
        let f = run(args);
        assert_eq!(f.code, Some(1), "{args:?}");
        assert!(f.lines.is_empty(), "{args:?}: {f:?}");
        assert_eq!(
            f.stderr,
            format!("error: {want}\nSee 'kubectl-tattler --help'.\n"),
            "{args:?}"
        );
    }
    // Not a usage error: the cluster's, in one line.
    let f = run(&["pods"]);
    assert_eq!(f.code, Some(1));
    assert!(
        f.stderr.starts_with("error: no cluster configured: ")
            && f.stderr.ends_with("(or --demo for a simulated cluster)\n")
            && f.stderr.lines().count() == 1,
        "{f:?}"
    );
}

#[test]
fn a_table_for_people() {
    let api = FakeApi::start();
    let p1 = pod(&api, "a", "p1");
    let p2 = pod(&api, "a", "p2");
    let p3 = pod(&api, "b", "p3");
    let n1 = api.apply("nodes", FakeApi::object(None, "node-1"));
    let at = api.current_rv();

    // One resource in one namespace: neither NAMESPACE nor kinds.
    let f = run(&["-s", &api.url(), "-n", "a", "--until-synced", "pods"]);
    assert_ok(&f);
    assert_eq!(f.lines[0], "CHANGE   NAME   RESOURCEVERSION   AGE");
    assert_eq!(f.lines.len(), 4, "{f:?}");
    let mut rows = Vec::new();
    for line in &f.lines[1..3] {
        let (row, age) = split_age(line);
        assert!(age, "{line:?}");
        rows.push(row.to_string());
    }
    assert_eq!(
        sorted(rows),
        [
            format!("Add      p1     {p1:<17}"),
            format!("Add      p2     {p2:<17}"),
        ]
    );
    assert_eq!(f.lines[3], format!("Synced   pods   {at}"));

    // Every namespace, two resources: a NAMESPACE column and kind/name;
    // the initial state is aligned on its widest cells.
    let f = run(&["-s", &api.url(), "-A", "--until-synced", "pods", "nodes"]);
    assert_ok(&f);
    assert_eq!(
        f.lines[0],
        "CHANGE   NAMESPACE   NAME          RESOURCEVERSION   AGE"
    );
    let mut rows = Vec::new();
    for line in &f.lines[1..] {
        let (row, age) = split_age(line);
        rows.push(if age { row.to_string() } else { line.clone() });
    }
    assert_eq!(
        sorted(rows),
        [
            format!("Add                  node/node-1   {n1:<17}"),
            format!("Add      a           pod/p1        {p1:<17}"),
            format!("Add      a           pod/p2        {p2:<17}"),
            format!("Add      b           pod/p3        {p3:<17}"),
            format!("Synced               nodes         {at}"),
            format!("Synced               pods          {at}"),
        ]
    );

    // Wide: the UID and the resource too; no header with --no-headers.
    let f = run(&[
        "-s",
        &api.url(),
        "-n",
        "b",
        "-o",
        "wide",
        "--no-headers",
        "--until-synced",
        "pods",
    ]);
    assert_ok(&f);
    let uid = api.get("pods", Some("b"), "p3").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let cells: Vec<Vec<&str>> = f
        .lines
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(cells.len(), 2, "{f:?}");
    let p3 = p3.to_string();
    assert_eq!(
        (cells[0][..3].to_vec(), &cells[0][4..]),
        (
            vec!["Add", "p3", p3.as_str()],
            &[uid.as_str(), "v1/pods"][..]
        )
    );
    assert_eq!(cells[1], ["Synced", "pods", &at.to_string(), "v1/pods"]);
}

#[test]
fn namespaces_and_selectors_as_kubectl() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    pod(&api, "b", "p2");
    pod(&api, "b", "p3");
    let dir = tmp_dir("namespaces");
    let kc = kubeconfig(&api, &dir);
    let kc = kc.to_str().unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["-o", "name", "--until-synced"];
        all.extend(args);
        let f = run(&all);
        assert_ok(&f);
        sorted(f.lines)
    };
    // The context's namespace, as kubectl.
    assert_eq!(names(&["--kubeconfig", kc, "pods"]), ["pod/p2", "pod/p3"]);
    assert_eq!(names(&["--kubeconfig", kc, "-n", "a", "pods"]), ["pod/p1"]);
    assert_eq!(
        names(&["--kubeconfig", kc, "-A", "pods"]),
        ["pod/p1", "pod/p2", "pod/p3"]
    );
    // -A wins over -n, as kubectl's.
    assert_eq!(names(&["--kubeconfig", kc, "-A", "-n", "a", "po"]).len(), 3);
    // A context without one, and a bare --server: "default".
    assert!(names(&["--kubeconfig", kc, "--context", "bare", "pods"]).is_empty());
    assert!(names(&["-s", &api.url(), "pods"]).is_empty());
    // $KUBECONFIG, as kubectl finds it.
    let f = start_with(
        &["-o", "name", "--until-synced", "pods"],
        &[("KUBECONFIG", kc)],
    )
    .finish();
    assert_ok(&f);
    assert_eq!(sorted(f.lines), ["pod/p2", "pod/p3"]);
    // Selectors.
    assert_eq!(
        names(&["--kubeconfig", kc, "-A", "-l", "run=p1", "pods"]),
        ["pod/p1"]
    );
    assert_eq!(
        names(&[
            "--kubeconfig",
            kc,
            "-A",
            "--field-selector",
            "metadata.name=p3",
            "pods"
        ]),
        ["pod/p3"]
    );
}

#[test]
fn json_lines_for_jq_flushed_as_they_come_and_sigterm_exits_0() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.apply("nodes", FakeApi::object(None, "n1"));
    let mut r = start(&[
        "-s",
        &api.url(),
        "-A",
        "-o",
        "json",
        "--objects",
        "pods",
        "nodes",
    ]);
    let mut synced = 0;
    let got = r.lines_until(|l| {
        synced += usize::from(l.contains("\"Synced\""));
        synced == 2
    });
    let got: Vec<serde_json::Value> = got
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pod = got
        .iter()
        .find(|l| l["resource"] == "pods" && l["change"] == "Add")
        .unwrap();
    let keys: Vec<&str> = pod
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "change",
            "group",
            "version",
            "resource",
            "kind",
            "namespace",
            "name",
            "uid",
            "resourceVersion",
            "object"
        ]
    );
    assert_eq!(
        (
            pod["namespace"].as_str(),
            pod["name"].as_str(),
            pod["kind"].as_str()
        ),
        (Some("a"), Some("p1"), Some("Pod"))
    );
    let object = &pod["object"];
    assert_eq!(object["metadata"]["name"], "p1");
    // As kubectl prints objects: no managedFields; env values redacted.
    assert!(
        object["metadata"].get("managedFields").is_none(),
        "{object}"
    );
    let env = &object["spec"]["containers"][0]["env"];
    assert_eq!(
        (env[0]["name"].as_str(), env[0]["value"].as_str()),
        (Some("LOG_LEVEL"), Some("REDACTED"))
    );
    assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["key"], "password");

    // A live change comes as its own line while the command runs.
    let rv = support::pod(&api, "a", "p2");
    let line: serde_json::Value = serde_json::from_str(&r.line()).unwrap();
    assert_eq!(
        (
            line["change"].as_str(),
            line["name"].as_str(),
            line["resourceVersion"].as_str()
        ),
        (Some("Add"), Some("p2"), Some(rv.to_string().as_str()))
    );
    r.term();
    let f = r.finish();
    assert_ok(&f);
    assert!(f.lines.is_empty(), "{f:?}");
}

#[test]
fn yaml_documents() {
    let api = FakeApi::start();
    let rv = pod(&api, "a", "p1");
    let at = api.current_rv();
    let stored = api.get("pods", Some("a"), "p1").unwrap();
    let uid = stored["metadata"]["uid"].as_str().unwrap();
    let f = run(&[
        "-s",
        &api.url(),
        "-n",
        "a",
        "-o",
        "yaml",
        "--until-synced",
        "pods",
    ]);
    assert_ok(&f);
    assert_eq!(
        f.lines.join("\n"),
        format!(
            "---
change: Add
group: \"\"
version: v1
resource: pods
kind: Pod
namespace: a
name: p1
uid: {uid}
resourceVersion: \"{rv}\"
---
change: Synced
group: \"\"
version: v1
resource: pods
kind: Pod
resourceVersion: \"{at}\""
        )
    );

    // With the objects: YAML a reader reads back to the stored object
    // (less managedFields, unless asked for; env values redacted).
    let url = api.url();
    for show in [false, true] {
        let mut args = vec!["-s", &url, "-n", "a", "-o", "yaml", "--objects"];
        args.extend(["--until-synced", "pods"]);
        if show {
            args.push("--show-managed-fields");
        }
        let f = run(&args);
        assert_ok(&f);
        let docs = yaml_rust2::YamlLoader::load_from_str(&f.lines.join("\n")).unwrap();
        assert_eq!(docs.len(), 2);
        let object = &docs[0]["object"];
        let mut want = stored.clone();
        if !show {
            want["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
        }
        want["spec"]["containers"][0]["env"][0]["value"] = "REDACTED".into();
        assert_eq!(yaml_to_json(object), want, "--show-managed-fields {show}");
    }
}

fn yaml_to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Null => serde_json::Value::Null,
        Yaml::Boolean(b) => (*b).into(),
        Yaml::Integer(i) => (*i).into(),
        Yaml::Real(r) => r.parse::<f64>().unwrap().into(),
        Yaml::String(s) => s.as_str().into(),
        Yaml::Array(a) => a.iter().map(yaml_to_json).collect(),
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| (k.as_str().unwrap().to_string(), yaml_to_json(v)))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn names_for_scripts() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.apply("apps/v1/deployments", FakeApi::object(Some("a"), "web"));
    api.apply("nodes", FakeApi::object(None, "n1"));
    let f = run(&[
        "-s",
        &api.url(),
        "-A",
        "-o",
        "name",
        "--until-synced",
        "pods",
        "deploy,nodes",
    ]);
    assert_ok(&f);
    assert_eq!(
        sorted(f.lines),
        ["deployment.apps/web", "node/n1", "pod/p1"]
    );
}

#[test]
fn a_forbidden_resource_fails_with_the_servers_words() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.forbid("nodes", true);
    let url = api.url();
    for until_synced in [true, false] {
        let mut args = vec!["-s", &url, "-A", "-o", "json", "pods", "nodes"];
        if until_synced {
            args.push("--until-synced");
        }
        let f = run(&args);
        assert_eq!(f.code, Some(1), "{f:?}");
        assert!(
            f.stderr
                .starts_with("Error from server (Forbidden): nodes is forbidden: ")
                && f.stderr.lines().count() == 1,
            "{f:?}"
        );
        assert!(
            f.lines
                .iter()
                .map(|l| short(l))
                .any(|l| l == "Error nodes 403 Forbidden"),
            "{f:?}"
        );
    }
}

#[test]
fn an_unknown_resource_fails_at_once() {
    let api = FakeApi::start();
    for args in [
        &["gizmos"][..],
        &["--until-synced", "pods", "gizmos"],
        &["-o", "json", "pods", "gizmos"],
    ] {
        let url = api.url();
        let mut all = vec!["-s", url.as_str(), "-A"];
        all.extend(args);
        let f = run(&all);
        assert_eq!(f.code, Some(1), "{args:?}: {f:?}");
        assert_eq!(
            f.stderr, "error: the server doesn't have a resource type \"gizmos\"\n",
            "{args:?}"
        );
    }
}

#[test]
fn an_unreachable_server_fails_within_the_timeout() {
    let limit = Duration::from_secs(2);
    // Refused: nothing listens there any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("http://127.0.0.1:{port}");
    for until_synced in [true, false] {
        let mut args = vec!["-s", refused.as_str(), "--request-timeout", "2s", "pods"];
        if until_synced {
            args.push("--until-synced");
        }
        let f = run(&args);
        assert_eq!(f.code, Some(1), "{f:?}");
        assert!(
            f.stderr
                .starts_with("error: v1/pods: no full state within 2s: ")
                && f.stderr.lines().count() == 1,
            "{f:?}"
        );
        assert!(f.took >= limit, "gave up before the timeout: {f:?}");
    }
    // Silent: connections are taken (the kernel's backlog) and never answered.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let f = run(&["-s", &url, "--request-timeout=2s", "--until-synced", "pods"]);
    assert_eq!(f.code, Some(1), "{f:?}");
    assert_eq!(
        f.stderr,
        "error: v1/pods: no answer from the server within 2s\n"
    );
    assert!(f.took >= limit, "{f:?}");
}

#[test]
fn config_file_with_per_resource_scope_a_node_agent() {
    let api = FakeApi::start();
    let mut p = FakeApi::pod("shop", "a");
    p["spec"]["nodeName"] = "n1".into();
    let a = api.apply("pods", p);
    let mut p = FakeApi::pod("shop", "b");
    p["spec"]["nodeName"] = "n2".into();
    api.apply("pods", p);
    let n1 = api.apply("nodes", FakeApi::object(None, "n1"));
    api.apply("nodes", FakeApi::object(None, "n2"));
    let cm = api.apply("configmaps", FakeApi::object(Some("kube-system"), "cm"));
    api.apply("services", FakeApi::object(Some("kube-system"), "dns"));
    api.apply("services", FakeApi::object(Some("shop"), "web"));
    let dir = tmp_dir("config");
    let file = dir.join("agent.json");
    std::fs::write(
        &file,
        serde_json::json!({
            "server": api.url(),
            "namespace": "kube-system",
            "resources": [
                "configmaps",
                {"resource": "pods", "field_selector": "spec.nodeName=n1"},
                {"resource": "nodes", "field_selector": "metadata.name=n1"},
            ],
        })
        .to_string(),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let f = run(&["--config", path, "-o", "json", "--until-synced"]);
    assert_ok(&f);
    let cur = api.current_rv();
    assert_eq!(
        sorted(f.lines.iter().map(|l| short(l)).collect()),
        [
            format!("Add /n1 {n1}"),
            format!("Add kube-system/cm {cm}"),
            format!("Add shop/a {a}"),
            format!("Synced configmaps {cur}"),
            format!("Synced nodes {cur}"),
            format!("Synced pods {cur}"),
        ]
    );
    // RESOURCEs on the command line join the file's, in its namespace.
    let f = run(&["--config", path, "-o", "name", "--until-synced", "services"]);
    assert_ok(&f);
    assert!(f.lines.contains(&"service/dns".to_string()), "{f:?}");
    assert!(!f.lines.contains(&"service/web".to_string()), "{f:?}");

    // The file names the cluster: cluster flags are refused; a bad key is named.
    let f = run(&["--config", path, "--server", &api.url()]);
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.contains("--config names the cluster"), "{f:?}");
    std::fs::write(
        &file,
        format!(
            r#"{{"server":"{}","resources":[{{"resource":"pods","nmespace":"x"}}]}}"#,
            api.url()
        ),
    )
    .unwrap();
    let f = run(&["--config", path]);
    assert_eq!(f.code, Some(1));
    assert!(
        f.stderr.starts_with(&format!("error: {path}: "))
            && f.stderr.contains("`resources[0].nmespace`"),
        "{f:?}"
    );
    let f = run(&["--config", "/no/such/file.json"]);
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.starts_with("error: /no/such/file.json: "), "{f:?}");
}

/// Under leader election, on a Lease another replica held in its fourth
/// term and stopped renewing: `Following` names that holder, `Leading` this
/// replica, and it and every entry after it carry the term, 5.
#[test]
fn leader_election_json_carries_the_term_and_the_holder() {
    let api = FakeApi::start();
    api.add_resource("coordination.k8s.io", "v1", "leases", "Lease", true);
    api.apply(
        "coordination.k8s.io/v1/leases",
        serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"namespace": "ns", "name": "feed"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 1, "leaseTransitions": 4},
        }),
    );
    pod(&api, "a", "p1");
    let dir = tmp_dir("election");
    let file = dir.join("replica.json");
    std::fs::write(
        &file,
        serde_json::json!({
            "server": api.url(),
            "resources": ["pods"],
            "leader_election": {
                "namespace": "ns", "lease": "feed", "identity": "me",
                "lease_duration_secs": 3, "renew_deadline_secs": 2, "retry_period_secs": 1,
            },
        })
        .to_string(),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let f = run(&["--config", path, "-o", "json", "--until-synced"]);
    assert_ok(&f);
    let got: Vec<(String, serde_json::Value, serde_json::Value)> = f
        .lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["change"].as_str().unwrap().to_string(),
                v["holder"].clone(),
                v["term"].clone(),
            )
        })
        .collect();
    let null = serde_json::Value::Null;
    assert_eq!(
        got,
        [
            ("Following".into(), "other".into(), null.clone()),
            ("Leading".into(), "me".into(), 5.into()),
            ("Add".into(), null.clone(), 5.into()),
            ("Synced".into(), null, 5.into()),
        ],
        "{f:?}"
    );
    // The run closed its reader: the Lease is released, the term kept.
    let lease = api
        .get("coordination.k8s.io/v1/leases", Some("ns"), "feed")
        .unwrap();
    assert_eq!(
        (
            &lease["spec"]["holderIdentity"],
            &lease["spec"]["leaseTransitions"]
        ),
        (&"".into(), &5.into()),
        "{lease}"
    );
    // For people, on stderr: who holds the Lease, and the term it leads in.
    let f = run(&["--config", path, "-o", "name", "--until-synced"]);
    assert_eq!(f.lines, ["pod/p1"], "{f:?}");
    assert_eq!(
        f.stderr,
        "following: me does not hold the Lease ns/feed (Standby): waiting for the Lease\n\
         leading: me holds the Lease ns/feed (term 6)\n",
        "{f:?}"
    );
}

#[test]
fn metadata_only_prints_partial_object_metadata() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    let f = run(&[
        "-s",
        &api.url(),
        "-A",
        "--metadata-only",
        "--show-managed-fields",
        "-o",
        "json",
        "--objects",
        "--until-synced",
        "pods",
    ]);
    assert_ok(&f);
    let lines: Vec<serde_json::Value> = f
        .lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{f:?}");
    let obj = &lines[0]["object"];
    let stored = api.get("pods", Some("a"), "p1").unwrap();
    assert_eq!(
        (
            lines[0]["kind"].as_str(),
            obj["kind"].as_str(),
            obj["apiVersion"].as_str()
        ),
        (
            Some("Pod"),
            Some("PartialObjectMetadata"),
            Some("meta.k8s.io/v1")
        )
    );
    assert_eq!(obj["metadata"], stored["metadata"]);
    assert!(
        obj.get("spec").is_none() && obj.get("status").is_none(),
        "{obj}"
    );
    assert_eq!(lines[1]["change"], "Synced");
}

/// Starts the command and reads `n` lines, then SIGTERM; its lines (those
/// after the n too) once it exited 0.
fn run_until(args: &[&str], n: usize) -> (Vec<String>, String) {
    let mut r = start_with(args, &[]);
    let mut got: Vec<String> = (0..n).map(|_| short(&r.line())).collect();
    r.term();
    let f = r.finish();
    assert_eq!(f.code, Some(0), "{f:?}");
    got.extend(f.lines.iter().map(|l| short(l)));
    (got, f.stderr)
}

#[test]
fn checkpoint_resumes_with_only_what_changed_meanwhile() {
    let api = FakeApi::start();
    let rv_a = pod(&api, "a", "p1");
    let rv_b = pod(&api, "a", "p2");
    let dir = tmp_dir("checkpoint");
    let file = dir.join("state.ckpt");
    let path = file.to_str().unwrap();
    let url = api.url();
    let base = [
        "-s",
        url.as_str(),
        "-A",
        "-o",
        "json",
        "--checkpoint",
        path,
        "-v",
        "2",
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };

    // First start: no file yet, a full sync; the file is written on exit.
    let first = with(&["--until-synced", "pods", "cm"]);
    let f = run(&first);
    assert_eq!(f.code, Some(0), "{f:?}");
    let at = api.current_rv();
    assert_eq!(
        sorted(f.lines.iter().map(|l| short(l)).collect()),
        [
            format!("Add a/p1 {rv_a}"),
            format!("Add a/p2 {rv_b}"),
            format!("Synced configmaps {at}"),
            format!("Synced pods {at}"),
        ]
    );
    assert!(
        f.stderr.contains("does not exist yet: a full sync"),
        "{f:?}"
    );
    let cp = kube_tattler::Checkpoint::from_bytes(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!((cp.resources(), cp.objects()), (2, 2));

    // While it is down: an update, a delete, a new pod. Streaming, then
    // SIGTERM: what changed comes first, then each resource's Synced.
    let up = pod(&api, "a", "p1");
    let del = api.delete("pods", Some("a"), "p2").unwrap();
    let add = pod(&api, "a", "p3");
    let second = with(&["pods", "cm"]);
    let (got, err) = run_until(&second, 5);
    assert!(err.contains("resuming from"), "{err}");
    assert_eq!(
        got[..3],
        [
            format!("Update a/p1 {up}"),
            format!("Delete a/p2 {del}"),
            format!("Add a/p3 {add}"),
        ],
        "{got:?}"
    );
    assert_eq!(
        sorted(got[3..].to_vec()),
        [
            format!("Synced configmaps {at}"),
            format!("Synced pods {add}")
        ],
        "{got:?}"
    );

    // Nothing changed since: the Synced entries alone.
    let f = run(&first);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        sorted(f.lines.iter().map(|l| short(l)).collect()),
        [
            format!("Synced configmaps {at}"),
            format!("Synced pods {add}")
        ]
    );

    // After a compaction: a re-sync against the restored state.
    let p4 = pod(&api, "a", "p4");
    api.delete("pods", Some("a"), "p3").unwrap();
    api.compact();
    let (got, _) = run_until(&second, 7);
    let cur = api.current_rv();
    assert_eq!(
        sorted(got),
        [
            format!("Add a/p4 {p4}"),
            format!("Delete a/p3 {add} (inferred)"),
            format!("Snapshot a/p1 {up}"),
            // Resumed from a compacted resourceVersion: each says it re-syncs.
            "Stale configmaps Resyncing".to_string(),
            "Stale pods Resyncing".to_string(),
            format!("Synced configmaps {cur}"),
            format!("Synced pods {cur}"),
        ]
    );

    // A damaged file is refused, named, and left alone.
    std::fs::write(&file, b"{\"tattler_checkpoint\":1,").unwrap();
    let f = run(&first);
    assert_eq!(f.code, Some(1));
    assert!(
        f.stderr.contains(&format!("error: {path}: "))
            && f.stderr.contains("not a tattler checkpoint")
            && f.stderr.contains("remove it"),
        "{f:?}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"{\"tattler_checkpoint\":1,");
}

#[test]
fn all_streams_every_listable_resource_and_skips_the_forbidden() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.apply("example.com/v1/widgets", FakeApi::object(Some("a"), "w1"));
    // Served but neither listable nor watchable: not streamed at all.
    api.add_resource(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        false,
    );
    api.set_verbs("authentication.k8s.io/v1/tokenreviews", &["create"]);
    api.forbid("secrets", true);
    let f = run(&[
        "-s",
        &api.url(),
        "-A",
        "--all",
        "-o",
        "json",
        "--until-synced",
    ]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(
        f.stderr
            .starts_with("warning: skipping secrets: Error from server (Forbidden): ")
            && f.stderr.lines().count() == 1,
        "{f:?}"
    );
    let lines: Vec<String> = f.lines.iter().map(|l| short(l)).collect();
    let synced = lines.iter().filter(|l| l.starts_with("Synced")).count();
    let errors: Vec<&String> = lines.iter().filter(|l| l.starts_with("Error")).collect();
    // The fake's 14 resources, the CRD, less the forbidden one.
    assert_eq!(synced, 14, "{lines:?}");
    assert_eq!(errors, ["Error secrets 403 Forbidden"], "{lines:?}");
    assert!(
        !lines.iter().any(|l| l.contains("tokenreviews")),
        "{lines:?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("Add")).count(),
        2,
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("Synced widgets")),
        "{lines:?}"
    );
}

#[test]
fn names_as_kubectl_takes_them() {
    let api = FakeApi::start();
    api.add_resource("", "v1", "podtemplates", "PodTemplate", true);
    api.apply("podtemplates", FakeApi::object(Some("a"), "t1"));
    let f = run(&[
        "-s",
        &api.url(),
        "-A",
        "-o",
        "json",
        "--until-synced",
        "po,cm",
        "deploy",
        "podtemplates",
    ]);
    assert_ok(&f);
    let cur = api.current_rv();
    assert_eq!(
        sorted(f.lines.iter().map(|l| short(l)).collect()),
        sorted(vec![
            format!("Add a/t1 {cur}"),
            format!("Synced configmaps {cur}"),
            format!("Synced deployments {cur}"),
            format!("Synced podtemplates {cur}"),
            format!("Synced pods {cur}"),
        ])
    );
}

#[test]
fn demo_needs_nothing_but_the_binary() {
    let f = run(&["--demo", "-o", "name", "--until-synced", "pods", "nodes"]);
    assert_ok(&f);
    assert!(
        f.lines
            .iter()
            .all(|l| l.starts_with("pod/") || l.starts_with("node/")),
        "{f:?}"
    );
}

/// The command line run under `script`, whose terminal becomes its stdin,
/// stdout and stderr (`redirect` may send stdout elsewhere): all that
/// terminal showed, and the exit code.
fn on_a_terminal(args: &[&str], redirect: &str) -> Option<(String, Option<i32>)> {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("no `script` (util-linux): the progress line is not tested");
        return None;
    }
    let line = format!("{} {} {redirect}", support::BIN, args.join(" "));
    let mut child = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        let _ = tx.send(s);
    });
    let Ok(text) = rx.recv_timeout(support::LIMIT) else {
        let _ = child.kill();
        panic!("script did not end within {:?}", support::LIMIT);
    };
    Some((text, child.wait().unwrap().code()))
}

#[test]
fn progress_on_a_terminal_only() {
    let api = FakeApi::start();
    pod(&api, "a", "p1");
    // A watch that never answers: a sync that does not end.
    api.push_fault("pods", tattler_fakeapi::Fault::Stall);
    let url = api.url();
    let args = ["-s", &url, "-A", "--request-timeout", "4s", "pods"];
    // Both a terminal: one line a second, between the rows.
    let Some((text, code)) = on_a_terminal(&args, "") else {
        return;
    };
    assert_eq!(code, Some(1), "{text:?}");
    assert!(
        text.ends_with(
            "syncing: 0 objects, 0/s\r\nerror: v1/pods: no answer from the server within 4s\r\n"
        ),
        "{text:?}"
    );
    // stdout elsewhere: one line rewritten in place.
    api.push_fault("pods", tattler_fakeapi::Fault::Stall);
    let (text, code) = on_a_terminal(&args, ">/dev/null").unwrap();
    assert_eq!(code, Some(1), "{text:?}");
    assert!(
        text.ends_with("\rsyncing: 0 objects, 0/s\x1b[K\r\x1b[Kerror: v1/pods: no answer from the server within 4s\r\n"),
        "{text:?}"
    );
    // Elsewhere (every other test): no progress at all.
    api.push_fault("pods", tattler_fakeapi::Fault::Stall);
    let f = run(&args);
    assert_eq!(
        (f.code, f.stderr.as_str()),
        (
            Some(1),
            "error: v1/pods: no answer from the server within 4s\n"
        )
    );
}
