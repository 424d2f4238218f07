//go:build cgo && tattler_release

package tattler

// The in-repository optimised build: links target/release/libtattler.a, after
// `cargo build --release -p tattler-ffi` (the benchmarks use it).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include
#cgo LDFLAGS: ${SRCDIR}/../../../target/release/libtattler.a -lpthread -ldl -lm -lrt
*/
import "C"

// buildTag is the build tag that chose this way of linking, for the tests
// that build a program against the package the same way.
const buildTag = "tattler_release"
