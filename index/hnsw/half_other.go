//go:build !amd64

package hnsw

// useF16C: no half-precision kernels off amd64 (the flag exists for the
// tests).
var useF16C = false

func maxAbsBits([]float32) (m uint32, done int) { return 0, 0 }

func halfBlocks([]byte, []float32, float32, float32, bool) int { return 0 }
