//go:build !amd64

package hnsw

import "unsafe"

// No assembly kernels off amd64 (the flags exist for the tests).
var useVNNI, useAVX2 = false, false

// dot8Full is dot8 (never called: fullVNNI is false).
func dot8Full(a, b []int8) int32 { return dot8Go(a, b) }

// fullVNNI is false: no VNNI kernel off amd64.
func fullVNNI(int) bool { return false }

// dot8 is Σ a[i]·b[i] over len(a) == len(b) elements.
func dot8(a, b []int8) int32 { return dot8Go(a, b) }

// prefetch is a no-op off amd64.
func prefetch(p unsafe.Pointer, n int) {}
