//go:build !amd64

package hnsw

// hasF16C: no half-precision kernels off amd64.
const hasF16C = false

func maxAbsBits([]float32, bool) (m uint32, done int) { return 0, 0 }

func halfBlocks([]byte, []float32, float32, float32, bool, bool) int { return 0 }
