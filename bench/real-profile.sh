#!/usr/bin/env bash
# Where a tattler client's CPU goes while it syncs from a real kube-apiserver:
# perf stat, and a DWARF call-graph profile whose samples are put into
# buckets (TLS, HTTP/de-chunking, decoding, scrubbing, state and hand-off, the
# consumer, the kernel) by real-profile.py.
#
#   KEEP=1 bench/real.sh N                  first: a cluster with N pods that stays up
#   bench/real-profile.sh [CLIENT] [CONFIG] default: tattler-rust tattler.json
#   e.g. bench/real-profile.sh tattler-rust tattler-noscrub.json
#
# Writes bench/out/real/profile/CLIENT-CONFIG-N/: stat.txt, threads.txt,
# children.txt (perf report, inclusive), buckets.txt, callgraph.data.
set -eu

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
T="$BENCH/target/release"
CLUSTER="$BENCH/out/real/cluster"
CLIENT="${1:-tattler-rust}"
CONF="${2:-tattler.json}"
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
"$ROOT/tests/k8s/cluster.sh" status "$CLUSTER" >/dev/null 2>&1 ||
    { echo "no cluster running in $CLUSTER: run KEEP=1 bench/real.sh N first" >&2; exit 1; }
read -r N _ <"$CLUSTER/loaded"
CFG="$BENCH/out/real/$N/config/$CONF"
[ -f "$CFG" ] || { echo "$CFG: not found (written by bench/real.sh $N)" >&2; exit 1; }
DIR="$BENCH/out/real/profile/$CLIENT-${CONF%.json}-$N"
mkdir -p "$DIR"

{
    echo "# $(date -u +%FT%TZ) N=$N: $CLIENT $CFG"
    perf stat -e task-clock,context-switches,cpu-migrations,page-faults "$T/$CLIENT" "$CFG" 2>&1
} >"$DIR/stat.txt"
perf record -q -F 999 --call-graph dwarf,16384 -o "$DIR/callgraph.data" "$T/$CLIENT" "$CFG" >"$DIR/run.out" 2>&1
perf report -i "$DIR/callgraph.data" --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' >"$DIR/threads.txt" || true
perf report -i "$DIR/callgraph.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^$' | head -150 >"$DIR/children.txt" || true
perf script -i "$DIR/callgraph.data" 2>/dev/null | python3 "$BENCH/real-profile.py" >"$DIR/buckets.txt"
cat "$DIR/buckets.txt"
echo "wrote ${DIR#"$ROOT"/}: stat.txt threads.txt children.txt buckets.txt (perf report -i ${DIR#"$ROOT"/}/callgraph.data for more)"
