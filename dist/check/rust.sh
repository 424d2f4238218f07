#!/usr/bin/env bash
# A Rust user: the crates as `cargo package` made them (TARGET/dist/crates),
# unpacked, in place of crates.io ([patch.crates-io]), with nothing from the
# checkout: a program that depends on kube-tattler = "VERSION" streams from
# the fake apiserver, and kube-tattler-cli builds from its package and the
# other two, then streams and runs its --demo. Offline (cargo --offline, no
# network): the other dependencies come from the warm ~/.cargo registry
# ($CARGO_HOME), the only thing taken from the caller's home.
#
#   dist/check/rust.sh     (dist/check/all.sh runs it after make dist)
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cargo_home=${CARGO_HOME:-$(dirname "$(dirname "$(command -v cargo)")")}
rustup_home=${RUSTUP_HOME:-$(dirname "$cargo_home")/.rustup}
path=$cargo_home/bin:/usr/bin:/bin
ws=$work/rust
mkdir -p "$ws/app/src"
for c in kube-tattler tattler-fakeapi kube-tattler-cli; do
    [[ -f "$dist/crates/$c-$version.crate" ]] || fail "no $dist/crates/$c-$version.crate: make dist"
    tar -xzf "$dist/crates/$c-$version.crate" -C "$ws"
done
cat >"$ws/Cargo.toml" <<END
[workspace]
members = ["app", "kube-tattler-cli-$version"]
resolver = "2"

[patch.crates-io]
kube-tattler = { path = "kube-tattler-$version" }
tattler-fakeapi = { path = "tattler-fakeapi-$version" }
END
cat >"$ws/app/Cargo.toml" <<END
[package]
name = "app"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
kube-tattler = "$version"
END
cat >"$ws/app/src/main.rs" <<'END'
//! Streams pods from the server in argv[1] until they are synced.
use kube_tattler::{Access, Change, Config, Reader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: app URL")?;
    let reader = Reader::open(Config::new(Access::new(url)).watch(["pods"])?)?;
    for entry in &reader {
        match entry.change() {
            Change::Synced => {
                println!("Synced {} {}", entry.resource(), entry.resource_version_str());
                break;
            }
            Change::Error | Change::Stale => return Err(format!("{entry}").into()),
            change => println!(
                "{change:?} {}/{} {}",
                entry.namespace().unwrap_or_default(),
                entry.name(),
                entry.resource_version_str()
            ),
        }
    }
    reader.close();
    Ok(())
}
END
rcargo() {
    (cd "$ws" && user "$path" CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" CARGO_TARGET_DIR="$ws/target" \
        CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}" CARGO_TERM_COLOR=never cargo "$@")
}
seconds rcargo build --offline --quiet -p app -p kube-tattler-cli >"$work/build.log" 2>&1 ||
    fail "cargo build --offline of the packaged crates: $(tail -20 "$work/build.log")"
[[ -z "$(grep -rl "$root" "$ws/Cargo.lock" "$ws"/*/Cargo.toml 2>/dev/null)" ]] || fail "a manifest names the checkout"
say "built the program and kubectl-tattler from the packages alone: $took s"

start_fake
user /nonexistent "$ws/target/debug/app" "$url" >"$work/out" 2>"$work/err" || fail "the program: $(tail -5 "$work/err")"
streamed "the Rust program" "$work/out"
user /nonexistent "$ws/target/debug/kubectl-tattler" --until-synced -s "$url" -o name pods >"$work/out" 2>"$work/err" ||
    fail "kubectl-tattler: $(tail -5 "$work/err")"
[[ $(grep -c 'pod-[123]' "$work/out") == 3 ]] || fail "kubectl-tattler -o name printed: $(cat "$work/out")"
user /nonexistent "$ws/target/debug/kubectl-tattler" --until-synced --demo pods >"$work/out" 2>"$work/err" ||
    fail "kubectl-tattler --demo: $(tail -5 "$work/err")"
grep -q 'demo-' "$work/out" || fail "kubectl-tattler --demo printed: $(cat "$work/out")"
say "the program and kubectl-tattler (a server, --demo) streamed"
say ok
