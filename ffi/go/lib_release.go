//go:build tattler_release && !tattler_pkgconfig

package tattler

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libtattler.a -lpthread -ldl -lm -lrt
*/
import "C"
