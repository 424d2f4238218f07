#!/usr/bin/env bash
# Writes tattler.pc (shared library) and tattler-static.pc (static archive)
# pointing at a cargo build of tattler-ffi, from ffi/tattler.pc.in.
#
#   ffi/gen-pc.sh [LIBDIR [OUTDIR]]
#
# LIBDIR: where libtattler.a / libtattler.so are (default: target/debug);
# OUTDIR: where to write the .pc files (default: LIBDIR/pkgconfig). Then:
#   PKG_CONFIG_PATH=OUTDIR pkg-config --cflags --libs tattler
set -euo pipefail

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
libdir=$(cd "${1:-$root/target/debug}" && pwd)
outdir=${2:-$libdir/pkgconfig}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ffi_dir/Cargo.toml" | head -1)
# What the Rust standard library needs on Linux when linked statically
# (`cargo rustc -p tattler-ffi --crate-type staticlib -- --print native-static-libs`).
native="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

mkdir -p "$outdir"
gen() { # NAME SUFFIX LIBS
    sed -e "s|@PREFIX@|$root|" -e "s|@LIBDIR@|$libdir|" -e "s|@INCLUDEDIR@|$root/include|" \
        -e "s|@VERSION@|$version|" -e "s|@SUFFIX@|$2|" -e "s|@LIBS@|$3|" \
        "$ffi_dir/tattler.pc.in" >"$outdir/$1.pc"
}
gen tattler "" "-L\${libdir} -Wl,-rpath,\${libdir} -ltattler"
gen tattler-static " (static)" "\${libdir}/libtattler.a $native"
echo "$outdir"
