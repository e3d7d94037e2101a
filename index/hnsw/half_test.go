package hnsw

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestHalfExhaustive: every binary16 value survives fromHalf → toHalf.
func TestHalfExhaustive(t *testing.T) {
	t.Parallel()
	for h := range 1 << 16 {
		f := fromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := toHalf(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %04x → %04x", h, g)
			}
			continue
		}
		if g := toHalf(f); g != uint16(h) {
			t.Fatalf("%04x → %v → %04x", h, f, g)
		}
	}
}

// TestHalfRounding: toHalf picks the nearest binary16 (ties to even),
// checked against a float64 search of the two neighbours.
func TestHalfRounding(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		var f float32
		switch r.IntN(3) {
		case 0:
			f = float32(r.NormFloat64())
		case 1:
			f = float32(r.NormFloat64() * 1e-6) // subnormal halves
		default:
			f = math.Float32frombits(r.Uint32() & 0xbfffffff) // |f| < 2
		}
		h := toHalf(f)
		got := float64(fromHalf(h))
		// The neighbours of h on the binary16 line (same sign).
		lo, hi := float64(fromHalf(h-1)), float64(fromHalf(h+1))
		if h&0x7fff == 0 {
			lo = -float64(fromHalf(h | 1))
		}
		d := math.Abs(got - float64(f))
		if h&0x7fff != 0x7c00 && (math.Abs(lo-float64(f)) < d || math.Abs(hi-float64(f)) < d) {
			t.Fatalf("toHalf(%v) = %v, a neighbour (%v, %v) is nearer", f, got, lo, hi)
		}
	}
}

// TestHalfVectorRoundTrip: a rounded vector encodes to bytes that decode to
// exactly it, and rounding is idempotent; the error stays within 2⁻¹¹ of
// the largest magnitude.
func TestHalfVectorRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		dim := 1 + r.IntN(400)
		mag := math.Pow(10, float64(r.IntN(12)-6))
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64() * mag)
			if r.IntN(10) == 0 {
				v[i] = 0
			}
		}
		orig := append([]float32(nil), v...)
		if !slices.Equal(roundAppendHalf(nil, v), appendHalf(nil, orig)) {
			t.Fatal("roundAppendHalf encodes differently from appendHalf")
		}
		scale := maxAbs(orig)
		for i := range v {
			if d := math.Abs(float64(v[i] - orig[i])); d > float64(scale)/2048*1.0001 {
				t.Fatalf("component %d: %v rounded to %v (scale %v)", i, orig[i], v[i], scale)
			}
		}
		b := appendHalf(nil, v)
		if len(b) != halfLen(dim) {
			t.Fatalf("encoded %d bytes, want %d", len(b), halfLen(dim))
		}
		got := make([]float32, dim)
		if !decodeHalf(got, b) {
			t.Fatal("decode failed")
		}
		for i := range got {
			if got[i] != v[i] {
				t.Fatalf("dim %d component %d: decoded %v, held %v", dim, i, got[i], v[i])
			}
		}
		again := append([]float32(nil), v...)
		roundAppendHalf(nil, again)
		for i := range again {
			if again[i] != v[i] {
				t.Fatalf("rounding twice moved component %d: %v → %v", i, v[i], again[i])
			}
		}
	}
	if decodeHalf(make([]float32, 2), []byte{halfMarker, 0, 0, 0, 0, 0}) {
		t.Fatal("short encoding decoded")
	}
	if decodeHalf(make([]float32, 1), []byte{0, 0, 0, 0, 0, 0, 0}) {
		t.Fatal("encoding without marker decoded")
	}
}

// TestLoadFloat32Vectors: an index persisted with float32 vectors (before
// half precision) loads with those exact values, answers as it did, passes
// Check, and takes new half-precision vectors beside the old ones.
func TestLoadFloat32Vectors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vecs := clustered(77, 300, 16, 4)
	for _, o := range []Options{{Seed: 1}, {Seed: 1, ExactBelow: -1}} {
		store := kvtest.Map{}
		ix := build(t, store, vecs, o)
		// What a float32 store held: the vectors normalised, unrounded.
		for i, v := range vecs {
			s, _ := ix.scaleOf(v)
			f := make([]float32, len(v))
			put(f, v, s)
			store[string(ix.vecKey(uint32(i)))] = encodeVec(f)
		}
		re, err := Load(ctx, store, []byte("p/"), o)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vecs {
			s, _ := ix.scaleOf(v)
			f := make([]float32, len(v))
			put(f, v, s)
			if !slices.Equal(vecOf(re, re.slotOf[uint32(i)]), f) {
				t.Fatalf("vector %d not loaded at float32", i)
			}
		}
		if err := re.Check(ctx, store); err != nil {
			t.Fatal(err)
		}
		if err := re.Add(store, 5000, vecs[0]); err != nil {
			t.Fatal(err)
		}
		if n := len(store[string(ix.vecKey(5000))]); n != halfLen(16) {
			t.Fatalf("new vector persisted in %d bytes, want %d", n, halfLen(16))
		}
		again, err := Load(ctx, store, []byte("p/"), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Check(ctx, store); err != nil {
			t.Fatal(err)
		}
		sameSearches(t, re, again, vecs[:20], nil)
	}
}

// TestDeferredWrites: Adds with a nil writer, flushed in batches, write
// the keys that Adds writing at once write (the same vectors, byte for
// byte, and a list per node and layer; the lists themselves differ, being
// linked a batch at a time), in fewer bytes: across the graph build,
// replacements and deletes, with and without a graph from the start. The
// batched graph is deterministic: linked on one goroutine or several, it
// is the same, and it is what a reload answers from. Searches before the
// flush find the queued vectors.
func TestDeferredWrites(t *testing.T) {
	ctx := context.Background()
	vecs := clustered(91, 1000, 16, 5)
	defer func(w int) { linkWorkers = w }(linkWorkers)
	for _, o := range []Options{{Seed: 2, GraphAt: 300}, {Seed: 2, ExactBelow: -1}} {
		now := kvtest.Map{}
		var wroteNow int
		count := func(kv kvtest.Map, n *int) *countingKV { return &countingKV{kv, n} }
		a := New(16, []byte("p/"), o)
		var stores [2]kvtest.Map
		var wrote [2]int
		var last *Index
		for run, workers := range []int{1, 4} {
			linkWorkers = workers
			later := kvtest.Map{}
			b := New(16, []byte("p/"), o)
			r := rand.New(rand.NewPCG(5, 6))
			for i, v := range vecs {
				id := uint32(i)
				if i > 10 && r.IntN(10) == 0 {
					id = uint32(r.IntN(i)) // replace
				}
				if run == 0 {
					if err := a.Add(count(now, &wroteNow), id, v); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Add(nil, id, v); err != nil {
					t.Fatal(err)
				}
				if hits, err := b.Search(ctx, v, 1, nil); err != nil || len(hits) != 1 || hits[0].ID != id {
					t.Fatalf("search for the vector of %d just added: %v, %v", id, hits, err)
				}
				switch {
				case i%97 == 96:
					del := uint32(r.IntN(i))
					if run == 0 {
						if err := a.Delete(count(now, &wroteNow), del); err != nil {
							t.Fatal(err)
						}
					}
					if err := b.Delete(count(later, &wrote[run]), del); err != nil {
						t.Fatal(err)
					}
				case i%150 == 149:
					if err := b.Check(ctx, later); !errors.Is(err, ErrCheck) {
						t.Fatalf("Check with deferred writes pending: %v", err)
					}
					if err := b.Flush(count(later, &wrote[run])); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Flush(count(later, &wrote[run])); err != nil {
				t.Fatal(err)
			}
			if err := b.Check(ctx, later); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(count(later, &wrote[run])); err != nil {
				t.Fatal(err)
			}
			stores[run], last = later, b
		}
		later := stores[0]
		if len(now) != len(later) {
			t.Fatalf("%d keys written at once, %d deferred", len(now), len(later))
		}
		for k, v := range now {
			w, ok := later[k]
			if !ok || k[len("p/")] == tagVector && !bytes.Equal(w, v) {
				t.Fatalf("key %x missing or differs", k)
			}
		}
		if !maps.EqualFunc(stores[0], stores[1], bytes.Equal) {
			t.Fatal("batched linking on 1 and 4 goroutines built different graphs")
		}
		if wrote[0] >= wroteNow {
			t.Fatalf("deferred writes wrote %d bytes, immediate %d", wrote[0], wroteNow)
		}
		re, err := Load(ctx, later, []byte("p/"), o)
		if err != nil {
			t.Fatal(err)
		}
		sameSearches(t, last, re, vecs[:50], nil)
	}
}

// countingKV is a kvtest.Map that counts the bytes written to it.
type countingKV struct {
	m kvtest.Map
	n *int
}

func (c *countingKV) Set(k, v []byte) error { *c.n += len(k) + len(v); return c.m.Set(k, v) }
func (c *countingKV) Delete(k []byte) error { *c.n += len(k); return c.m.Delete(k) }

// TestEncodeHalfMatchesToHalf: encodeHalf's fast path for normal halves
// gives exactly toHalf's bits, on components of every magnitude (zeros,
// subnormal halves, rounding boundaries, the scale itself).
func TestEncodeHalfMatchesToHalf(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, 64)
	for trial := range 200_000 {
		for i := range v {
			switch r.IntN(6) {
			case 0:
				v[i] = 0
			case 1:
				v[i] = float32(r.NormFloat64() * 1e-5)
			case 2:
				// Just around a rounding boundary: the low 13 bits near 0x1000.
				v[i] = math.Float32frombits(r.Uint32()&0x3fffe000 | 0x1000 + uint32(r.IntN(3)) - 1)
			default:
				v[i] = float32(r.NormFloat64())
			}
			if r.IntN(2) == 0 {
				v[i] = -v[i]
			}
		}
		if trial%3 == 0 {
			v[r.IntN(len(v))] = float32(r.ExpFloat64() * 1e3)
		}
		scale := maxAbs(v)
		b := appendHalf(nil, v)[halfHeader:]
		for i, x := range v {
			want := uint16(0)
			if scale != 0 {
				want = toHalf(x * (1 / scale))
			}
			if got := uint16(b[2*i]) | uint16(b[2*i+1])<<8; got != want {
				t.Fatalf("component %v of scale %v: %04x, toHalf gives %04x", x, scale, got, want)
			}
		}
	}
}

func BenchmarkEncodeHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	v := make([]float32, 384)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	buf := make([]byte, 0, halfLen(len(v)))
	for b.Loop() {
		w := slices.Clone(v)
		buf = roundAppendHalf(buf[:0], w)
	}
}

// TestRoundHalfMatchesFromHalf: the rounded value encodeHalf leaves in the
// vector is fromHalf of the stored bits times the scale, for every
// component, on the same mix of magnitudes.
func TestRoundHalfMatchesFromHalf(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 9))
	v := make([]float32, 64)
	for range 100_000 {
		for i := range v {
			v[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-8)))
			if r.IntN(5) == 0 {
				v[i] = 0
			}
		}
		scale := maxAbs(v)
		w := slices.Clone(v)
		b := roundAppendHalf(nil, w)[halfHeader:]
		for i := range v {
			want := fromHalf(uint16(b[2*i])|uint16(b[2*i+1])<<8) * scale
			if math.Float32bits(w[i]) != math.Float32bits(want) {
				t.Fatalf("component %v: rounded to %v, stored bits give %v", v[i], w[i], want)
			}
		}
	}
}
