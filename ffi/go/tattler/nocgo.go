//go:build !cgo

package tattler

// Without cgo every other file of the package is left out; this one makes
// the build fail with a sentence instead of "build constraints exclude all
// Go files". tattler wraps a C library: build with CGO_ENABLED=1 and a C
// compiler on PATH (CC).
var _ = tattler_requires_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
