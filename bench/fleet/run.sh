#!/usr/bin/env bash
# The fleet benchmark (issue 29): A node agents on one real kube-apiserver,
# tattler's against client-go's (the same scopes with metadata informers, and
# the agent people write by default: typed informers on full objects), at
# start, per 1,000 writes of churn, after an apiserver restart and after a
# compaction that expires every agent's resourceVersion.
#
#   bench/fleet/run.sh                       100 agents, 100 nodes, 3,000 pods, 20 services
#   AGENTS=5 NODES=5 PODS=150 CHURN=300 bench/fleet/run.sh    a quick look
#
# Environment: AGENTS (100), NODES (100), PODS (3000), SERVICES (20), CHURN
# (2000 pod updates), RATE (50 writes/s), VARIANTS ("tattler client-go-metadata
# client-go-typed"), WAIT (240 s a phase may wait for its agents), OUTAGE (60 s
# the apiserver is down in the outage phase), TLS_N (1000 connections per round of
# the baseline's TLS probe), FLEET_OUT (bench/out/fleet: the raw outputs),
# SKIP_BUILD=1 (use the binaries built before; the report names the commit they
# were built from, bench/target/release/BUILT_AT), KEEP=1 (leave the cluster
# up), NO_REPORT=1.
#
# Writes bench/fleet/results.md and results.json (the report), raw outputs in
# $FLEET_OUT (not committed). Several runs into one report:
#   FLEET_OUT=bench/out/fleet-run1 NO_REPORT=1 bench/fleet/run.sh   (and run2, run3)
#   bench/fleet/report.py bench/out/fleet-run{1,2,3} bench/fleet/results.md bench/fleet/results.json
# Needs cargo, go, python3, curl, ss; root (or CAP_NET_RAW) to count SYNs on lo.
set -euo pipefail

FLEET="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH="$(cd "$FLEET/.." && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
OUT="$(mkdir -p "${FLEET_OUT:-$BENCH/out/fleet}" && cd "${FLEET_OUT:-$BENCH/out/fleet}" && pwd)"
CLUSTER="$OUT/cluster"
export CARGO_TARGET_DIR="$BENCH/target"
export FLEET_BIN="$BENCH/target/release"
export AGENTS="${AGENTS:-100}" NODES="${NODES:-100}" CHURN="${CHURN:-2000}" RATE="${RATE:-50}"
PODS="${PODS:-3000}"
SERVICES="${SERVICES:-20}"
K8S="$ROOT/tests/k8s"
log() { printf '[fleet %s] %s\n' "$(date +%T)" "$*" >&2; }

mkdir -p "$OUT" "$FLEET_BIN"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
INVOCATION="bench/fleet/run.sh  (AGENTS=$AGENTS NODES=$NODES PODS=$PODS SERVICES=$SERVICES CHURN=$CHURN RATE=$RATE OUTAGE=${OUTAGE:-60}${VARIANTS:+ VARIANTS=\"$VARIANTS\"}${FLEET_OUT:+ FLEET_OUT=$FLEET_OUT})"

if [ -z "${SKIP_BUILD:-}" ]; then
    log "build: tattler's agent, client-go's agent, the loaders"
    # What the agent is built from, said before the build reads it: another
    # engineer may edit src/ while a run goes on, and the report names this.
    BUILT_COMMIT="$(git -C "$ROOT" rev-parse --short HEAD)"
    BUILT_DIRTY="$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock | wc -l)"
    nice -n 10 cargo build --release --manifest-path "$FLEET/agent/Cargo.toml" >"$OUT/build-agent.log" 2>&1 ||
        { tail -n 30 "$OUT/build-agent.log" >&2; exit 1; }
    (cd "$FLEET/client-go-agent" && nice -n 10 go build -o "$FLEET_BIN/client-go-agent" .)
    (cd "$FLEET/loader" && nice -n 10 go build -o "$FLEET_BIN/fleet-loader" .)
    (cd "$BENCH/real/loader" && nice -n 10 go build -o "$FLEET_BIN/loader" .)
    printf 'tattler_commit=%s\ntattler_dirty=%s\nbuilt=%s\n' "$BUILT_COMMIT" "$BUILT_DIRTY" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$FLEET_BIN/BUILT_AT"
fi
[ -f "$FLEET_BIN/BUILT_AT" ] || { log "no $FLEET_BIN/BUILT_AT: build once without SKIP_BUILD"; exit 1; }
K8S_BIN="${TATTLER_K8S_BIN:-$("$K8S/build.sh" | tail -n 1)}"
export TATTLER_K8S_BIN="$K8S_BIN"

[ -f "$CLUSTER/env" ] && "$K8S/cluster.sh" down "$CLUSTER" >/dev/null 2>&1 || true
rm -rf "$CLUSTER" "$OUT"/{tattler,client-go-*,raw.json}
mkdir -p "$CLUSTER"
log "starting kube-apiserver + etcd (audit log for the agents' ServiceAccount, profiling on)"
"$K8S/cluster.sh" up "$CLUSTER" --profiling=true \
    --audit-policy-file="$FLEET/audit-policy.yaml" --audit-log-path="$CLUSTER/audit.log" \
    --audit-log-maxsize=8192 --audit-log-maxbackup=1 >"$OUT/cluster-up.log" 2>&1 ||
    { tail -n 40 "$OUT/cluster-up.log" >&2; exit 1; }
stop_cluster() {
    if [ -z "${KEEP:-}" ]; then "$K8S/cluster.sh" down "$CLUSTER" >/dev/null 2>&1 || true
    else log "the cluster keeps running (KEEP=1): $K8S/cluster.sh down $CLUSTER"; fi
}
trap stop_cluster EXIT
# shellcheck disable=SC1091
. "$CLUSTER/env"
KUBECTL=("$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG")

log "the agents' ServiceAccount, its token and kubeconfig"
"${KUBECTL[@]}" apply -f "$FLEET/agent-rbac.yaml" >/dev/null
TOKEN="$("${KUBECTL[@]}" create token agent -n fleet --duration=24h)"
cat >"$OUT/agent.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: "$K8S_SERVER", certificate-authority: "$K8S_CA"}
users:
- name: agent
  user: {token: "$TOKEN"}
contexts:
- name: agent
  context: {cluster: fleet, user: agent}
current-context: agent
KC
chmod 600 "$OUT/agent.kubeconfig"

log "loading $NODES nodes, $PODS pods, $SERVICES services"
FL=("$FLEET_BIN/fleet-loader" -server "$K8S_SERVER" -ca "$K8S_CA" -token-file "$K8S_TOKEN_FILE")
"${FL[@]}" nodes -n "$NODES" >"$OUT/load-nodes.json"
"${FL[@]}" services -n "$SERVICES" >"$OUT/load-services.json"
"$FLEET_BIN/loader" -server "$K8S_SERVER" -ca "$K8S_CA" -token-file "$K8S_TOKEN_FILE" -n "$PODS" -c 16 -nodes "$NODES" \
    >"$OUT/load-pods.json" 2>"$OUT/load-pods.err" || { tail -n 5 "$OUT/load-pods.err" >&2; exit 1; }
log "loaded: $(cat "$OUT/load-pods.json")"

python3 "$FLEET/fleet.py" "$OUT" "$CLUSTER" "$K8S_BIN"

{
    echo "invocation=$INVOCATION"
    echo "started=$STARTED"
    echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    # The commit the agent was built from (not HEAD now: SKIP_BUILD runs reuse a build).
    grep -E '^(tattler_commit|tattler_dirty|built)=' "$FLEET_BIN/BUILT_AT"
    echo "head_at_report=$(git -C "$ROOT" rev-parse --short HEAD)"
    echo "nproc=$(nproc)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "mem=$(grep MemTotal /proc/meminfo | awk '{print $2 " kB"}')"
    echo "kernel=$(uname -r)"
    echo "apiserver=$("$K8S_BIN/kube-apiserver" --version 2>/dev/null)"
    echo "client_go=$(awk '$1=="k8s.io/client-go"{print $2}' "$FLEET/client-go-agent/go.mod")"
    echo "go=$(go version)"
    echo "rustc=$(rustc --version)"
    echo "load_pods=$(cat "$OUT/load-pods.json")"
    echo "load_nodes=$(cat "$OUT/load-nodes.json")"
    echo "load_services=$(cat "$OUT/load-services.json")"
    echo "services=$SERVICES"
    echo "pods=$PODS"
} >"$OUT/machine.txt"
[ -n "${NO_REPORT:-}" ] || python3 "$FLEET/report.py" "$OUT" "$FLEET/results.md" "$FLEET/results.json"
log "done: $OUT${NO_REPORT:+ (no report: NO_REPORT=1)}"
