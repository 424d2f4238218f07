//go:build cgo && !tattler_dev && !tattler_release && !tattler_static

package tattler

// The default build links the installed shared library, found through
// pkg-config: after `make install PREFIX=DIR` in the tattler repository,
// build with PKG_CONFIG_PATH=DIR/lib/pkgconfig (not needed for a prefix
// pkg-config already searches, such as /usr/local) and run with DIR/lib on
// the loader's path (ldconfig, or LD_LIBRARY_PATH) unless it is a system
// directory.
//
// The build tag tattler_static links the static library instead (see
// lib_static.go). Inside the repository, the build tags tattler_dev
// (target/debug, after `cargo build -p tattler-ffi`) and tattler_release
// (target/release) link the static library cargo built.
//
// The go command does not hash pkg-config's output into its build cache:
// after pointing PKG_CONFIG_PATH at another prefix, or installing another
// build of the library into the same one, build once with -a (or run
// `go clean -cache`), or the old link is silently kept.

// #cgo pkg-config: tattler
import "C"

// buildTag is the build tag that chose this way of linking, for the tests
// that build a program against the package the same way.
const buildTag = ""
