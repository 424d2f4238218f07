#!/usr/bin/env bash
# Issue 23: what a metadata-only sync costs the apiserver over protobuf
# (encoding auto) and over JSON (encoding json), and what it costs tattler.
#
#   bench/real-protobuf.sh CLUSTER_DIR [ROUNDS]     ROUNDS default 3
#
# CLUSTER_DIR: a running tests/k8s/cluster.sh cluster with the pods already
# there (e.g. bench/real/loader, or KEEP=1 bench/real.sh N, whose cluster is
# bench/out/real/cluster). TATTLER_RUST: the tattler-rust bench client, built
# in release (default $CARGO_TARGET_DIR/release/tattler-rust, or bench/target).
# Per run: the apiserver's utime+stime (/proc/PID/stat) from before the client
# starts to 0.5 s after it exits, and the client's user+sys and wall time
# (/usr/bin/time). The encodings take turns within each round.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:?usage: bench/real-protobuf.sh CLUSTER_DIR [ROUNDS]}"
ROUNDS="${2:-3}"
BIN="${TATTLER_RUST:-${CARGO_TARGET_DIR:-$BENCH/target}/release/tattler-rust}"
eval "$("$BENCH/../tests/k8s/cluster.sh" env "$DIR")"
TCK="$(getconf CLK_TCK)"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
OUT="$(mktemp -d)"
for enc in auto json; do
    printf '{"kubeconfig":"%s","resources":[{"resource":"pods","metadata_only":true,"encoding":"%s"}]}\n' \
        "$KUBECONFIG" "$enc" >"$OUT/$enc.json"
done
printf '%-6s %5s %8s %14s %13s %7s %10s\n' encoding round objects apiserver_cpu_s tattler_cpu_s wall_s MB_read
for r in $(seq 1 "$ROUNDS"); do
    for enc in auto json; do
        a0="$(ticks "$APISERVER_PID")"
        /usr/bin/time -f '%U %S %e' -o "$OUT/time" "$BIN" "$OUT/$enc.json" >"$OUT/line"
        sleep 0.5
        a1="$(ticks "$APISERVER_PID")"
        python3 - "$enc" "$r" "$OUT/line" "$OUT/time" "$((a1 - a0))" "$TCK" <<'PY'
import json, sys
enc, r, line, tm, ticks, tck = sys.argv[1:]
d = json.loads(open(line).read().strip().splitlines()[-1])
u, s, e = open(tm).read().split()[-3:]
print(f"{enc:6} {r:>5} {d['objects']:>8} {int(ticks)/int(tck):>14.2f} {float(u)+float(s):>13.2f} {float(e):>7.2f} {d['bytes']/1e6:>10.1f}")
PY
    done
done
rm -rf "$OUT"
