//! The program a user copies first, examples/watch.rs, run as a user would:
//! against the cluster of `$KUBECONFIG`, and with none, its demo cluster.
//! (The command's flags are tested in cli/tests/.)

mod common;

use std::io::{BufRead, BufReader, Lines};
use std::path::PathBuf;
use std::process::{ChildStdout, Command, Stdio};
use std::time::Duration;

use common::Watchdog;
use tattler_fakeapi::FakeApi;

/// target/<profile>/examples/watch, built before any time limit starts.
fn watch_bin() -> PathBuf {
    common::cargo_build::built(
        &["-p", "kube-tattler", "--example", "watch"],
        "examples/watch",
    )
}

/// Runs the example with `args` and `$KUBECONFIG`, out of any pod and with
/// a `$HOME` without `~/.kube`; reads lines until each resource of `synced`
/// has its `Synced` line, then calls `then`, sends SIGTERM and expects exit
/// 0. Returns stdout's lines and stderr.
fn run(
    args: &[&str],
    kubeconfig: &str,
    synced: &[&str],
    then: impl FnOnce(&mut Lines<BufReader<ChildStdout>>) -> Vec<String>,
) -> (Vec<String>, String) {
    let bin = watch_bin();
    let _w = Watchdog::new("example", Duration::from_secs(60));
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("example-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut child = Command::new(bin)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", &home)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    let mut waiting: Vec<String> = synced.iter().map(|r| format!("Synced   {r}:")).collect();
    while !waiting.is_empty() {
        let line = lines.next().expect("a line").unwrap();
        waiting.retain(|w| !line.starts_with(w.as_str()));
        got.push(line);
    }
    got.extend(then(&mut lines));
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    got.extend(lines.map(Result::unwrap));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "exit {status:?}: {stderr}");
    (got, stderr)
}

#[test]
fn streams_the_kubeconfig_cluster_then_each_change_and_exits_0_on_sigterm() {
    let api = FakeApi::start();
    let p1 = common::pod(&api, "a", "p1");
    let n1 = api.apply("nodes", FakeApi::object(None, "n1"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("example");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: me\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: me\n\
             current-context: fake\n",
            api.url()
        ),
    )
    .unwrap();
    let mut live = 0;
    let (lines, stderr) = run(
        &["pods", "nodes"],
        kubeconfig.to_str().unwrap(),
        &["pods", "nodes"],
        |lines| {
            // A change while it runs comes as its own line.
            live = common::pod(&api, "a", "p2");
            vec![lines.next().expect("a line").unwrap()]
        },
    );
    let at = api.current_rv() - 1;
    let mut initial = lines[..4].to_vec();
    initial.sort();
    assert_eq!(
        initial,
        [
            format!("Add      nodes n1 {n1}"),
            format!("Add      pods a/p1 {p1}"),
            format!("Synced   nodes: the full state, at {at}"),
            format!("Synced   pods: the full state, at {at}"),
        ]
    );
    assert_eq!(lines[4..], [format!("Add      pods a/p2 {live}")]);
    assert_eq!(stderr, "");
}

#[test]
fn without_a_cluster_it_streams_the_demo_cluster() {
    let (lines, stderr) = run(
        &["pods", "nodes"],
        "/nonexistent/kubeconfig",
        &["pods", "nodes"],
        |_| Vec::new(),
    );
    assert!(
        stderr.starts_with("no cluster configured (") && stderr.contains("a built-in demo cluster"),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .all(|l| ["Add ", "Update ", "Delete ", "Synced "]
                .iter()
                .any(|c| l.starts_with(c))),
        "{lines:?}"
    );
}
