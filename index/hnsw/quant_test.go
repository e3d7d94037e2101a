package hnsw

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/kv/kvtest"
)

// TestDot8 checks the assembly kernels against the portable one for
// every length around their block sizes, and the quantised dot product
// against the float32 one.
func TestDot8(t *testing.T) {
	vnni, avx2 := useVNNI, useAVX2
	defer func() { useVNNI, useAVX2 = vnni, avx2 }()
	// Each kernel the CPU has, then the portable one.
	for _, k := range [][2]bool{{vnni, avx2}, {false, avx2}, {false, false}} {
		useVNNI, useAVX2 = k[0], k[1]
		testDot8(t)
	}
}

func testDot8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 300; n++ {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		ca, cb := make([]int8, n), make([]int8, n)
		sa, sb := quantize(ca, a), quantize(cb, b)
		// Extremes too: -128 never comes out of quantize but must work.
		if n > 3 {
			ca[0], cb[0], ca[1], cb[1], ca[2], cb[2] = -128, -128, 127, -128, -128, 127
		}
		got, want := dot8(ca, cb), dot8Go(ca, cb)
		if got != want {
			t.Fatalf("n=%d: dot8 = %d, portable %d", n, got, want)
		}
		if n > 3 {
			continue
		}
		exact := dot(a, b)
		if d := float32(got)*sa*sb - exact; max(d, -d) > 0.05*float32(n) {
			t.Fatalf("n=%d: quantised dot %v, exact %v", n, float32(got)*sa*sb, exact)
		}
	}
	for n := 4; n <= 300; n += 37 {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		ca, cb := make([]int8, n), make([]int8, n)
		sa, sb := quantize(ca, a), quantize(cb, b)
		q, exact := float32(dot8(ca, cb))*sa*sb, dot(a, b)
		if d := q - exact; max(d, -d) > 0.02*float32(n) {
			t.Fatalf("n=%d: quantised dot %v, exact %v", n, q, exact)
		}
	}
}

func BenchmarkDot8(b *testing.B) {
	x := make([]int8, 384)
	y := make([]int8, 384)
	for i := range x {
		x[i], y[i] = int8(i), int8(3*i)
	}
	var s int32
	for b.Loop() {
		s += dot8(x, y)
	}
	_ = s
}

func BenchmarkDotFloat32(b *testing.B) {
	x := make([]float32, 384)
	y := make([]float32, 384)
	for i := range x {
		x[i], y[i] = float32(i), float32(3*i)
	}
	var s float32
	for b.Loop() {
		s += dot(x, y)
	}
	_ = s
}

// TestCheckFindsStaleCodes: the int8 copy is derived state; Check must
// notice when it no longer matches the vector, and Load must rebuild it.
func TestCheckFindsStaleCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	ix := build(t, store, clustered(52, 200, 64, 3), Options{Seed: 1, ExactBelow: -1})
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	back, err := Load(ctx, store, []byte("p/"), Options{ExactBelow: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check(ctx, store); err != nil {
		t.Fatalf("loaded index: %v", err)
	}
	ix.code(7)[3] ^= 1
	if err := ix.Check(ctx, store); !errors.Is(err, ErrCheck) {
		t.Errorf("Check missed stale codes: %v", err)
	}
}

// TestScan8MatchesFloatScan checks that the code-ranked exact scan of an
// index with a graph returns exactly (IDs, scores, order) what the float32
// scan of an index without one returns, on near-duplicate vectors (where
// the codes alone would misrank) and exact duplicates (ties), with and
// without filters, after deletes and replacements, under both metrics.
func TestScan8MatchesFloatScan(t *testing.T) {
	t.Parallel()
	for _, metric := range []Metric{Cosine, Dot} {
		r := rand.New(rand.NewPCG(5, uint64(metric)))
		const n, dim = 3000, 48
		base := clustered(9, 20, dim, 4)
		vecs := make([][]float32, n)
		for i := range vecs {
			v := make([]float32, dim)
			b := base[r.IntN(len(base))]
			noise := float32(1e-3)
			if i%3 == 0 {
				noise = 0.3
			}
			for j := range v {
				v[j] = b[j] + noise*float32(r.NormFloat64())
			}
			if i%50 == 1 {
				copy(v, vecs[i-1]) // an exact duplicate: a tie
			}
			vecs[i] = v
		}
		w := kvtest.Map{}
		graph := New(dim, []byte("g/"), Options{Metric: metric, GraphAt: -1, ExactBelow: 1 << 30, EfConstruction: 40})
		flat := New(dim, []byte("f/"), Options{Metric: metric, GraphAt: 1 << 30, ExactBelow: 1 << 30})
		for i, v := range vecs {
			for _, ix := range []*Index{graph, flat} {
				if err := ix.Add(w, uint32(i+7), v); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Deletes and replacements move IDs off their slots.
		for i := 0; i < n; i += 97 {
			for _, ix := range []*Index{graph, flat} {
				if err := ix.Delete(w, uint32(i+7)); err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					if err := ix.Add(w, uint32(i+7), vecs[(i+1)%n]); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if !graph.graph || flat.graph {
			t.Fatal("want one index with a graph and one without")
		}
		for qi := range 40 {
			q := vecs[r.IntN(n)]
			if qi%2 == 1 {
				q = base[r.IntN(len(base))]
			}
			var allow *roaring.Bitmap
			switch qi % 4 {
			case 1:
				allow = randomAllow(uint64(qi), n+7, 0.05)
			case 2:
				allow = randomAllow(uint64(qi), n+7, 0.5)
			}
			for _, k := range []int{1, 10, 50} {
				got, err := graph.Search(context.Background(), q, k, allow)
				if err != nil {
					t.Fatal(err)
				}
				want, err := flat.Search(context.Background(), q, k, allow)
				if err != nil {
					t.Fatal(err)
				}
				if !sameHits(got, want) {
					t.Fatalf("%v query %d k=%d: scan8\n%v\nfloat32 scan\n%v", metric, qi, k, got, want)
				}
			}
		}
	}
}

// sameHits reports whether two results are equal, except that hits tied
// with the last may differ: an exact scan keeps the first of equal
// vectors it meets at the boundary, in slot order, and the two indexes
// lay their slots out differently after deletes.
func sameHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Score != b[i].Score || (a[i].ID != b[i].ID && a[i].Score != a[len(a)-1].Score) {
			return false
		}
	}
	return true
}

// TestQuantizeSparse: the codes, scale and bound quantizeSparse derives
// from a vector's non-zero components are those quantize and boundOf give
// for the whole vector, bit for bit (a graph's image leaves a sparse
// vector's codes to it, where a load from the records computed them
// dense), for vectors of one to dim/2 components, negative zeros,
// subnormals and the largest finite values among them; a vector with a
// non-finite component is left to the dense functions.
func TestQuantizeSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const dim = 384
	for i := range 3000 {
		v := sparseVec(r, dim, 1+r.IntN(dim/2))
		switch i % 5 {
		case 1:
			v[r.IntN(dim)] = float32(math.Copysign(0, -1))
		case 2:
			v[r.IntN(dim)] = math.SmallestNonzeroFloat32
		case 3:
			v[r.IntN(dim)] = -math.MaxFloat32
		}
		var idx []uint16
		var val []float32
		for j, x := range v {
			if math.Float32bits(x) != 0 {
				idx, val = append(idx, uint16(j)), append(val, x)
			}
		}
		want := make([]int8, dim)
		ws := quantize(want, v)
		wb := boundOf(want, ws, v)
		got := make([]int8, dim)
		gs, gb, ok := quantizeSparse(got, idx, val)
		if !ok || !slices.Equal(got, want) || math.Float32bits(gs) != math.Float32bits(ws) || gb != wb {
			t.Fatalf("vector %d: sparse %v scale %v bound %+v (ok %v), dense scale %v bound %+v", i, got, gs, gb, ok, ws, wb)
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		dst := make([]int8, 4)
		if _, _, ok := quantizeSparse(dst, []uint16{1, 3}, []float32{0.5, bad}); ok || slices.ContainsFunc(dst, func(c int8) bool { return c != 0 }) {
			t.Fatalf("a component %v: ok %v, codes %v", bad, ok, dst)
		}
	}
}
