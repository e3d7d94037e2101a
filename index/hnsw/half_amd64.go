package hnsw

import "golang.org/x/sys/cpu"

// hasF16C: the CPU has the AVX2/F16C kernels, which encodeHalf and maxAbs
// then use. Set once, at start-up; the tests check the portable path by
// passing false to the functions that take the choice (halfScaledK,
// encodeHalfK, maxAbsK).
var hasF16C = cpu.X86.HasAVX2 && cpuidF16C()

func cpuidF16C() bool

//go:noescape
func maxAbsAVX2(v *float32, n int) uint32

//go:noescape
func halfBlocksF16C(out *byte, v *float32, n int, inv, scale float32, round bool) int

// maxAbsBits is the largest |v[i]| as bits, the first n&^7 elements by
// the kernel.
func maxAbsBits(v []float32, kernels bool) (m uint32, done int) {
	if !kernels || len(v) < 8 {
		return 0, 0
	}
	done = len(v) &^ 7
	return maxAbsAVX2(&v[0], done), done
}

// halfBlocks converts leading blocks of 8 components of v (see
// halfBlocksF16C) and returns how many it did.
func halfBlocks(out []byte, v []float32, inv, scale float32, round, kernels bool) int {
	if !kernels || len(v) < 8 {
		return 0
	}
	_ = out[2*len(v)-1]
	return halfBlocksF16C(&out[0], &v[0], len(v), inv, scale, round)
}
