#!/usr/bin/env bash
# Where a client's time goes during the initial sync: perf stat (context
# switches, CPU), a flat perf profile at N pods, and a call-graph profile
# (DWARF unwinding, so at most 20,000 pods to keep it small).
#
#   bench/profile.sh [N] [CLIENT ARGS...]     default: 100000 tattler-rust
#   e.g. bench/profile.sh 100000 tattler-rust --noscrub
#
# Needs the binaries from bench/run.sh (or SKIP_BUILD=1 bench/run.sh having
# built them) and perf. Writes bench/out/profile/<client>-<N>/.
set -eu

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
T="$BENCH/target/release"
N="${1:-100000}"
shift || true
[ $# -eq 0 ] && set -- tattler-rust
CLIENT="$1"
shift
NAME="$CLIENT$(printf '%s' "$*" | tr -c 'a-zA-Z0-9' '-')"
DIR="$BENCH/out/profile/$NAME-$N"
mkdir -p "$DIR"
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

SERVER_PID=""
stop() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true; SERVER_PID=""; }
trap stop EXIT
serve() {
    "$T/replay" --n "$1" >"$DIR/server.out" 2>/dev/null &
    SERVER_PID=$!
    until [ -f "$DIR/server.out" ] && [ "$(wc -l <"$DIR/server.out")" -ge 2 ]; do sleep 0.1; done
    URL="$(head -n 1 "$DIR/server.out")"
}

serve "$N"
{
    echo "# $(date -u +%FT%TZ) N=$N: $CLIENT URL $*"
    perf stat -e task-clock,context-switches,cpu-migrations,page-faults "$T/$CLIENT" "$URL" "$@" 2>&1
} >"$DIR/stat.txt"
perf record -q -F 1999 -o "$DIR/flat.data" "$T/$CLIENT" "$URL" "$@" >/dev/null 2>&1
perf report -i "$DIR/flat.data" --no-children --sort comm,dso,symbol --stdio 2>/dev/null | grep -v '^$' | head -60 >"$DIR/flat.txt"
perf report -i "$DIR/flat.data" --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' >"$DIR/threads.txt"
stop

small=$((N < 20000 ? N : 20000))
serve "$small"
perf record -q -F 999 --call-graph dwarf,16384 -o "$DIR/callgraph.data" "$T/$CLIENT" "$URL" "$@" >/dev/null 2>&1
perf report -i "$DIR/callgraph.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^$' | head -150 >"$DIR/children.txt"
stop
echo "wrote $DIR: stat.txt flat.txt threads.txt children.txt (perf report -i $DIR/*.data for more)"
