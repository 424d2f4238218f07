#!/usr/bin/env bash
# wire/, objects/ and the coordination decisions and documents (lease.rs, lease_shares.rs,
# checkpoint_configmap.rs) decide, they do not act: no network, files, threads,
# clock or log outside their tests. A grep is enough to keep it so.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
for f in src/wire/*.rs src/objects/*.rs src/coordination/lease.rs src/coordination/lease_shares.rs src/coordination/checkpoint_configmap.rs; do
  # Only the code before the file's tests.
  hits=$(awk '/^#\[cfg\(test\)\]/{exit} {print FILENAME":"FNR": "$0}' "$f" |
    grep -E 'std::(net|fs|thread|process)|ureq::|Instant::now|SystemTime::now|log::(trace|debug|info|warn|error)!' || true)
  if [[ -n "$hits" ]]; then
    echo "pure.sh: $f does I/O, reads the clock or logs:" >&2
    echo "$hits" >&2
    bad=1
  fi
done
exit $bad
