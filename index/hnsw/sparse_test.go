package hnsw

import (
	"context"
	"encoding/binary"
	"math"
	bigf "math/big"

	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

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
			if !decodeHalf(want, dense) || !decodeVec(got, rec) {
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
	if !decodeVec(got, good) || got[3] != 2 || math.Float32bits(got[9]) != 0x80000000 || got[0] != 0 {
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
		if decodeVec(make([]float32, dim), b) {
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
				if !slices.Equal(re.vecOf(re.slotOf[id]), c.ix.vecOf(s)) {
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
			old[string(a.vecKey(id))] = appendHalf(nil, a.vecOf(s))
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

// vecOf returns a copy of slot s's vector, expanded if held.
func (ix *Index) vecOf(s uint32) []float32 { return ix.vecInto(s, make([]float32, ix.dim)) }

// TestSparseDotIsDot: the dot product of a query with a vector's held
// components is bit for bit the dense kernel's on the expanded vector, at
// dimensions below, at and around the kernel's 32-element blocks, with
// magnitudes spread wide enough that rounding decides.
func TestSparseDotIsDot(t *testing.T) {
	if !sparseExact {
		t.Skip("vectors are expanded on load on this machine: vek32 runs its portable loop")
	}
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 9))
	wide := func() float32 {
		return float32((r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(40)-20)))
	}
	for _, dim := range []int{1, 7, 31, 32, 33, 64, 100, 384, 1000} {
		for range 2000 {
			q := make([]float32, dim)
			for i := range q {
				q[i] = wide()
			}
			// A record of k components at random places: halves of random
			// bits (not ±0, not NaN or Inf), times a random scale.
			scale := float32(math.Abs(float64(wide())))
			b := binary.LittleEndian.AppendUint32([]byte{sparseMarker}, math.Float32bits(scale))
			v := make([]float32, dim)
			places := r.Perm(dim)[:r.IntN((dim+1)/2)]
			slices.Sort(places)
			for _, i := range places {
				h := uint16(1 + r.IntN(0x7bff)) // up to the largest finite half
				if r.IntN(2) == 0 {
					h |= 0x8000
				}
				b = binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(b, uint16(i)), h)
				v[i] = fromHalf(h) * scale
			}
			h := &held{}
			if !h.push(b, dim, 1) {
				t.Fatalf("dim %d: record %x refused", dim, b)
			}
			if got, want := sparseDot(q, h.vector(0)), dot(q, v); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("dim %d: sparse %v (%x), dense %v (%x)", dim, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
}

// TestFMA32: fma32 rounds a·b + c once, like the instruction: where
// rounding the float64 sum to float32 again (double rounding) is one unit
// off, and on random operands against a 300-bit sum.
func TestFMA32(t *testing.T) {
	t.Parallel()
	exact := func(a, b, c float32) float32 {
		e := new(bigf.Float).SetPrec(300).Mul(bigf.NewFloat(float64(a)), bigf.NewFloat(float64(b)))
		w, _ := e.Add(e, bigf.NewFloat(float64(c))).Float32()
		return w
	}
	// The product is just past the halfway point between 1 and the next
	// float32 by less than half a float64 unit: the float64 sum lands on
	// the halfway point, which rounds to even (1).
	for _, c := range [][2]uint32{{0x3f88ad59, 0x336fbf5b}, {0x3fe7c3a2, 0x330d6295}, {0x3fa5c6b6, 0x3345aa00}} {
		a, b := math.Float32frombits(c[0]), math.Float32frombits(c[1])
		if twice := float32(float64(a)*float64(b) + 1); twice != 1 {
			t.Fatalf("%v·%v + 1 is not a double-rounding case (%v)", a, b, twice)
		}
		if got, want := fma32(a, b, 1), exact(a, b, 1); got != want || want == 1 {
			t.Errorf("fma32(%v, %v, 1) = %v, want %v", a, b, got, want)
		}
	}
	r := rand.New(rand.NewPCG(2, 3))
	for range 100000 {
		a, b := float32(r.NormFloat64()), float32(r.NormFloat64())
		c := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
}

// TestHeldVectors: an index without a graph loads its sparse records as
// held components (unless a record is dense); it answers exactly what
// the index that wrote them answers, scan after scan, until the scans
// expand it; an Add or Reserve expands it first, and so do neither Check
// nor Delete.
func TestHeldVectors(t *testing.T) {
	if !sparseExact {
		t.Skip("vectors are expanded on load on this machine")
	}
	t.Parallel()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	const dim = 96
	prefix := []byte("p/")
	src, store := New(dim, prefix, Options{}), kvtest.Map{}
	var queries [][]float32
	for i := range 200 {
		v := sparseVec(r, dim, 1+r.IntN(30))
		v[r.IntN(dim)] = 1
		if err := src.Add(store, uint32(i), v); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			queries = append(queries, sparseVec(r, dim, dim))
		}
	}
	load := func(s kvtest.Map) *Index {
		t.Helper()
		ix, err := Load(ctx, s, prefix, Options{Capacity: 200})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := load(store)
	if ix.held == nil || ix.vecs.n != 0 {
		t.Fatalf("loaded expanded (held %v, %d float32 slots)", ix.held != nil, ix.vecs.n)
	}
	dense := int64(200 * 4 * dim)
	if b := ix.VectorBytes(); b <= 0 || b >= dense/2 {
		t.Fatalf("held vectors counted as %d bytes (expanded: %d)", b, dense)
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(store, 3); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(kvtest.Map{}, 3); err != nil {
		t.Fatal(err)
	}
	allow := roaring.BitmapOf(1, 2, 3, 50, 51, 52, 190)
	for i := 0; ix.held != nil; i++ {
		if i > expandAfter {
			t.Fatalf("still held after %d scans", i)
		}
		sameSearches(t, src, ix, queries[:1], allow) // two scans
	}
	sameSearches(t, src, ix, queries, allow)
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	if b := ix.VectorBytes(); b != dense || src.VectorBytes() != dense {
		t.Fatalf("expanded vectors counted as %d bytes (the writer's %d), want %d", b, src.VectorBytes(), dense)
	}

	for _, change := range []func(*Index) error{
		func(ix *Index) error { return ix.Add(store, 500, queries[0]) },
		func(ix *Index) error { ix.Reserve(10); return nil },
	} {
		ix := load(store)
		if err := change(ix); err != nil {
			t.Fatal(err)
		}
		if ix.held != nil || ix.vecs.n != len(ix.ids) {
			t.Fatalf("not expanded by a change (held %v, %d of %d slots)", ix.held != nil, ix.vecs.n, len(ix.ids))
		}
		if err := ix.Check(ctx, store); err != nil {
			t.Fatal(err)
		}
	}

	// One dense record among sparse ones: expanded as loaded.
	mixed := kvtest.Map{}
	for k, v := range store {
		mixed[k] = v
	}
	s := src.slotOf[100]
	mixed[string(src.vecKey(100))] = appendHalf(nil, src.vec(s))
	if ix := load(mixed); ix.held != nil {
		t.Fatal("a dense record was held")
	} else if !slices.Equal(ix.vec(ix.slotOf[100]), src.vec(s)) || !slices.Equal(ix.vec(ix.slotOf[199]), src.vec(src.slotOf[199])) {
		t.Fatal("vectors differ")
	}
}
