#!/usr/bin/env bash
# The tattler benchmark: one command builds every client, replays N synthetic
# pods from a loopback apiserver to each of them, and writes bench/results.md
# and bench/results.json.
#
#   bench/run.sh [N...]          default: 10000 100000
#
# Environment:
#   RUNS=5          runs per client and N (medians are reported)
#   RUNS_EXTRA=3    runs of each extra measurement
#   N_EXTRA=100000  pods for the extra measurements (live stream, memory, relist)
#   LIVE_RATE=1000 LIVE_SECS=20   the live stream: MODIFIED events per second, and for how long
#   EXTRAS=0        skip the extra measurements
#   SKIP_BUILD=1    use what is already built
#   NICE=10         niceness of builds and runs (the machine is shared)
#
# Everything runs on 127.0.0.1. Raw outputs land in bench/out/ (not committed).
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
T="$BENCH/target/release"
OUT="$BENCH/out"
RUNS="${RUNS:-5}"
RUNS_EXTRA="${RUNS_EXTRA:-3}"
N_EXTRA="${N_EXTRA:-100000}"
LIVE_RATE="${LIVE_RATE:-1000}"
LIVE_SECS="${LIVE_SECS:-20}"
EXTRAS="${EXTRAS:-1}"
NICE="${NICE:-10}"
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(10000 100000)
export CARGO_TARGET_DIR="$BENCH/target"
RUN=(nice -n "$NICE")
TIME=/usr/bin/time

# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

if [ ! -x "$TIME" ]; then
    log "installing GNU time"
    apt-get install -y time >/dev/null
fi

# A fresh set of results; bench/profile.sh's output (out/profile) is kept.
rm -rf "$OUT/sync" "$OUT/live" "$OUT/mem" "$OUT/relist" "$OUT"/*.txt "$OUT"/*.log
mkdir -p "$OUT"
NOTES="$OUT/build-notes.txt"
: >"$NOTES"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "bench/run.sh ${SIZES[*]}  (RUNS=$RUNS RUNS_EXTRA=$RUNS_EXTRA N_EXTRA=$N_EXTRA LIVE_RATE=$LIVE_RATE LIVE_SECS=$LIVE_SECS EXTRAS=$EXTRAS)" >"$OUT/invocation.txt"

# ---------------------------------------------------------------- build
if [ -z "${SKIP_BUILD:-}" ]; then
    build replay cargo build --release --manifest-path "$BENCH/replay/Cargo.toml"
    build raw cargo build --release --manifest-path "$BENCH/clients/raw/Cargo.toml" || true
    build_clients
fi

write_build_info "$OUT/build-info.txt"

# ---------------------------------------------------------------- helpers
SERVER_PID=""
SERVER_DIR=""
SERVER_ARGS=()
URL=""
start_server() { # dir, replay args...
    local dir="$1"
    shift
    mkdir -p "$dir"
    SERVER_DIR="$dir"
    SERVER_ARGS=("$@")
    rm -f "$dir/server.out"
    "${RUN[@]}" "$T/replay" "$@" >"$dir/server.out" 2>>"$dir/requests.log" &
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        [ -f "$dir/server.out" ] && [ "$(wc -l <"$dir/server.out")" -ge 2 ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { log "replay died"; exit 1; }
        sleep 0.1
    done
    URL="$(head -n 1 "$dir/server.out")"
    sed -n 2p "$dir/server.out" >"$dir/info.json"
    echo "$T/replay $*" >"$dir/server.cmd"
    log "replay $* at $URL: $(cat "$dir/info.json")"
}
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
trap stop_server EXIT

# A replay server that died (it never should: only a signal from outside ends
# it) is noted in out/server-restarts.txt with its exit status, and restarted.
ensure_server() {
    if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
        local st=0
        wait "$SERVER_PID" 2>/dev/null || st=$?
        echo "$(date -u +%FT%TZ) replay ${SERVER_ARGS[*]} (pid $SERVER_PID) was gone, exit status $st; restarted" >>"$OUT/server-restarts.txt"
        log "replay died (exit status $st); restarting it"
        SERVER_PID=""
        start_server "$SERVER_DIR" "${SERVER_ARGS[@]}"
    fi
}

# One run of one client: its JSON line, /usr/bin/time's "%M %U %S %e", stderr, the command.
run_client() { # dir name run command...
    local dir="$1/$2" name="$2" run="$3"
    shift 3
    mkdir -p "$dir"
    local attempt
    for attempt in 1 2; do
        ensure_server
        local cmd=("$@")
        cmd=("${cmd[@]//@URL@/$URL}")
        printf '%s\n' "${cmd[*]}" >"$dir/cmd.txt"
        mark "$name" "$run"
        cat /proc/loadavg >"$dir/$run.load"
        timeout 900 "${RUN[@]}" "$TIME" -f '%M %U %S %e' -o "$dir/$run.time" "${cmd[@]}" \
            >"$dir/$run.out" 2>"$dir/$run.err" &
        local cpid=$! st=0
        # Clients retry a vanished server for ever: stop this one if the server goes.
        while kill -0 "$cpid" 2>/dev/null; do
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                kill "$cpid" 2>/dev/null || true
                break
            fi
            sleep 0.2
        done
        wait "$cpid" || st=$?
        [ "$st" = 0 ] && return 0
        log "$name run $run failed: $(tail -n 2 "$dir/$run.err" | tr '\n' ' ')"
        # Run it again only when the server went away under it.
        kill -0 "$SERVER_PID" 2>/dev/null && return 0
    done
}

have() { [ -x "$T/$1" ]; }

# A request the server logs (and answers 404), so that its request log shows
# which client made which requests.
mark() { # name run
    local hp="${URL#http://}"
    if ! exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}"; then
        return 0
    fi
    printf 'GET /bench-mark/%s/%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$1" "$2" "$hp" >&3
    cat <&3 >/dev/null
    exec 3>&-
}

# name | binary | arguments (@URL@ is the server)
CLIENTS=(
    "raw|raw|@URL@"
    "raw-owned|raw|@URL@ --owned"
    "serde_json|serde-json|@URL@"
    "tattler-rust|tattler-rust|@URL@"
    "tattler-rust-noscrub|tattler-rust|@URL@ --noscrub"
    "tattler-c|tattler-c|@URL@"
    "tattler-c-noscrub|tattler-c|@URL@ --noscrub"
    "tattler-go|tattler-go|@URL@"
    "tattler-go-noscrub|tattler-go|-noscrub @URL@"
    "kube-rs|kube-rs|@URL@"
    "kube-rs-list|kube-rs|@URL@ --list"
    "client-go|client-go|@URL@"
    "client-go-reflector|client-go|-mode reflector @URL@"
)

# ---------------------------------------------------------------- initial sync
for n in "${SIZES[@]}"; do
    dir="$OUT/sync/$n"
    start_server "$dir" --n "$n"
    for run in $(seq 1 "$RUNS"); do
        for c in "${CLIENTS[@]}"; do
            IFS='|' read -r name bin args <<<"$c"
            if ! have "$bin"; then continue; fi
            # shellcheck disable=SC2086
            run_client "$dir" "$name" "$run" "$T/$bin" $args
        done
        log "N=$n run $run/$RUNS done"
    done
    stop_server
done

# ---------------------------------------------------------------- extras
if [ "$EXTRAS" = 1 ] && have tattler-rust; then
    # Live stream: cost and latency of MODIFIED events after the sync.
    dir="$OUT/live"
    count=$((LIVE_RATE * LIVE_SECS))
    start_server "$dir" --n "$N_EXTRA" --live-rate "$LIVE_RATE" --live-secs "$LIVE_SECS" --live-delay-ms 2000
    for run in $(seq 1 "$RUNS_EXTRA"); do
        run_client "$dir" tattler-rust "$run" "$T/tattler-rust" @URL@ --live "$count"
        run_client "$dir" tattler-rust-noscrub "$run" "$T/tattler-rust" @URL@ --noscrub --live "$count"
        if have kube-rs; then run_client "$dir" kube-rs "$run" "$T/kube-rs" @URL@ --live "$count"; fi
        log "live run $run/$RUNS_EXTRA done"
    done
    stop_server

    # Memory per tracked object: N pods against an empty sync.
    for n in 0 "$N_EXTRA"; do
        dir="$OUT/mem/$n"
        start_server "$dir" --n "$n"
        for run in $(seq 1 "$RUNS_EXTRA"); do
            run_client "$dir" tattler-rust-mem "$run" "$T/tattler-rust-mem" @URL@
        done
        stop_server
    done
    log "memory done"

    # Relist swap.
    dir="$OUT/relist"
    start_server "$dir" --n "$N_EXTRA"
    for run in $(seq 1 "$RUNS_EXTRA"); do
        run_client "$dir" tattler-rust "$run" "$T/tattler-rust" @URL@ --relist
    done
    stop_server
    log "relist done"
fi

# ---------------------------------------------------------------- report
write_machine_info "$OUT/machine.txt" "$STARTED" "$OUT/build-info.txt"
python3 "$BENCH/report.py" "$OUT" "$BENCH/results.md" "$BENCH/results.json"
log "wrote bench/results.md and bench/results.json"
