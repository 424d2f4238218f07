//! The program a user runs first: examples/watch.rs, run as a user would.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Watchdog;
use tattler_fakeapi::FakeApi;

/// target/<profile>/examples/watch, which `cargo test` builds.
fn watch_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let bin = dir.join("examples").join("watch");
    assert!(
        bin.exists(),
        "{} not built (cargo test builds examples)",
        bin.display()
    );
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
