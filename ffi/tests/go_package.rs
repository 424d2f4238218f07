//! The Go package (ffi/go): `go vet` and `go test -race` against the fake
//! apiserver, linking the libtattler.a this `cargo test` built, wherever
//! `CARGO_TARGET_DIR` put it (build tag `tattler_static`, through a
//! pkg-config file the test writes: see `common::go_env`). Go is required:
//! a missing toolchain fails the test, it is not skipped. ffi/ci-consumers.sh builds the package copied out of the
//! repository against an installed tattler.

mod common;

use std::path::Path;
use std::process::Command;

use common::{go_env, target_dir, GO_TAG};

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
    let mut envs = go_env();
    envs.push(("TATTLER_FAKEAPI", fake.display().to_string()));
    let dir = root.join("go");
    // tattler_static with this build's pkg-config file: the archive cargo
    // built here (without a tag the package links an installed shared library).
    go(&["vet", "-tags", GO_TAG, "./..."], &dir, &envs);
    go(
        &[
            "test", "-tags", GO_TAG, "-race", "-count=1", "-timeout", "300s", "./...",
        ],
        &dir,
        &envs,
    );
}
