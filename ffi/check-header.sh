#!/usr/bin/env bash
# Fails when include/tattler.h is not what ffi/src generates (CI runs this).
# Fix with ffi/gen-header.sh and commit the header.
set -euo pipefail

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$ffi_dir/gen-header.sh" "$tmp/tattler.h"
if ! diff -u "$root/include/tattler.h" "$tmp/tattler.h"; then
    echo "check-header: include/tattler.h is stale; run ffi/gen-header.sh and commit it" >&2
    exit 1
fi
echo "check-header: include/tattler.h is up to date"
