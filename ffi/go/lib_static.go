//go:build tattler_static && !tattler_dev && !tattler_release

package tattler

// Build tag tattler_static: links libtattler.a into the program, through
// `pkg-config --static tattler` (Libs and Libs.private: -ltattler
// -lpthread -ldl -lm -lrt), so the program runs without libtattler.so.
//
// -ltattler takes the shared library when the prefix holds both: install
// the archive into a prefix of its own with `make install PREFIX=DIR
// LIBRARY=static` and build with PKG_CONFIG_PATH=DIR/lib/pkgconfig
// -tags tattler_static.
//
// The go command does not hash pkg-config's output into its build cache:
// after switching PKG_CONFIG_PATH between a shared and a static prefix,
// build once with -a (or run `go clean -cache`), or the old link is
// silently kept. Switching the tag itself rebuilds.

// #cgo pkg-config: --static tattler
import "C"
