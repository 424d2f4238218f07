//! A real kube-apiserver + etcd for tests (tests/k8s/cluster.sh), shared by
//! the core's tests/real/ and ffi/tests/real_cluster.rs through
//! `#[path]`. Needs Go to build the binaries the first time.
//!
//! A test's time limit is the cluster's: [`Cluster::up`] takes it and starts
//! it once the cluster is up, so no limit ever includes the one-time build of
//! kube-apiserver, kubectl and etcd (minutes on a fresh machine) or the wait
//! for another test's cluster. Nothing else in these tests starts a timer
//! (`.ci/run` checks).
#![allow(dead_code)]

// Also loaded by tests/common/mod.rs where both are included: one small file, no state.
#[allow(clippy::duplicate_mod)]
#[path = "../common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Tests that bring up clusters run one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The repository's root.
pub fn repo() -> PathBuf {
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    start
        .ancestors()
        .find(|d| d.join("tests/k8s/cluster.sh").exists())
        .expect("tests/k8s/cluster.sh above the crate")
        .to_path_buf()
}

/// Runs `tests/k8s/build.sh [minor]` and returns the bin dir it printed
/// (its last line). Without `minor`, build.sh reads TATTLER_K8S_VERSION.
fn build(minor: Option<&str>) -> PathBuf {
    let out = Command::new(repo().join("tests/k8s/build.sh"))
        .args(minor)
        .stderr(Stdio::inherit())
        .output()
        .expect("run tests/k8s/build.sh (needs Go)");
    assert!(
        out.status.success(),
        "tests/k8s/build.sh {minor:?} failed: the real-cluster tests need Go and the module proxy"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    PathBuf::from(
        text.lines()
            .last()
            .expect("build.sh prints the bin dir")
            .trim(),
    )
}

/// kube-apiserver, kubectl and etcd of the Kubernetes the suite runs on:
/// TATTLER_K8S_BIN if set (no build), else build.sh's choice, 1.37 unless
/// TATTLER_K8S_VERSION says 1.36. Built or found cached once per run.
pub fn bin_dir() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("TATTLER_K8S_BIN") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => build(None),
    })
}

/// The binaries of one Kubernetes minor ("1.36", "1.37"), whichever the
/// suite runs on: for the tests that are about a version.
pub fn bin_dir_of(minor: &str) -> PathBuf {
    static BINS: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut bins = BINS.lock().unwrap_or_else(|e| e.into_inner());
    bins.entry(minor.to_string())
        .or_insert_with(|| build(Some(minor)))
        .clone()
}

/// One apiserver + etcd, stopped on drop (its logs are kept if a test failed).
pub struct Cluster {
    pub dir: PathBuf,
    pub env: HashMap<String, String>,
    /// Where its kube-apiserver, kubectl and etcd are.
    pub bin: PathBuf,
    /// The test's time limit, armed once the cluster was up.
    _limit: watchdog::Watchdog,
}

impl Cluster {
    /// Brings a cluster up (`extra` goes to kube-apiserver), then starts the
    /// calling test's time limit: past `limit`, the cluster is stopped and
    /// the test binary exits with a line naming the test and the limit.
    pub fn up(limit: std::time::Duration, extra: &[&str]) -> Cluster {
        // The one-time build (or the cache's answer) comes first, untimed.
        let bin = bin_dir();
        Cluster::start(bin.to_path_buf(), limit, extra)
    }

    /// [`Cluster::up`] on Kubernetes `minor` ("1.36", "1.37") whatever the
    /// suite runs on.
    pub fn up_k8s(minor: &str, limit: std::time::Duration, extra: &[&str]) -> Cluster {
        let bin = bin_dir_of(minor);
        Cluster::start(bin, limit, extra)
    }

    fn start(bin: PathBuf, limit: std::time::Duration, extra: &[&str]) -> Cluster {
        let dir = std::env::temp_dir().join(format!(
            "tattler-real-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let st = Command::new(repo().join("tests/k8s/cluster.sh"))
            .arg("up")
            .arg(&dir)
            .args(extra)
            .env("TATTLER_K8S_BIN", &bin)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "cluster.sh up failed");
        let env = std::fs::read_to_string(dir.join("env"))
            .unwrap()
            .lines()
            .filter_map(|l| {
                let l = l.trim().trim_start_matches("export ");
                let (k, v) = l.split_once('=')?;
                Some((
                    k.to_string(),
                    v.trim_matches(|c| c == '"' || c == '\'').to_string(),
                ))
            })
            .collect();
        let stop_dir = dir.clone();
        // The test harness names each test's thread after the test.
        let test = std::thread::current()
            .name()
            .unwrap_or("a real-cluster test")
            .to_string();
        let _limit = watchdog::Watchdog::with_cleanup(&test, limit, move || down(&stop_dir));
        Cluster {
            dir,
            env,
            bin,
            _limit,
        }
    }

    /// `cluster.sh CMD DIR`: restart-apiserver, stop-apiserver, start-apiserver, compact.
    pub fn script(&self, cmd: &str) {
        let st = Command::new(repo().join("tests/k8s/cluster.sh"))
            .arg(cmd)
            .arg(&self.dir)
            .env("TATTLER_K8S_BIN", &self.bin)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "cluster.sh {cmd} failed");
    }

    pub fn kubeconfig(&self) -> String {
        self.dir.join("kubeconfig").display().to_string()
    }

    pub fn kubectl_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut child = Command::new(self.bin.join("kubectl"))
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut input = child.stdin.take().unwrap();
            if let Some(s) = stdin {
                input.write_all(s.as_bytes()).unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn kubectl(&self, args: &[&str]) -> String {
        self.kubectl_in(args, None)
    }

    pub fn apply(&self, yaml: &str) {
        self.kubectl_in(&["apply", "-f", "-"], Some(yaml));
    }

    /// What `kubectl get` says: uid -> (namespace/name, resourceVersion).
    pub fn state(
        &self,
        resource: &str,
        namespace: Option<&str>,
    ) -> BTreeMap<String, (String, u64)> {
        let mut args = vec!["get", resource, "-o", "json"];
        match namespace {
            Some(ns) => args.extend(["-n", ns]),
            None => args.push("-A"),
        }
        let list: serde_json::Value = serde_json::from_str(&self.kubectl(&args)).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let m = &o["metadata"];
                (
                    m["uid"].as_str().unwrap().to_string(),
                    (
                        format!(
                            "{}/{}",
                            m["namespace"].as_str().unwrap_or(""),
                            m["name"].as_str().unwrap()
                        ),
                        m["resourceVersion"].as_str().unwrap().parse().unwrap(),
                    ),
                )
            })
            .collect()
    }
}

/// Stops the cluster in `dir` (its processes run in sessions of their own).
fn down(dir: &Path) {
    let _ = Command::new(repo().join("tests/k8s/cluster.sh"))
        .arg("down")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

impl Drop for Cluster {
    fn drop(&mut self) {
        down(&self.dir);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("cluster logs kept in {}", self.dir.display());
        }
    }
}
