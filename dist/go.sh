#!/usr/bin/env bash
# The Go release: the module with a prebuilt libtattler.a inside, as
# wasmtime-go and go-duckdb ship theirs, in TARGET/dist/go/:
#
#   dist/go.sh          (after ffi/install.sh --build-only, as dist/all.sh runs it)
#
#   module/   the module's tree at the release: ffi/go's package and example,
#             the licenses, include/tattler.h, and lib/GOOS_GOARCH/libtattler.a
#             for each platform shipped (PLATFORMS: linux_amd64, linux_arm64)
#   repo/     a git repository holding that tree at ffi/go/, committed and
#             tagged ffi/go/vVERSION: the tag a `go get` of a module in the
#             ffi/go subdirectory reads from the published repository
#   proxy/    the same version as a module proxy serves it (GOPROXY=file://…/proxy):
#             MODULE/@v/{list,vVERSION.info,vVERSION.mod,vVERSION.zip}
#
# How the release tree links, by build constraints (the checkout's ffi/go
# keeps linking through pkg-config, and the tests' tags):
#   lib_prebuilt.go    a shipped platform, no tag: the archive in lib/, with
#                      `#cgo GOOS,GOARCH LDFLAGS: ${SRCDIR}/../lib/...`
#   lib_unshipped.go   any other platform: the build stops at one undefined
#                      name that says how to build from source
#   lib_pkgconfig.go   -tags tattler_system: the installed shared library (make install)
#   lib_static.go      -tags tattler_static: the installed static library
#   vendor.go          -tags tattler_vendor, never built: imports include/ and
#                      each lib/ directory (each has a Go file naming a
#                      package), so that `go mod vendor`, which copies the
#                      directories of imported packages only, copies them too
#                      (go-duckdb's way)
# The tests (_test.go) and the checkout's own links (lib_dev.go,
# lib_release.go) are left out.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
version=$("$root/dist/project.sh" get version)
module=$("$root/dist/project.sh" get go-module)
[[ "$(sed -n 's/^module //p' "$root/ffi/go/go.mod")" == "$module" ]] ||
    { echo "dist/go.sh: ffi/go/go.mod is not $module (dist/project.sh check)" >&2; exit 1; }
# GOOS/GOARCH shipped, each with the archive built for it: linux/amd64 here,
# linux/arm64 cross-built (ffi/install.sh --build-only --target
# aarch64-unknown-linux-gnu, with Debian's gcc-aarch64-linux-gnu).
PLATFORMS=(linux/amd64 linux/arm64)
archive() { # GOOS/GOARCH: the archive built for it
    local a
    case "$1" in
    linux/amd64) a=$target/dist/stage/libtattler.a ;;
    linux/arm64) a=$target/aarch64-unknown-linux-gnu/dist/stage/libtattler.a ;;
    *) echo "dist/go.sh: no build for $1" >&2; exit 1 ;;
    esac
    [[ -f "$a" ]] || { echo "dist/go.sh: no $a for $1 (dist/all.sh builds it)" >&2; exit 1; }
    echo "$a"
}
out=$target/dist/go
tree=$out/module
rm -rf "$out"
mkdir -p "$tree/tattler" "$tree/example" "$tree/include"

cp "$root/ffi/go/go.mod" "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$tree/"
cp "$root/ffi/go/example/main.go" "$tree/example/"
cp "$root/include/tattler.h" "$tree/include/"
printf '// Package include holds tattler.h for the tattler package; it has no Go API.\npackage include\n' \
    >"$tree/include/include.go"
for f in "$root"/ffi/go/tattler/*.go; do
    case "$(basename "$f")" in
    *_test.go | lib_dev.go | lib_release.go) ;;
    *) cp "$f" "$tree/tattler/" ;;
    esac
done
# constrain FILE OLD NEW: replaces the //go:build line, which must be OLD.
constrain() {
    local got
    got=$(head -1 "$tree/tattler/$1")
    [[ "$got" == "//go:build $2" ]] ||
        { echo "dist/go.sh: $1's constraint is now '$got': update dist/go.sh" >&2; exit 1; }
    { echo "//go:build $3"; tail -n +2 "$tree/tattler/$1"; } >"$tree/tattler/$1.new"
    mv "$tree/tattler/$1.new" "$tree/tattler/$1"
}
constrain lib_pkgconfig.go "cgo && !tattler_dev && !tattler_release && !tattler_static" \
    "cgo && tattler_system && !tattler_static"
constrain lib_static.go "cgo && tattler_static && !tattler_dev && !tattler_release" \
    "cgo && tattler_static"

shipped=() ldflags=() vendored=("$module/include")
for p in "${PLATFORMS[@]}"; do
    goos=${p%/*} goarch=${p#*/}
    mkdir -p "$tree/lib/${goos}_$goarch"
    cp "$(archive "$p")" "$tree/lib/${goos}_$goarch/libtattler.a"
    printf '// Package %s holds libtattler.a for %s; it has no Go API.\npackage %s\n' \
        "${goos}_$goarch" "$p" "${goos}_$goarch" >"$tree/lib/${goos}_$goarch/lib.go"
    vendored+=("$module/lib/${goos}_$goarch")
    shipped+=("($goos && $goarch)")
    ldflags+=("#cgo $goos,$goarch LDFLAGS: \${SRCDIR}/../lib/${goos}_$goarch/libtattler.a -lpthread -ldl -lm -lrt")
done
any=$(IFS='|'; echo "${shipped[*]}" | sed 's/|/ || /g')
names=$(printf '%s, ' "${PLATFORMS[@]}")
names=${names%, }
cat >"$tree/tattler/lib_prebuilt.go" <<EOF
//go:build cgo && ($any) && !tattler_system && !tattler_static

package tattler

// The release's default on the platforms it ships (${names}): links the
// prebuilt libtattler.a in this module's lib/ directory (built by the tattler
// repository's \`make dist\`, glibc 2.34 or later), so a build needs only Go
// and a C compiler. -tags tattler_system links an installed library through
// pkg-config instead (make install), -tags tattler_static its static one.

/*
#cgo CFLAGS: -I\${SRCDIR}/../include
$(printf '%s\n' "${ldflags[@]}")
*/
import "C"

// buildTag is the build tag that chose this way of linking.
const buildTag = ""
EOF
cat >"$tree/tattler/lib_unshipped.go" <<EOF
//go:build cgo && !($any) && !tattler_system && !tattler_static

package tattler

// Any platform the release has no prebuilt library for (it ships ${names}):
// the build stops at one undefined name saying what to do. Install the C
// library from a checkout (\`make install\`, which needs Rust), then build
// with -tags tattler_system (shared) or -tags tattler_static.

// #cgo CFLAGS: -I\${SRCDIR}/../include
import "C"

var _ = tattler_has_no_prebuilt_library_for_this_platform__install_it_from_source_with_make_install_then_build_with_tags_tattler_system

// buildTag is the build tag that chose this way of linking.
const buildTag = ""
EOF
{
    printf '//go:build tattler_vendor\n\npackage tattler\n\n'
    printf '// Never built: these imports make `go mod vendor` copy the header and the archives.\nimport (\n'
    printf '\t_ "%s"\n' "${vendored[@]}"
    printf ')\n'
} >"$tree/tattler/vendor.go"
# gofmt writes the constraints' parentheses as Go spells them.
gofmt -w "$tree/tattler/lib_prebuilt.go" "$tree/tattler/lib_unshipped.go"
! gofmt -l "$tree" | grep . || { echo "dist/go.sh: gofmt would change the files above" >&2; exit 1; }

# The tag, as the published repository would carry it.
tag=ffi/go/v$version
mtime=$(cd "$root" && git log -1 --format=%cI 2>/dev/null || date -Iseconds)
mkdir -p "$out/repo/ffi"
cp -r "$tree" "$out/repo/ffi/go"
(
    cd "$out/repo"
    export GIT_AUTHOR_NAME=tattler GIT_AUTHOR_EMAIL=tattler@invalid GIT_COMMITTER_NAME=tattler \
        GIT_COMMITTER_EMAIL=tattler@invalid GIT_AUTHOR_DATE=$mtime GIT_COMMITTER_DATE=$mtime
    git init -q -b release .
    git add -A ffi
    git commit -q -m "Go module $module $tag: prebuilt libtattler.a for ${names}"
    git tag "$tag"
)

# The proxy: what `go get MODULE@vVERSION` downloads.
v=v$version
at=$out/proxy/$(sed 's/[A-Z]/!\L&/g' <<<"$module")/@v
mkdir -p "$at"
echo "$v" >"$at/list"
printf '{"Version":"%s","Time":"%s"}\n' "$v" "$(date -u -d "$mtime" +%Y-%m-%dT%H:%M:%SZ)" >"$at/$v.info"
cp "$tree/go.mod" "$at/$v.mod"
python3 - "$tree" "$module@$v" "$at/$v.zip" <<'PY'
import os, sys, zipfile
tree, prefix, dest = sys.argv[1:]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for dirpath, dirs, files in os.walk(tree):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            info = zipfile.ZipInfo(prefix + "/" + os.path.relpath(path, tree), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(path, "rb") as fh:
                z.writestr(info, fh.read(), compresslevel=9)
PY
echo "dist/go.sh: $module $v (tag $tag) for ${names}: $at/$v.zip"
