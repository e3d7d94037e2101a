package hnsw

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// checkHalfScaled runs halfScaled (inv = scale = 1, so each component is
// converted as it is) over ys and compares every stored half and rounded
// value with halfRef, the original scalar conversion.
func checkHalfScaled(t *testing.T, ys []float32, kernels bool) {
	t.Helper()
	out := make([]byte, 2*len(ys))
	v := slices.Clone(ys)
	halfScaledK(out, v, 1, 1, true, kernels)
	for i, y := range ys {
		h, r := halfRef(y * 1)
		r *= 1
		got := uint16(out[2*i]) | uint16(out[2*i+1])<<8
		if got != h || math.Float32bits(v[i]) != math.Float32bits(r) {
			t.Fatalf("%08x (%v): half %04x rounded %08x, reference %04x %08x",
				math.Float32bits(y), y, got, math.Float32bits(v[i]), h, math.Float32bits(r))
		}
	}
}

// forF16C runs f with the kernels on (where the CPU has them) and off.
func forF16C(t *testing.T, f func(t *testing.T, kernels bool)) {
	for _, on := range []bool{true, false} {
		if on && !hasF16C {
			continue
		}
		f(t, on)
	}
}

// TestHalfScaledAllInputs: the conversion (F16C blocks and the scalar
// path) gives the reference bits for float32 inputs spread over the whole
// range (every 251st bit pattern and all patterns within 64 of each
// exponent boundary and rounding tie), in blocks of 8 that mix accepted
// and refused values. MEMOR_HALF_EXHAUSTIVE=1 checks all 2³² patterns
// (about a minute per path).
func TestHalfScaledAllInputs(t *testing.T) {
	t.Parallel()
	step := uint64(251)
	if os.Getenv("MEMOR_HALF_EXHAUSTIVE") != "" {
		step = 1
	}
	forF16C(t, func(t *testing.T, kernels bool) {
		ys := make([]float32, 0, 1<<16)
		flush := func() {
			checkHalfScaled(t, ys, kernels)
			ys = ys[:0]
		}
		for b := uint64(0); b < 1<<32; b += step {
			ys = append(ys, math.Float32frombits(uint32(b)))
			if len(ys) == cap(ys) {
				flush()
			}
		}
		for e := uint32(0); e < 256; e++ {
			for _, base := range []uint32{e << 23, e<<23 | 0x1000, e<<23 | 0x3000, e<<23 | 0x7fe000} {
				for d := uint32(0); d < 128; d++ {
					for _, sign := range []uint32{0, 0x80000000} {
						ys = append(ys, math.Float32frombits(sign|(base+d-64)))
					}
				}
			}
		}
		flush()
	})
}

// TestEncodeHalfMatchesReference: encodeHalf (bytes and the rounded
// vector) and maxAbs equal the original implementation on random vectors
// of every length up to 70 and of 384, mixing Gaussian, sparse, tiny,
// huge, subnormal and non-finite components.
func TestEncodeHalfMatchesReference(t *testing.T) {
	t.Parallel()
	forF16C(t, func(t *testing.T, kernels bool) {
		r := rand.New(rand.NewPCG(11, 12))
		for trial := range 60_000 {
			n := trial % 71
			if trial%10 == 0 {
				n = 384
			}
			v := make([]float32, n)
			mode := r.IntN(7)
			for i := range v {
				switch {
				case mode == 0 || r.IntN(8) == 0:
					v[i] = 0
				case mode == 1:
					v[i] = math.Float32frombits(r.Uint32()) // any pattern, NaN and Inf included
				case mode == 2:
					v[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
				case mode == 3:
					v[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(30)-15)))
				default:
					v[i] = float32(r.NormFloat64())
				}
			}
			if n > 0 && mode >= 4 && r.IntN(3) == 0 {
				v[r.IntN(n)] = float32(r.ExpFloat64() * 1e4)
			}
			if math.Float32bits(maxAbsK(v, kernels)) != math.Float32bits(maxAbsRef(v)) {
				t.Fatalf("maxAbs(%v) = %v, reference %v", v, maxAbsK(v, kernels), maxAbsRef(v))
			}
			for _, round := range []bool{false, true} {
				got, want := slices.Clone(v), slices.Clone(v)
				gb := encodeHalfK([]byte{7}, got, round, kernels)
				wb := encodeHalfRef([]byte{7}, want, round)
				if !slices.Equal(gb, wb) {
					t.Fatalf("round %v, %v: encoded %x, reference %x", round, v, gb, wb)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("round %v, %v: component %d rounded to %v, reference %v", round, v, i, got[i], want[i])
					}
				}
			}
		}
	})
}
