//! Running the built `kubectl-tattler` as a user would, against the fake
//! apiserver. Cargo builds the binary before any test starts, so no time
//! limit here includes a build. Every wait (a line, an exit) has a hard
//! limit far above a correct run's time on a loaded 2-core machine: it
//! catches a hang, never a slow pass.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tattler_fakeapi::FakeApi;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-tattler");

/// The hard limit of one wait.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A running `kubectl-tattler`: its stdout as lines, its stderr collected.
pub struct Run {
    child: Child,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    started: Instant,
}

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    /// The exit code (None: killed by a signal).
    pub code: Option<i32>,
    /// stdout's lines not yet taken by [`Run::line`].
    pub lines: Vec<String>,
    /// All of stderr.
    pub stderr: String,
    /// From the start to the exit.
    pub took: Duration,
}

/// A directory of this test's own under cargo's target directory, made empty.
pub fn tmp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts the binary with `args`, cut off from the user's cluster: no
/// `$KUBECONFIG`, a `$HOME` without `~/.kube`, not in a pod.
pub fn start(args: &[&str]) -> Run {
    start_with(args, &[])
}

/// As [`start`], with environment variables set.
pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Run {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start kubectl-tattler");
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    Run {
        child,
        lines,
        stderr: Some(stderr),
        started,
    }
}

/// Runs the binary to its end (it must end by itself).
pub fn run(args: &[&str]) -> Finished {
    start(args).finish()
}

impl Run {
    /// The next line of stdout.
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(LIMIT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                panic!("no line within {LIMIT:?}")
            }
            Err(RecvTimeoutError::Disconnected) => {
                let end = self.wait();
                let err = self.stderr.take().unwrap().join().unwrap();
                panic!("stdout ended ({end:?}) where a line was expected; stderr: {err}")
            }
        }
    }

    /// Lines until one `stop` says is the last (included).
    pub fn lines_until(&mut self, mut stop: impl FnMut(&str) -> bool) -> Vec<String> {
        let mut got = Vec::new();
        loop {
            let line = self.line();
            let last = stop(&line);
            got.push(line);
            if last {
                return got;
            }
        }
    }

    /// Sends SIGTERM.
    pub fn term(&self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    fn wait(&mut self) -> ExitStatus {
        let until = Instant::now() + LIMIT;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("kubectl-tattler did not exit within {LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the exit; the rest of stdout and all of stderr.
    pub fn finish(mut self) -> Finished {
        let status = self.wait();
        let took = self.started.elapsed();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        // The reader thread ends at stdout's end, which the exit brings.
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(LIMIT) {
            lines.push(line);
        }
        Finished {
            code: status.code(),
            lines,
            stderr,
            took,
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A fake apiserver with a pod of `namespace/name`; its resourceVersion.
pub fn pod(api: &FakeApi, namespace: &str, name: &str) -> u64 {
    api.apply("pods", FakeApi::pod(namespace, name))
}

/// `change namespace/name resourceVersion` of one `-o json` line (`Synced
/// resource rv` for Synced, `Error resource code reason` for Error,
/// `Stale resource reason` for Stale;
/// `(inferred)` on inferred deletes).
pub fn short(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    match s("change").as_str() {
        "Synced" => format!("Synced {} {}", s("resource"), s("resourceVersion")),
        "Stale" => format!(
            "Stale {} {}",
            s("resource"),
            v["error"]["reason"].as_str().unwrap_or("")
        ),
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

/// Sorted.
pub fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// A kubeconfig for the fake apiserver: context `ctx` (namespace `b`, the
/// current one) and `bare` (no namespace).
pub fn kubeconfig(api: &FakeApi, dir: &Path) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {}
users:
- name: me
  user: {{}}
contexts:
- name: ctx
  context:
    cluster: fake
    user: me
    namespace: b
- name: bare
  context:
    cluster: fake
    user: me
current-context: ctx
",
            api.url()
        ),
    )
    .unwrap();
    path
}
