#!/usr/bin/env bash
# The real-apiserver benchmark (issue 16): a real kube-apiserver + etcd (the
# tests' tests/k8s), N realistic pods loaded through the apiserver, and every
# client timed on them in turn: seconds to Synced, client CPU and peak RSS,
# and the apiserver's (and etcd's) CPU during that client's sync. Then the
# same for a metadata-only sync and for a node agent's (one node's pods, by
# field selector). Writes its section of bench/results.md and
# bench/results-real.json.
#
#   bench/real.sh [N]            default 30000; 100000 for the issue's figures
#
# Environment:
#   ROUNDS=3        rounds; the clients take turns within each (medians are reported)
#   CLIENTS="..."   only these clients (names as in the table below)
#   NODES=100       node names the pods are spread over (spec.nodeName)
#   NODE=node-042   the node agent's node
#   CONC=24         the loader's requests in flight
#   SKIP_BUILD=1    use what is already built (tattler, the clients, the loader)
#   KEEP=1          leave the cluster running at the end; a later run with the
#                   same N reuses it (and its pods) instead of loading again
#   RESUME=1        keep the client runs already in bench/out/real/N, do the rest
#   NICE=0          niceness the clients run at, relative to this script (and so to
#                   the apiserver and etcd it starts); builds run at +10. To be polite
#                   on a shared machine, run the whole thing under nice instead:
#                   the clients then stay on an equal footing with the apiserver.
#   TIMEOUT=900     seconds a client run may take
#   SERVER_GOMEMLIMIT=12GiB  a soft memory limit for the apiserver and etcd (unset: none).
#                   At 30,000 pods the apiserver peaked at 5.4 GB and etcd at 1.2 GB;
#                   100,000 may not fit in 24 GB beside client-go's informer without it.
#
# Everything runs on 127.0.0.1. Raw outputs: bench/out/real/ (not committed);
# the cluster lives in bench/out/real/cluster (etcd data: ~1.1 GB at 100,000 pods).
set -euo pipefail
# "&" in a ${var//pat/rep} replacement is literal (bash 5.2 would insert the match).
shopt -u patsub_replacement 2>/dev/null || true

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
T="$BENCH/target/release"
OUT="$BENCH/out/real"
N="${1:-30000}"
ROUNDS="${ROUNDS:-3}"
NODES="${NODES:-100}"
NODE="${NODE:-node-042}"
CONC="${CONC:-24}"
NICE="${NICE:-0}"
TIMEOUT="${TIMEOUT:-900}"
CLUSTER="$OUT/cluster"
export CARGO_TARGET_DIR="$BENCH/target"
RUN=(nice -n 10)
CLIENT_NICE=(nice -n "$NICE")
TIME=/usr/bin/time
NOTES="$OUT/build-notes.txt"
K8S="$ROOT/tests/k8s"

# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

case "$N" in '' | *[!0-9]*) echo "usage: bench/real.sh [N]" >&2; exit 2 ;; esac
if [ ! -x "$TIME" ]; then
    log "installing GNU time"
    apt-get install -y time >/dev/null
fi
mkdir -p "$OUT" "$T"
: >"$NOTES"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "bench/real.sh $N  (ROUNDS=$ROUNDS NODES=$NODES NODE=$NODE CONC=$CONC${CLIENTS:+ CLIENTS=\"$CLIENTS\"}${SERVER_GOMEMLIMIT:+ SERVER_GOMEMLIMIT=$SERVER_GOMEMLIMIT})" >"$OUT/invocation.txt"

# ---------------------------------------------------------------- build
if [ -z "${SKIP_BUILD:-}" ]; then
    build k8s "$K8S/build.sh"
    build_clients
    build loader sh -c "cd '$BENCH/real/loader' && go build -o '$T/loader' ."
    build scan cc -O2 -Wall -Wextra -Werror "$BENCH/clients/curl-floor/scan.c" -o "$T/scan"
fi
# With SKIP_BUILD the binaries are those of the last build, which build-info describes.
if [ -z "${SKIP_BUILD:-}" ] || [ ! -s "$OUT/build-info.txt" ]; then
    write_build_info "$OUT/build-info.txt"
    [ -n "${SKIP_BUILD:-}" ] && echo "built_note=SKIP_BUILD=1 and no record of the build: the commit is the checkout's at the run, not necessarily the binaries'" >>"$OUT/build-info.txt"
fi
K8S_BIN="$(tail -n 1 "$OUT/build-k8s.log" 2>/dev/null || true)"
[ -x "$K8S_BIN/kube-apiserver" ] || K8S_BIN="$("$K8S/build.sh" | tail -n 1)"
export TATTLER_K8S_BIN="$K8S_BIN"

# ---------------------------------------------------------------- cluster
cluster_up() { "$K8S/cluster.sh" status "$CLUSTER" >/dev/null 2>&1; }
loaded="$(cat "$CLUSTER/loaded" 2>/dev/null || true)"
if cluster_up && [ "$loaded" = "$N $NODES ${SERVER_GOMEMLIMIT:-} profiling" ]; then
    log "reusing the running cluster in ${CLUSTER#"$ROOT"/} ($N pods on $NODES nodes)"
else
    [ -f "$CLUSTER/env" ] && "$K8S/cluster.sh" down "$CLUSTER" >/dev/null 2>&1 || true
    rm -rf "$CLUSTER"
    log "starting kube-apiserver + etcd in ${CLUSTER#"$ROOT"/}"
    # SERVER_GOMEMLIMIT: a soft memory limit for the apiserver and etcd only (Go's GOMEMLIMIT).
    # --profiling=true: settle_apiserver below asks it for a GC before each run.
    env ${SERVER_GOMEMLIMIT:+GOMEMLIMIT="$SERVER_GOMEMLIMIT"} "$K8S/cluster.sh" up "$CLUSTER" --profiling=true >"$OUT/cluster-up.log" 2>&1 ||
        { tail -n 40 "$OUT/cluster-up.log" >&2; exit 1; }
fi
# shellcheck disable=SC1091
. "$CLUSTER/env"
stop_cluster() {
    if [ -z "${KEEP:-}" ]; then
        "$K8S/cluster.sh" down "$CLUSTER" >/dev/null 2>&1 || true
        rm -f "$CLUSTER/loaded"
    else
        log "the cluster keeps running (KEEP=1): $K8S/cluster.sh down $CLUSTER"
    fi
}
trap stop_cluster EXIT

TCK="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
alive() { kill -0 "$1" 2>/dev/null; }

# Load (or top up) the pods, with the apiserver's and etcd's CPU.
a0="$(cpu_ticks "$APISERVER_PID")" e0="$(cpu_ticks "$ETCD_PID")"
log "loading $N pods on $NODES nodes ($CONC in flight)"
if ! "$TIME" -f '%M %U %S %e' -o "$OUT/load.time" "$T/loader" -server "$K8S_SERVER" -ca "$K8S_CA" -token-file "$K8S_TOKEN_FILE" -n "$N" -c "$CONC" -nodes "$NODES" \
    >"$OUT/load.out" 2>"$OUT/load.err"; then
    tail -n 5 "$OUT/load.err" >&2
    exit 1
fi
python3 - "$OUT/load.out" "$(( $(cpu_ticks "$APISERVER_PID") - a0 ))" "$(( $(cpu_ticks "$ETCD_PID") - e0 ))" "$TCK" <<'EOF'
import json, sys
f, a, e, tck = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = json.loads(open(f).read().strip().splitlines()[-1])
d.update({"apiserver_cpu_s": a / tck, "etcd_cpu_s": e / tck})
try:
    rss, u, s_, _ = open(f[:-4] + ".time").read().split()[-4:]
    d.update({"loader_cpu_s": float(u) + float(s_), "loader_peak_rss_kb": int(rss)})
except (OSError, ValueError):
    pass
open(f, "w").write(json.dumps(d) + "\n")
EOF
echo "$N $NODES ${SERVER_GOMEMLIMIT:-} profiling" >"$CLUSTER/loaded"
log "loaded: $(cat "$OUT/load.out")"
# The record of the load that made these pods stays with the cluster: a run that
# reuses a kept cluster reports it, marked as reused.
if grep -q '"created": 0,' "$OUT/load.out" && [ -s "$CLUSTER/load.json" ]; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["reused_cluster"]=True; print(json.dumps(d))' "$CLUSTER/load.json" >"$OUT/load.json"
else
    cp "$OUT/load.out" "$CLUSTER/load.json"
    cp "$OUT/load.out" "$OUT/load.json"
fi

# ---------------------------------------------------------------- what the clients get
CFG="$OUT/$N/config"
mkdir -p "$CFG"
printf '{"kubeconfig":"%s","resources":["pods"]}\n' "$KUBECONFIG" >"$CFG/tattler.json"
printf '{"kubeconfig":"%s","resources":["pods"],"scrub":false}\n' "$KUBECONFIG" >"$CFG/tattler-noscrub.json"
printf '{"kubeconfig":"%s","resources":["pods"],"drop_managed_fields":true}\n' "$KUBECONFIG" >"$CFG/tattler-drop-managed-fields.json"
printf '{"kubeconfig":"%s","resources":[{"resource":"pods","encoding":"json"}]}\n' "$KUBECONFIG" >"$CFG/tattler-json.json"
printf '{"kubeconfig":"%s","resources":[{"resource":"pods","metadata_only":true,"encoding":"json"}]}\n' "$KUBECONFIG" >"$CFG/tattler-metadata-json.json"
printf '{"kubeconfig":"%s","resources":[{"resource":"pods","field_selector":"spec.nodeName=%s","encoding":"json"}]}\n' "$KUBECONFIG" "$NODE" >"$CFG/tattler-node-json.json"
printf '{"kubeconfig":"%s","resources":[{"resource":"pods","field_selector":"spec.nodeName=%s","metadata_only":true}]}\n' "$KUBECONFIG" "$NODE" >"$CFG/tattler-node-metadata.json"
printf '{"kubeconfig":"%s","resources":["pods"],"field_selector":"spec.nodeName=%s"}\n' "$KUBECONFIG" "$NODE" >"$CFG/tattler-node.json"
sed "s|@KUBECONFIG@|$KUBECONFIG|g" "$BENCH/real/tattler-metadata.json" >"$CFG/tattler-metadata.json"
printf 'Authorization: Bearer %s\n' "$(cat "$K8S_TOKEN_FILE")" >"$CFG/auth-header"
chmod 600 "$CFG/auth-header"
WL="$K8S_SERVER/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
META='Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1'
FLOOR="$BENCH/clients/curl-floor/curl-floor.sh"

# group | name | command (run as is; @...@ are filled in below)
# "probe" in the group: a client that may not be supported yet; if its first
# run fails it is noted as such and not run again.
CLIENT_TABLE=(
    "full|curl|$FLOOR curl $T/scan @WL@ $K8S_CA $CFG/auth-header"
    "full|curl-http1.1|$FLOOR curl-http1.1 $T/scan @WL@ $K8S_CA $CFG/auth-header --http1.1"
    "full|tattler-rust|$T/tattler-rust $CFG/tattler.json"
    "full|tattler-rust-json|$T/tattler-rust $CFG/tattler-json.json"
    "full|tattler-rust-noscrub|$T/tattler-rust $CFG/tattler-noscrub.json"
    "full|tattler-rust-drop-managed-fields|$T/tattler-rust $CFG/tattler-drop-managed-fields.json"
    "full|tattler-c|$T/tattler-c $CFG/tattler.json"
    "full|tattler-go|$T/tattler-go $CFG/tattler.json"
    "full|kube-rs|$T/kube-rs $KUBECONFIG"
    "full|client-go-json|$T/client-go -content json $KUBECONFIG"
    "full|client-go-protobuf|$T/client-go -content protobuf $KUBECONFIG"
    "metadata|curl-metadata|$FLOOR curl-metadata $T/scan @WL@ $K8S_CA $CFG/auth-header -H @META@"
    "metadata probe|tattler-rust-metadata|$T/tattler-rust $CFG/tattler-metadata.json"
    "metadata|tattler-rust-metadata-json|$T/tattler-rust $CFG/tattler-metadata-json.json"
    "metadata|kube-rs-metadata|$T/kube-rs $KUBECONFIG --metadata"
    "metadata|client-go-metadata-json|$T/client-go -metadata -content json $KUBECONFIG"
    "metadata|client-go-metadata-protobuf|$T/client-go -metadata -content protobuf $KUBECONFIG"
    "node|curl-node|$FLOOR curl-node $T/scan @WL@&fieldSelector=spec.nodeName%3D$NODE $K8S_CA $CFG/auth-header"
    "node|tattler-rust-node|$T/tattler-rust $CFG/tattler-node.json"
    "node|tattler-rust-node-json|$T/tattler-rust $CFG/tattler-node-json.json"
    "node|tattler-rust-node-metadata|$T/tattler-rust $CFG/tattler-node-metadata.json"
    "node|kube-rs-node|$T/kube-rs $KUBECONFIG --fields spec.nodeName=$NODE"
    "node|client-go-protobuf-node|$T/client-go -content protobuf -fields spec.nodeName=$NODE $KUBECONFIG"
)

DIR="$OUT/$N"
[ -z "${RESUME:-}" ] && find "$DIR" -mindepth 1 -maxdepth 1 ! -name config -exec rm -rf {} +
# A resumed run keeps the load record it started with.
[ -n "${RESUME:-}" ] && [ -s "$DIR/load.json" ] || cp "$OUT/load.json" "$DIR/load.json"
if [ -n "${RESUME:-}" ] && [ -s "$DIR/invocation.txt" ]; then
    echo "$(head -n 1 "$DIR/invocation.txt"); resumed $STARTED with RESUME=1${SKIP_BUILD:+ SKIP_BUILD=1}${CLIENTS:+ CLIENTS=\"$CLIENTS\"}" >"$DIR/invocation.txt.new"
    mv "$DIR/invocation.txt.new" "$DIR/invocation.txt"
else
    cp "$OUT/invocation.txt" "$DIR/invocation.txt"
fi
echo "$NODE" >"$DIR/node.txt"

# A resumed run is the same run: it keeps its start and its idle measurement.
if [ -n "${RESUME:-}" ] && [ -s "$DIR/started" ]; then STARTED="$(cat "$DIR/started")"; else echo "$STARTED" >"$DIR/started"; fi

# The apiserver's own CPU when no client is syncing, over 10 s (after the load settles).
if [ -z "${RESUME:-}" ] || [ ! -s "$DIR/idle.json" ]; then
    sleep 5
    a0="$(cpu_ticks "$APISERVER_PID")" e0="$(cpu_ticks "$ETCD_PID")"
    sleep 10
    echo "{\"apiserver_idle_cpu_s_per_s\":$(awk -v d="$(( $(cpu_ticks "$APISERVER_PID") - a0 ))" -v t="$TCK" 'BEGIN{printf "%.4f", d/t/10}'),\"etcd_idle_cpu_s_per_s\":$(awk -v d="$(( $(cpu_ticks "$ETCD_PID") - e0 ))" -v t="$TCK" 'BEGIN{printf "%.4f", d/t/10}')}" >"$DIR/idle.json"
fi
log "idle: $(cat "$DIR/idle.json")"

wanted() { [ -z "${CLIENTS:-}" ] || [[ " $CLIENTS " == *" $1 "* ]]; }

# One run: the client's JSON line, /usr/bin/time's "%M %U %S %e", stderr, the
# command, the load average before, and the apiserver's and etcd's CPU over
# the run (read 0.5 s after the client exits, so work it left behind counts).
# The apiserver's garbage collector runs when its heap (gigabytes here) has
# grown enough, whoever made it grow: its CPU-seconds land on whichever client
# runs then (1.1 to 3.4 CPU-s for one client's protobuf sync in three rounds
# before this). So each run starts from a collected heap: the apiserver's
# profiling endpoint runs a GC before a heap profile (?gc=1; profiling is on
# by default), and the run's window opens a moment after.
settle_apiserver() {
    curl -sf -o /dev/null --cacert "$K8S_CA" -H "@$CFG/auth-header" "$K8S_SERVER/debug/pprof/heap?gc=1" ||
        log "could not ask the apiserver for a GC (profiling off?): CPU figures include others' garbage"
    sleep 1
}

run_client() { # name round command...
    local name="$1" round="$2"
    shift 2
    local d="$DIR/$name"
    mkdir -p "$d"
    printf '%s\n' "$*" >"$d/cmd.txt"
    cat /proc/loadavg >"$d/$round.load"
    alive "$APISERVER_PID" || { log "kube-apiserver (pid $APISERVER_PID) is gone"; exit 1; }
    settle_apiserver
    local a0 e0 t0 st=0
    a0="$(cpu_ticks "$APISERVER_PID")" e0="$(cpu_ticks "$ETCD_PID")" t0="$(date +%s.%N)"
    timeout "$TIMEOUT" "${CLIENT_NICE[@]}" "$TIME" -f '%M %U %S %e' -o "$d/$round.time" "$@" >"$d/$round.out" 2>"$d/$round.err" || st=$?
    sleep 0.5
    local a1 e1 t1
    a1="$(cpu_ticks "$APISERVER_PID")" e1="$(cpu_ticks "$ETCD_PID")" t1="$(date +%s.%N)"
    awk -v a="$((a1 - a0))" -v e="$((e1 - e0))" -v t="$TCK" -v w0="$t0" -v w1="$t1" -v st="$st" \
        'BEGIN{printf "{\"apiserver_cpu_s\":%.2f,\"etcd_cpu_s\":%.2f,\"window_s\":%.3f,\"exit\":%d}\n", a/t, e/t, w1-w0, st}' >"$d/$round.server"
    [ "$st" = 0 ] || log "$name round $round failed (exit $st): $(tail -n 2 "$d/$round.err" | tr '\n' ' ')"
    return "$st"
}

for round in $(seq 1 "$ROUNDS"); do
    for c in "${CLIENT_TABLE[@]}"; do
        IFS='|' read -r group name cmd <<<"$c"
        wanted "$name" || continue
        [ -f "$DIR/$name/unsupported.txt" ] && continue
        if [ -n "${RESUME:-}" ] && [ -s "$DIR/$name/$round.out" ] && [ -s "$DIR/$name/$round.server" ]; then continue; fi
        bin="${cmd%% *}"
        [ -x "$bin" ] || { echo "$name: not run: $bin was not built" >>"$NOTES"; continue; }
        cmd="${cmd//@WL@/$WL}"
        # shellcheck disable=SC2206 # words split on spaces; the Accept header is one word
        words=($cmd)
        words=("${words[@]//@META@/$META}")
        mkdir -p "$DIR/$name"
        echo "$group" >"$DIR/$name/group"
        if ! run_client "$name" "$round" "${words[@]}" && [[ "$group" == *probe* ]] && [ "$round" = 1 ]; then
            { echo "not supported by this build of tattler (its first run failed):"; tail -n 3 "$DIR/$name/$round.err"; } >"$DIR/$name/unsupported.txt"
            rm -f "$DIR/$name/$round".*
            log "$name: not supported yet; skipped"
        fi
        sleep 1
    done
    log "round $round/$ROUNDS done"
done

# ---------------------------------------------------------------- report
# What the server side holds: peak and current RSS of the apiserver and etcd
# (since they started: the load and every run), and etcd's database size.
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
db="$(curl -fsS --max-time 10 -X POST "$ETCD_ENDPOINT/v3/maintenance/status" -d '{}' 2>/dev/null | grep -o '"dbSize":"[0-9]*"' | grep -o '[0-9][0-9]*' || echo 0)"
echo "{\"apiserver_peak_rss_kb\":$(kb "$APISERVER_PID" VmHWM),\"apiserver_rss_kb\":$(kb "$APISERVER_PID" VmRSS),\"etcd_peak_rss_kb\":$(kb "$ETCD_PID" VmHWM),\"etcd_rss_kb\":$(kb "$ETCD_PID" VmRSS),\"etcd_db_bytes\":${db:-0}}" >"$DIR/server-mem.json"
write_machine_info "$DIR/machine.txt" "$STARTED" "$OUT/build-info.txt"
echo "apiserver=$("$K8S_BIN/kube-apiserver" --version 2>/dev/null || echo unknown)" >>"$DIR/machine.txt"
# The etcd tests/k8s builds prints no version: its cache directory names it (vK8S-vETCD/bin).
echo "k8s_bin=$K8S_BIN" >>"$DIR/machine.txt"
echo "curl=$(curl --version | head -n 1)" >>"$DIR/machine.txt"
cp "$NOTES" "$DIR/build-notes.txt"
python3 "$BENCH/report_real.py" "$DIR" "$BENCH/results.md" "$BENCH/results-real.json"
log "wrote the real-apiserver section of bench/results.md and bench/results-real.json"
