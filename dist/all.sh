#!/usr/bin/env bash
# `make dist`: every release artifact, built by one command into TARGET/dist/
# (TARGET is cargo's target directory; the `dist` profile's own build lives
# there too, in deps/, build/ and stage/):
#
#   tattler-VERSION-linux-x86_64.tar.gz            C and C++ (dist/c.sh)
#   go/proxy/, go/module/, go/repo/                Go, linux amd64 and arm64 (dist/go.sh)
#   kube_tattler-VERSION-py3-none-manylinux_*.whl  Python (dist/wheel.sh)
#   crates/*.crate                                 Rust (dist/crates.sh)
#
#   dist/all.sh [--allow-dirty]    (--allow-dirty: package uncommitted changes)
#
# Then dist/check/all.sh installs each as its user would (make check-dist).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
say() { echo "dist: $* ($(($(date +%s) - start)) s)"; }

"$root/dist/project.sh" check
"$root/ffi/install.sh" --build-only
say "libtattler built"
# linux/arm64 for the Go module: Rust's standard library for the target and
# Debian's cross gcc and binutils, installed when missing.
arm64=aarch64-unknown-linux-gnu
if [[ ! -d "$(rustc --print target-libdir --target "$arm64" 2>/dev/null)" ]]; then
    rustup target add "$arm64" || { echo "dist: cannot add Rust's $arm64 target (rustup)" >&2; exit 1; }
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu >/dev/null; } ||
        { echo "dist: cannot install gcc-aarch64-linux-gnu (apt-get)" >&2; exit 1; }
fi
"$root/ffi/install.sh" --build-only --target "$arm64"
say "libtattler built for $arm64"
"$root/dist/c.sh"
"$root/dist/go.sh"
"$root/dist/wheel.sh"
"$root/dist/crates.sh" "$@"
say "every artifact built"
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
cd "$target/dist"
ls -l ./*.tar.gz ./*.whl crates/*.crate go/proxy/*/*/*/*/@v/*.zip
