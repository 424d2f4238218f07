#!/usr/bin/env bash
# CI: tattler used as a C, C++ and Go user outside this repository uses it.
#
#   ffi/ci-consumers.sh
#
# 1. `make install` into two temporary prefixes (both libraries; the static
#    one alone), and checks what was installed: the files and links, the
#    SONAME, an archive with only tattler_* global and no debug info, the
#    header's version macros against Cargo.toml.
# 2. Copies the consumers into a temporary directory outside the checkout
#    and builds them there against the installed files only:
#      C through pkg-config: shared; static (the static-only prefix); fully
#        static (-static)
#      C and C++ (tattler.hpp) through CMake find_package(tattler): shared and
#        -DTATTLER_STATIC=ON; and through CMake's pkg_check_modules
#      the header as C99, C11, C++11, C++17 at -Wall -Wextra -Wpedantic -Werror
#      the Go package, copied out as a module download would be, and a module
#        that requires it with a replace line (`#cgo pkg-config`): go vet, go
#        build, shared and -tags tattler_static (the static-only prefix)
#      libtattler.a next to another Rust static library (built with nightly
#        when there is one: another standard library), both link orders; and
#        cargo's own archive failing the same link
# 3. Runs every program against the fake apiserver, then against the real
#    kube-apiserver + etcd of tests/k8s, and checks each prints the objects
#    and resourceVersions the server has.
# Needs cargo, gcc, g++, cmake (installed here with apt-get when missing),
# pkg-config, go and binutils.
set -euo pipefail

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
# cargo's target directory (CARGO_TARGET_DIR honoured), as install.sh finds it.
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if ! command -v cmake >/dev/null && command -v apt-get >/dev/null; then
    echo "ci-consumers: installing cmake"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
fi
for tool in cargo gcc g++ cmake pkg-config go ld objcopy nm readelf ldd realpath; do
    command -v "$tool" >/dev/null || { echo "ci-consumers: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d /tmp/tattler-consumers.XXXXXX)
fake_pid=""
cleanup() {
    [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null || true
    [[ -f "$work/k8s/env" ]] && "$root/tests/k8s/cluster.sh" down "$work/k8s" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "ci-consumers: FAILED: $*" >&2; exit 1; }
# What ldd says about a program (ldd fails for a static one: that is an answer too).
libs() { ldd "$1" 2>&1 || true; }
say() { echo "ci-consumers: $*"; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
IFS=. read -r major minor patch <<<"$version"
[[ "$(sed -n 's/^version = "\(.*\)"/\1/p' "$ffi_dir/Cargo.toml" | head -1)" == "$version" ]] ||
    fail "ffi/Cargo.toml's version is not Cargo.toml's $version"

# --- 1. install -----------------------------------------------------------
P=$work/prefix S=$work/prefix-static
start=$(date +%s)
make -C "$root" --no-print-directory install PREFIX="$P"
say "make install: $(($(date +%s) - start)) s"
"$ffi_dir/install.sh" --no-build --prefix "$S" --library static >/dev/null

for f in include/tattler.h include/tattler.hpp lib/libtattler.a "lib/libtattler.so.$version" \
    lib/pkgconfig/tattler.pc lib/cmake/tattler/tattlerConfig.cmake lib/cmake/tattler/tattlerConfigVersion.cmake \
    share/tattler/valgrind.supp share/tattler/tsan.supp; do
    [[ -f "$P/$f" ]] || fail "$f not installed"
done
abi=$major
((major > 0)) || abi=0.$minor
[[ "$(readlink "$P/lib/libtattler.so.$abi")" == "libtattler.so.$version" &&
    "$(readlink "$P/lib/libtattler.so")" == "libtattler.so.$abi" ]] || fail "the libtattler.so links"
[[ $(readelf -d "$P/lib/libtattler.so.$version") == *"Library soname: [libtattler.so.$abi]"* ]] ||
    fail "SONAME is not libtattler.so.$abi"
[[ ! -e "$S/lib/libtattler.so" && -f "$S/lib/libtattler.a" ]] || fail "LIBRARY=static installed a shared library"
globals=$(nm -g --defined-only "$P/lib/libtattler.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
[[ -z "$(grep -v '^tattler_' <<<"$globals")" ]] || fail "non-tattler globals in libtattler.a: $(grep -v '^tattler_' <<<"$globals" | head -3)"
dynamic=$(nm -D --defined-only "$P/lib/libtattler.so.$version" | awk '{print $3}' | sort -u)
[[ "$dynamic" == "$globals" ]] || fail "the shared library exports other symbols than the archive"
for lib in "$P/lib/libtattler.a" "$P/lib/libtattler.so.$version"; do
    n=$(readelf -S -W "$lib" | grep -cE '\.(debug_|llvmbc)' || true)
    ((n == 0)) || fail "$n debug or bitcode sections in $lib"
done
for m in "MAJOR $major" "MINOR $minor" "PATCH $patch"; do
    grep -q "^#define TATTLER_VERSION_$m\$" "$P/include/tattler.h" ||
        fail "tattler.h has no '#define TATTLER_VERSION_$m' (Cargo.toml says $version)"
done
export PKG_CONFIG_PATH=$P/lib/pkgconfig
[[ "$(pkg-config --modversion tattler)" == "$version" ]] || fail "tattler.pc's version"
say "installed $version: libtattler.a $(stat -c %s "$P/lib/libtattler.a") bytes," \
    "$(wc -l <<<"$globals") global symbols; SONAME libtattler.so.$abi"

# --- 2. build outside the repository --------------------------------------
src=$work/src
mkdir -p "$src" "$work/bin"
cp "$ffi_dir/examples/watch.c" "$ffi_dir/examples/watch.cpp" "$ffi_dir/tests/programs/header_check.c" \
    "$ffi_dir/tests/consumers/CMakeLists.txt" "$src/"
# The version a user of this release would ask for.
sed -i "s/find_package(tattler [0-9.]* REQUIRED)/find_package(tattler $major.$minor REQUIRED)/" "$src/CMakeLists.txt"
cd "$work"
cflags=(-Wall -Wextra -Wpedantic -Werror)
c11=(-std=c11 -D_POSIX_C_SOURCE=200809L)
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
gcc "${cflags[@]}" "${c11[@]}" src/watch.c $(pkg-config --cflags --libs tattler) -o bin/c-pc-shared
[[ $(libs bin/c-pc-shared) == *"libtattler.so.$abi => not found"* ]] || fail "c-pc-shared does not need libtattler.so.$abi"
# shellcheck disable=SC2046
PKG_CONFIG_PATH=$S/lib/pkgconfig gcc "${cflags[@]}" "${c11[@]}" src/watch.c \
    $(PKG_CONFIG_PATH=$S/lib/pkgconfig pkg-config --cflags --libs --static tattler) -o bin/c-pc-static
[[ $(libs bin/c-pc-static) != *libtattler* ]] || fail "c-pc-static needs a shared libtattler"
# glibc warns that getaddrinfo in a static program needs its shared NSS
# modules at run time: expected, so only a failure is shown.
# shellcheck disable=SC2046
gcc -static "${c11[@]}" src/watch.c $(pkg-config --cflags --libs --static tattler) -o bin/c-fully-static \
    2>"$work/static.err" || fail "gcc -static: $(cat "$work/static.err")"
[[ $(libs bin/c-fully-static) == *"not a dynamic executable"* ]] || fail "c-fully-static is dynamic"
for std in "gcc -std=c99" "gcc -std=c11" "g++ -x c++ -std=c++11" "g++ -x c++ -std=c++17"; do
    # shellcheck disable=SC2046,SC2086
    $std "${cflags[@]}" src/header_check.c -x none $(pkg-config --cflags --libs tattler) -o bin/header-check
    [[ $(LD_LIBRARY_PATH=$P/lib bin/header-check) == "header_check: $version "* ]] || fail "header check as $std"
done
for mode in shared static pc; do
    flags=(-DTATTLER_STATIC=OFF)
    [[ $mode == static ]] && flags=(-DTATTLER_STATIC=ON)
    [[ $mode == pc ]] && flags=(-DVIA_PKG_CONFIG=ON) # the issue's link order failure
    cmake -S src -B "build-$mode" -DCMAKE_PREFIX_PATH="$P" "${flags[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
        fail "cmake configure ($mode)"
    cmake --build "build-$mode" -j2 >/dev/null || fail "cmake build ($mode)"
    cp "build-$mode/watch" "bin/c-cmake-$mode"
    cp "build-$mode/watch-cpp" "bin/cpp-cmake-$mode"
    [[ $(LD_LIBRARY_PATH=$P/lib "build-$mode/header-check") == "header_check: $version "* ]] ||
        fail "header-check ($mode)"
done
[[ $(libs bin/cpp-cmake-shared) == *"libtattler.so.$abi => $P/lib/"* ]] ||
    fail "cpp-cmake-shared does not load $P/lib/libtattler.so.$abi"
[[ $(libs bin/cpp-cmake-static) != *libtattler* ]] || fail "cpp-cmake-static needs a shared libtattler"
# Before 1.0 another minor version is another ABI: find_package refuses it.
for other in "$major.$((minor + 1))" "$major.$((minor - 1))"; do
    sed "s/find_package(tattler [0-9.]* REQUIRED)/find_package(tattler $other REQUIRED)/" src/CMakeLists.txt \
        >"$work/CMakeLists.other"
    mkdir -p "src-$other" && cp src/*.c src/*.cpp "src-$other/" && cp "$work/CMakeLists.other" "src-$other/CMakeLists.txt"
    ! cmake -S "src-$other" -B "build-$other" -DCMAKE_PREFIX_PATH="$P" >/dev/null 2>&1 ||
        fail "find_package(tattler $other) accepted $version"
done

# Go: the package as a module download lays it out, and a module using it.
mkdir -p go/tattler go/app
cp -r "$ffi_dir/go/." go/tattler/
rm -rf go/tattler/example
chmod -R a-w go/tattler # the module cache is read-only
gomod=$(sed -n 's/^module //p' go/tattler/go.mod)
cp "$ffi_dir/go/example/main.go" go/app/
cat >go/app/go.mod <<EOF
module example.com/agent

go 1.23

require $gomod v0.0.0

replace $gomod => ../tattler
EOF
export GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1
(cd go/tattler && go vet ./...) || fail "go vet of the copied package"
(cd go/app && go vet ./... && go build -o "$work/bin/go-shared" .) || fail "the Go module using the package"
# -tags tattler_static, from the prefix with both libraries (-a: the go
# command does not see PKG_CONFIG_PATH change), then from the static-only one.
(cd go/app && go build -a -tags tattler_static -o "$work/bin/go-static-both" .) ||
    fail "the Go module with -tags tattler_static"
[[ $(libs bin/go-static-both) != *libtattler* ]] || fail "go-static-both needs a shared libtattler"
(cd go/app && PKG_CONFIG_PATH=$S/lib/pkgconfig go build -a -tags tattler_static -o "$work/bin/go-static" .) ||
    fail "the Go module with -tags tattler_static (static prefix)"
[[ $(libs bin/go-static) != *libtattler* ]] || fail "go-static needs a shared libtattler"
[[ $(libs bin/go-shared) == *"libtattler.so.$abi => not found"* ]] || fail "go-shared does not need libtattler.so.$abi"
chmod -R u+w go/tattler

# Next to another Rust static library.
mkdir -p other/src
cat >other/Cargo.toml <<'EOF'
[package]
name = "other"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["staticlib"]

[workspace]
EOF
cat >other/src/lib.rs <<'EOF'
//! Another Rust static library an agent links: std's allocator, threads, panics.
use std::ffi::c_char;

/// Writes a line made on a thread of its own into `buf`.
///
/// # Safety
/// `buf` has `len` > 0 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn other_describe(buf: *mut c_char, len: usize) {
    let text = std::thread::spawn(|| format!("{:?}", std::panic::catch_unwind(|| vec![1u8, 2]).ok()))
        .join()
        .unwrap_or_default();
    let n = text.len().min(len - 1);
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast(), n);
        *buf.add(n) = 0;
    }
}
EOF
cat >src/both.c <<'EOF'
#include <stdio.h>
#include "tattler.h"
void other_describe(char *buf, size_t len);
int main(void) {
    char buf[64], err[256];
    other_describe(buf, sizeof buf);
    tattler_reader *r = NULL;
    tattler_status st = tattler_open("{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"pods\"]}", &r, err, sizeof err);
    printf("other %s, tattler %s, open %s\n", buf, tattler_version(), tattler_status_str(st));
    return st != TATTLER_OK || tattler_close(r) != TATTLER_OK;
}
EOF
toolchain=()
cargo +nightly --version >/dev/null 2>&1 && toolchain=(+nightly)
(cd other && cargo "${toolchain[@]}" build --release --quiet) || fail "building the other Rust library"
other=other/target/release/libother.a
for order in "$P/lib/libtattler.a $other" "$other $P/lib/libtattler.a"; do
    # shellcheck disable=SC2086
    gcc -I"$P/include" src/both.c $order -lpthread -ldl -lm -lrt -o bin/both || fail "linking $order"
    [[ $(bin/both) == "other Some([1, 2]), tattler $version, open ok" ]] || fail "running $order"
done
if ((${#toolchain[@]})); then
    gcc -I"$P/include" src/both.c "$target/dist/libtattler.a" "$other" -lpthread -ldl -lm -lrt -o bin/both-cargo \
        2>"$work/both-cargo.err" && fail "cargo's archive linked next to a nightly Rust library: this check shows nothing"
    say "cargo's own archive next to it: $(grep -o 'multiple definition of `[^'\'']*' "$work/both-cargo.err" | head -1)'"
fi
say "next to another Rust static library (${toolchain[*]:-stable}): both orders link and run"

programs=(c-pc-shared c-pc-static c-fully-static c-cmake-shared c-cmake-static c-cmake-pc cpp-cmake-shared
    cpp-cmake-static cpp-cmake-pc)
say "built outside the repository: ${programs[*]} go-shared go-static"

# --- 3. run them ----------------------------------------------------------
# Each prints "Add ns/name rv" per object and "Synced v1/RESOURCE rv"; compare
# sorted Adds and the Synced line without its resourceVersion.
normalise() { grep '^Add ' | sort; }
run_all() { # EXPECTED-FILE C-ARGS... -- GO-ARGS...
    local expected=$1 c_args=() go_args=()
    shift
    while (($#)) && [[ $1 != -- ]]; do c_args+=("$1"); shift; done
    shift
    go_args=("$@")
    for p in "${programs[@]}"; do
        LD_LIBRARY_PATH=$P/lib timeout 120 "bin/$p" "${c_args[@]}" >"$work/out" 2>"$work/err" ||
            fail "$p ${c_args[*]}: $(tail -5 "$work/err")"
        diff <(normalise <"$work/out") "$expected" >/dev/null || fail "$p printed: $(cat "$work/out")"
        grep -q '^Synced ' "$work/out" || fail "$p printed no Synced line"
    done
    for p in go-shared go-static; do
        LD_LIBRARY_PATH=$P/lib timeout 120 "bin/$p" "${go_args[@]}" >"$work/out" 2>"$work/err" ||
            fail "$p: $(tail -5 "$work/err")"
        diff <(normalise <"$work/out") "$expected" >/dev/null || fail "$p printed: $(cat "$work/out")"
    done
}

(cd "$root" && cargo build --quiet -p tattler-ffi --example fakeapi_serve)
mkfifo "$work/fake-in"
"$target/debug/examples/fakeapi_serve" <"$work/fake-in" >"$work/fake-out" &
fake_pid=$!
exec 9>"$work/fake-in" # holds the fake's stdin open
for _ in $(seq 100); do grep -q '^ready$' "$work/fake-out" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready$' "$work/fake-out" || fail "the fake apiserver did not start"
url=$(head -1 "$work/fake-out")
sed -n 's/^seeded \(.*\) \(.*\)$/Add \1 \2/p' "$work/fake-out" | sort >"$work/expected-fake"
run_all "$work/expected-fake" --until-synced "$url" pods -- -until-synced -server "$url" pods
exec 9>&-
wait "$fake_pid" || true
fake_pid=""
say "every program streamed from the fake apiserver"

"$root/tests/k8s/cluster.sh" up "$work/k8s" >/dev/null
# shellcheck disable=SC1091
. "$work/k8s/env"
"$K8S_BIN_DIR/kubectl" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: consumers}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-1, namespace: consumers}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-2, namespace: consumers}
EOF
"$K8S_BIN_DIR/kubectl" get configmaps -n consumers \
    -o jsonpath='{range .items[*]}Add consumers/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' |
    sort >"$work/expected-k8s"
[[ $(wc -l <"$work/expected-k8s") -ge 2 ]] || fail "kubectl saw no configmaps"
run_all "$work/expected-k8s" --until-synced --ca-file "$K8S_CA" --token-file "$K8S_TOKEN_FILE" \
    --namespace consumers "$K8S_SERVER" configmaps -- \
    -until-synced -ca-file "$K8S_CA" -token-file "$K8S_TOKEN_FILE" -namespace consumers -server "$K8S_SERVER" configmaps
say "every program streamed from the real kube-apiserver ($(wc -l <"$work/expected-k8s") configmaps)"
say "ok"
