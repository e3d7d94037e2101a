package hnsw

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/memor-db/memor/kv/kvtest"
)

// countKV is a kv.Writer that keeps nothing and counts what it is given,
// so that the benchmarks measure the index and not a store.
type countKV struct{ sets, bytes int }

func (c *countKV) Set(k, v []byte) error { c.sets++; c.bytes += len(k) + len(v); return nil }
func (c *countKV) Delete([]byte) error   { return nil }

const benchDim = 384

// benchN is the index size of the benchmarks: 2000, or MEMOR_HNSW_BENCH_N
// (e.g. 20000 to time the default GraphAt).
func benchN(b *testing.B) int {
	if s := os.Getenv("MEMOR_HNSW_BENCH_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 1 {
			b.Fatalf("MEMOR_HNSW_BENCH_N=%q", s)
		}
		return n
	}
	return 2000
}

// BenchmarkAdd inserts n 384-d vectors (IDs 0..n-1) into a fresh index:
// one tenant's import. state=default uses the default options (n is under
// GraphAt: vectors only); state=graph maintains the graph from the first
// vector (ExactBelow < 0); state=build-at-end has GraphAt = n, so the last
// Add builds the whole graph (its time is reported as crossing-ms).
// vectors=sparse keeps an eighth of each vector's components (48 of 384,
// the hashing embedder's vector of a short fact), held sparse.
//
//	go test -p 1 -run '^$' -bench Add ./index/hnsw/
func BenchmarkAdd(b *testing.B) {
	n := benchN(b)
	dense := clustered(3, n, benchDim, 20)
	for _, c := range []struct {
		vectors string
		st      string
		o       Options
	}{
		{"dense", "default", Options{Seed: 1}},
		{"dense", "graph", Options{Seed: 1, ExactBelow: -1}},
		{"dense", "build-at-end", Options{Seed: 1, GraphAt: n}},
		{"sparse", "graph", Options{Seed: 1, ExactBelow: -1}},
		{"sparse", "build-at-end", Options{Seed: 1, GraphAt: n}},
	} {
		vecs := dense
		if c.vectors == "sparse" {
			vecs = sparsified(dense, 8)
		}
		b.Run(fmt.Sprintf("n=%d/vectors=%s/state=%s", n, c.vectors, c.st), func(b *testing.B) {
			b.ReportAllocs()
			var w countKV
			var crossing time.Duration
			for b.Loop() {
				w = countKV{}
				ix := New(benchDim, []byte("p/"), c.o)
				for i, v := range vecs {
					t := time.Now()
					if err := ix.Add(&w, uint32(i), v); err != nil {
						b.Fatal(err)
					}
					if i == c.o.GraphAt-1 {
						crossing += time.Since(t)
					}
				}
			}
			if crossing > 0 {
				b.ReportMetric(float64(crossing.Milliseconds())/float64(b.N), "crossing-ms")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/vector")
			b.ReportMetric(float64(w.bytes)/float64(n), "written-bytes/vector")
			b.ReportMetric(float64(w.sets)/float64(n), "sets/vector")
		})
	}
}

// BenchmarkSearch is a top-10 query against n 384-d vectors with the
// default options (an exact scan at this size) and through the graph.
func BenchmarkSearch(b *testing.B) {
	n := benchN(b)
	dense, queries := dataset(5, n, 100, benchDim, 20)
	ctx := context.Background()
	for _, c := range []struct {
		vectors string
		st      string
		o       Options
	}{
		{"dense", "default", Options{Seed: 1}},
		{"dense", "graph", Options{Seed: 1, ExactBelow: -1}},
		{"sparse", "default", Options{Seed: 1}},
		{"sparse", "graph", Options{Seed: 1, ExactBelow: -1}},
	} {
		vecs := dense
		if c.vectors == "sparse" {
			vecs = sparsified(dense, 8)
		}
		b.Run(fmt.Sprintf("n=%d/vectors=%s/state=%s", n, c.vectors, c.st), func(b *testing.B) {
			ix := build(b, &countKV{}, vecs, c.o)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(ctx, queries[i%len(queries)], 10, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// sparsified returns copies of vecs keeping every k-th component (offset
// by the vector's index), the others 0.
func sparsified(vecs [][]float32, k int) [][]float32 {
	out := make([][]float32, len(vecs))
	for i, v := range vecs {
		out[i] = make([]float32, len(v))
		for j := i % k; j < len(v); j += k {
			out[i][j] = v[j]
		}
	}
	return out
}

// BenchmarkBulkAdd is the vector side of a new user's bulk import as the
// engine drives it: a fresh index, Reserve(n), n Adds with a nil writer
// (deferred writes), one Flush. vectors=dense are clustered Gaussians;
// vectors=sparse have a quarter of their components non-zero, the shape
// of the hashing embedder's vectors.
//
//	go test -p 1 -run '^$' -bench BulkAdd ./index/hnsw/
func BenchmarkBulkAdd(b *testing.B) {
	const n = 1000
	dense := clustered(7, n, benchDim, 20)
	sparse := clustered(8, n, benchDim, 20)
	for i, v := range sparse {
		for j := range v {
			if (i+j)%4 != 0 {
				v[j] = 0
			}
		}
	}
	for _, c := range []struct {
		name string
		vecs [][]float32
	}{{"dense", dense}, {"sparse", sparse}} {
		b.Run("vectors="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var w countKV
				ix := New(benchDim, []byte("user/v"), Options{Seed: 1})
				ix.Reserve(n)
				for i, v := range c.vecs {
					if err := ix.Add(nil, uint32(i), v); err != nil {
						b.Fatal(err)
					}
				}
				if err := ix.Flush(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/vector")
		})
	}
}

// BenchmarkReserve is Reserve(1000) on a fresh 384-d index.
func BenchmarkReserve(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ix := New(benchDim, []byte("user/v"), Options{Seed: 1})
		ix.Reserve(1000)
	}
}

// BenchmarkMaxAbs is maxAbs of a 384-d vector.
func BenchmarkMaxAbs(b *testing.B) {
	v := clustered(9, 1, benchDim, 1)[0]
	var sink float32
	for b.Loop() {
		sink += maxAbs(v)
	}
	_ = sink
}

// BenchmarkLoad is reading an index back (a reopen's first query) from
// its records, through a store whose scan costs next to nothing, and from
// its image: shape=facts is the engine's common user, 1,000 facts of the
// default (hashing) embedder, a list of sparse 384-d vectors;
// shape=graph is 20,000 dense 384-d vectors with their graph (built
// once, which takes a while; MEMOR_HNSW_BENCH_N changes its size).
// from=image/then=add is a load and the first Add after it.
//
//	go test -p 1 -run '^$' -bench 'Load$' ./index/hnsw/
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	prefix := []byte("p/")
	n := 20000
	if os.Getenv("MEMOR_HNSW_BENCH_N") != "" {
		n = benchN(b)
	}
	for _, c := range []struct {
		name string
		vecs func() [][]float32
		o    Options
	}{
		{"facts", func() [][]float32 { return factVecs(b, 1000) }, Options{}},
		{"graph", func() [][]float32 { return clustered(3, n, benchDim, 20) }, Options{Seed: 1, GraphAt: n}},
	} {
		vecs := c.vecs()
		b.Run(fmt.Sprintf("shape=%s/n=%d", c.name, len(vecs)), func(b *testing.B) {
			store := kvtest.Map{}
			ix := New(benchDim, prefix, c.o)
			ix.Reserve(len(vecs))
			for i, v := range vecs {
				if err := ix.Add(nil, uint32(i), v); err != nil {
					b.Fatal(err)
				}
			}
			if err := ix.Flush(store); err != nil {
				b.Fatal(err)
			}
			o := c.o
			o.Capacity = len(vecs)
			sorted := kvtest.Freeze(store)
			b.Run("from=records", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Load(ctx, sorted, prefix, o); err != nil {
						b.Fatal(err)
					}
				}
			})
			img := ix.AppendImage(nil)
			b.Run("from=image", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := LoadImage(img, prefix, o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(img)), "image-bytes")
			})
			// A load and the first write after it, which copies what the
			// load left in the image out of it.
			b.Run("from=image/then=add", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ix, err := LoadImage(img, prefix, o)
					if err != nil {
						b.Fatal(err)
					}
					if err := ix.Add(discardKV{}, uint32(len(vecs)), vecs[0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
