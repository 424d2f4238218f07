#!/usr/bin/env bash
# `make check-dist` (and a CI step): each release artifact installed and used
# as its user would, outside the checkout, with no network (dist/check/common.sh):
#
#   c.sh       the tarball: pkg-config and CMake, C and C++
#   go.sh      the module through a file GOPROXY: go get, go build, and the
#              message on a platform it does not ship
#   python.sh  the wheel: pip install --no-index into a fresh venv
#   rust.sh    the .crate files: a program and kubectl-tattler, cargo --offline
#
# Builds the artifacts first when TARGET/dist has none (make dist), and what
# the checks need: the fake apiserver, cmake and Debian's aarch64 cross
# compiler (apt-get, when missing). Every check runs even when one fails;
# the failures are listed at the end and the exit status is 1. The sizes of
# the artifacts and the install times measured are printed last.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
start=$(date +%s)
say() { echo "dist/check: $* ($(($(date +%s) - start)) s)"; }
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
export TATTLER_DIST=$target/dist TATTLER_FAKEAPI=$target/debug/examples/fakeapi_serve
version=$("$root/dist/project.sh" get version) || exit 1

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
if ((${#need[@]})); then
    say "installing ${need[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; } ||
        { echo "dist/check: cannot install ${need[*]}" >&2; exit 1; }
fi
if ! ls "$TATTLER_DIST"/crates/*.crate "$TATTLER_DIST"/*.whl "$TATTLER_DIST"/*.tar.gz >/dev/null 2>&1; then
    say "no artifacts in $TATTLER_DIST: make dist"
    # A check, not a release: a tree that earlier steps left dirty still packages.
    "$root/dist/all.sh" --allow-dirty || { echo "dist/check: FAILED: make dist" >&2; exit 1; }
fi
(cd "$root" && cargo build --quiet -p tattler-ffi --example fakeapi_serve) ||
    { echo "dist/check: FAILED: building the fake apiserver" >&2; exit 1; }

times=$(mktemp /tmp/tattler-dist-times.XXXXXX)
export TATTLER_TIMES=$times
failed=()
for c in c go python rust; do
    say "$c"
    "$root/dist/check/$c.sh" || { echo "dist/check: FAILED: $c" >&2; failed+=("$c"); }
done

say "sizes (bytes) and install times (seconds)"
(
    cd "$TATTLER_DIST" || exit
    for f in tattler-"$version"-linux-x86_64.tar.gz kube_tattler-"$version"-*.whl crates/*.crate go/proxy/*/*/*/*/@v/*.zip; do
        [[ -f "$f" ]] && echo "size $(stat -c %s "$f") $f"
    done
)
sed 's/^/time /' "$times"
rm -f "$times"
if ((${#failed[@]})); then
    echo "dist/check: ${#failed[@]} failed: ${failed[*]}" >&2
    exit 1
fi
say "every artifact installed and streamed as its user takes it"
