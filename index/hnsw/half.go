package hnsw

import (
	"encoding/binary"
	"math"
	"slices"
)

// Vectors are persisted at half precision: a float32 scale (the largest
// magnitude) and one IEEE 754 binary16 per dimension of v/scale. That is
// half the bytes of float32, and vectors are most of what a fact costs to
// write, flush and compact. Embedding models compute in fp16/bf16, so the
// rounding (a relative error of at most 2⁻¹¹ per component of the largest
// magnitude, under 10⁻³ on a cosine) loses nothing they measured. The
// in-memory vector is the rounded one, so that a reopened index holds
// exactly what the writing one held and searches return the same results.
// Stores written before hold float32 values (4·dim bytes, no marker); they
// are read as they are.
const (
	halfMarker byte = 0xF1
	// halfHeader is the marker and the scale.
	halfHeader = 5
)

// halfLen is the size of a persisted half-precision vector of dim.
func halfLen(dim int) int { return halfHeader + 2*dim }

// maxAbs is the largest |v[i]| of finite v: compared as bits, since the
// magnitudes of non-negative floats order as their bit patterns do (and
// the builtin max's NaN handling made this a tenth of an Add). On amd64
// the bulk of v goes through an AVX2 kernel doing the same integer max.
func maxAbs(v []float32) float32 { return maxAbsK(v, hasF16C) }

// maxAbsK is maxAbs, with the kernel if kernels.
func maxAbsK(v []float32, kernels bool) float32 {
	m, done := maxAbsBits(v, kernels)
	for _, x := range v[done:] {
		m = max(m, math.Float32bits(x)&0x7fffffff)
	}
	return math.Float32frombits(m)
}

// appendHalf appends the half-precision encoding of v. For a vector that
// roundAppendHalf has rounded, it decodes to exactly v (tested).
func appendHalf(b []byte, v []float32) []byte { return encodeHalf(b, v, false) }

// roundAppendHalf appends the encoding of v and rounds v in place to the
// values it holds, in one pass.
func roundAppendHalf(b []byte, v []float32) []byte { return encodeHalf(b, v, true) }

// encodeHalf appends the encoding of v (rounding v in place with round).
// Blocks of 8 components that all scale to ±0 or a normal half, nearly
// every block of an embedding, go through the F16C kernel on amd64 (a
// tenth of the scalar loop's time); the rest, and other CPUs, through
// half, one component at a time. Both give the bits of the original
// scalar code (half_ref_test.go) for every input.
func encodeHalf(b []byte, v []float32, round bool) []byte {
	return encodeHalfK(b, v, round, hasF16C)
}

// encodeHalfK is encodeHalf, with the kernels if kernels.
func encodeHalfK(b []byte, v []float32, round, kernels bool) []byte {
	scale := maxAbsK(v, kernels)
	b = append(b, halfMarker)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scale))
	n := len(b)
	b = slices.Grow(b, 2*len(v))[:n+2*len(v)]
	out := b[n:]
	if scale == 0 {
		clear(out)
		return b
	}
	halfScaledK(out, v, 1/scale, scale, round, kernels)
	return b
}

// halfScaled writes the binary16 bits of v[i]·inv to out[2i:] and, with
// round, sets v[i] to their value times scale. The scalar loop is the
// original one, statement for statement: for a NaN component of a NaN
// scale (a re-encoded vector holding NaN, see the Dot edge case in
// golden_test.go) the sign of x·inv depends on the operand order the
// compiler picks, and the original's is what stores hold.
func halfScaled(out []byte, v []float32, inv, scale float32, round bool) {
	halfScaledK(out, v, inv, scale, round, hasF16C)
}

// halfScaledK is halfScaled, with the kernel if kernels.
func halfScaledK(out []byte, v []float32, inv, scale float32, round, kernels bool) {
	for i := 0; i < len(v); {
		end := len(v)
		if kernels {
			i += halfBlocks(out[2*i:], v[i:], inv, scale, round, kernels)
			end = min(i+8, len(v)) // the block the kernel refused, or the tail
		}
		for ; i < end; i++ {
			x := v[i]
			bits := math.Float32bits(x * inv)
			abs := bits & 0x7fffffff
			if abs-0x38800000 < 0x47000000-0x38800000 {
				// A normal half (2⁻¹⁴ ≤ |x| < 2¹⁵, as every scaled
				// component is unless tiny): rebias the exponent and
				// round the mantissa to nearest, ties to even. toHalf
				// does the same with every case spelled out; fromHalf of
				// the result is m's bits with the float32 bias back.
				m := abs - (127-15)<<23
				m += 0xfff + (m>>13)&1
				m >>= 13
				binary.LittleEndian.PutUint16(out[2*i:], uint16(bits>>16)&0x8000|uint16(m))
				if round {
					v[i] = math.Float32frombits(bits&0x80000000|(m<<13+(127-15)<<23)) * scale
				}
				continue
			}
			if abs == 0 { // ±0, most of a sparse vector
				binary.LittleEndian.PutUint16(out[2*i:], uint16(bits>>16))
				if round {
					v[i] = math.Float32frombits(bits) * scale
				}
				continue
			}
			h := toHalf(x * inv)
			binary.LittleEndian.PutUint16(out[2*i:], h)
			if round {
				v[i] = fromHalf(h) * scale
			}
		}
	}
}

// decodeHalf writes the vector encoded in b (len halfLen(len(dst))) into
// dst, reporting false for a malformed encoding.
func decodeHalf(dst []float32, b []byte) bool {
	if len(b) != halfLen(len(dst)) || b[0] != halfMarker {
		return false
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b[1:]))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale < 0 {
		return false
	}
	b = b[halfHeader:]
	for i := range dst {
		dst[i] = fromHalf(binary.LittleEndian.Uint16(b[2*i:])) * scale
	}
	return true
}

// toHalf rounds f to the nearest binary16 (ties to even). Values beyond
// the half range become ±Inf, which appendHalf never produces: it scales
// every component into [-1, 1] first.
func toHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	if abs >= 0x7f800000 { // Inf or NaN
		if abs > 0x7f800000 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := int32(abs>>23) - 127 + 15
	man := abs & 0x7fffff
	if exp >= 31 {
		return sign | 0x7c00
	}
	if exp <= 0 {
		// Subnormal half: the value is man16·2⁻²⁴.
		if exp < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - exp)
		h := man >> shift
		rem := man & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding
	}
	return sign | uint16(h)
}

// fromHalf is the float32 value of binary16 h.
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		f := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 31:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | man<<13)
}
