package hnsw

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memor-db/memor/kv/kvtest"
)

// sparseVec returns a vector of dim with nnz non-zero components at
// random places, of random sign and magnitude over many binades (some
// scale to subnormal halves or round to ±0), and a few -0 components.
func sparseVec(r *rand.Rand, dim, nnz int) []float32 {
	v := make([]float32, dim)
	for _, i := range r.Perm(dim)[:nnz] {
		x := float32(r.NormFloat64()) * float32(math.Pow(10, float64(r.IntN(9)-6)))
		if r.IntN(17) == 0 {
			x = float32(math.Copysign(0, -1))
		}
		v[i] = x
	}
	return v
}

// TestSparseDecodesLikeDense: for vectors from empty to dense, over
// dimensions on both sides of the stack copy, the persisted encoding is
// sparse exactly when fewer than half of the halves are non-zero, is
// shorter then, decodes to the bits the dense encoding decodes to, and
// rounds the held vector to the same bits as the dense encoding.
func TestSparseDecodesLikeDense(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 5))
	for _, dim := range []int{1, 2, 3, 7, 16, 384, 1024, 1500} {
		for trial := range 60 {
			nnz := r.IntN(dim + 1)
			if trial < 3 {
				nnz = []int{0, (dim - 1) / 2, dim / 2}[trial]
			}
			v := sparseVec(r, dim, nnz)
			dense := appendHalf(nil, v)
			rec := appendVec(nil, v)
			halves := nonZeroHalves(dense[halfHeader:])
			if sparse := 2*halves < dim; sparse != (rec[0] == sparseMarker) {
				t.Fatalf("dim %d, %d non-zero halves: record marker %x", dim, halves, rec[0])
			}
			if rec[0] == sparseMarker {
				if len(rec) != halfHeader+sparseEntry*halves || len(rec) >= len(dense) {
					t.Fatalf("dim %d: sparse record of %d halves is %d bytes (dense %d)", dim, halves, len(rec), len(dense))
				}
			} else if !slices.Equal(rec, dense) {
				t.Fatalf("dim %d: dense record differs from appendHalf", dim)
			}
			want, got := make([]float32, dim), make([]float32, dim)
			for i := range got {
				got[i] = float32(i + 1) // decode must overwrite every component
			}
			if !decodeHalf(want, dense) || !decodeVec(got, rec, false) {
				t.Fatalf("dim %d: decode failed", dim)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("dim %d component %d: sparse decodes %v (%08x), dense %v (%08x)",
						dim, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			a, b := slices.Clone(v), slices.Clone(v)
			roundAppendHalf(nil, a)
			if !slices.Equal(roundAppendVec(nil, b), rec) {
				t.Fatalf("dim %d: roundAppendVec wrote other bytes than appendVec", dim)
			}
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("dim %d component %d: rounded to %v, dense rounds to %v", dim, i, b[i], a[i])
				}
			}
			if !slices.Equal(vecBytes(b, rec), rec) || !slices.Equal(vecBytes(b, dense), dense) {
				t.Fatalf("dim %d: vecBytes does not re-encode in the stored record's form", dim)
			}
		}
	}
}

// TestSparseMalformed: a damaged sparse record is refused, never decoded
// into something else.
func TestSparseMalformed(t *testing.T) {
	t.Parallel()
	const dim = 16
	entry := func(i, h uint16) []byte {
		return binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(nil, i), h)
	}
	header := func(scale float32) []byte {
		return binary.LittleEndian.AppendUint32([]byte{sparseMarker}, math.Float32bits(scale))
	}
	one := uint16(0x3c00)
	good := slices.Concat(header(2), entry(3, one), entry(9, 0x8000))
	got := make([]float32, dim)
	if !decodeVec(got, good, false) || got[3] != 2 || math.Float32bits(got[9]) != 0x80000000 || got[0] != 0 {
		t.Fatalf("well-formed record decoded to %v", got)
	}
	bad := map[string][]byte{
		"short header":     {sparseMarker, 0, 0},
		"partial entry":    slices.Concat(header(1), entry(3, one)[:3]),
		"NaN scale":        slices.Concat(header(float32(math.NaN())), entry(3, one)),
		"infinite scale":   slices.Concat(header(float32(math.Inf(1))), entry(3, one)),
		"negative scale":   slices.Concat(header(-1), entry(3, one)),
		"index past dim":   slices.Concat(header(1), entry(dim, one)),
		"indexes repeated": slices.Concat(header(1), entry(3, one), entry(3, one)),
		"indexes reversed": slices.Concat(header(1), entry(5, one), entry(3, one)),
		"zero half":        slices.Concat(header(1), entry(3, 0)),
		"dense-sized":      slices.Concat(header(1), entry(0, one), entry(1, one), entry(2, one), entry(3, one), entry(4, one), entry(5, one), entry(6, one), entry(7, one)),
		"wrong marker":     slices.Concat([]byte{0xF3}, good[1:]),
	}
	for name, b := range bad {
		if decodeVec(make([]float32, dim), b, true) {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestSparseIndexPaths: sparse vectors written by every path (deferred
// and immediate Adds, the graph build, replacement, the Writer) persist
// as sparse records that reload to the same vectors and searches and
// pass Check; an index persisted before sparse records, with dense half
// records of the same vectors, loads, passes Check and answers the same.
func TestSparseIndexPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 1))
	const dim = 64
	vecs := make([][]float32, 300)
	for i := range vecs {
		vecs[i] = sparseVec(r, dim, 1+r.IntN(24))
		vecs[i][r.IntN(dim)] = 1 // never the zero vector
	}
	prefix := []byte("p/")
	sparseRecords := func(store kvtest.Map) int {
		n := 0
		for k, v := range store {
			if len(k) == len(prefix)+5 && k[len(prefix)] == tagVector && v[0] == sparseMarker {
				n++
			}
		}
		return n
	}
	for _, o := range []Options{{Seed: 1}, {Seed: 1, GraphAt: 100}} {
		deferred, now := kvtest.Map{}, kvtest.Map{}
		a, b := New(dim, prefix, o), New(dim, prefix, o)
		for i, v := range vecs {
			if err := a.Add(nil, uint32(i), v); err != nil {
				t.Fatal(err)
			}
			if err := b.Add(now, uint32(i), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Flush(deferred); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(now, 7, vecs[8]); err != nil { // a replacement
			t.Fatal(err)
		}
		if n := sparseRecords(now); n != len(vecs) {
			t.Fatalf("%+v: %d of %d vectors persisted sparse", o, n, len(vecs))
		}
		for _, c := range []struct {
			ix    *Index
			store kvtest.Map
		}{{a, deferred}, {b, now}} {
			if err := c.ix.Check(ctx, c.store); err != nil {
				t.Fatal(err)
			}
			re, err := Load(ctx, c.store, prefix, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := re.Check(ctx, c.store); err != nil {
				t.Fatal(err)
			}
			for id, s := range c.ix.slotOf {
				if !slices.Equal(vecOf(re, re.slotOf[id]), vecOf(c.ix, s)) {
					t.Fatalf("vector %d reloaded differently", id)
				}
			}
			sameSearches(t, c.ix, re, vecs[:30], nil)
		}

		// The records a store held before sparse ones: dense halves.
		old := kvtest.Map{}
		for k, v := range deferred {
			old[k] = v
		}
		for id, s := range a.slotOf {
			old[string(a.vecKey(id))] = appendHalf(nil, vecOf(a, s))
		}
		re, err := Load(ctx, old, prefix, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := re.Check(ctx, old); err != nil {
			t.Fatalf("dense records of sparse vectors: %v", err)
		}
		sameSearches(t, a, re, vecs[:30], nil)
	}

	// The import path writes what the index writes.
	viaWriter, viaIndex := kvtest.Map{}, kvtest.Map{}
	wr := NewWriter(dim, prefix, Options{Seed: 1})
	ix := New(dim, prefix, Options{Seed: 1})
	for i, v := range vecs[:100] {
		if err := wr.Add(viaWriter, uint32(i), v); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(viaIndex, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Finish(viaWriter); err != nil {
		t.Fatal(err)
	}
	if sparseRecords(viaWriter) != 100 {
		t.Fatal("the writer did not write sparse records")
	}
	for k, v := range viaIndex {
		if !slices.Equal(viaWriter[k], v) {
			t.Fatalf("key %x: writer wrote %x, index %x", k, viaWriter[k], v)
		}
	}
}

// TestLaneMask: every value of every lane, beside random other lanes.
func TestLaneMask(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	for v := range 1 << 16 {
		for lane := range 4 {
			other := r.Uint64() &^ (0xffff << (16 * lane))
			want := laneMask(other) // the other lanes alone
			if v != 0 {
				want |= 1 << (16*lane + 15)
			}
			if got := laneMask(other | uint64(v)<<(16*lane)); got != want {
				t.Fatalf("lane %d = %04x beside %016x: mask %016x, want %016x", lane, v, other, got, want)
			}
		}
	}
	for _, w := range []uint64{0, 1, 0x8000, 0x10000, 0xffffffffffffffff} {
		want := uint64(0)
		for lane := range 4 {
			if uint16(w>>(16*lane)) != 0 {
				want |= 1 << (16*lane + 15)
			}
		}
		if laneMask(w) != want {
			t.Fatalf("%016x: mask %016x, want %016x", w, laneMask(w), want)
		}
	}
}

// vecOf is slot s's vector, however ix holds it.
func vecOf(ix *Index, s uint32) []float32 { return ix.vecInto(s, make([]float32, ix.dim)) }
