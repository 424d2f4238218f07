#!/usr/bin/env bash
# The Python release: TARGET/dist/kube_tattler-VERSION-py3-none-manylinux_2_X_x86_64.whl.
#
#   dist/wheel.sh       (after ffi/install.sh --build-only, as dist/all.sh runs it)
#
# The wheel carries libtattler.so (python/build_wheel.sh). Its platform tag is
# the oldest glibc the library runs on: the newest GLIBC_ symbol version the
# stripped libtattler.so needs (objdump -T), which is what the build machine's
# glibc makes it (Debian 12, glibc 2.36: pthread_* and dlsym are
# GLIBC_2.34 there). auditwheel (PyPI, in a virtual environment under
# TARGET/dist-tools) must confirm that tag: `auditwheel show` names the
# manylinux policy the wheel is consistent with, and the two must be equal.
# Needs python3 with pip and venv, binutils, cargo (through build_wheel.sh),
# and PyPI or pip's cache (setuptools for the build, auditwheel).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
python=${PYTHON:-python3}
out=$target/dist
so=$out/stage/libtattler.so
[[ -f "$so" ]] || { echo "dist/wheel.sh: no $so: run ffi/install.sh --build-only first" >&2; exit 1; }

floor=$(objdump -T "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
[[ "$floor" =~ ^2\.([0-9]+)$ ]] || { echo "dist/wheel.sh: no GLIBC_2.N version in $so's symbols ('$floor')" >&2; exit 1; }
platform=manylinux_2_${BASH_REMATCH[1]}_$(uname -m)
echo "dist/wheel.sh: libtattler.so needs glibc $floor or later: $platform"

tools=$target/dist-tools/venv
if [[ ! -x "$tools/bin/auditwheel" ]]; then
    "$python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check auditwheel
fi

rm -f "$out"/kube_tattler-*.whl
wheel=$(KUBE_TATTLER_WHEEL_PLATFORM=$platform PYTHON=$python "$root/python/build_wheel.sh" "$out" | tail -1)
[[ "$wheel" == *"-py3-none-$platform.whl" ]] || { echo "dist/wheel.sh: the wheel is $wheel, not $platform" >&2; exit 1; }
shown=$("$tools/bin/auditwheel" show "$wheel")
echo "$shown" | sed 's/^/auditwheel: /'
# auditwheel wraps its lines: join them before reading the tag.
confirmed=$(tr '\n' ' ' <<<"$shown" | grep -o 'consistent with the following platform tag: *"[^"]*"' | sed 's/.*"\(.*\)"/\1/')
[[ "$confirmed" == "$platform" ]] ||
    { echo "dist/wheel.sh: auditwheel says '${confirmed:-nothing}', the wheel is tagged $platform" >&2; exit 1; }
echo "dist/wheel.sh: $wheel (auditwheel: $confirmed)"
