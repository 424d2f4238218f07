#!/usr/bin/env bash
# A C and C++ user: the release tarball unpacked in a directory of its own
# (not where it was built: the tree is relocatable), then programs built
# against it with only gcc, g++, pkg-config and cmake: ffi's watch.c through
# pkg-config, and the consumer CMake project (watch.c, watch.cpp,
# header_check.c) through find_package(tattler), shared and
# -DTATTLER_STATIC=ON. Each streams from the fake apiserver.
#
#   dist/check/c.sh        (dist/check/all.sh runs it after make dist)
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
name=tattler-$version-linux-x86_64
tarball=$dist/$name.tar.gz
[[ -f "$tarball" ]] || fail "no $tarball: make dist"
path=/usr/bin:/bin
no_rust "$path"
for t in gcc g++ pkg-config cmake make; do PATH=$path command -v "$t" >/dev/null || fail "$t is not in $path"; done

mkdir -p "$work/opt" "$work/src" "$work/bin"
tar -xzf "$tarball" -C "$work/opt"
P=$work/opt/$name
cp "$root/ffi/examples/watch.c" "$root/ffi/examples/watch.cpp" "$root/ffi/tests/programs/header_check.c" \
    "$root/ffi/tests/consumers/CMakeLists.txt" "$work/src/"
cd "$work"
pc() { user "$path" PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config "$@"; }
[[ "$(pc --modversion tattler)" == "$version" ]] || fail "pkg-config --modversion tattler: $(pc --modversion tattler)"
[[ "$(pc --variable=prefix tattler)" -ef "$P" ]] || fail "tattler.pc's prefix is $(pc --variable=prefix tattler), not $P"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
user "$path" gcc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror src/watch.c \
    $(pc --cflags --libs tattler) -o bin/c-pkg-config || fail "gcc with pkg-config"
[[ $(ldd bin/c-pkg-config) == *"libtattler.so.0"*" => not found"* ]] ||
    fail "c-pkg-config does not need the shared library: $(ldd bin/c-pkg-config)"
for mode in shared static; do
    flags=(-DTATTLER_STATIC=OFF)
    [[ $mode == static ]] && flags=(-DTATTLER_STATIC=ON)
    user "$path" cmake -S src -B "build-$mode" -DCMAKE_PREFIX_PATH="$P" "${flags[@]}" -DCMAKE_BUILD_TYPE=Release \
        >"$work/cmake.log" 2>&1 || fail "cmake configure ($mode): $(tail -5 "$work/cmake.log")"
    user "$path" cmake --build "build-$mode" -j2 >"$work/cmake.log" 2>&1 ||
        fail "cmake build ($mode): $(tail -5 "$work/cmake.log")"
    cp "build-$mode/watch" "bin/c-cmake-$mode"
    cp "build-$mode/watch-cpp" "bin/cpp-cmake-$mode"
done
[[ $(ldd bin/c-cmake-static) != *libtattler* ]] || fail "c-cmake-static needs a shared libtattler"
say "built against the unpacked tarball: pkg-config (shared), CMake (shared, static; C and C++)"

start_fake
for p in c-pkg-config c-cmake-shared c-cmake-static cpp-cmake-shared cpp-cmake-static; do
    user /nonexistent LD_LIBRARY_PATH="$P/lib" "bin/$p" --until-synced "$url" pods >"$work/out" 2>"$work/err" ||
        fail "$p: $(tail -5 "$work/err")"
    streamed "$p" "$work/out"
done
say "every program streamed from the fake apiserver"
say ok
