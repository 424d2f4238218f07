#!/usr/bin/env bash
# A Go user: `go get` the release module through a module proxy (the file
# proxy dist/go.sh wrote), build with only Go and a C compiler on PATH from a
# cold cache, and stream from the fake apiserver; and vendored (go mod
# vendor, go build -mod=vendor). The same program
# cross-builds for linux/arm64 with Debian's aarch64 gcc (it links the arm64
# archive; it is not run: no arm64 machine or emulator here). On a platform
# the release does not ship (netbsd/amd64: the host's gcc compiles cgo's C
# for it), the build stops at the one line saying how to build from source.
#
#   dist/check/go.sh       (dist/check/all.sh runs it after make dist)
#
# Prints the times a user sees: go get, and go build from a cold cache.
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
module=$("$root/dist/project.sh" get go-module)
proxy=$dist/go/proxy
[[ -f "$proxy/$module/@v/v$version.zip" ]] || fail "no $proxy/$module/@v/v$version.zip: make dist"

# Go and the C compiler, nothing else: no cargo, no pkg-config, no git.
tools=$work/tools
mkdir -p "$tools"
for t in go gcc as ld; do ln -s "$(command -v "$t")" "$tools/$t"; done
no_rust "$tools"
gouser() {
    user "$tools" GOPROXY="file://$proxy" GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=1 "$@"
}

app=$work/app
mkdir -p "$app"
cp "$root/ffi/go/example/main.go" "$app/"
cd "$app"
gouser go mod init example.com/agent >/dev/null 2>&1 || fail "go mod init"
seconds gouser go get "$module@v$version" || fail "go get $module@v$version"
get_took=$took
seconds gouser go build -o agent . || fail "go build against the release module"
build_took=$took
gouser go vet . || fail "go vet"
grep -q "^require $module v$version" go.mod || fail "go.mod does not require $module v$version: $(cat go.mod)"
[[ "$(ldd agent)" != *libtattler* ]] || fail "the program needs a shared libtattler: $(ldd agent)"
say "go get $module@v$version: $get_took s; go build from a cold cache: $build_took s;" \
    "the program $(stat -c %s agent) bytes"

# Vendored: `go mod vendor` copies the header and the archives too (vendor.go).
gouser go mod vendor || fail "go mod vendor"
gouser go build -mod=vendor -o agent-vendored . >"$work/vendored" 2>&1 ||
    fail "go build -mod=vendor: $(cat "$work/vendored")"
rm -rf vendor
say "go mod vendor, then go build -mod=vendor: built"

start_fake
user /nonexistent ./agent -until-synced -server "$url" pods >"$work/out" 2>"$work/err" ||
    fail "the program: $(tail -5 "$work/err")"
streamed "the Go program" "$work/out"
say "the Go program streamed from the fake apiserver"

# linux/arm64: Debian's cross gcc and binutils (dist/check/all.sh installs them).
for t in gcc as ld; do
    c=$(command -v "aarch64-linux-gnu-$t") || fail "aarch64-linux-gnu-$t is missing (apt-get install gcc-aarch64-linux-gnu)"
    ln -s "$c" "$tools/aarch64-linux-gnu-$t"
done
gouser GOARCH=arm64 CC=aarch64-linux-gnu-gcc go build -o agent-arm64 . >"$work/arm64" 2>&1 ||
    fail "the linux/arm64 build: $(cat "$work/arm64")"
[[ $(readelf -h agent-arm64) == *"Machine:"*AArch64* ]] || fail "agent-arm64 is not an arm64 program"
say "linux/arm64: built and linked ($(stat -c %s agent-arm64) bytes; not run here)"

# A platform without a prebuilt library: one clear line.
if gouser GOOS=netbsd CC=gcc go build -o agent-netbsd . >"$work/netbsd" 2>&1; then
    fail "netbsd/amd64 built, with no prebuilt library for it"
fi
grep -q 'undefined: tattler_has_no_prebuilt_library_for_this_platform__install_it_from_source' "$work/netbsd" ||
    fail "netbsd/amd64 failed without the message: $(cat "$work/netbsd")"
[[ $(grep -c 'undefined' "$work/netbsd") == 1 ]] || fail "netbsd/amd64: more than one error: $(cat "$work/netbsd")"
say "netbsd/amd64 stops at: $(grep undefined "$work/netbsd" | sed 's/.*: undefined/undefined/')"
echo "go-get-seconds $get_took" >>"${TATTLER_TIMES:-/dev/null}"
echo "go-build-cold-seconds $build_took" >>"${TATTLER_TIMES:-/dev/null}"
say ok
