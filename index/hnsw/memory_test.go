package hnsw

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/memor-db/memor/internal/memsize/heaptest"
)

// TestBytesMatchesHeap requires Bytes, the account the engine's index
// cache spends its budget by, to be within a tenth of the heap an index
// adds: built by Adds and loaded from its image, list and graph, sparse
// vectors (the default embedder's) and dense.
func TestBytesMatchesHeap(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1500
	}
	dense := clustered(11, n, 384, 20)
	for _, c := range []struct {
		name string
		vecs [][]float32
		o    Options
	}{
		{"dense/list", dense, Options{Seed: 1}},
		{"dense/graph", dense, Options{Seed: 1, ExactBelow: -1}},
		{"sparse/list", sparsified(dense, 8), Options{Seed: 1}},
		{"sparse/graph", sparsified(dense, 8), Options{Seed: 1, ExactBelow: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ix *Index
			// A writer: with none, Add holds the records until a Flush.
			built := heapAdded(func() { ix = build(t, &countKV{}, c.vecs, c.o) })
			img := ix.AppendImage(nil)
			check := func(how string, ix *Index, heap float64) {
				t.Helper()
				r := float64(ix.Bytes()) / heap
				t.Logf("%s: Bytes %d, heap %.0f (%.2f×)", how, ix.Bytes(), heap, r)
				if r < 0.9 || r > 1.1 {
					t.Errorf("%s: Bytes %d is %.2f× the heap the index adds (%.0f)", how, ix.Bytes(), r, heap)
				}
			}
			check("built", ix, built)
			var re *Index
			loaded := heapAdded(func() {
				var err error
				// A copy, made in the measure: a loaded index keeps
				// parts of its image.
				if re, err = LoadImage(bytes.Clone(img), []byte("p/"), c.o); err != nil {
					t.Fatal(err)
				}
			})
			check("from the image", re, loaded)
			// Writes on top: the first append copies the entries used
			// in place out of the image, which is then let go.
			var wr *Index
			written := heapAdded(func() {
				var err error
				if wr, err = LoadImage(bytes.Clone(img), []byte("p/"), c.o); err != nil {
					t.Fatal(err)
				}
				for i, v := range c.vecs[:n/10] {
					if err := wr.Add(&countKV{}, uint32(n+i), v); err != nil {
						t.Fatal(err)
					}
				}
			})
			check("from the image, then written", wr, written)
			runtime.KeepAlive(wr)
			runtime.KeepAlive(ix)
			runtime.KeepAlive(re)
			runtime.KeepAlive(img)
		})
	}
}

// heapAdded returns the heap that build's results keep (what it leaves
// for the collector aside: two collections, as a sync.Pool's buffers
// outlive one).
func heapAdded(build func()) float64 {
	before := heaptest.Live()
	build()
	return float64(heaptest.Live() - before)
}
