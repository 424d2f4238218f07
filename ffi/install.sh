#!/usr/bin/env bash
# Builds and installs tattler's C library: what `make install` runs.
#
#   ffi/install.sh --prefix DIR [--libdir DIR] [--includedir DIR] [--datadir DIR]
#                  [--destdir DIR] [--library both|shared|static] [--no-build]
#                  [--relocatable]
#   ffi/install.sh --build-only [--target TRIPLE]
#                                    build and prepare TARGET/dist/stage only
#                                    (TARGET/TRIPLE/dist/stage for another target)
#
# TARGET is cargo's target directory as `cargo metadata` reports it (so
# CARGO_TARGET_DIR and build.target-dir are honoured): what is installed is
# what this run built there.
#
# Installs, under the prefix (DESTDIR in front of every path, for packaging):
#   lib/libtattler.so.X.Y.Z, libtattler.so.ABI -> it, libtattler.so -> that
#       ABI is the SONAME's version: MAJOR, or 0.MINOR before 1.0 (a 0.x
#       minor release may change the ABI, as Cargo's semver rules say)
#   lib/libtattler.a             one prelinked object: only tattler_* global
#   include/tattler.h, include/tattler.hpp
#   lib/pkgconfig/tattler.pc     shared: --libs; static: --static (Libs.private)
#       with --relocatable its prefix is ${pcfiledir}/../.. (the tree may be
#       moved, as a release tarball is unpacked anywhere); the CMake files
#       always find the library relative to themselves
#   lib/cmake/tattler/tattlerConfig.cmake, tattlerConfigVersion.cmake
#   share/tattler/valgrind.supp, tsan.supp   suppressions for the host's tests
#
# The shared library is installed stripped (strip --strip-unneeded: the
# dynamic tattler_* symbols stay, checked).
#
# --library static installs the archive alone, so that -ltattler (and so
# `pkg-config --static --libs tattler`) links it statically; shared the
# shared library alone. The build is cargo's `dist` profile (release without
# debug info) in target/dist/; the archive is made safe to link next to
# other Rust static libraries: ld -r into one object (unreferenced sections
# dropped), every symbol but tattler_* made local, COMDAT groups renamed
# private, debug info and embedded LLVM bitcode removed.
# Needs cargo, and binutils (ld, objcopy, nm, ar, readelf).
#
# --target TRIPLE cross-builds for ARCH-unknown-linux-gnu with Debian's
# cross toolchain: the Rust standard library for it (rustup target add
# TRIPLE), and gcc and binutils named ARCH-linux-gnu-* (Debian's
# gcc-ARCH-linux-gnu), which link it, compile ring's C and make the archive.
set -euo pipefail

ffi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$ffi_dir")
prefix="" libdir="" includedir="" datadir="" destdir="" library=both build=1 build_only=0 relocatable=0 triple=""
usage() {
    sed -n '3,9p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while (($#)); do
    case "$1" in
    --prefix) prefix=${2:?}; shift 2 ;;
    --libdir) libdir=${2:?}; shift 2 ;;
    --includedir) includedir=${2:?}; shift 2 ;;
    --datadir) datadir=${2:?}; shift 2 ;;
    --destdir) destdir=${2-}; shift 2 ;;
    --library) library=${2:?}; shift 2 ;;
    --no-build) build=0; shift ;;
    --relocatable) relocatable=1; shift ;;
    --target) triple=${2:?}; shift 2 ;;
    --build-only) build_only=1 prefix=/build-only; shift ;;
    *) usage ;;
    esac
done
[[ -n "$prefix" ]] || usage
[[ "$library" =~ ^(both|shared|static)$ ]] || usage
[[ "$prefix" = /* ]] || { echo "install.sh: --prefix must be absolute: $prefix" >&2; exit 2; }
libdir=${libdir:-$prefix/lib}
includedir=${includedir:-$prefix/include}
datadir=${datadir:-$prefix/share}
# The binutils of the target: the host's, or a cross toolchain's (ARCH-linux-gnu-ld, ...).
cross=""
if [[ -n "$triple" ]]; then
    [[ "$triple" =~ ^([a-z0-9_]+)-unknown-linux-gnu$ ]] ||
        { echo "install.sh: --target takes ARCH-unknown-linux-gnu, not $triple" >&2; exit 2; }
    cross=${BASH_REMATCH[1]}-linux-gnu-
fi
for tool in "${cross}gcc" "${cross}ld" "${cross}objcopy" "${cross}nm" "${cross}ar" "${cross}readelf" "${cross}strip"; do
    [[ "$tool" == gcc ]] && continue
    command -v "$tool" >/dev/null || { echo "install.sh: $tool is missing (binutils${cross:+, gcc-${cross%-}})" >&2; exit 1; }
done
command -v cargo >/dev/null || { echo "install.sh: cargo is missing" >&2; exit 1; }
# `command`: the tool itself, never these functions again (with no prefix, the same name).
ld() { command "${cross}ld" "$@"; }
objcopy() { command "${cross}objcopy" "$@"; }
nm() { command "${cross}nm" "$@"; }
ar() { command "${cross}ar" "$@"; }
readelf() { command "${cross}readelf" "$@"; }
strip() { command "${cross}strip" "$@"; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ffi_dir/Cargo.toml" | head -1)
IFS=. read -r major minor _ <<<"$version"
if ((major > 0)); then abi=$major; else abi=0.$minor; fi
soname=libtattler.so.$abi
# Where cargo builds: CARGO_TARGET_DIR or build.target-dir when set.
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[[ -n "$target" ]] || { echo "install.sh: cargo metadata did not say where the target directory is" >&2; exit 1; }
out=$target/dist
cargo_target=()
if [[ -n "$triple" ]]; then
    out=$target/$triple/dist
    cargo_target=(--target "$triple")
    # cargo links with, and the cc crate (ring) compiles with, the cross gcc.
    t=$(tr 'a-z-' 'A-Z_' <<<"$triple")
    export "CARGO_TARGET_${t}_LINKER=${cross}gcc" "CC_${triple//-/_}=${cross}gcc" "AR_${triple//-/_}=${cross}ar"
fi

if ((build)); then
    # cargo's own progress shows (a bar on a terminal, a line per crate
    # otherwise): a first build takes minutes, and silence looks like a hang.
    echo "install.sh: building libtattler with cargo's dist profile (a first build compiles ~90 crates)" >&2
    # Only the final crate gets the SONAME (cargo rustc): every other build
    # of libtattler.so stays as cargo makes it.
    (cd "$root" && cargo rustc --profile dist -p tattler-ffi --lib "${cargo_target[@]}" -- \
        -C "link-arg=-Wl,-soname,$soname")
fi
[[ -f "$out/libtattler.a" && -f "$out/libtattler.so" ]] ||
    { echo "install.sh: no build in $out (CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-unset}; run without --no-build)" >&2; exit 1; }

# The archive: one relocatable object with only the C API global.
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage"
nm -g --defined-only "$out/libtattler.a" 2>/dev/null | awk 'NF == 3 && $3 ~ /^tattler_/ {print $3}' |
    sort -u >"$stage/exports.txt"
# Every function the header declares must be exported, and nothing else.
grep -o '\btattler_[a-z_]*(' "$root/include/tattler.h" | tr -d '(' | sort -u >"$stage/declared.txt"
if ! diff -u "$stage/declared.txt" "$stage/exports.txt" >&2; then
    echo "install.sh: the archive's tattler_* symbols are not the header's functions" >&2
    exit 1
fi
roots=()
while read -r sym; do roots+=(-u "$sym"); done <"$stage/exports.txt"
ld -r --gc-sections "${roots[@]}" -o "$stage/tattler.o" --whole-archive "$out/libtattler.a"
# A COMDAT group is deduplicated by name across objects: a private group of
# ours would capture another Rust library's copy (DW.ref.rust_eh_personality).
renames=()
while read -r sig; do
    renames+=(--redefine-sym "$sig=tattler.private.$sig")
done < <(readelf -g -W "$stage/tattler.o" | sed -n 's/^COMDAT group section \[ *[0-9]*\] `[^'\'']*'\'' \[\(.*\)\] contains.*/\1/p')
objcopy --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd \
    --keep-global-symbols="$stage/exports.txt" "${renames[@]}" "$stage/tattler.o"
rm -f "$stage/libtattler.a"
ar rcsD "$stage/libtattler.a" "$stage/tattler.o"
globals=$(nm -g --defined-only "$stage/libtattler.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
if [[ "$globals" != "$(cat "$stage/exports.txt")" ]]; then
    echo "install.sh: the archive defines globals beyond tattler_*:" >&2
    comm -23 <(echo "$globals") "$stage/exports.txt" | head >&2
    exit 1
fi
if (($(readelf -S -W "$stage/libtattler.a" | grep -cE '\.(debug_|llvmbc)' || true))); then
    echo "install.sh: debug info or bitcode left in the archive" >&2
    exit 1
fi

# The shared library, stripped; its dynamic tattler_* symbols must survive.
cp "$out/libtattler.so" "$stage/libtattler.so"
strip --strip-unneeded "$stage/libtattler.so"
nm -D --defined-only "$stage/libtattler.so" | awk 'NF == 3 && $3 ~ /^tattler_/ {print $3}' | sort -u >"$stage/so-exports.txt"
if ! diff -u "$stage/declared.txt" "$stage/so-exports.txt" >&2; then
    echo "install.sh: the stripped libtattler.so does not export the header's functions" >&2
    exit 1
fi

if ((build_only)); then
    echo "install.sh: built $stage/libtattler.a and $stage/libtattler.so"
    exit 0
fi

# The pkg-config and CMake files.
rel() { realpath -m --relative-to="$1" "$2"; }
pc_prefix=$prefix pc_libdir=$libdir pc_includedir=$includedir
if ((relocatable)); then
    [[ "$libdir" == "$prefix/lib" ]] ||
        { echo "install.sh: --relocatable needs the default --libdir (PREFIX/lib)" >&2; exit 2; }
    pc_prefix='${pcfiledir}/../..'
fi
[[ "$libdir" == "$prefix"/* ]] && pc_libdir="\${prefix}/${libdir#"$prefix"/}"
[[ "$includedir" == "$prefix"/* ]] && pc_includedir="\${prefix}/${includedir#"$prefix"/}"
subst() {
    sed -e "s|@PREFIX@|$pc_prefix|g" -e "s|@LIBDIR@|$pc_libdir|g" -e "s|@INCLUDEDIR@|$pc_includedir|g" \
        -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@MINOR@|$minor|g" -e "s|@ABI@|$abi|g" \
        -e "s|@REL_LIBDIR@|$(rel "$libdir/cmake/tattler" "$libdir")|g" \
        -e "s|@REL_INCLUDEDIR@|$(rel "$libdir/cmake/tattler" "$includedir")|g" "$1" >"$2"
}
subst "$ffi_dir/tattler.pc.in" "$stage/tattler.pc"
subst "$ffi_dir/cmake/tattlerConfig.cmake.in" "$stage/tattlerConfig.cmake"
subst "$ffi_dir/cmake/tattlerConfigVersion.cmake.in" "$stage/tattlerConfigVersion.cmake"

# Install.
L=$destdir$libdir I=$destdir$includedir
D=$destdir$datadir/tattler
install -d "$L" "$L/pkgconfig" "$L/cmake/tattler" "$I" "$D"
if [[ "$library" != static ]]; then
    install -m 755 "$stage/libtattler.so" "$L/libtattler.so.$version"
    ln -sfn "libtattler.so.$version" "$L/$soname"
    ln -sfn "$soname" "$L/libtattler.so"
else
    rm -f "$L/libtattler.so" "$L/$soname" "$L/libtattler.so.$version"
fi
if [[ "$library" != shared ]]; then
    install -m 644 "$stage/libtattler.a" "$L/libtattler.a"
else
    rm -f "$L/libtattler.a"
fi
install -m 644 "$root/include/tattler.h" "$root/include/tattler.hpp" "$I/"
install -m 644 "$stage/tattler.pc" "$L/pkgconfig/tattler.pc"
install -m 644 "$ffi_dir/valgrind.supp" "$ffi_dir/tsan.supp" "$D/"
install -m 644 "$stage/tattlerConfig.cmake" "$stage/tattlerConfigVersion.cmake" "$L/cmake/tattler/"

count=$(wc -l <"$stage/exports.txt")
echo "install.sh: tattler $version ($library) in $destdir$prefix; SONAME $soname;" \
    "libtattler.a $(stat -c %s "$stage/libtattler.a") bytes, $count global symbols (cargo's:" \
    "$(stat -c %s "$out/libtattler.a") bytes," \
    "$(nm -g --defined-only "$out/libtattler.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u | wc -l))"
