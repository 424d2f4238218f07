#!/usr/bin/env bash
# A Python user: the release wheel installed with pip into a fresh virtual
# environment, with no cargo on PATH and no package index (pip --no-index,
# no network), then the package's example streams from the fake apiserver
# through the library the wheel carries.
#
#   dist/check/python.sh   (dist/check/all.sh runs it after make dist)
#
# Prints the time a user sees for `pip install` of the wheel.
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
wheels=("$dist"/kube_tattler-"$version"-py3-none-manylinux_*.whl)
[[ -f "${wheels[0]}" ]] || fail "no $dist/kube_tattler-$version-py3-none-manylinux_*.whl: make dist"
wheel=${wheels[0]}
# The interpreter itself, not a shim that needs the caller's HOME (pyenv).
python=${PYTHON:-python3}
python=$("$python" -c 'import sys; print(sys.executable)')
venv=$work/venv
path=$venv/bin:/usr/bin:/bin
no_rust "$path"

user "$path" "$python" -m venv "$venv" || fail "python -m venv"
seconds user "$path" pip install --no-index --disable-pip-version-check --quiet "$wheel" ||
    fail "pip install $(basename "$wheel")"
install_took=$took
loaded=$(cd "$work" && user "$path" python -c 'import kube_tattler._native as n; print(n.path())') ||
    fail "import kube_tattler"
[[ "$loaded" == "$venv"/lib/python*/site-packages/kube_tattler/libtattler.so ]] ||
    fail "kube_tattler loaded $loaded, not the wheel's library"
say "pip install $(basename "$wheel") ($(stat -c %s "$wheel") bytes): $install_took s; loads $loaded"

start_fake
cp "$root/python/examples/watch.py" "$work/"
(cd "$work" && user "$path" python watch.py --until-synced --server "$url" pods) >"$work/raw" 2>"$work/err" ||
    fail "the example: $(tail -5 "$work/err")"
sed 's/ rv=/ /' "$work/raw" >"$work/out"
streamed "the Python example" "$work/out"
echo "pip-install-seconds $install_took" >>"${TATTLER_TIMES:-/dev/null}"
say "the Python example streamed from the fake apiserver"
say ok
