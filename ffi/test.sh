#!/usr/bin/env bash
# Everything the C ABI promises, for CI, in order:
#   header  include/tattler.h is what ffi/src generates (pinned cbindgen)
#   cargo   cargo test -p tattler-ffi: the misuse tests from Rust, then the C
#           and C++ programs built with -Werror, under ASan+UBSan and valgrind,
#           linked statically and dynamically (ffi/ci-consumers.sh builds them
#           against `make install`, through pkg-config and CMake)
#   go      go vet and go test -race of ffi/go against the fake apiserver
#           (build tag tattler_dev: the in-repository target/debug/libtattler.a)
# Runs all three, or the steps named: ffi/test.sh go
# Needs gcc, g++, valgrind, pkg-config and go on PATH (Debian/Ubuntu:
# apt-get install -y gcc g++ valgrind pkg-config; Go 1.23 or later).
set -euo pipefail

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
cd "$root"
steps=("$@")
((${#steps[@]})) || steps=(header cargo go)

missing=()
for tool in cargo gcc g++ valgrind pkg-config go; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "ffi/test.sh: missing tools: ${missing[*]} (apt-get install -y gcc g++ valgrind pkg-config; Go from go.dev)" >&2
    exit 1
fi

for step in "${steps[@]}"; do
    case "$step" in
    header)
        echo "== check-header"
        "$ffi_dir/check-header.sh"
        ;;
    cargo)
        echo "== cargo test -p tattler-ffi"
        TATTLER_REQUIRE_VALGRIND=1 cargo test -p tattler-ffi
        ;;
    go)
        echo "== go vet, go test -race (ffi/go)"
        # libtattler.a (which the Go package links) and the fake apiserver.
        cargo build -p tattler-ffi --lib --example fakeapi_serve
        export CGO_ENABLED=1
        export TATTLER_FAKEAPI="$root/target/debug/examples/fakeapi_serve"
        # Go does not track files outside the package (the header, the archive):
        # their hash in CGO_CFLAGS makes a change rebuild and relink.
        inputs=$(cat include/tattler.h target/debug/libtattler.a | sha256sum | cut -c1-16)
        export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DTATTLER_INPUTS=$inputs"
        (cd "$ffi_dir/go" && go vet -tags tattler_dev ./... &&
            go test -tags tattler_dev -race -count=1 -timeout 300s ./...)
        ;;
    *)
        echo "ffi/test.sh: unknown step $step (header, cargo, go)" >&2
        exit 2
        ;;
    esac
done
