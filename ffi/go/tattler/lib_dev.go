//go:build cgo && tattler_dev && !tattler_release

package tattler

// The in-repository build: links target/debug/libtattler.a, after
// `cargo build -p tattler-ffi` at the repository root (go test -tags tattler_dev).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include
#cgo LDFLAGS: ${SRCDIR}/../../../target/debug/libtattler.a -lpthread -ldl -lm -lrt
*/
import "C"

// buildTag is the build tag that chose this way of linking, for the tests
// that build a program against the package the same way.
const buildTag = "tattler_dev"
