//! Shared by the ffi test binaries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// target/<profile>, holding libtattler.a and .so (built here if `cargo
/// test` did not: it builds a staticlib/cdylib only when asked) and the examples.
pub fn target_dir() -> PathBuf {
    // target/<profile>/deps/<test binary>
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let profile = dir.file_name().unwrap().to_str().unwrap().to_string();
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "tattler-ffi", "--lib"]);
        if profile == "release" {
            cmd.arg("--release");
        }
        let st = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo");
        assert!(st.success(), "cargo build -p tattler-ffi --lib failed");
    });
    dir
}

/// The environment for `go` commands that link target/debug/libtattler.a.
/// Go does not notice a changed header or archive: their hash in CGO_CFLAGS
/// forces a rebuild and relink (as ffi/test.sh does).
pub fn go_env() -> Vec<(&'static str, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read(root.join("../include/tattler.h")).unwrap();
    let archive = std::fs::read(target_dir().join("libtattler.a")).unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(header, archive), &mut h);
    let inputs = std::hash::Hasher::finish(&h);
    vec![
        ("CGO_ENABLED", "1".to_string()),
        ("CGO_CFLAGS", format!("-O2 -g -DTATTLER_INPUTS={inputs:x}")),
    ]
}
