package bench

import (
	"cmp"
	"fmt"
	"math"
	randv2 "math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// ivfFlat is the vector peer that works: an inverted file over k-means
// centroids with exact (flat) lists, written for this benchmark. It is
// the baseline every vector index is measured against (faiss's
// IndexIVFFlat), its cost is easy to count, and unlike coder/hnsw it
// reaches any recall by probing more lists.
//
// Vectors are normalised at insert, so cosine similarity is a dot product.
// A search computes the query's dot product with every centroid, scans the
// nprobe nearest lists exactly and keeps the best k: nlist + the probed
// lists' sizes distance computations, which it counts.
type ivfFlat struct {
	dim       int
	centroids []float32 // nlist × dim, unit length
	lists     []ivfList
}

type ivfList struct {
	ids  []uint32
	vecs []float32 // len(ids) × dim, unit length
}

func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// nearest returns the index of the centroid closest to v.
func nearest(centroids []float32, dim int, v []float32) int {
	best, bs := 0, float32(math.Inf(-1))
	for c := 0; c*dim < len(centroids); c++ {
		if s := dot(centroids[c*dim:(c+1)*dim], v); s > bs {
			best, bs = c, s
		}
	}
	return best
}

// parallel runs fn(i) for i in [0, n) on every core.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// buildIVF trains nlist centroids by spherical k-means (iters rounds) on a
// sample of at most 64 vectors per list, then assigns every vector.
func buildIVF(vecs [][]float32, dim, nlist, iters int) *ivfFlat {
	units := make([][]float32, len(vecs))
	for i, v := range vecs {
		units[i] = unit(v)
	}
	r := randv2.New(randv2.NewPCG(5, 5))
	sample := units
	if len(units) > 64*nlist {
		sample = make([][]float32, 64*nlist)
		for i, j := range r.Perm(len(units))[:len(sample)] {
			sample[i] = units[j]
		}
	}
	ix := &ivfFlat{dim: dim, centroids: make([]float32, nlist*dim)}
	for c, j := range r.Perm(len(sample))[:nlist] {
		copy(ix.centroids[c*dim:], sample[j])
	}
	assign := make([]int, len(sample))
	for range iters {
		parallel(len(sample), func(i int) { assign[i] = nearest(ix.centroids, dim, sample[i]) })
		sums := make([]float64, nlist*dim)
		counts := make([]int, nlist)
		for i, c := range assign {
			counts[c]++
			for j, x := range sample[i] {
				sums[c*dim+j] += float64(x)
			}
		}
		for c := range nlist {
			if counts[c] == 0 {
				// An empty list restarts at a random sample vector.
				copy(ix.centroids[c*dim:], sample[r.IntN(len(sample))])
				continue
			}
			var ss float64
			for j := range dim {
				ss += sums[c*dim+j] * sums[c*dim+j]
			}
			for j := range dim {
				ix.centroids[c*dim+j] = float32(sums[c*dim+j] / math.Sqrt(ss))
			}
		}
	}
	all := make([]int, len(units))
	parallel(len(units), func(i int) { all[i] = nearest(ix.centroids, dim, units[i]) })
	ix.lists = make([]ivfList, nlist)
	for i, c := range all {
		l := &ix.lists[c]
		l.ids = append(l.ids, uint32(i))
		l.vecs = append(l.vecs, units[i]...)
	}
	return ix
}

type ivfHit struct {
	id uint32
	s  float32
}

// search returns the k best of the nprobe nearest lists, and the number of
// distances it computed. scratch is reused across calls.
func (ix *ivfFlat) search(q []float32, k, nprobe int, scratch *[]ivfHit) ([]uint32, int) {
	qn := unit(q)
	dim := ix.dim
	cs := (*scratch)[:0]
	for c := range ix.lists {
		cs = append(cs, ivfHit{uint32(c), dot(ix.centroids[c*dim:(c+1)*dim], qn)})
	}
	slices.SortFunc(cs, func(a, b ivfHit) int { return cmp.Compare(b.s, a.s) })
	dists := len(ix.lists)
	// top holds the best k so far, worst first once full.
	top := make([]ivfHit, 0, k+1)
	for _, c := range cs[:min(nprobe, len(cs))] {
		l := &ix.lists[c.id]
		dists += len(l.ids)
		for i, id := range l.ids {
			s := dot(l.vecs[i*dim:(i+1)*dim], qn)
			if len(top) == k && s <= top[0].s {
				continue
			}
			j, _ := slices.BinarySearchFunc(top, s, func(h ivfHit, s float32) int { return cmp.Compare(h.s, s) })
			top = slices.Insert(top, j, ivfHit{id, s})
			if len(top) > k {
				top = top[1:]
			}
		}
	}
	*scratch = cs
	ids := make([]uint32, len(top))
	for i, h := range top {
		ids[len(top)-1-i] = h.id
	}
	return ids, dists
}

var (
	ivfMu    sync.Mutex
	ivfCache = map[int]*ivfFlat{}
)

// ivfLists is the number of lists: about √n, the usual choice for an
// IVF-flat index (each list then holds about √n vectors).
func ivfLists(n int) int { return max(8, int(math.Sqrt(float64(n)))) }

func ivfIndex(b *testing.B, d *vectorData) *ivfFlat {
	ivfMu.Lock()
	defer ivfMu.Unlock()
	n := len(d.vecs)
	if ix, ok := ivfCache[n]; ok {
		return ix
	}
	t := time.Now()
	ix := buildIVF(d.vecs, benchDim, ivfLists(n), 8)
	b.Logf("n=%d ivf-flat build (%d lists, 8 k-means rounds): %v", n, ivfLists(n), time.Since(t))
	ivfCache[n] = ix
	return ix
}

// BenchmarkIVFSearch is the working peer of BenchmarkHNSWSearch, on the
// same vectors, queries and ground truth: recall@10, queries/s and the
// distance computations per query (dists/query) at each nprobe. Compare
// with memor's HNSW at the smallest nprobe whose recall is ≥ 0.95. Its
// 100k build (k-means) takes a while: like the HNSW benchmarks it runs
// only behind -bench.
//
//	cd bench && go test -run '^$' -bench 'IVFSearch' -timeout 1h
func BenchmarkIVFSearch(b *testing.B) {
	n := hnswN(b)
	for _, nprobe := range []int{1, 2, 3, 4, 6, 8, 16, 32} {
		b.Run(fmt.Sprintf("n=%d/engine=ivf-flat/nprobe=%d", n, nprobe), func(b *testing.B) {
			d := vectorSet(n)
			ix := ivfIndex(b, d)
			var scratch []ivfHit
			got := make([][]uint32, len(d.queries))
			dists := 0
			for i, q := range d.queries {
				var nd int
				got[i], nd = ix.search(q, benchK, nprobe, &scratch)
				dists += nd
			}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			i := 0
			for b.Loop() {
				ix.search(d.queries[i%len(d.queries)], benchK, nprobe, &scratch)
				i++
			}
			cpu := threadCPU() - cpu0
			b.ReportMetric(recall(got, d.truth), "recall@10")
			b.ReportMetric(float64(dists)/float64(len(d.queries)), "dists/query")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			if cpu > 0 {
				b.ReportMetric(float64(b.N)/cpu.Seconds(), "cpu-queries/s")
			}
		})
	}
}

// TestIVFFlatExact: probing every list is an exact search (recall 1 up to
// float ties), and the distance count is n + nlist.
func TestIVFFlatExact(t *testing.T) {
	d := vectorSet(2000)
	ix := buildIVF(d.vecs, benchDim, ivfLists(2000), 8)
	var scratch []ivfHit
	got := make([][]uint32, len(d.queries))
	for i, q := range d.queries {
		var nd int
		got[i], nd = ix.search(q, benchK, len(ix.lists), &scratch)
		if nd != 2000+len(ix.lists) {
			t.Fatalf("full probe computed %d distances, want %d", nd, 2000+len(ix.lists))
		}
	}
	if r := recall(got, d.truth); r < 0.995 {
		t.Fatalf("full probe recall %.4f, want 1", r)
	}
}
