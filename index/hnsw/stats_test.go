package hnsw

import (
	"context"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestSearchStats checks the distance computations SearchWithStats counts
// against what each search path must compute: a scan of codes one code
// distance per allowed vector, a scan without a graph (no codes) one
// float32 distance each, a graph search at least ef distinct distances
// (its beam, re-scored exactly) and far fewer than the vectors; and that
// counting changes no result.
func TestSearchStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vecs, queries := dataset(3, 4000, 20, 32, 10)
	graphIx := build(t, kvtest.Map{}, vecs, Options{Seed: 1, ExactBelow: -1})
	scanIx := build(t, kvtest.Map{}, vecs, Options{Seed: 1, ExactBelow: 1 << 30, GraphAt: -1})
	flatIx := build(t, kvtest.Map{}, vecs, Options{Seed: 1, ExactBelow: 1 << 30})
	allow := roaring.New()
	for i := range uint32(len(vecs)) {
		if i%3 == 0 {
			allow.Add(i)
		}
	}
	allowed := int(allow.GetCardinality())

	for qi, q := range queries {
		for _, ix := range []*Index{graphIx, scanIx, flatIx} {
			for _, a := range []*roaring.Bitmap{nil, allow} {
				want, err := ix.Search(ctx, q, 10, a)
				if err != nil {
					t.Fatal(err)
				}
				got, st, err := ix.SearchWithStats(ctx, q, 10, a)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("query %d: SearchWithStats returned %v, Search %v", qi, got, want)
				}
				n := len(vecs)
				if a != nil {
					n = allowed
				}
				switch ix {
				case scanIx:
					if st.Dists != n || st.Exact < 10 || st.Exact > n {
						t.Fatalf("query %d, scan of %d codes: stats %+v, want %d code distances and 10..%d exact", qi, n, st, n, n)
					}
				case flatIx:
					if st.Dists != 0 || st.Exact != n {
						t.Fatalf("query %d, scan of %d vectors: stats %+v, want %d exact distances", qi, n, st, n)
					}
				}
			}
		}
		var prev SearchStats
		for _, ef := range []int{16, 64, 256} {
			graphIx.SetEfSearch(ef)
			_, st, err := graphIx.SearchWithStats(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Exact != ef || st.Dists < ef || st.Dists >= len(vecs)/2 || st.Dists <= prev.Dists {
				t.Fatalf("query %d, ef %d: stats %+v (ef before: %+v), want %d exact, ≥ ef and < %d code distances, more than before", qi, ef, st, prev, ef, len(vecs)/2)
			}
			prev = st
		}
		graphIx.SetEfSearch(0)
	}
}
