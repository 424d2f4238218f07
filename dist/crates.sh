#!/usr/bin/env bash
# The Rust release: the crates as crates.io would take them, in TARGET/dist/crates/.
#
#   dist/crates.sh [--allow-dirty]
#
# kube-tattler, tattler-fakeapi (the CLI's --demo cluster) and kube-tattler-cli,
# packaged together: cargo resolves each one's dependencies on the others from
# the packages just made (a local overlay of crates.io), so the CLI's
# verification build uses the packaged kube-tattler, never the checkout's.
# `cargo package` builds each from its .crate alone; `cargo publish --dry-run`
# then does everything a publication does but the upload. --allow-dirty
# packages uncommitted changes (a working tree; the CI's clone is clean).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
crates=(kube-tattler tattler-fakeapi kube-tattler-cli)
flags=()
[[ "${1:-}" == --allow-dirty ]] && flags+=(--allow-dirty)
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
version=$("$root/dist/project.sh" get version)
out=$target/dist/crates
pkgs=()
for c in "${crates[@]}"; do pkgs+=(-p "$c"); done

# cargo unpacks the overlay's packages under CARGO_HOME/registry/src/, in a
# directory named after the overlay's path, and never again once there: a
# second run at the same version would verify the CLI against the first
# run's kube-tattler (seen: a ring-era copy after the move to aws-lc-rs).
# Those copies go first; crates.io's own directory is never touched.
stale() {
    local d c
    for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
        [[ "$(basename "$d")" == index.crates.io-* ]] && continue
        for c in "${crates[@]}"; do rm -rf "$d$c-$version"; done
    done
}

cd "$root"
stale
cargo package "${pkgs[@]}" "${flags[@]}"
stale
cargo publish --dry-run "${pkgs[@]}" "${flags[@]}"
rm -rf "$out"
mkdir -p "$out"
for c in "${crates[@]}"; do
    cp "$target/package/$c-$version.crate" "$out/"
done
ls -l "$out"
