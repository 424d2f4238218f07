#!/usr/bin/env bash
# Regenerates include/tattler.h from ffi/src with the pinned cbindgen.
#   ffi/gen-header.sh            writes include/tattler.h
#   ffi/gen-header.sh OUT.h      writes OUT.h instead (check-header.sh uses this)
# Installs the pinned cbindgen with `cargo install --locked` when it is missing
# or another version: a different cbindgen formats the header differently.
set -euo pipefail

CBINDGEN_VERSION=0.29.4

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
out=${1:-$root/include/tattler.h}

have=$(cbindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ "$have" != "$CBINDGEN_VERSION" ]]; then
    echo "gen-header: installing cbindgen $CBINDGEN_VERSION (found: ${have:-none})" >&2
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked --quiet
fi

mkdir -p "$(dirname "$out")"
# cbindgen warns about every private static it skips; only errors matter.
cbindgen --quiet --config "$ffi_dir/cbindgen.toml" --crate tattler-ffi --output "$out" "$ffi_dir"
