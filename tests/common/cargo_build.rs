//! Programs of this workspace built for a test, once per test binary and
//! before any time limit starts (a build on a loaded machine takes minutes).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// `target/<profile>/<rel>`, built by `cargo build <args>` once per test
/// binary (`cargo test` does not build examples or other packages' binaries,
/// and a stale binary would test old code).
pub fn built(args: &[&str], rel: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let key = args.join(" ");
    let mut done = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !done.contains(&key) {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.arg("build").args(args);
        // What cargo set for this test, not for a build: ring's build script
        // reads CARGO_MANIFEST_DIR, so with it the build would start from
        // ring again (and so would the next `cargo test`).
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            let set_for_tests = name.starts_with("CARGO_PKG_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                ]
                .contains(&name.as_ref());
            if set_for_tests {
                cmd.env_remove(name.as_ref());
            }
        }
        if dir.file_name().is_some_and(|p| p == "release") {
            cmd.arg("--release");
        }
        let st = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo");
        assert!(st.success(), "cargo build {key} failed");
        done.push(key);
    }
    let bin = dir.join(rel);
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}
