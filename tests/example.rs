//! The program a user runs first: examples/watch.rs, run as a user would.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Watchdog;
use tattler_fakeapi::FakeApi;

/// target/<profile>/examples/watch, built (once per test binary) by
/// `cargo build --example watch`: `cargo test --test example` alone does not
/// build examples, and a stale binary would test old code.
fn watch_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "kube-tattler", "--example", "watch"]);
        if dir.file_name().is_some_and(|p| p == "release") {
            cmd.arg("--release");
        }
        let st = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo");
        assert!(st.success(), "cargo build --example watch failed");
    });
    let bin = dir.join("examples").join("watch");
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}

#[test]
fn prints_one_flushed_json_line_per_entry_and_exits_0_on_sigterm() {
    let _w = Watchdog::new("example_sigterm", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
    api.apply("nodes", FakeApi::object(None, "n1"));
    let mut child = Command::new(watch_bin())
        .args(["--server", &api.url(), "--objects", "pods", "nodes"])
        .env("TATTLER_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    // Lines arrive while the program runs: each one is flushed as written.
    while got
        .iter()
        .filter(|l: &&serde_json::Value| l["change"] == "Synced")
        .count()
        < 2
    {
        let line = lines.next().expect("a line").unwrap();
        got.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
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
    assert_eq!(pod["object"]["metadata"]["name"], "p1");
    let env = &pod["object"]["spec"]["containers"][0]["env"];
    assert_eq!(
        (env[0]["name"].as_str(), env[0]["value"].as_str()),
        (Some("LOG_LEVEL"), Some("REDACTED"))
    );
    assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["key"], "password");

    let t = Instant::now();
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?} to exit",
        t.elapsed()
    );
}

#[test]
fn until_synced_exits_0_and_a_forbidden_resource_exits_1() {
    let _w = Watchdog::new("example_until_synced", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
    let out = Command::new(watch_bin())
        .args(["--server", &api.url(), "--until-synced", "pods", "nodes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let changes: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["change"].as_str().unwrap(),
                v["resource"].as_str().unwrap()
            )
        })
        .collect();
    let mut sorted = changes.clone();
    sorted.sort();
    assert_eq!(sorted, ["Add pods", "Synced nodes", "Synced pods"]);

    api.forbid("nodes", true);
    let out = Command::new(watch_bin())
        .args(["--server", &api.url(), "--until-synced", "pods", "nodes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let err = text
        .lines()
        .find(|l| l.contains("\"Error\""))
        .expect("an Error line");
    let v: serde_json::Value = serde_json::from_str(err).unwrap();
    assert_eq!(
        (v["error"]["code"].as_u64(), v["error"]["reason"].as_str()),
        (Some(403), Some("Forbidden"))
    );

    let out = Command::new(watch_bin())
        .args(["--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown flag --bogus"));
}

/// `change namespace/name resourceVersion` of one output line (`change
/// resource rv` for Synced, `Error resource code reason` for Error;
/// `(inferred)` on inferred deletes).
fn short(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    match s("change").as_str() {
        "Synced" => format!("Synced {} {}", s("resource"), s("resourceVersion")),
        "Error" => format!(
            "Error {} {} {}",
            s("resource"),
            v["error"]["code"],
            v["error"]["reason"].as_str().unwrap_or("")
        ),
        c => format!(
            "{c} {}/{} {}{}",
            s("namespace"),
            s("name"),
            s("resourceVersion"),
            if v["inferred"] == true {
                " (inferred)"
            } else {
                ""
            }
        ),
    }
}

/// Runs the example to its end (it must end by itself: --until-synced, or a
/// failure).
fn run(args: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let out = Command::new(watch_bin())
        .args(args)
        .env("TATTLER_LOG", "info")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (
        out.status.code(),
        text.lines().map(short).collect(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("example");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn pod_on(api: &FakeApi, ns: &str, name: &str, node: &str) -> u64 {
    let mut p = FakeApi::pod(ns, name);
    p["spec"]["nodeName"] = serde_json::json!(node);
    api.apply("pods", p)
}

#[test]
fn config_file_with_per_resource_scope_a_node_agent() {
    let _w = Watchdog::new("example_config", Duration::from_secs(60));
    let api = FakeApi::start();
    let a = pod_on(&api, "shop", "a", "n1");
    pod_on(&api, "shop", "b", "n2");
    let n1 = api.apply("nodes", FakeApi::object(None, "n1"));
    api.apply("nodes", FakeApi::object(None, "n2"));
    let cm = api.apply("configmaps", FakeApi::object(Some("kube-system"), "cm"));
    let file = tmp("agent.json");
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
    let (code, lines, err) = run(&["--config", file.to_str().unwrap(), "--until-synced"]);
    assert_eq!(code, Some(0), "{err}");
    let cur = api.current_rv();
    assert_eq!(
        sorted(lines),
        [
            format!("Add /n1 {n1}"),
            format!("Add kube-system/cm {cm}"),
            format!("Add shop/a {a}"),
            format!("Synced configmaps {cur}"),
            format!("Synced nodes {cur}"),
            format!("Synced pods {cur}"),
        ]
    );
    // RESOURCEs on the command line join the file's.
    let (code, lines, err) = run(&[
        "--config",
        file.to_str().unwrap(),
        "--until-synced",
        "services",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        lines.contains(&format!("Synced services {cur}")),
        "{lines:?}"
    );

    // The file names the cluster: cluster flags are refused; a bad key is named.
    let (code, _, err) = run(&["--config", file.to_str().unwrap(), "--server", &api.url()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--config names the cluster"), "{err}");
    std::fs::write(
        &file,
        format!(
            r#"{{"server":"{}","resources":[{{"resource":"pods","nmespace":"x"}}]}}"#,
            api.url()
        ),
    )
    .unwrap();
    let (code, _, err) = run(&["--config", file.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("`resources[0].nmespace`"), "{err}");
    let (code, _, err) = run(&["--config", "/no/such/file.json"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("/no/such/file.json"), "{err}");
}

#[test]
fn metadata_only_prints_partial_object_metadata() {
    let _w = Watchdog::new("example_metadata_only", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
    let out = Command::new(watch_bin())
        .args([
            "--server",
            &api.url(),
            "--metadata-only",
            "--objects",
            "--until-synced",
            "pods",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
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

/// Starts the example and reads `n` lines, then SIGTERM; returns its lines
/// (those after the n too) and stderr once it exited 0.
fn run_until(args: &[&str], n: usize) -> Vec<String> {
    let mut child = Command::new(watch_bin())
        .args(args)
        .env("TATTLER_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    while got.len() < n {
        let line = out.next().expect("a line").unwrap();
        got.push(short(&line));
    }
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    got.extend(out.map(|l| short(&l.unwrap())));
    let status = child.wait().unwrap();
    assert!(status.success(), "exit {status:?} after {got:?}");
    got
}

#[test]
fn checkpoint_resumes_with_only_what_changed_meanwhile() {
    let _w = Watchdog::new("example_checkpoint", Duration::from_secs(90));
    let api = FakeApi::start();
    let rv_a = common::pod(&api, "a", "p1");
    let rv_b = common::pod(&api, "a", "p2");
    let file = tmp("state.ckpt");
    let path = file.to_str().unwrap();
    let base = ["--server", &api.url(), "--checkpoint", path];
    let with = |extra: &[&'static str]| -> Vec<String> {
        base.iter()
            .copied()
            .chain(extra.iter().copied())
            .map(String::from)
            .collect()
    };

    // First start: no file yet, a full sync; the file is written on exit.
    let first = with(&["--until-synced", "pods", "cm"]);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let (code, lines, err) = run(&first);
    assert_eq!(code, Some(0), "{err}");
    let at = api.current_rv();
    assert_eq!(
        sorted(lines),
        [
            format!("Add a/p1 {rv_a}"),
            format!("Add a/p2 {rv_b}"),
            format!("Synced configmaps {at}"),
            format!("Synced pods {at}"),
        ]
    );
    assert!(err.contains("does not exist yet: a full sync"), "{err}");
    let cp = kube_tattler::Checkpoint::from_bytes(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!((cp.resources(), cp.objects()), (2, 2));

    // While it is down: an update, a delete, a new pod.
    let up = common::pod(&api, "a", "p1");
    let del = api.delete("pods", Some("a"), "p2").unwrap();
    let add = common::pod(&api, "a", "p3");
    let second = with(&["pods", "cm"]);
    let second: Vec<&str> = second.iter().map(String::as_str).collect();
    let got = run_until(&second, 5);
    // What changed while it was down first, then each resource's Synced:
    // a sync-and-exit agent sees every change.
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
    let (code, lines, err) = run(&first);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        sorted(lines),
        [
            format!("Synced configmaps {at}"),
            format!("Synced pods {add}")
        ]
    );

    // After a compaction: a re-sync against the restored state.
    let p4 = common::pod(&api, "a", "p4");
    api.delete("pods", Some("a"), "p3").unwrap();
    api.compact();
    // configmaps' resourceVersion is compacted away too: both re-sync.
    let got = run_until(&second, 5);
    let cur = api.current_rv();
    assert_eq!(
        sorted(got),
        [
            format!("Add a/p4 {p4}"),
            format!("Delete a/p3 {add} (inferred)"),
            format!("Snapshot a/p1 {up}"),
            format!("Synced configmaps {cur}"),
            format!("Synced pods {cur}"),
        ]
    );

    // A damaged file is refused, named, and left alone.
    std::fs::write(&file, b"{\"tattler_checkpoint\":1,").unwrap();
    let (code, _, err) = run(&first);
    assert_eq!(code, Some(1));
    assert!(
        err.contains(path) && err.contains("not a tattler checkpoint") && err.contains("remove it"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"{\"tattler_checkpoint\":1,");
}

#[test]
fn all_streams_every_listable_resource_and_skips_the_forbidden() {
    let _w = Watchdog::new("example_all", Duration::from_secs(60));
    let api = FakeApi::start();
    common::pod(&api, "a", "p1");
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
    let (code, lines, err) = run(&["--server", &api.url(), "--all", "--until-synced"]);
    assert_eq!(code, Some(0), "{err}");
    let synced: Vec<&String> = lines.iter().filter(|l| l.starts_with("Synced")).collect();
    let errors: Vec<&String> = lines.iter().filter(|l| l.starts_with("Error")).collect();
    // The fake's 14 resources, the CRD, less the forbidden one.
    assert_eq!(synced.len(), 14, "{lines:?}");
    assert_eq!(errors, ["Error secrets 403 Forbidden"], "{lines:?}");
    assert!(
        !lines.iter().any(|l| l.contains("tokenreviews")),
        "{lines:?}"
    );
    let adds: Vec<&String> = lines.iter().filter(|l| l.starts_with("Add")).collect();
    assert_eq!(adds.len(), 2, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("Synced widgets")),
        "{lines:?}"
    );
}

#[test]
fn names_as_kubectl_takes_them() {
    let _w = Watchdog::new("example_names", Duration::from_secs(60));
    let api = FakeApi::start();
    api.add_resource("", "v1", "podtemplates", "PodTemplate", true);
    api.apply("podtemplates", FakeApi::object(Some("a"), "t1"));
    let (code, lines, err) = run(&[
        "--server",
        &api.url(),
        "--until-synced",
        "po",
        "cm",
        "deploy",
        "podtemplates",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let cur = api.current_rv();
    let mut want = vec![
        format!("Add a/t1 {cur}"),
        format!("Synced configmaps {cur}"),
        format!("Synced deployments {cur}"),
        format!("Synced podtemplates {cur}"),
        format!("Synced pods {cur}"),
    ];
    want.sort();
    assert_eq!(sorted(lines), want);
    // A name the server does not serve: an Error entry, and exit 1.
    let (code, lines, _) = run(&["--server", &api.url(), "--until-synced", "pods", "gizmos"]);
    assert_eq!(code, Some(1));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("Error") && l.ends_with("NotFound")),
        "{lines:?}"
    );
}
