//! Shared by the ffi test binaries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// target/<profile>, where this `cargo test` put libtattler.a and the examples.
pub fn target_dir() -> PathBuf {
    // target/<profile>/deps/<test binary>
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
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
