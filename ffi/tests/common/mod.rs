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

/// The build tag the Go package is built with here: `tattler_static`, which
/// links the archive pkg-config names (see [`go_env`]). `tattler_dev` would
/// link `../../../target/debug/libtattler.a`, a path that is wrong whenever
/// `CARGO_TARGET_DIR` moves the target directory.
pub const GO_TAG: &str = "tattler_static";

/// The environment for `go` commands that link this build's libtattler.a
/// (wherever `CARGO_TARGET_DIR` put it): a pkg-config file written into the
/// target directory names the archive and the repository's header. Go does
/// not notice a changed header or archive: their hash in CGO_CFLAGS forces a
/// rebuild and relink (as ffi/test.sh does).
pub fn go_env() -> Vec<(&'static str, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = target_dir();
    let header = std::fs::read(root.join("../include/tattler.h")).unwrap();
    let archive = std::fs::read(target.join("libtattler.a")).unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(header, archive), &mut h);
    let inputs = std::hash::Hasher::finish(&h);
    let pc_dir = target.join("go-pkgconfig");
    std::fs::create_dir_all(&pc_dir).unwrap();
    let include = root.join("../include").canonicalize().unwrap();
    let pc = format!(
        "Name: tattler\nDescription: this build of tattler, for the Go tests\nVersion: 0\n\
         Cflags: -I{}\nLibs: -L{} -ltattler\nLibs.private: -lpthread -ldl -lm -lrt\n",
        include.display(),
        target.display()
    );
    std::fs::write(pc_dir.join("tattler.pc"), pc).unwrap();
    vec![
        ("CGO_ENABLED", "1".to_string()),
        ("CGO_CFLAGS", format!("-O2 -g -DTATTLER_INPUTS={inputs:x}")),
        ("PKG_CONFIG_PATH", pc_dir.display().to_string()),
    ]
}
