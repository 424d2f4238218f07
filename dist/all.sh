#!/usr/bin/env bash
# `make dist`: every release artifact, built by one command into TARGET/dist/
# (TARGET is cargo's target directory; the `dist` profile's own build lives
# there too, in deps/, build/ and stage/):
#
#   tattler-VERSION-linux-x86_64.tar.gz            C and C++ (dist/c.sh)
#   go/proxy/, go/module/, go/repo/                Go (dist/go.sh)
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
"$root/dist/c.sh"
"$root/dist/go.sh"
"$root/dist/wheel.sh"
"$root/dist/crates.sh" "$@"
say "every artifact built"
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
cd "$target/dist"
ls -l ./*.tar.gz ./*.whl crates/*.crate go/proxy/*/*/*/*/@v/*.zip
