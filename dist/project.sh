#!/usr/bin/env bash
# The project's home, dist/project.env's TATTLER_REPOSITORY, against the files
# that repeat it, and the version every package carries.
#
#   dist/project.sh check     fails, naming the file, where one disagrees
#   dist/project.sh apply     writes the home into them (after editing project.env):
#                             the old value, read from ffi/go/go.mod, is
#                             replaced in every tracked file but CHANGELOG.md
#   dist/project.sh get NAME  prints repository | url | go-module | version
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=project.env
. "$root/dist/project.env"
repo=$TATTLER_REPOSITORY
url=https://$repo
gomod=$repo/ffi/go

field() { # FILE SED-EXPRESSION: the first line's match
    sed -n "$2" "$root/$1" | head -1
}
version() { field Cargo.toml 's/^version = "\(.*\)"/\1/p'; }

check() {
    local bad=0 file got want
    while IFS='|' read -r file got want; do
        if [[ "$got" != "$want" ]]; then
            echo "project.sh: $file says '${got:-nothing}', dist/project.env and Cargo.toml mean '$want'" >&2
            bad=1
        fi
    done <<END
Cargo.toml|$(field Cargo.toml 's/^repository = "\(.*\)"/\1/p')|$url
cli/Cargo.toml|$(field cli/Cargo.toml 's/^repository = "\(.*\)"/\1/p')|$url
tests/fakeapi/Cargo.toml|$(field tests/fakeapi/Cargo.toml 's/^repository = "\(.*\)"/\1/p')|$url
ffi/go/go.mod|$(field ffi/go/go.mod 's/^module //p')|$gomod
ffi/tattler.pc.in|$(field ffi/tattler.pc.in 's/^URL: //p')|$url
python/pyproject.toml|$(field python/pyproject.toml 's/^Repository = "\(.*\)"/\1/p')|$url
cli/Cargo.toml's version|$(field cli/Cargo.toml 's/^version = "\(.*\)"/\1/p')|$(version)
tests/fakeapi/Cargo.toml's version|$(field tests/fakeapi/Cargo.toml 's/^version = "\(.*\)"/\1/p')|$(version)
ffi/Cargo.toml's version|$(field ffi/Cargo.toml 's/^version = "\(.*\)"/\1/p')|$(version)
python/pyproject.toml's version|$(field python/pyproject.toml 's/^version = "\(.*\)"/\1/p')|$(version)
END
    ((bad == 0)) || { echo "project.sh: run dist/project.sh apply, or fix the file by hand" >&2; exit 1; }
}

apply() {
    local old
    old=$(field ffi/go/go.mod 's/^module \(.*\)\/ffi\/go$/\1/p')
    [[ -n "$old" ]] || { echo "project.sh: ffi/go/go.mod's module does not end in /ffi/go" >&2; exit 1; }
    if [[ "$old" != "$repo" ]]; then
        (cd "$root" && git grep -lzF "$old" -- . ':!CHANGELOG.md' | xargs -0 -r sed -i "s|$old|$repo|g")
    fi
    check
    echo "project.sh: $repo written everywhere (was $old)"
}

usage() { sed -n '5,9p' "$0" | sed 's/^# *//' >&2; exit 2; }
case "${1:-}" in
check) check ;;
apply) apply ;;
get)
    case "${2:-}" in
    repository) echo "$repo" ;;
    url) echo "$url" ;;
    go-module) echo "$gomod" ;;
    version) version ;;
    *) usage ;;
    esac
    ;;
*) usage ;;
esac
