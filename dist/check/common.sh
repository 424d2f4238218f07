# Sourced by dist/check/{c,go,python,rust}.sh: one user's installation, away
# from the checkout.
#
# The script runs again inside a network namespace of its own (unshare -n,
# loopback only, where the machine allows it): nothing it starts reaches a
# network but the fake apiserver on 127.0.0.1, so an artifact that would
# download anything fails. What a user types runs through `user`: an empty
# HOME, a PATH of the caller's choosing (no cargo or rustc in it but for the
# Rust user), no variable of the caller's but those passed.
#
# dist/check/all.sh sets TATTLER_DIST (TARGET/dist, built) and TATTLER_FAKEAPI
# (ffi's fakeapi_serve, built); a script run alone finds them itself.
set -euo pipefail
check=$(basename "$0" .sh)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z "${TATTLER_NETLESS:-}" ]]; then
    if unshare -n true 2>/dev/null; then
        exec unshare -n env TATTLER_NETLESS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
    fi
    echo "dist/check/$check: no network namespace here (unshare -n): only the offline settings keep it off the network"
    export TATTLER_NETLESS=0
fi
if [[ -z "${TATTLER_DIST:-}" || -z "${TATTLER_FAKEAPI:-}" ]]; then
    target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    TATTLER_DIST=${TATTLER_DIST:-$target/dist}
    TATTLER_FAKEAPI=${TATTLER_FAKEAPI:-$target/debug/examples/fakeapi_serve}
fi
dist=$TATTLER_DIST
version=$("$root/dist/project.sh" get version)
[[ -x "$TATTLER_FAKEAPI" ]] ||
    { echo "dist/check/$check: no $TATTLER_FAKEAPI: cargo build -p tattler-ffi --example fakeapi_serve" >&2; exit 1; }

work=$(mktemp -d "/tmp/tattler-dist-$check.XXXXXX")
home=$work/home
mkdir -p "$home" "$work/tmp"
fake_pid=""
cleanup() {
    [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null
    chmod -R u+w "$work" 2>/dev/null # the Go module cache is read-only
    rm -rf "$work"
}
trap cleanup EXIT
start=$(date +%s)
say() { echo "dist/check/$check: $* ($(($(date +%s) - start)) s)"; }
fail() { echo "dist/check/$check: FAILED: $*" >&2; exit 1; }

# user PATH VAR=VALUE... COMMAND...: as the user runs it, ended after 10
# minutes (a hang fails).
user() {
    local path=$1
    shift
    timeout 600 env -i HOME="$home" PATH="$path" TMPDIR="$work/tmp" LANG=C.UTF-8 "$@"
}
# no_rust PATH: fails when cargo or rustc is on it.
no_rust() {
    local t
    for t in cargo rustc rustup; do
        ! PATH=$1 command -v "$t" >/dev/null || fail "$t is on the user's PATH ($1)"
    done
}
# seconds COMMAND...: runs it, and sets $took to its wall time (0.1 s).
seconds() {
    local t0 rc=0 ms
    t0=$(date +%s%N)
    "$@" || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    took=$((ms / 1000)).$((ms % 1000 / 100))
    return "$rc"
}

# The fake apiserver with its three seeded pods; $url, $work/expected (sorted
# "Add default/pod-N RV" lines).
start_fake() {
    mkfifo "$work/fake-in"
    "$TATTLER_FAKEAPI" <"$work/fake-in" >"$work/fake-out" &
    fake_pid=$!
    exec 9>"$work/fake-in" # holds its stdin open: it serves until that closes
    for _ in $(seq 100); do grep -q '^ready$' "$work/fake-out" 2>/dev/null && break; sleep 0.1; done
    grep -q '^ready$' "$work/fake-out" || fail "the fake apiserver did not start"
    url=$(head -1 "$work/fake-out")
    sed -n 's/^seeded \(.*\) \(.*\)$/Add \1 \2/p' "$work/fake-out" | sort >"$work/expected"
}
# streamed NAME FILE: FILE has exactly the seeded pods' Add lines and a Synced line.
streamed() {
    diff -u "$work/expected" <(grep '^Add ' "$2" | sort) >&2 || fail "$1 printed: $(cat "$2")"
    grep -q '^Synced ' "$2" || fail "$1 printed no Synced line: $(cat "$2")"
}
