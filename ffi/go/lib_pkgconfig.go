//go:build !tattler_dev && !tattler_release

package tattler

// Links the installed library, found through pkg-config: after
// `make install PREFIX=DIR` in the tattler repository, build with
// PKG_CONFIG_PATH=DIR/lib/pkgconfig (not needed for a prefix pkg-config
// already searches, such as /usr/local). The shared library is linked: run
// with DIR/lib on the loader's path (ldconfig, or LD_LIBRARY_PATH) unless
// it is a system directory.
//
// Inside the repository, the build tags tattler_dev (target/debug, after
// `cargo build -p tattler-ffi`) and tattler_release (target/release) link
// the static library cargo built instead.

// #cgo pkg-config: tattler
import "C"
