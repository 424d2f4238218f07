#!/usr/bin/env bash
# Bytes and kube-apiserver CPU of the initial state tattler reads, by the
# representation asked for: JSON, protobuf (built-in kinds), CBOR (custom
# resources, alpha) and JSON with KEP-5958's `;drop=metadata.managedFields`.
#
#   tests/k8s/measure.sh [VERSION] [N] [REPS]   (1.37 | 1.36, default 1.37; 1000 objects; 20 reps)
#
# Brings up its own cluster (CBORServingAndStorage on), creates N ConfigMaps
# and N Widgets (a custom resource), each written by two field managers as
# in a real cluster (create, then label), and reads each set REPS times as a
# LIST and as a watch-list (sendInitialEvents, ended by timeoutSeconds=1),
# both served from the watch cache. CPU is kube-apiserver's utime+stime
# from /proc over the REPS requests, per request; bytes are the body's.
# curl goes as "tattler-measure": the apiserver pretty-prints JSON for a
# User-Agent starting with curl. It prints one table; nothing else reads it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-1.37}" n="${2:-1000}" reps="${3:-20}"
work="$(mktemp -d /tmp/tattler-measure.XXXXXX)"
trap '"$here/cluster.sh" down "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

bin="$("$here/build.sh" "$version" | tail -n 1)"
TATTLER_K8S_BIN="$bin" "$here/cluster.sh" up "$work" --feature-gates=CBORServingAndStorage=true >/dev/null
# shellcheck disable=SC1091
. "$work/env"
kubectl() { "$bin/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

kubectl create namespace m >/dev/null
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
kubectl wait --for condition=established --timeout=60s crd/widgets.example.com >/dev/null
python3 - "$n" >"$work/objects.json" <<'EOF'
import json, sys
n = int(sys.argv[1])
items = []
for i in range(n):
    data = {f"key-{k}": f"value-{i}-{k}" for k in range(5)}
    items.append({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"cm-{i}", "namespace": "m", "labels": {"app": "demo", "i": str(i)}},
                  "data": data})
    items.append({"apiVersion": "example.com/v1", "kind": "Widget",
                  "metadata": {"name": f"w-{i}", "namespace": "m", "labels": {"app": "demo", "i": str(i)}},
                  "spec": {"size": i, "color": "blue", "ports": [80, 443], "owner": f"team-{i % 7}"}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
EOF
kubectl create -f "$work/objects.json" >/dev/null
kubectl -n m label configmaps,widgets --all tier=measured >/dev/null

ticks() { awk '{print $14 + $15}' "/proc/$APISERVER_PID/stat"; }
hz="$(getconf CLK_TCK)"
token="$(cat "$K8S_TOKEN_FILE")"

# measure LABEL PATH ACCEPT [ACCEPT-ENCODING] -> one table row
measure() {
  local label="$1" path="$2" accept="$3" enc="${4:-identity}" i before after bytes=0 b
  # One untimed request first: the watch cache keeps a serialization per
  # encoder, made at the first request that needs it.
  curl -sS --http1.1 -A tattler-measure --cacert "$K8S_CA" -H "Authorization: Bearer $token" -H "Accept: $accept" \
    -H "Accept-Encoding: $enc" -o /dev/null "$K8S_SERVER$path"
  before="$(ticks)"
  for ((i = 0; i < reps; i++)); do
    b="$(curl -sS --http1.1 -A tattler-measure --cacert "$K8S_CA" -H "Authorization: Bearer $token" -H "Accept: $accept" \
      -H "Accept-Encoding: $enc" -o /dev/null -w '%{size_download}' "$K8S_SERVER$path")"
    bytes=$((bytes + b))
  done
  after="$(ticks)"
  printf '%-44s %12d %10.1f\n' "$label" $((bytes / reps)) \
    "$(echo "($after - $before) * 1000 / $hz / $reps" | bc -l)"
}

wl='watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1'
cms=/api/v1/namespaces/m/configmaps
ws=/apis/example.com/v1/namespaces/m/widgets
echo "kube-apiserver $("$bin/kube-apiserver" --version | cut -d' ' -f2), $n objects each, $reps reps, $(nproc) cores"
printf '%-44s %12s %10s\n' "what" "bytes" "cpu ms"
measure "configmaps LIST json" "$cms" application/json
measure "configmaps LIST json;drop=managedFields" "$cms" "application/json;drop=metadata.managedFields"
measure "configmaps LIST protobuf" "$cms" application/vnd.kubernetes.protobuf
measure "configmaps watch-list json" "$cms?$wl" application/json
measure "configmaps watch-list protobuf" "$cms?$wl" application/vnd.kubernetes.protobuf
measure "configmaps watch-list json gzip" "$cms?$wl" application/json gzip
measure "configmaps watch-list protobuf gzip" "$cms?$wl" application/vnd.kubernetes.protobuf gzip
measure "configmaps LIST json gzip" "$cms" application/json gzip
measure "widgets LIST json" "$ws" application/json
measure "widgets LIST json;drop=managedFields" "$ws" "application/json;drop=metadata.managedFields"
measure "widgets LIST cbor" "$ws" application/cbor
measure "widgets watch-list json" "$ws?$wl" application/json
measure "widgets watch-list cbor" "$ws?$wl" application/cbor
# What managedFields weigh in the JSON: the same LIST with them cut here.
for what in configmaps widgets; do
  path=$cms; [[ $what == widgets ]] && path=$ws
  curl -sS --http1.1 -A tattler-measure --cacert "$K8S_CA" -H "Authorization: Bearer $token" "$K8S_SERVER$path" \
    | python3 -c '
import json, sys
body = sys.stdin.buffer.read()
v = json.loads(body)
for o in v["items"]:
    o["metadata"].pop("managedFields", None)
cut = json.dumps(v, separators=(",", ":")).encode()
full = json.dumps(json.loads(body), separators=(",", ":")).encode()
print("%-44s %12d %10s" % (sys.argv[1] + " LIST json, managedFields cut here", len(cut), "-"))
print("%-44s %12d %10s" % ("  (the same re-encoded with them)", len(full), "-"))
' "$what"
done
