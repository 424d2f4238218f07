#!/usr/bin/env bash
# No test's time limit may include a one-time build: the real cluster's
# limit starts inside its fixture (tests/k8s/fixture.rs, Cluster::up), once
# kube-apiserver, kubectl and etcd are built and the cluster is up. A test
# file that brings a cluster up starts no timer of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
  [[ "$f" == tests/k8s/fixture.rs ]] && continue
  hits=$(grep -nE 'Watchdog|with_cleanup' "$f" || true)
  if [[ -n "$hits" ]]; then
    echo "timers.sh: $f brings a real cluster up and starts a timer of its own (pass the limit to Cluster::up):" >&2
    echo "$hits" >&2
    bad=1
  fi
done < <(grep -rlE 'Cluster::up\(' tests ffi/tests --include=*.rs)
# The fixture's limit starts after the untimed build and bring-up.
awk '/pub fn up\(/{inside=1} inside && /bin_dir\(\)/{built=NR} inside && /with_cleanup/{armed=NR; exit}
     END{ if (!(built && armed && built < armed)) { print "timers.sh: Cluster::up must build (bin_dir) before it arms its limit" > "/dev/stderr"; exit 1 } }' \
  tests/k8s/fixture.rs || bad=1
exit $bad
