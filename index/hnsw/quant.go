package hnsw

import "math"

// The graph is built and walked on a scalar-quantised copy of the
// vectors: one int8 per dimension and a float32 scale per vector. Profiled
// on the 384-d benchmark, a build was half distance computations, and a
// float32 dot product (vek, AVX2/FMA) costs ≈ 34 ns at 384-d on the 2.1 GHz
// benchmark machine, compute-bound once the vectors are in cache and about
// 90 ns when they are not. The int8 dot product is one AVX-512 VNNI
// instruction per 64 dimensions (≈ 8 ns at 384-d) and reads a quarter of
// the bytes. Both sides are quantised (the query once per search). The
// rounding only steers the walk: Search re-scores its final beam with the
// float32 vectors, so the returned order and scores are exact. The codes
// exist only while there is a graph (small indexes are scanned exactly
// and pay no memory for them); they are derived from the stored vectors,
// never persisted, and recomputed by Load.

// quantize writes the int8 codes of v into dst and returns the scale that
// maps a code back: v[i] ≈ dst[i]·scale. The scale is per vector,
// max|v[i]|/127, so the largest component uses the full range.
func quantize(dst []int8, v []float32) float32 {
	var mx float32
	for _, x := range v {
		mx = max(mx, x, -x)
	}
	if mx == 0 {
		clear(dst)
		return 0
	}
	inv := 127 / mx
	for i, x := range v {
		dst[i] = int8(math.Round(float64(x * inv)))
	}
	return mx / 127
}

// dot8Go is the portable kernel (and the tail of the assembly ones).
func dot8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1 int32
	i := 0
	for ; i+2 <= len(a); i += 2 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
	}
	if i < len(a) {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1
}

// qvec is a quantised vector: v ≈ c·s.
type qvec struct {
	c []int8
	s float32
}

// qbound is what bounds the error of a code-based similarity for one
// vector v with codes c and scale s: err = ‖v − c·s‖ and norm = ‖v‖, both
// rounded up. For a query q with codes and error e_q,
//
//	|q·v − (q̂·ĉ)| ≤ ‖q̂‖·err + e_q·norm
//
// (q·v = q̂·ĉ + q̂·(v − ĉ) + (q − q̂)·v and Cauchy–Schwarz), so a scan can
// rank by the cheap int8 product and still return exactly what a float32
// scan returns: only vectors whose bound reaches the k-th best are
// re-scored with their float32 vectors (see Index.scan8).
type qbound struct{ err, norm float32 }

// quantizeSparse is quantize and boundOf of the vector whose non-zero
// components are val at idx (ascending), into dst (of length dim, zero):
// the same codes, scale and bound, bit for bit, in O(len(idx)) instead of
// O(dim) (a zero component has the code 0 and adds exactly 0 to both
// sums). It reports false, writing nothing, for a vector whose largest
// component is not finite, which only the dense functions handle.
func quantizeSparse(dst []int8, idx []uint16, val []float32) (float32, qbound, bool) {
	var mx float32
	for _, x := range val {
		mx = max(mx, x, -x)
	}
	if math.IsNaN(float64(mx)) || math.IsInf(float64(mx), 0) {
		return 0, qbound{}, false
	}
	if mx == 0 {
		return 0, qbound{}, true
	}
	inv := 127 / mx
	for k, i := range idx {
		dst[i] = int8(math.Round(float64(val[k] * inv)))
	}
	scale := mx / 127
	var e, n float64
	for k, i := range idx {
		x := val[k]
		d := float64(x) - float64(dst[i])*float64(scale)
		e += d * d
		n += float64(x) * float64(x)
	}
	return scale, qbound{float32(math.Sqrt(e) * (1 + 1e-6)), float32(math.Sqrt(n) * (1 + 1e-6))}, true
}

// boundOf returns v's qbound given its codes c and scale s.
func boundOf(c []int8, s float32, v []float32) qbound {
	var e, n float64
	for i, x := range v {
		d := float64(x) - float64(c[i])*float64(s)
		e += d * d
		n += float64(x) * float64(x)
	}
	// Round up by a relative 1e-6 so that float32 storage never shrinks
	// the bound.
	return qbound{float32(math.Sqrt(e) * (1 + 1e-6)), float32(math.Sqrt(n) * (1 + 1e-6))}
}
