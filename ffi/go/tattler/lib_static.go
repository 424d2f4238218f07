//go:build cgo && tattler_static && !tattler_dev && !tattler_release

package tattler

// Build tag tattler_static: links libtattler.a into the program, so that it
// runs without libtattler.so. The flags are `pkg-config --static tattler`'s
// (Libs and Libs.private: -L DIR/lib -ltattler -lpthread -ldl -lm -lrt),
// after -l:libtattler.a: -ltattler alone would take the shared library
// wherever both are installed (`make install`'s default), so the archive
// is named, and --as-needed keeps the shared one, then unused, out of the
// program. Either prefix works: `make install PREFIX=DIR`, or the archive
// alone with LIBRARY=static. Build with PKG_CONFIG_PATH=DIR/lib/pkgconfig
// -tags tattler_static.
//
// The go command does not hash pkg-config's output into its build cache:
// after switching PKG_CONFIG_PATH to another prefix, or installing another
// build of the library, build once with -a (or run `go clean -cache`), or
// the old link is silently kept. Switching the tag itself rebuilds.

/*
#cgo LDFLAGS: -l:libtattler.a -Wl,--as-needed
#cgo pkg-config: --static tattler
*/
import "C"

// buildTag is the build tag that chose this way of linking, for the tests
// that build a program against the package the same way.
const buildTag = "tattler_static"
