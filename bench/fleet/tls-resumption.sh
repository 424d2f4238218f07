#!/usr/bin/env bash
# How many of a reader's TLS handshakes resume a session across apiserver
# restarts (issue 36 item 5): one kubectl-tattler (4 streams: pods, services,
# namespaces, nodes) on the tests' real kube-apiserver, the apiserver taken
# down twice, the handshakes counted from tattler's trace log.
#
#   bench/fleet/tls-resumption.sh           down 3 s each time (as the fleet's
#                                           restart: its graceful stop takes ~10 s)
#   DOWN=0 bench/fleet/tls-resumption.sh    restarted at once (cluster.sh restart-apiserver)
#
# Prints "full: N  resumed: M" (the first 4 are the start's, all full).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
K8S="$ROOT/tests/k8s"
export TATTLER_K8S_BIN="${TATTLER_K8S_BIN:-$("$K8S/build.sh" | tail -n 1)}"
D="$(mktemp -d)"
trap '"$K8S/cluster.sh" down "$D/c" >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
"$K8S/cluster.sh" up "$D/c" >"$D/up.log" 2>&1
eval "$("$K8S/cluster.sh" env "$D/c")"
cargo build -q -p kube-tattler-cli
target/debug/kubectl-tattler --kubeconfig "$KUBECONFIG" pods,services,namespaces,nodes -A \
    -o name -v 6 >/dev/null 2>"$D/err" &
P=$!
sleep 5
for _ in 1 2; do
    if [ "${DOWN:-3}" = 0 ]; then
        "$K8S/cluster.sh" restart-apiserver "$D/c" >>"$D/up.log" 2>&1
    else
        "$K8S/cluster.sh" stop-apiserver "$D/c" >>"$D/up.log" 2>&1
        sleep "${DOWN:-3}"
        "$K8S/cluster.sh" start-apiserver "$D/c" >>"$D/up.log" 2>&1
    fi
    sleep 10
done
kill -TERM "$P"
wait "$P" || true
echo "full: $(grep -c 'TLS handshake: full' "$D/err")  resumed: $(grep -c 'TLS handshake: resumed' "$D/err")"
