//go:build tattler_release

package tattler

// The in-repository optimised build: links target/release/libtattler.a, after
// `cargo build --release -p tattler-ffi` (the benchmarks use it).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libtattler.a -lpthread -ldl -lm -lrt
*/
import "C"
