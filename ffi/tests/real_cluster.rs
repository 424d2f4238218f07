//! The C example and the Go package against a real kube-apiserver and etcd
//! (the Rust API's scenarios are in the core's tests/real/cluster.rs).

mod common;
#[path = "../../tests/k8s/fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{go_env, target_dir, GO_TAG};
use fixture::{Cluster, SERIAL};

const SEED: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: wire-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-1, namespace: wire-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-2, namespace: wire-a}
"#;

/// The lines the C and Go examples print for wire-a's configmaps, from kubectl.
fn expected(c: &Cluster) -> Vec<String> {
    let mut want: Vec<String> = c
        .state("configmaps", Some("wire-a"))
        .into_values()
        .map(|(name, rv)| format!("Add {name} {rv}"))
        .collect();
    want.sort();
    want.push("Synced v1/configmaps".into());
    want
}

/// Output lines, Adds sorted (initial events come in no particular order), the
/// Synced line without its resourceVersion.
fn normalise(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let mut adds: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("Add "))
        .map(String::from)
        .collect();
    adds.sort();
    adds.extend(
        text.lines()
            .filter(|l| l.starts_with("Synced "))
            .map(|l| l.rsplit_once(' ').unwrap().0.to_string()),
    );
    adds
}

fn args(c: &Cluster, dash: &str) -> Vec<String> {
    let e = |k: &str| c.env[k].clone();
    vec![
        format!("{dash}-until-synced"),
        format!("{dash}-ca-file"),
        e("K8S_CA"),
        format!("{dash}-token-file"),
        e("K8S_TOKEN_FILE"),
        format!("{dash}-namespace"),
        "wire-a".into(),
    ]
}

#[test]
fn the_c_example_and_the_go_package_stream_from_a_real_apiserver() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = fixture::repo();
    // Both programs are built before the cluster (and its time limit) starts:
    // on a fresh machine the Go build alone takes a while.
    let c_exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("watch-real");
    let st = Command::new("gcc")
        .args(["-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("ffi/examples/watch.c"))
        .arg(target_dir().join("libtattler.a"))
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-o"])
        .arg(&c_exe)
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let go_exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("watch-real-go");
    let out = Command::new("go")
        .args(["build", "-tags", GO_TAG, "-o"])
        .arg(&go_exe)
        .arg("./example")
        .current_dir(root.join("ffi/go"))
        .envs(go_env())
        .output()
        .unwrap_or_else(|e| panic!("cannot run go (install Go): {e}"));
    assert!(
        out.status.success(),
        "go build ./example: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let c = Cluster::up(Duration::from_secs(180), &[]);
    c.apply(SEED);
    let want = expected(&c);

    // C, statically linked, -Werror.
    let out = Command::new(&c_exe)
        .args(args(&c, "-"))
        .arg(&c.env["K8S_SERVER"])
        .arg("configmaps")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "C example: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(normalise(&out.stdout), want, "C example");

    // Go, through cgo.
    let out = Command::new(&go_exe)
        .args(args(&c, ""))
        .arg("-server")
        .arg(&c.env["K8S_SERVER"])
        .arg("configmaps")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "Go example: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(normalise(&out.stdout), want, "Go example");
}
