//go:build !tattler_release && !tattler_pkgconfig

package tattler

// Links the debug build: `cargo build -p tattler-ffi` at the repository root.
// Build tags select another: tattler_release (target/release, after
// `cargo build --release -p tattler-ffi`) or tattler_pkgconfig (pkg-config's
// tattler-static, see ffi/gen-pc.sh).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: ${SRCDIR}/../../target/debug/libtattler.a -lpthread -ldl -lm -lrt
*/
import "C"
