//! The Go package (ffi/go): `go vet` and `go test -race` against the fake
//! apiserver, linking the libtattler.a this `cargo test` built. Go is
//! required: a missing toolchain fails the test, it is not skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    // target/<profile>/deps/go_package-… → target/<profile>
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn go(args: &[&str], dir: &Path, envs: &[(&str, String)]) {
    let out = Command::new("go")
        .args(args)
        .current_dir(dir)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("cannot run go (install Go): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("go {}:\n{text}", args.join(" "));
    assert!(
        out.status.success(),
        "go {} failed:\n{text}",
        args.join(" ")
    );
}

#[test]
fn go_vet_and_go_test_race() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = target_dir();
    let lib = target.join("libtattler.a");
    let fake = target.join("examples").join("fakeapi_serve");
    assert!(
        lib.exists() && fake.exists(),
        "cargo test builds {} and {}",
        lib.display(),
        fake.display()
    );
    // Go does not notice a changed header or archive: their hash in CGO_CFLAGS
    // forces a rebuild and relink (as ffi/test.sh does).
    let header = std::fs::read(root.join("../include/tattler.h")).unwrap();
    let archive = std::fs::read(&lib).unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(header, archive), &mut h);
    let inputs = std::hash::Hasher::finish(&h);
    let envs = [
        ("CGO_ENABLED", "1".to_string()),
        ("CGO_CFLAGS", format!("-O2 -g -DTATTLER_INPUTS={inputs:x}")),
        ("TATTLER_FAKEAPI", fake.display().to_string()),
    ];
    let dir = root.join("go");
    go(&["vet", "./..."], &dir, &envs);
    go(
        &["test", "-race", "-count=1", "-timeout", "300s", "./..."],
        &dir,
        &envs,
    );
}
