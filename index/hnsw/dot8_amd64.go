package hnsw

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The int8 kernels, picked once: AVX-512 VNNI (VPDPBUSD, 64 products per
// instruction) where the CPU has it, else AVX2, else portable Go.
var (
	useVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI
	useAVX2 = cpu.X86.HasAVX2
)

//go:noescape
func dot8VNNI(a, b *int8, n int) int32

//go:noescape
func dot8AVX2(a, b *int8, n int) int32

// dot8Full is dot8 for len(a) == len(b), a positive multiple of 64, on a
// CPU with VNNI (fullVNNI): the graph's distance, without dot8's
// dispatch, which was a sixth of the distance's time.
func dot8Full(a, b []int8) int32 { return dot8VNNI(&a[0], &b[0], len(a)) }

// fullVNNI reports whether dot8Full serves vectors of dim.
func fullVNNI(dim int) bool { return useVNNI && dim > 0 && dim%64 == 0 }

// dot8 is Σ a[i]·b[i] over len(a) == len(b) elements.
func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	var s int32
	n := 0
	switch {
	case useVNNI && len(a) >= 64:
		n = len(a) &^ 63
		s = dot8VNNI(&a[0], &b[0], n)
	case useAVX2 && len(a) >= 32:
		n = len(a) &^ 31
		s = dot8AVX2(&a[0], &b[0], n)
	}
	if n < len(a) {
		s += dot8Go(a[n:], b[n:])
	}
	return s
}

// prefetch asks for the n > 0 bytes at p to be brought into the cache.
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)
