# tattler's C library, for C, C++ and Go programs:
#
#   make install PREFIX=DIR     build (cargo, release, no debug info) and install:
#                               DIR/lib/libtattler.{so.*,a}, DIR/include/tattler.{h,hpp},
#                               DIR/lib/pkgconfig/tattler.pc, DIR/lib/cmake/tattler/,
#                               DIR/share/tattler/{valgrind,tsan}.supp
#                               (built in cargo's target directory: CARGO_TARGET_DIR is honoured)
#   make install PREFIX=DIR LIBRARY=static   the static library alone (or shared)
#   make uninstall PREFIX=DIR
#
# Every release artifact (C tarball, Go module and proxy, Python wheel,
# crates), each then installed and run as its user would, outside the checkout:
#
#   make dist                   dist/all.sh: into target/dist/ (ALLOW_DIRTY=1
#                               packages the crates from a tree with uncommitted changes)
#   make check-dist             dist/check/all.sh: builds them first when missing
#
# Also LIBDIR (default PREFIX/lib), INCLUDEDIR (PREFIX/include), DATADIR (PREFIX/share) and DESTDIR
# (a staging root for packaging). ffi/install.sh does the work. The Rust
# library itself needs no install: `cargo add kube-tattler` (the crate `kube_tattler`;
# until it is published, `cargo add kube-tattler --path <this checkout>`).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
LIBRARY ?= both
DESTDIR ?=
ALLOW_DIRTY ?=

.PHONY: all install uninstall dist check-dist

all:
	ffi/install.sh --build-only

install:
	ffi/install.sh --prefix "$(abspath $(PREFIX))" --libdir "$(abspath $(LIBDIR))" \
		--includedir "$(abspath $(INCLUDEDIR))" --datadir "$(abspath $(DATADIR))" --destdir "$(DESTDIR)" --library "$(LIBRARY)"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libtattler.so $(DESTDIR)$(LIBDIR)/libtattler.so.* \
		$(DESTDIR)$(LIBDIR)/libtattler.a $(DESTDIR)$(LIBDIR)/pkgconfig/tattler.pc \
		$(DESTDIR)$(INCLUDEDIR)/tattler.h $(DESTDIR)$(INCLUDEDIR)/tattler.hpp
	rm -rf $(DESTDIR)$(LIBDIR)/cmake/tattler $(DESTDIR)$(DATADIR)/tattler

dist:
	dist/all.sh $(if $(ALLOW_DIRTY),--allow-dirty)

check-dist:
	dist/check/all.sh
