# What bench/run.sh (the replay server) and bench/real.sh (a real
# kube-apiserver) share: building tattler and its peers, and describing the
# build and the machine. Sourced; expects BENCH, ROOT, T, OUT, RUN (the nice
# prefix) and NOTES (the file build failures are noted in) to be set, and
# CARGO_TARGET_DIR=$BENCH/target exported.

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }

build() { # what command... (its output goes to $OUT/build-WHAT.log)
    local what="$1"
    shift
    log "build $what"
    if ! "${RUN[@]}" "$@" >"$OUT/build-$what.log" 2>&1; then
        echo "$what: build failed: $* (last lines of ${OUT#"$ROOT"/}/build-$what.log:)" >>"$NOTES"
        tail -n 15 "$OUT/build-$what.log" | sed 's/^/    /' >>"$NOTES"
        return 1
    fi
}

# tattler's Rust, C and Go clients (from this checkout's own source), kube-rs
# and client-go, into $T.
# Whether CLIENTS (empty: all) names a client starting with $1.
wants_any() { [ -z "${CLIENTS:-}" ] || [[ " $CLIENTS" == *" $1"* ]]; }

build_clients() {
    build tattler-rust cargo build --release --manifest-path "$BENCH/clients/tattler-rust/Cargo.toml" || true
    if wants_any kube-rs; then
        build kube-rs cargo build --release --manifest-path "$BENCH/clients/kube-rs/Cargo.toml" || true
    fi
    # The C ABI, where the C example and the Go package expect it (target/release).
    if { wants_any tattler-c || wants_any tattler-go; } && build tattler-ffi env -u CARGO_TARGET_DIR cargo build --release -p tattler-ffi --manifest-path "$ROOT/Cargo.toml"; then
        build tattler-c cc -O2 -g -Wall -Wextra -Werror -I "$ROOT/include" "$BENCH/clients/c/bench.c" \
            "$ROOT/target/release/libtattler.a" -lpthread -ldl -lm -lrt -o "$T/tattler-c" || true
        if [ -f "$ROOT/ffi/go/go.mod" ]; then
            # The archive's hash in -X forces the relink the go command would skip (see main.go).
            local lib_sum
            lib_sum="$(sha256sum "$ROOT/target/release/libtattler.a" | cut -c1-16)"
            build tattler-go sh -c "cd '$BENCH/clients/tattler-go' && go build -tags tattler_release -ldflags '-X main.libtattler=$lib_sum' -o '$T/tattler-go' ." || true
        else
            echo "tattler-go: not built: ffi/go has no go.mod (the Go package does not exist yet)" >>"$NOTES"
        fi
    fi
    wants_any client-go || return 0
    build client-go sh -c "cd '$BENCH/clients/client-go' && go build -o '$T/client-go' ." || true
}

# What was built: the tattler commit and any uncommitted changes, as of the build.
write_build_info() { # file
    {
        echo "tattler_commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "tattler_dirty=$(git -C "$ROOT" status --porcelain -- src ffi Cargo.toml 2>/dev/null | wc -l)"
        echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "libtattler_sha256=$(sha256sum "$ROOT/target/release/libtattler.a" 2>/dev/null | cut -c1-16)"
    } >"$1"
}

# The machine, the toolchains and the peers' versions, with the build info.
write_machine_info() { # file started build-info-file
    {
        echo "started=$2"
        echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "nproc=$(nproc)"
        echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
        echo "mem=$(grep MemTotal /proc/meminfo | awk '{print $2 " kB"}')"
        echo "kernel=$(uname -r)"
        echo "rustc=$(rustc --version)"
        echo "go=$(go version 2>/dev/null || echo none)"
        echo "cc=$(cc --version | head -n 1)"
        cat "$3"
        echo "kube=$(grep -A1 '^name = "kube"$' "$BENCH/clients/kube-rs/Cargo.lock" | sed -n 's/version = "\(.*\)"/\1/p')"
        echo "k8s_openapi=$(grep -A1 '^name = "k8s-openapi"$' "$BENCH/clients/kube-rs/Cargo.lock" | sed -n 's/version = "\(.*\)"/\1/p')"
        echo "client_go=$(grep 'k8s.io/client-go ' "$BENCH/clients/client-go/go.mod" | awk '{print $2}')"
    } >"$1"
}
