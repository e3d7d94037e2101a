package hnsw

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestListHoldsSparse: without a graph, sparse vectors are held sparse
// and dense ones in the slab, through adds, replacements (sparse to dense
// and back), deletes, slot reuse and the compaction of dead entries; the
// index holds exactly the vectors its records decode to, passes Check,
// answers like a brute-force scan of them, reloads to the same vectors
// and answers, holds far less than the vectors densely would, and builds
// the graph from them at GraphAt.
func TestListHoldsSparse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const dim, n = 96, 400
	r := rand.New(rand.NewPCG(21, 4))
	vecOfID := func() []float32 {
		if r.IntN(10) == 0 { // dense: a long text's vector, or another embedder's
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			return v
		}
		v := sparseVec(r, dim, 1+r.IntN(20))
		v[r.IntN(dim)] = 1 // never the zero vector
		return v
	}
	store := kvtest.Map{}
	o := Options{Seed: 3, GraphAt: 2 * n}
	ix := New(dim, []byte("l/"), o)
	live := map[uint32][]float32{}
	for i := range uint32(n) {
		v := vecOfID()
		if err := ix.Add(store, i, v); err != nil {
			t.Fatal(err)
		}
		live[i] = v
	}
	// Replace and delete at random: dead entries pile up past the
	// compaction threshold, freed slots and slab records are reused.
	for range 6 * n {
		id := uint32(r.IntN(n))
		if _, ok := live[id]; ok && r.IntN(4) == 0 {
			if err := ix.Delete(store, id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
			continue
		}
		v := vecOfID()
		if err := ix.Add(store, id, v); err != nil {
			t.Fatal(err)
		}
		live[id] = v
	}
	if ix.graph {
		t.Fatal("the graph was built below GraphAt")
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	heldAsRecords := func(ix *Index) {
		t.Helper()
		sparse, dense := 0, 0
		for id, s := range ix.slotOf {
			want := make([]float32, dim)
			if !decodeVec(want, store[string(ix.vecKey(id))], false) {
				t.Fatalf("vector %d: record does not decode", id)
			}
			if got := vecOf(ix, s); !slices.Equal(got, want) {
				t.Fatalf("vector %d held as %v, its record decodes to %v", id, got, want)
			}
			if ix.list.refs[s].n == denseRef {
				dense++
			} else {
				sparse++
			}
		}
		if sparse == 0 || dense == 0 || len(ix.slotOf) != len(live) {
			t.Fatalf("%d sparse and %d dense vectors of %d: the test wants both", sparse, dense, len(live))
		}
	}
	heldAsRecords(ix)
	if held := len(ix.list.sidx); held > 2*(len(ix.list.sidx)-ix.list.dead)+1024 {
		t.Fatalf("%d entries held, %d dead: never compacted", held, ix.list.dead)
	}

	// Answers: the same IDs as a brute-force scan of the held vectors.
	queries := make([][]float32, 40)
	for i := range queries {
		queries[i] = vecOfID()
	}
	for _, q := range queries {
		hits, err := ix.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]uint32, len(hits))
		for i, h := range hits {
			got[i] = h.ID
		}
		if want := bruteForceHeld(ix, q, 10, nil); !slices.Equal(got, want) {
			t.Fatalf("search %v, brute force over the held vectors %v", got, want)
		}
	}

	// Reloaded: the same vectors, the same answers, the same forms.
	re, err := Load(ctx, store, []byte("l/"), Options{Seed: 3, GraphAt: 2 * n, Capacity: len(live)})
	if err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	for id, s := range ix.slotOf {
		rs := re.slotOf[id]
		if !slices.Equal(vecOf(re, rs), vecOf(ix, s)) || (re.list.refs[rs].n == denseRef) != (ix.list.refs[s].n == denseRef) {
			t.Fatalf("vector %d reloaded differently", id)
		}
	}
	sameSearches(t, ix, re, queries, nil)
	if got, denseBytes := re.Bytes(), len(live)*4*dim; got > denseBytes*3/5 {
		t.Errorf("the reloaded index holds %d bytes, the vectors densely %d", got, denseBytes)
	}

	// The graph, built from the held vectors when the index reaches
	// GraphAt, holds them as the list did (sparse or dense, as their
	// values are), keeps doing so through replaces and deletes, and
	// passes Check, also reloaded, and its image too.
	for i := uint32(n); len(ix.slotOf) < 2*n; i++ {
		v := vecOfID()
		if err := ix.Add(store, i, v); err != nil {
			t.Fatal(err)
		}
		live[i] = v
	}
	if !ix.graph {
		t.Fatal("no graph at GraphAt")
	}
	for range n {
		id := uint32(r.IntN(2 * n))
		if _, ok := live[id]; ok && r.IntN(4) == 0 {
			if err := ix.Delete(store, id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
			continue
		}
		v := vecOfID()
		if err := ix.Add(store, id, v); err != nil {
			t.Fatal(err)
		}
		live[id] = v
	}
	heldAsRecords(ix)
	vecBytes := ix.list.bytes(false)
	for _, c := range ix.vecs.chunks {
		vecBytes += 4 * cap(c)
	}
	if denseBytes := len(live) * 4 * dim; vecBytes > denseBytes*3/5 {
		t.Errorf("the graph's vectors hold %d bytes, densely %d", vecBytes, denseBytes)
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	re, err = Load(ctx, store, []byte("l/"), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	heldAsRecords(re)
	sameSearches(t, ix, re, queries, nil)
	im, err := LoadImage(re.AppendImage(nil), []byte("l/"), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	heldAsRecords(im)
	sameSearches(t, re, im, queries, nil)
}
