//go:build tattler_pkgconfig

package tattler

// #cgo pkg-config: tattler-static
import "C"
