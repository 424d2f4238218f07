//! Exec credential plugins.

use super::*;

#[test]
fn exec_plugin_v1_with_args_env_interactive_never_and_cluster_info() {
    let _w = Watchdog::new("exec_v1", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-exec-v1-2c3d"));
    let dir = TempDir::new("exec-v1");
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[
            &plugin(),
            "--client-secret=sec-arg-7a7a",
            "--region",
            "eu-1",
        ],
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-exec-v1-2c3d"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_INFO", &info),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
        "interactiveMode: Never\nprovideClusterInfo: true\n",
    );
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nextensions:\n- name: other\n  extension: {{x: 1}}\n- name: client.authentication.k8s.io/exec\n  extension:\n    audience: tattler-test\n    scopes: [a, b]\n",
                q(&c.url()),
                c.ca_data()
            ),
            &user,
            Some("exec-ns"),
        ),
    );
    let config = load(&path, None);
    match &config.access.auth {
        Auth::Exec(e) => {
            assert_eq!(e.api_version, V1);
            assert_eq!(e.command, "/bin/sh");
            assert_eq!(
                e.args,
                [
                    plugin().as_str(),
                    "--client-secret=sec-arg-7a7a",
                    "--region",
                    "eu-1"
                ]
            );
            assert_eq!(e.interactive_mode, "Never");
            assert!(e.env.contains(&("PLUGIN_LOG".to_string(), runs.clone())));
        }
        other => panic!("auth {other:?}"),
    }
    let config = quick(config, &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-exec-v1-2c3d"]
    );
    // One run, with the arguments; the env entries reached it (it wrote both files).
    let lines = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    // sh runs the script; the script sees the arguments after it.
    assert!(lines.trim_end().ends_with(" --region eu-1"), "{lines}");
    let info = exec_info(&info);
    assert_eq!(info["apiVersion"], V1);
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], c.url().as_str());
    // client-go's Cluster: the CA as []byte, so base64 in JSON; empty fields left out.
    assert_eq!(
        info["spec"]["cluster"]["certificate-authority-data"],
        b64(c.pki.ca_pem.as_bytes()).as_str()
    );
    assert_eq!(
        info["spec"]["cluster"]["config"],
        serde_json::json!({"audience": "tattler-test", "scopes": ["a", "b"]})
    );
    assert!(
        info["spec"]["cluster"].get("tls-server-name").is_none(),
        "{info}"
    );
    assert!(
        info["spec"]["cluster"]
            .get("insecure-skip-tls-verify")
            .is_none(),
        "{info}"
    );
    let texts = debug_texts(&config, &r);
    // Config's Debug shows the command, never the arguments' values.
    assert!(
        texts[0].contains("/bin/sh") && texts[0].contains("[4 hidden]"),
        "{}",
        texts[0]
    );
    assert_hidden(&["tok-exec-v1-2c3d", "sec-arg-7a7a"], &strs(&texts));
}

#[test]
fn exec_plugin_v1beta1_relative_command_without_cluster_info() {
    let _w = Watchdog::new("exec_v1beta1", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-exec-beta-8e7f"));
    let dir = TempDir::new("exec-v1beta1");
    // A command with a slash is relative to the kubeconfig's folder, as in kubectl.
    let script = dir.write("kube/bin/plugin.sh", std::fs::read(plugin()).unwrap());
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let user = exec_yaml(
        V1BETA1,
        "./bin/plugin.sh",
        &[],
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-exec-beta-8e7f"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_INFO", &info),
        ],
        "interactiveMode: Never\n",
    );
    let path = dir.write(
        "kube/config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            &user,
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(plugin_runs(&runs).len(), 1);
    let info = exec_info(&info);
    assert_eq!(info["apiVersion"], V1BETA1);
    assert_eq!(info["spec"]["interactive"], false);
    assert!(info["spec"].get("cluster").is_none(), "{info}");
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-exec-beta-8e7f"], &strs(&texts));
}

#[test]
fn exec_plugin_client_certificate_is_used_for_tls() {
    let _w = Watchdog::new("exec_client_cert", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let id = c.clients.client("exec-user", KeyKind::EcPkcs8);
    let dir = TempDir::new("exec-cert");
    let (cert, key, runs) = (
        dir.write("c.crt", &id.cert_pem),
        dir.write("c.key", &id.key_pem),
        dir.file("runs"),
    );
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &[
            ("PLUGIN_CERT_FILE", &cert),
            ("PLUGIN_KEY_FILE", &key),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
        "interactiveMode: Never\n",
    );
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\n",
                q(&c.url()),
                c.ca_data()
            ),
            &user,
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(c.front.handshakes(), [Some(id.cert_der.clone())]);
    assert_eq!(plugin_runs(&runs).len(), 1);
    let texts = debug_texts(&config, &r);
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &strs(&texts));
}

/// A kubeconfig on the plain-HTTP fake whose user is the exec plugin with `env`.
fn exec_on_plain_fake(api: &FakeApi, dir: &TempDir, env: &[(&str, &str)]) -> Config {
    let user = exec_yaml(V1, "/bin/sh", &[&plugin()], env, "interactiveMode: Never\n");
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    quick(load(&path, None), &["pods"])
}

#[test]
fn exec_credential_is_cached_until_its_expiry() {
    let _w = Watchdog::new("exec_cached", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-cached-4d4d"));
    let dir = TempDir::new("exec-cached");
    let runs = dir.file("runs");
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-cached-4d4d"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "3600"),
        ],
    );
    let r = streams_one_pod(&api, config);
    for _ in 0..3 {
        reconnect(&api);
    }
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert_eq!(api.requests().len(), 4);
    assert_eq!(
        plugin_runs(&runs).len(),
        1,
        "an unexpired credential is reused"
    );
}

/// tattler refreshes an exec credential this long before its expirationTimestamp.
const EXEC_REFRESH_MARGIN_SECS: f64 = 30.0;

#[test]
fn exec_credential_is_refreshed_when_it_nears_expiry_and_not_before() {
    let _w = Watchdog::new("exec_refreshed", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-expiring-5e5e"));
    let dir = TempDir::new("exec-expiry");
    let runs = dir.file("runs");
    // Expires 32 s after the run (whole seconds): due for refresh 1..2 s after it.
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[
            (
                "PLUGIN_TOKEN_FILE",
                &dir.write("plugin-token", "tok-expiring-5e5e"),
            ),
            ("PLUGIN_LOG", &runs),
            ("PLUGIN_EXPIRES_IN", "32"),
        ],
    );
    let r = streams_one_pod(&api, config);
    assert_eq!(plugin_runs(&runs).len(), 1);
    // Reconnect over and over; each request asks for the credential.
    let deadline = Instant::now() + Duration::from_secs(10);
    while plugin_runs(&runs).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the credential was never refreshed"
        );
        reconnect(&api);
    }
    let n = api.requests().len();
    let t = plugin_runs(&runs);
    let gap = t[1] - t[0];
    assert!(
        gap > 32.0 - EXEC_REFRESH_MARGIN_SECS - 1.0 && gap < 32.0 - EXEC_REFRESH_MARGIN_SECS + 2.0,
        "second run {gap:.3} s after the first; {} requests meanwhile",
        n
    );
    assert!(
        n >= 4,
        "only {n} requests: the reuse before expiry was not exercised"
    );
    pod(&api, "a", "p2");
    // Watches ended at once, again and again, make the stream re-sync
    // (Snapshots of p1) on its way: what matters is that p2 comes.
    loop {
        match take(&r, 1)[0].as_str() {
            "Add a/p2" => break,
            "Snapshot a/p1" | "Synced pods" | "Stale pods Resyncing" => {}
            other => panic!("unexpected entry {other}"),
        }
    }
    assert_hidden(&["tok-expiring-5e5e"], &[]);
}

#[test]
fn exec_credential_is_rerun_once_after_a_401() {
    let _w = Watchdog::new("exec_401", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-exec-one-aaaa"));
    let dir = TempDir::new("exec-401");
    let (runs, src) = (dir.file("runs"), dir.write("token", "tok-exec-one-aaaa"));
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[("PLUGIN_TOKEN_FILE", &src), ("PLUGIN_LOG", &runs)],
    );
    let r = streams_one_pod(&api, config);
    // The cluster now wants another token; the plugin would hand it out.
    std::fs::write(&src, "tok-exec-two-bbbb").unwrap();
    api.require_token(Some("tok-exec-two-bbbb"));
    api.end_watches();
    pod(&api, "a", "p2");
    assert_eq!(take(&r, 1), ["Add a/p2"]);
    assert_eq!(plugin_runs(&runs).len(), 2);
    assert_quiet(&r, Duration::from_millis(300));
    assert_hidden(&["tok-exec-one-aaaa", "tok-exec-two-bbbb"], &[]);
}

/// The pids listed in a file (one a line), killed when dropped: the daemons a
/// plugin started, which left its process group and outlive it.
struct Daemons(String);

impl Daemons {
    fn pids(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Waits (10 s at most) for `n` pids.
    fn wait(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pids = self.pids();
            if pids.len() >= n {
                return pids;
            }
            assert!(Instant::now() < deadline, "{} daemons never started", n);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for pid in self.pids() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status();
        }
    }
}

/// Waits (2 s at most) until `pid` no longer runs.
fn gone(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while running(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// A plugin that answers and exits, having started a daemon (`setsid`) that
/// keeps its stdout open: the plugin's exit ends the run, not the pipe's end,
/// so the stream authenticates at once and close() is prompt; the daemon,
/// found by the pipe's write end, is killed and named.
#[cfg(target_os = "linux")]
#[test]
fn a_plugin_whose_daemon_keeps_stdout_open_answers_at_once() {
    let _w = Watchdog::new("exec_daemon_answers", LIMIT);
    capture_log();
    let api = FakeApi::start();
    api.require_token(Some("tok-daemon-2b3c"));
    let dir = TempDir::new("exec-daemon");
    let daemons = Daemons(dir.file("daemons"));
    let runs = dir.file("runs");
    let config = exec_on_plain_fake(
        &api,
        &dir,
        &[
            ("PLUGIN_TOKEN", "tok-daemon-2b3c"),
            ("PLUGIN_DAEMON", &daemons.0),
            ("PLUGIN_LOG", &runs),
        ],
    );
    let t = Instant::now();
    let r = streams_one_pod(&api, config);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let pid = daemons.wait(1).remove(0);
    let line = logged(&[
        "exec plugin answered and exited",
        &format!("(pid {pid}) left its process group"),
    ]);
    assert!(line.contains("kept its output open; killed it"), "{line}");
    assert!(gone(&pid), "the daemon {pid} was not killed");
    let t = Instant::now();
    r.close();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "close took {:?}",
        t.elapsed()
    );
    assert_eq!(plugin_runs(&runs).len(), 1);
    assert_eq!(daemons.pids().len(), 1, "one run, one daemon");
}

/// A plugin that hangs, its daemon holding stdout: killed at its deadline,
/// with an error that tells the daemon escaped (not "every process it
/// started was killed"); a failure is kept, so runs, and daemons, do not
/// pile up.
#[cfg(target_os = "linux")]
#[test]
fn a_hanging_plugin_with_a_daemon_is_killed_at_its_deadline_and_told_truly() {
    let _w = Watchdog::new("exec_daemon_hangs", LIMIT);
    capture_log();
    let api = FakeApi::start();
    let res = own_resource(&api, "daemonhangs");
    let dir = TempDir::new("exec-daemon-hang");
    let daemons = Daemons(dir.file("daemons"));
    let (runs, plugin_pids) = (dir.file("runs"), dir.file("plugin-pids"));
    let env = [
        ("PLUGIN_MODE", "hang"),
        ("PLUGIN_DAEMON", daemons.0.as_str()),
        ("PLUGIN_LOG", &runs),
        ("PLUGIN_PID_FILE", &plugin_pids),
    ];
    let user = exec_yaml(
        V1,
        "/bin/sh",
        &[&plugin()],
        &env,
        "interactiveMode: Never\n",
    );
    let path = dir.write(
        "config",
        kubeconfig(&format!("server: {}\n", q(&api.url())), &user, None),
    );
    let mut config = quick(load(&path, None), &[&res]);
    if let Auth::Exec(e) = &mut config.access.auth {
        e.timeout = Duration::from_secs(1);
    }
    let t = Instant::now();
    let r = Reader::open(config).unwrap();
    let pid = daemons.wait(1).remove(0);
    let line = logged(&[&format!("{res}: credentials"), "no answer within 1s"]);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        line.contains("(it did not finish); killed it and its process group; a process it started")
            && line.contains(&format!("(pid {pid}) left its process group"))
            && line.contains("kept its output open; killed it")
            && !line.contains("every process"),
        "{line}"
    );
    assert!(gone(&pid), "the daemon {pid} was not killed");
    let plugin = std::fs::read_to_string(&plugin_pids).unwrap();
    assert!(
        !running(plugin.trim()),
        "the plugin {plugin} was not killed"
    );
    // The failure is kept 5 s: no second run, no second daemon meanwhile.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(plugin_runs(&runs).len(), 1);
    assert_eq!(daemons.pids(), std::slice::from_ref(&pid));
    // The retry after it: one more run, one more daemon (the plugin's own
    // doing), and that run killed at its deadline as well.
    let second = daemons.wait(2);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&plugin_pids)
        .unwrap()
        .lines()
        .any(running)
    {
        assert!(Instant::now() < deadline, "the second run was not killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!((plugin_runs(&runs).len(), second.len()), (2, 2));
    let t = Instant::now();
    r.close();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "close took {:?}",
        t.elapsed()
    );
    assert_eq!(api.requests(), Vec::<String>::new());
}
