#!/usr/bin/env bash
# CI for the Python package, from outside the repository as a user gets it:
# builds the wheel (python/build_wheel.sh), installs it into a fresh virtual
# environment in a temporary directory, runs python/tests against the
# installed package and the fake apiserver, then runs examples/watch.py
# from there (a full sync, a resume from its checkpoint, a SIGTERM).
#
#   python/test.sh                 with python3
#   PYTHON=python3.13 python/test.sh
#
# When pyenv has a Python 3.9 (the oldest the package supports), the tests
# run on it too. Fails loudly on the first error.
set -euo pipefail
py_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$py_dir")
python=${PYTHON:-python3}
start=$(date +%s)
say() { echo "python/test.sh: $* ($(($(date +%s) - start)) s)"; }

"$python" -m pip --version >/dev/null 2>&1 && "$python" -c 'import venv' 2>/dev/null ||
    { echo "python/test.sh: $python has no pip or venv (Debian: apt-get install python3-pip python3-venv)" >&2; exit 1; }
work=$(mktemp -d /tmp/kube-tattler-python.XXXXXX)
fake_pid=""
cleanup() {
    [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
(cd "$root" && cargo build --quiet -p tattler-ffi --example fakeapi_serve)
export KUBE_TATTLER_FAKEAPI=$target/debug/examples/fakeapi_serve
wheel=$(PYTHON=$python "$py_dir/build_wheel.sh" "$work/dist" | tail -1)
say "built $(basename "$wheel")"

# The tests, against the installed wheel only (conftest.py refuses anything else).
run_tests() { # PYTHON VENV
    # Without its own pip (ensurepip alone took 17 s on a busy machine): this pip installs into it.
    "$1" -m venv --without-pip "$2"
    "$python" -m pip --python "$2/bin/python" install --quiet --disable-pip-version-check "$wheel" pytest
    (cd "$work" && env -u PYTHONPATH -u KUBE_TATTLER_LIB KUBE_TATTLER_EXPECT_INSTALLED=1 \
        "$2/bin/python" -m pytest -q -p no:cacheprovider "$py_dir/tests")
}
run_tests "$python" "$work/venv"
say "tests passed with $("$work/venv/bin/python" -V)"
for floor in "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.9.*/bin/python3; do
    if [[ -x "$floor" ]]; then
        run_tests "$floor" "$work/venv39"
        say "tests passed with $("$work/venv39/bin/python" -V)"
    fi
    break
done

# The example, copied out of the repository, run with the venv's Python.
cp "$py_dir/examples/watch.py" "$work/watch.py"
coproc FAKE { exec "$KUBE_TATTLER_FAKEAPI"; }
fake_pid=$FAKE_PID
fake_in=${FAKE[1]} fake_out=${FAKE[0]}
read -r -t 10 url <&"$fake_out"
while read -r -t 10 line <&"$fake_out" && [[ "$line" != ready ]]; do :; done
fake() { echo "$1" >&"$fake_in"; read -r -t 10 answer <&"$fake_out"; [[ "$answer" == ok* ]] || { echo "fake: $1: $answer" >&2; exit 1; }; }
run_example() { (cd "$work" && env -u PYTHONPATH -u KUBE_TATTLER_LIB timeout 30 "$work/venv/bin/python" watch.py --server "$url" "$@" 2>"$work/stderr"); }
expect() { # WHAT GOT WANT
    [[ "$2" == "$3" ]] || { printf 'python/test.sh: %s:\n%s\nwant:\n%s\n' "$1" "$2" "$3" >&2; cat "$work/stderr" >&2; exit 1; }
}

got=$(run_example --until-synced --checkpoint cp.json pods | sort)
expect "the example's full sync" "$got" "$(printf '%s\n' 'Add default/pod-1 rv=2' 'Add default/pod-2 rv=3' 'Add default/pod-3 rv=4' 'Synced v1/pods at 4')"
fake "apply pods shop web"
fake "delete pods default pod-2"
got=$(run_example --until-synced --checkpoint cp.json pods)
expect "the example's resume" "$got" "$(printf '%s\n' 'Add shop/web rv=5' 'Delete default/pod-2 rv=6' 'Synced v1/pods at 6')"

# SIGTERM: the handler stops the reader, the loop drains, the checkpoint is written, exit 0.
rm "$work/cp.json"
mkfifo "$work/out"
(cd "$work" && exec env -u PYTHONPATH "$work/venv/bin/python" watch.py --server "$url" --checkpoint cp.json pods >"$work/out" 2>"$work/stderr") &
pid=$!
exec {out}<"$work/out"
while read -r -t 10 line <&"$out" && [[ "$line" != Synced* ]]; do :; done
[[ "$line" == Synced* ]] || { echo "python/test.sh: the example never synced" >&2; exit 1; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
exec {out}<&-
expect "the example's exit status after SIGTERM" "$status" 0
[[ -s "$work/cp.json" ]] || { echo "python/test.sh: no checkpoint after SIGTERM" >&2; exit 1; }
say "the example streamed, resumed and ended on SIGTERM, outside the repository"
