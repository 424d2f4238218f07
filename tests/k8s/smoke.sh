#!/usr/bin/env bash
# End-to-end check of cluster.sh: watch-list bookmark, RBAC 403, WatchList=false,
# restart-apiserver, compaction -> 410 Expired, down. Exits non-zero on failure.
#   tests/k8s/smoke.sh [WORKDIR]      (default: a fresh mktemp dir, removed at the end)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="${1:-$(mktemp -d /tmp/tattler-k8s-smoke.XXXXXX)}"
cs="$here/cluster.sh"
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }
cleanup() {
  local d
  for d in main nowl nocache; do [[ -d "$work/$d" ]] && "$cs" down "$work/$d" >/dev/null 2>&1 || true; done
  [[ $fail == 0 && -z "${KEEP:-}" ]] && rm -rf "$work" || true
}
trap cleanup EXIT

q() { # dir token-file path [curl args...] -> body (stream cut after 3 s)
  local dir="$1" tf="$2" path="$3"; shift 3
  # shellcheck disable=SC1091
  . "$dir/env"
  curl -sS --max-time 3 --cacert "$K8S_CA" -H "Authorization: Bearer $(cat "$tf")" "$@" \
    "$K8S_SERVER$path" 2>/dev/null || true
}
WL='/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true'

"$cs" up "$work/main" >/dev/null
. "$work/main/env"
"$K8S_BIN_DIR/kubectl" --kubeconfig "$work/main/kubeconfig" create configmap smoke --from-literal=a=b >/dev/null

out="$(q "$work/main" "$work/main/admin.token" "$WL")"
if grep -q '"type":"ADDED".*"name":"smoke"' <<<"$out" && grep -q '"type":"BOOKMARK".*"k8s.io/initial-events-end":"true"' <<<"$out"; then
  ok "watch-list: ADDED + initial-events-end BOOKMARK"
else bad "watch-list: $out"; fi

code="$(q "$work/main" "$work/main/nobody.token" "$WL" -o /dev/null -w '%{http_code}')"
[[ "$code" == 403 ]] && ok "nobody gets 403" || bad "nobody got $code"

"$cs" restart-apiserver "$work/main" >/dev/null 2>&1 && ok "restart-apiserver" || bad "restart-apiserver"
out="$(q "$work/main" "$work/main/admin.token" "$WL")"
grep -q 'initial-events-end' <<<"$out" && ok "watch-list after restart" || bad "watch-list after restart: $out"

"$cs" up "$work/nowl" --feature-gates=WatchList=false >/dev/null
out="$(q "$work/nowl" "$work/nowl/admin.token" "$WL" -w '\nHTTP %{http_code}')"
grep -q 'HTTP 422' <<<"$out" && grep -q 'sendInitialEvents is forbidden' <<<"$out" \
  && ok "WatchList=false: 422 sendInitialEvents forbidden" || bad "WatchList=false: $out"
"$cs" down "$work/nowl" >/dev/null 2>&1

"$cs" up "$work/nocache" --watch-cache=false >/dev/null
. "$work/nocache/env"
rv="$("$K8S_BIN_DIR/kubectl" --kubeconfig "$work/nocache/kubeconfig" create configmap c0 -o jsonpath='{.metadata.resourceVersion}')"
# Compacting at revision R keeps R itself, and a watch from rv starts at rv+1:
# two more writes so that rv+1 < R.
"$K8S_BIN_DIR/kubectl" --kubeconfig "$work/nocache/kubeconfig" create configmap c1 >/dev/null
"$K8S_BIN_DIR/kubectl" --kubeconfig "$work/nocache/kubeconfig" create configmap c2 >/dev/null
"$cs" compact "$work/nocache" >/dev/null 2>&1 && ok "compact" || bad "compact"
out="$(q "$work/nocache" "$work/nocache/admin.token" "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=$rv")"
grep -q '"type":"ERROR".*"code":410' <<<"$out" && ok "watch from compacted RV: 410 Expired" || bad "410: $out"

"$cs" down "$work/main" >/dev/null 2>&1
"$cs" down "$work/nocache" >/dev/null 2>&1
if ! ps -eo args | grep -F -- "$work/" | grep -qv grep; then ok "down stopped everything"; else bad "processes left"; fi

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
