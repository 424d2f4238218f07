//! Running a kubeconfig exec credential plugin, as client-go does
//! (`plugin/pkg/client/auth/exec`), with what a library in a long-running
//! agent needs on top: a deadline that covers the whole run, grandchildren
//! included, and a stop that ends it at once.
//!
//! The plugin runs in a process group of its own; the deadline or a stop kills
//! the group. Its stdout (the credential: a secret) is read by polling, and
//! the plugin's own exit ends the run (what it wrote is read for 100 ms more),
//! so a grandchild that keeps stdout open cannot hold a run. One that stays in
//! the group is killed with it; one that left it (`setsid`) is found, on
//! Linux, by the write end of that pipe in `/proc/*/fd` (only the plugin's
//! descendants hold it) and killed by pid, and the message names it; where
//! `/proc` cannot tell, it is reported, never claimed killed (a subreaper,
//! `PR_SET_CHILD_SUBREAPER`, would change the host process). Its stderr goes to
//! this process's stderr, as kubectl passes it to the user; it is never read,
//! so it never reaches an error, a log line or the stats.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use serde::Deserialize;

use crate::access::auth::ExecConfig;
use crate::access::secret::ClientIdentity;

/// An ExecCredential larger than this is refused (one holding a certificate
/// chain is a few KiB).
const MAX_OUTPUT: usize = 1 << 20;

/// What a successful run gave.
pub(crate) struct ExecOutput {
    pub token: Option<String>,
    pub identity: Option<ClientIdentity>,
    pub expires: Option<SystemTime>,
}

/// Why a run gave nothing.
#[derive(Debug)]
pub(crate) enum RunError {
    /// Stopped by `cancel`; the plugin was killed.
    Cancelled,
    /// It failed; `permanent`: running it again the same way cannot help.
    Failed { message: String, permanent: bool },
}

fn failed(message: String, permanent: bool) -> RunError {
    RunError::Failed { message, permanent }
}

#[derive(Deserialize)]
struct ExecCredential {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
struct ExecStatus {
    #[serde(default)]
    token: String,
    #[serde(rename = "clientCertificateData", default)]
    client_certificate_data: String,
    #[serde(rename = "clientKeyData", default)]
    client_key_data: String,
    #[serde(rename = "expirationTimestamp")]
    expiration_timestamp: Option<String>,
}

/// Runs the plugin once, until it answers, fails, passes `exec.timeout` or
/// `cancel` is set (checked every 20 ms).
///
/// Errors say "exec plugin", not its command: a command line may hold a
/// secret, and a reader has one user, so it is not ambiguous.
pub(crate) fn run(exec: &ExecConfig, cancel: &AtomicBool) -> Result<ExecOutput, RunError> {
    let what = "exec plugin";
    let stdout = spawn_and_read(exec, what, cancel)?;
    parse(exec, what, &stdout)
}

fn parse(exec: &ExecConfig, what: &str, stdout: &[u8]) -> Result<ExecOutput, RunError> {
    // stdout holds the secret: errors describe it, never quote it.
    let cred: ExecCredential = serde_json::from_slice(stdout).map_err(|e| {
        failed(
            format!(
                "{what}: its output is not an ExecCredential (line {}, column {})",
                e.line(),
                e.column()
            ),
            true,
        )
    })?;
    if cred.kind != "ExecCredential" || cred.api_version != exec.api_version {
        return Err(failed(
            format!(
                "{what}: its output is not an ExecCredential of {} (the apiVersion or kind differs)",
                exec.api_version
            ),
            true,
        ));
    }
    let status = cred
        .status
        .ok_or_else(|| failed(format!("{what}: its ExecCredential has no status"), true))?;
    let (cert, key) = (status.client_certificate_data, status.client_key_data);
    if status.token.is_empty() && cert.is_empty() && key.is_empty() {
        return Err(failed(
            format!("{what} returned neither a token nor a client certificate and key"),
            true,
        ));
    }
    if cert.is_empty() != key.is_empty() {
        return Err(failed(
            format!("{what} returned only a certificate or a key, not both"),
            true,
        ));
    }
    let identity = if cert.is_empty() {
        None
    } else {
        let id = ClientIdentity {
            cert_pem: cert.into_bytes(),
            key_pem: key.into_bytes(),
        };
        crate::access::pem::check_identity(&id, &format!("the client certificate from {what}"))
            .map_err(|e| failed(e, true))?;
        Some(id)
    };
    let token = (!status.token.is_empty()).then_some(status.token);
    if token
        .as_deref()
        .is_some_and(|t| t.bytes().any(|b| b.is_ascii_control()))
    {
        return Err(failed(
            format!("{what} returned a token with control characters"),
            true,
        ));
    }
    let expires = match status.expiration_timestamp {
        Some(ts) => Some(crate::wire::dates::parse_rfc3339(&ts).ok_or_else(|| {
            failed(
                format!("{what}: its expirationTimestamp is not an RFC 3339 time"),
                true,
            )
        })?),
        None => None,
    };
    Ok(ExecOutput {
        token,
        identity,
        expires,
    })
}

#[cfg(unix)]
fn spawn_and_read(exec: &ExecConfig, what: &str, cancel: &AtomicBool) -> Result<Vec<u8>, RunError> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;

    let mut spec = serde_json::json!({ "interactive": false });
    if let Some(cluster) = &exec.cluster_info {
        spec["cluster"] = cluster.clone();
    }
    let info = serde_json::json!({ "apiVersion": exec.api_version, "kind": "ExecCredential", "spec": spec });
    let program = match &exec.base_dir {
        // kubectl: a command with a slash is relative to the kubeconfig's folder.
        Some(dir) if exec.command.contains('/') && !exec.command.starts_with('/') => {
            dir.join(&exec.command)
        }
        _ => exec.command.clone().into(),
    };
    let mut command = Command::new(&program);
    command
        .args(&exec.args)
        .envs(exec.env.iter().map(|(k, v)| (k, v)))
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            // client-go: "exec: executable %s not found", without the path.
            let mut m = format!(
                "{what}: its executable (exec.command{}) was not found\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\nTo learn more about this feature, consult the documentation available at:\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins",
                if exec.base_dir.is_some() && exec.command.contains('/') && !exec.command.starts_with('/') {
                    ", relative to the kubeconfig's folder"
                } else {
                    ""
                }
            );
            if let Some(hint) = &exec.install_hint {
                m.push_str("\n\n");
                m.push_str(&without_escapes(hint));
            }
            failed(m, true)
        }
        std::io::ErrorKind::PermissionDenied => {
            failed(format!("{what}: cannot run its executable (exec.command): permission denied"), true)
        }
        _ => failed(format!("{what}: cannot start it: {e}"), false),
    })?;
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let kill = |child: &mut std::process::Child| {
        // The whole group first (grandchildren too), then reap the child.
        let _ = killpg(group, Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
    };
    let Some(mut out) = child.stdout.take() else {
        kill(&mut child);
        return Err(failed(format!("{what}: no stdout pipe"), false));
    };
    let deadline = Instant::now() + exec.timeout;
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 16 << 10];
    let mut eof = false;
    let mut status = None;
    // The plugin's own exit ends a run, not the pipe's end: a process it
    // started may keep the pipe open for ever, and one that left the process
    // group (`setsid`) outlives any kill of the group.
    let mut exited_at: Option<Instant> = None;
    let st = loop {
        if cancel.load(Ordering::Relaxed) {
            kill(&mut child);
            if let Some(note) = still_held(&mut out, eof) {
                log::warn!("{what} stopped: {note}");
            }
            return Err(RunError::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            kill(&mut child);
            let note = still_held(&mut out, eof)
                .map(|n| format!("; {n}"))
                .unwrap_or_default();
            return Err(failed(
                format!(
                    "{what}: no answer within {:?} (it did not finish); killed it and its process group{note}",
                    exec.timeout
                ),
                false,
            ));
        }
        let grace_end = exited_at.map(|t| t + AFTER_EXIT);
        if let Some(st) = status {
            if eof || grace_end.is_some_and(|g| now >= g) {
                break st;
            }
        }
        let mut slice = (deadline - now).min(Duration::from_millis(20));
        if let Some(g) = grace_end {
            slice = slice.min(g.saturating_duration_since(now));
        }
        if eof {
            std::thread::sleep(slice.min(Duration::from_millis(5)));
        } else {
            match read_some(&mut out, &mut chunk, slice) {
                Ok(Some(0)) => eof = true,
                Ok(Some(n)) => {
                    data.extend_from_slice(&chunk[..n]);
                    if data.len() > MAX_OUTPUT {
                        kill(&mut child);
                        return Err(failed(
                            format!("{what}: its output is larger than {MAX_OUTPUT} bytes"),
                            true,
                        ));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    kill(&mut child);
                    return Err(failed(format!("{what}: reading its output: {e}"), false));
                }
            }
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    exited_at = Some(Instant::now());
                }
                Ok(None) => {}
                Err(e) => {
                    kill(&mut child);
                    return Err(failed(format!("{what}: {e}"), false));
                }
            }
        }
    };
    let mut note = None;
    if !eof {
        // It exited and a process it started holds its output: what stayed in
        // the group is killed, as the deadline would (the group id cannot have
        // been reused while that process is in it, and an empty group's id is
        // only reused after the kernel's pids wrap around).
        let _ = killpg(group, Signal::SIGKILL);
        note = still_held(&mut out, false);
    }
    if st.success() {
        if let Some(n) = &note {
            log::warn!("{what} answered and exited, but {n}");
        }
        return Ok(data);
    }
    // client-go: "exec: executable X failed with exit code N"; its
    // stderr went to ours, never into this message.
    use std::os::unix::process::ExitStatusExt;
    let how = match (st.code(), st.signal()) {
        (Some(code), _) => format!("failed with exit code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "failed".to_string(),
    };
    let note = note.map(|n| format!("; {n}")).unwrap_or_default();
    Err(failed(format!("{what} {how}{note}"), false))
}

/// How long the output is still read once the plugin has exited: what it
/// wrote is in the pipe by then, and a writer it left behind is not waited for.
#[cfg(unix)]
const AFTER_EXIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits up to `wait` for the pipe to be readable; `Some(0)` at its end,
/// `Some(n)` for `n` bytes read into `buf`, `None` for nothing yet.
#[cfg(unix)]
fn read_some(
    out: &mut std::process::ChildStdout,
    buf: &mut [u8],
    wait: std::time::Duration,
) -> std::io::Result<Option<usize>> {
    use std::io::Read;
    use std::os::fd::AsFd;

    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(out.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => Ok(None),
        Ok(_) => match out.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        },
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Once the plugin and its process group are dead: `None` if the pipe
/// reaches its end within a moment (every writer is gone); else what to
/// tell, since a process that left the group (`setsid`) still holds it:
/// each one found holding its write end is killed, and named.
#[cfg(unix)]
fn still_held(out: &mut std::process::ChildStdout, eof: bool) -> Option<String> {
    use std::time::{Duration, Instant};

    if eof {
        return None;
    }
    let until = Instant::now() + Duration::from_millis(100);
    let mut scratch = [0u8; 4096];
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        // Late output is dropped: the run has ended.
        match read_some(out, &mut scratch, until - now) {
            Ok(Some(0)) | Err(_) => return None,
            _ => {}
        }
    }
    let found = pipe_writers(out);
    let killed: Vec<String> = found
        .iter()
        .filter(|&&pid| kill_writer(out, pid))
        .map(u32::to_string)
        .collect();
    let missed = found.len() - killed.len();
    let left = "left its process group and kept its output open";
    Some(match (killed.is_empty(), missed) {
        (true, 0) => format!("a process it started {left}; tattler could not find it, it may still run"),
        (true, _) => format!("a process it started {left}; tattler could not end it, it may still run"),
        (false, 0) => format!("a process it started (pid {}) {left}; killed it", killed.join(", ")),
        (false, n) => format!(
            "a process it started (pid {}) {left}; killed it; {n} more could not be ended and may still run",
            killed.join(", ")
        ),
    })
}

/// Kills `pid` if it still holds the write end of the plugin's stdout pipe,
/// checked again just before: whether it was killed.
#[cfg(target_os = "linux")]
fn kill_writer(out: &std::process::ChildStdout, pid: u32) -> bool {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::os::fd::AsRawFd;

    let Ok(pipe) = std::fs::read_link(format!("/proc/self/fd/{}", out.as_raw_fd())) else {
        return false;
    };
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    holds_write_end(pid, &pipe) && kill(Pid::from_raw(raw), Signal::SIGKILL).is_ok()
}

#[cfg(all(unix, not(target_os = "linux")))]
fn kill_writer(_: &std::process::ChildStdout, _: u32) -> bool {
    false
}

/// Whether process `pid` has `pipe` (a `/proc/*/fd` link target) open for
/// writing.
#[cfg(target_os = "linux")]
fn holds_write_end(pid: u32, pipe: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|l| l == pipe)
            && std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ))
            .is_ok_and(|info| writable(&info))
    })
}

/// Whether an fdinfo's `flags:` (octal) open the file for writing.
#[cfg(target_os = "linux")]
fn writable(fdinfo: &str) -> bool {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|f| f & 3 != 0)
}

/// The other processes holding the write end of the plugin's stdout pipe
/// (Linux: found by the pipe's inode in `/proc/*/fd`, flags in
/// `/proc/*/fdinfo`; at most 8). Only the plugin's descendants hold it: the
/// write end went to the plugin alone, and tattler's read end (which a host
/// that forks without exec may copy) is not looked for.
#[cfg(target_os = "linux")]
fn pipe_writers(out: &std::process::ChildStdout) -> Vec<u32> {
    use std::os::fd::AsRawFd;

    let me = std::process::id();
    let Ok(pipe) = std::fs::read_link(format!("/proc/self/fd/{}", out.as_raw_fd())) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != me && holds_write_end(pid, &pipe) {
            found.push(pid);
            if found.len() == 8 {
                break;
            }
        }
    }
    found.sort_unstable();
    found
}

#[cfg(all(unix, not(target_os = "linux")))]
fn pipe_writers(_: &std::process::ChildStdout) -> Vec<u32> {
    Vec::new()
}

#[cfg(not(unix))]
fn spawn_and_read(_: &ExecConfig, what: &str, _: &AtomicBool) -> Result<Vec<u8>, RunError> {
    Err(failed(
        format!("{what}: exec plugins are supported on Unix only"),
        true,
    ))
}

/// A kubeconfig's `installHint` without terminal escape sequences, as
/// client-go cleans it.
fn without_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ … final byte (0x40..=0x7e), or ESC and one more.
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&d) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn an_fdinfo_opens_for_writing_by_its_octal_flags() {
        for (info, want) in [
            ("pos:\t0\nflags:\t01\nmnt_id:\t15\n", true),
            ("pos:\t0\nflags:\t02000001\n", true),
            ("flags:\t02\n", true),
            ("pos:\t0\nflags:\t02000000\nmnt_id:\t15\n", false),
            ("flags:\t09\n", false),
            ("pos:\t0\n", false),
        ] {
            assert_eq!(super::writable(info), want, "{info:?}");
        }
    }

    fn exec() -> ExecConfig {
        ExecConfig::new("plugin", &[])
    }

    fn err(out: &str) -> (String, bool) {
        match parse(&exec(), "exec plugin", out.as_bytes()) {
            Ok(_) => panic!("accepted {out}"),
            Err(RunError::Failed { message, permanent }) => (message, permanent),
            Err(RunError::Cancelled) => panic!("cancelled"),
        }
    }

    #[test]
    fn output_is_checked_as_client_go_does_and_never_quoted() {
        let ok = parse(
            &exec(),
            "x",
            br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t0k-abc","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#,
        )
        .unwrap();
        assert_eq!(ok.token.as_deref(), Some("t0k-abc"));
        assert!(ok.expires.is_some() && ok.identity.is_none());
        for (out, want) in [
            (
                "not json s3cr3t-out",
                "not an ExecCredential (line 1, column",
            ),
            (
                r#"{"apiVersion":"s3cr3t-v","kind":"ExecCredential","status":{"token":"s3cr3t-t"}}"#,
                "apiVersion or kind differs",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#,
                "no status",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}"#,
                "neither a token nor",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientKeyData":"s3cr3t-k"}}"#,
                "only a certificate or a key",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"s3cr3t-t","expirationTimestamp":"s3cr3t-ts"}}"#,
                "expirationTimestamp is not an RFC 3339 time",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"s3cr3t\nx"}}"#,
                "control characters",
            ),
            (
                r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":5}}"#,
                "not an ExecCredential (line 1,",
            ),
        ] {
            let (m, permanent) = err(out);
            assert!(m.contains(want), "{out}: {m}");
            assert!(permanent, "{m}");
            assert!(!m.contains("s3cr3t"), "{m}");
        }
    }

    #[test]
    fn install_hints_lose_terminal_escapes() {
        assert_eq!(
            without_escapes("\u{1b}[31mbrew install\u{1b}[0m foo\u{7}\nnext"),
            "brew install foo\nnext"
        );
    }
}
