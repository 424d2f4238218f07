#!/usr/bin/env bash
# The C and C++ release: TARGET/dist/tattler-VERSION-linux-x86_64.tar.gz.
#
#   dist/c.sh          (after ffi/install.sh --build-only, as dist/all.sh runs it)
#
# What `make install` installs (ffi/install.sh, staged with --destdir), under
# one top directory named as the tarball, relocatable: tattler.pc's prefix is
# ${pcfiledir}/../.. and the CMake files find the library relative to
# themselves, so the tree works wherever it is unpacked:
#   lib/libtattler.so.VERSION (SONAME libtattler.so.ABI), its two links, lib/libtattler.a
#   include/tattler.h, include/tattler.hpp
#   lib/pkgconfig/tattler.pc, lib/cmake/tattler/
#   share/tattler/{valgrind,tsan}.supp, share/doc/tattler/LICENSE-{MIT,APACHE}
# The archive is reproducible: sorted names, root owner, the commit's time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
version=$("$root/dist/project.sh" get version)
[[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] ||
    { echo "dist/c.sh: builds linux-x86_64 only, on such a machine ($(uname -s)/$(uname -m) here)" >&2; exit 1; }
name=tattler-$version-linux-x86_64
out=$target/dist
stage=$out/c-stage

rm -rf "$stage"
mkdir -p "$stage"
"$root/ffi/install.sh" --no-build --relocatable --destdir "$stage" --prefix "/$name" >/dev/null
install -d "$stage/$name/share/doc/tattler"
install -m 644 "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$stage/$name/share/doc/tattler/"
so=$stage/$name/lib/libtattler.so.$version
readelf -d "$so" | grep -q 'Library soname: \[libtattler\.so\.' ||
    { echo "dist/c.sh: $so has no SONAME" >&2; exit 1; }

mtime=$(cd "$root" && git log -1 --format=%ct 2>/dev/null || date +%s)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$stage" -cf - "$name" |
    gzip -9n >"$out/$name.tar.gz"
rm -rf "$stage"
echo "dist/c.sh: $out/$name.tar.gz"
