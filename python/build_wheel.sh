#!/usr/bin/env bash
# Builds the kube-tattler wheel, carrying libtattler.so:
#
#   python/build_wheel.sh [OUT_DIR]      (default: target/wheels)
#
# The library is what `make install` builds (ffi/install.sh --build-only:
# cargo's dist profile, stripped, its exports checked); the wheel is
# py3-none-PLATFORM (ctypes: any Python 3). Needs cargo, binutils and pip;
# pip fetches setuptools from PyPI for the build (or from its cache).
# Prints the wheel's path on the last line.
set -euo pipefail
py_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$py_dir")
out=${1:-$root/target/wheels}
python=${PYTHON:-python3}

built=$("$root/ffi/install.sh" --build-only)
lib=$(sed -n 's/.* and \(.*\/libtattler\.so\)$/\1/p' <<<"$built")
[[ -f "$lib" ]] || { echo "build_wheel.sh: ffi/install.sh did not say where libtattler.so is: $built" >&2; exit 1; }

mkdir -p "$out"
rm -rf "$py_dir/build" "$py_dir"/*.egg-info "$out"/kube_tattler-*.whl
KUBE_TATTLER_BUILD_LIB=$lib "$python" -m pip wheel --quiet --no-deps --wheel-dir "$out" "$py_dir"
rm -rf "$py_dir/build" "$py_dir"/*.egg-info
wheel=$(ls "$out"/kube_tattler-*.whl)
case "$wheel" in
*-py3-none-any.whl) echo "build_wheel.sh: $wheel is a pure wheel: it must carry libtattler.so" >&2; exit 1 ;;
esac
"$python" - "$wheel" <<'PY'
import os, sys, zipfile
lib = zipfile.ZipFile(sys.argv[1]).getinfo("kube_tattler/libtattler.so")
print("build_wheel.sh: %s: %d bytes, libtattler.so %d bytes (%d compressed)"
      % (os.path.basename(sys.argv[1]), os.path.getsize(sys.argv[1]), lib.file_size, lib.compress_size))
PY
echo "$wheel"
