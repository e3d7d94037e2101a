package hnsw

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
)

// Batched linking. Adds with a nil writer (the engine's path: a commit's
// facts, then Flush) store and encode their vector at once but queue the
// node; the queue is linked into the graph by the next Flush, Add or
// Delete with a writer, or when it reaches maxPending. Linking a queue
// takes three phases:
//
//  1. Plan, in parallel: every queued node's candidates on each layer are
//     the efConstruction best of its search (algorithm 1) in the graph as
//     it was before the queue (frozen: nothing writes it meanwhile),
//     merged with the closest nodes queued before it (exact, so that a
//     batch's members find each other though the frozen search cannot);
//     the heuristic then chooses its neighbours among them. This reads
//     only the frozen graph, the codes and the levels.
//  2. In queue order: each node gets the lists chosen for it, and becomes
//     the entry point if it tops the graph.
//  3. Back links, in parallel by target: the node a back link goes to
//     decides which goroutine adds it, and each goroutine adds its links in
//     queue order. Adding a back link (and pruning a full list) reads and
//     writes the target's list only, so this makes exactly the lists that
//     adding every back link in queue order would.
//
// The graph therefore depends only on the inserts and where the queue
// was cut (the flushes), never on scheduling; it is persisted as is, so a
// reload answers as the writer did. A profiled 100k-vector build was
// three quarters candidate search and a fifth list maintenance; both now
// spread over the cores. Searches see queued nodes too: Search scores
// them exactly and merges them into its results (see searchPending).

// linkWorkers, when positive, fixes the number of goroutines of phases 1
// and 3 (tests: the graph must not depend on it).
var linkWorkers = 0

// maxPending bounds the queue: a queued node is compared with every one
// queued before it (phase 1), and a search scores the queue exactly.
const maxPending = 256

// parallelMin is the queue length below which the phases run on the
// calling goroutine only (a single fact's commit is not worth goroutines).
const parallelMin = 64

// pendingPlan is phase 1's output for one queued node: its neighbours on
// each layer it is linked on, closest first.
type pendingPlan struct {
	sel [][]cand
}

// backBuckets is how many parts phase 3 splits the back links into.
const backBuckets = 64

// backLink is a link to add from n to s (at distance d) on layer l.
type backLink struct {
	n, s uint32
	d    float32
	l    int
}

// linkPending links every queued node (see above) and empties the queue.
// Called with both locks held.
func (ix *Index) linkPending() {
	p := ix.pending
	if len(p) == 0 {
		return
	}
	if len(ix.plans) < len(p) {
		ix.plans = append(ix.plans, make([]pendingPlan, len(p)-len(ix.plans))...)
	}
	plans := ix.plans[:len(p)]
	workers := 1
	if len(p) >= parallelMin {
		workers = max(1, min(runtime.GOMAXPROCS(0), len(p)/(parallelMin/2)))
	}
	if linkWorkers > 0 {
		workers = linkWorkers
	}
	for len(ix.workers) < workers {
		ix.workers = append(ix.workers, &searcher{})
	}
	// The top layer each node is linked under: the graph's, raised by the
	// nodes queued before it (-1: the graph is empty, the node becomes the
	// entry point).
	tops := make([]int, len(p))
	t := -1
	if ix.entry >= 0 {
		t = ix.top
	}
	for i, s := range p {
		tops[i] = t
		t = max(t, int(ix.levels[s]))
	}

	// Phase 1.
	var next atomic.Int64
	ix.parallel(workers, func(w int, sc *searcher) {
		sc.reset(len(ix.ids))
		for {
			i := int(next.Add(1) - 1)
			if i >= len(p) {
				return
			}
			ix.plan(sc, p, i, tops[i], &plans[i])
		}
	})

	// Phase 2.
	backs := ix.backs2[:0]
	for i, s := range p {
		level := int(ix.levels[s])
		if ix.entry < 0 {
			ix.entry, ix.top, ix.metaOK = int32(s), level, false
			for l := 0; l <= level; l++ {
				ix.markDirty(s, l)
			}
			continue
		}
		for l, sel := range plans[i].sel {
			nb := ix.workers[0].nb[:0]
			for _, c := range sel {
				nb = append(nb, c.s)
				backs = append(backs, backLink{c.s, s, c.d, l})
			}
			ix.workers[0].nb = nb
			ix.setLinks(s, l, nb)
		}
		for l := ix.top + 1; l <= level; l++ {
			ix.markDirty(s, l)
		}
		if level > ix.top {
			ix.entry, ix.top, ix.metaOK = int32(s), level, false
		}
	}

	// Phase 3: the back links by bucket of their target (a counting
	// sort, stable: queue order within a bucket), buckets taken by
	// whichever goroutine is free, so that one descheduled goroutine does
	// not hold the others up.
	var start [backBuckets + 1]int
	for _, b := range backs {
		start[b.n%backBuckets+1]++
	}
	for k := 1; k <= backBuckets; k++ {
		start[k] += start[k-1]
	}
	ix.backs = slices.Grow(ix.backs[:0], len(backs))[:len(backs)]
	pos := start
	for _, b := range backs {
		k := b.n % backBuckets
		ix.backs[pos[k]] = b
		pos[k]++
	}
	next.Store(0)
	ix.parallel(workers, func(w int, sc *searcher) {
		sc.dirty = sc.dirty[:0]
		for {
			k := int(next.Add(1) - 1)
			if k >= backBuckets {
				return
			}
			for _, b := range ix.backs[start[k]:start[k+1]] {
				ix.addLink(sc, b.n, b.s, b.d, b.l)
				sc.dirty = append(sc.dirty, uint64(b.n)<<8|uint64(b.l))
			}
		}
	})
	ix.backs2 = backs[:0]
	for _, sc := range ix.workers[:workers] {
		ix.dirty = append(ix.dirty, sc.dirty...)
	}
	ix.pending = ix.pending[:0]
}

// parallel runs f on workers goroutines (the caller's alone when 1), each
// with its own searcher, and waits for them.
func (ix *Index) parallel(workers int, f func(w int, sc *searcher)) {
	if workers == 1 {
		f(0, ix.workers[0])
		return
	}
	var wg sync.WaitGroup
	for w, sc := range ix.workers[:workers] {
		wg.Go(func() { f(w, sc) })
	}
	wg.Wait()
}

// plan is phase 1 for the queued node p[i], linked under layer top: it
// only reads the graph, the codes and the levels, and writes only pl and
// sc.
func (ix *Index) plan(sc *searcher, p []uint32, i, top int, pl *pendingPlan) {
	s := p[i]
	level := int(ix.levels[s])
	v := ix.qv(s)
	for l := range pl.sel {
		pl.sel[l] = pl.sel[l][:0]
	}
	if top < 0 {
		pl.sel = pl.sel[:0]
		return
	}
	layers := min(level, top) + 1
	for len(pl.sel) < layers {
		pl.sel = append(pl.sel, nil)
	}
	pl.sel = pl.sel[:layers]
	for len(sc.found) < layers {
		sc.found = append(sc.found, nil)
	}
	for l := range layers {
		sc.found[l] = sc.found[l][:0]
	}
	// The frozen graph's candidates.
	if ix.entry >= 0 {
		ix.descend(sc, v, level, func(l int) { sc.found[l] = append(sc.found[l], sc.out...) })
	}
	// The closest earlier queued nodes (a bounded max-heap, negated
	// distances, worst at the root), and those that reach layer 1.
	ef := ix.o.EfConstruction
	near := heap(sc.sel2[:0])
	up := sc.batch[:0]
	for _, x := range p[:i] {
		d := ix.dist(v, x)
		if ix.levels[x] > 0 {
			up = append(up, x)
		}
		if len(near) < ef {
			near.push(cand{-d, x})
		} else if -d > near[0].d {
			near[0] = cand{-d, x}
			near.fix0()
		}
	}
	// Drain the heap, worst first, into closest-first order (cheaper
	// than sorting).
	n := len(near)
	sc.sel = slices.Grow(sc.sel[:0], n)[:n]
	for k := n - 1; k >= 0; k-- {
		c := near.pop()
		sc.sel[k] = cand{-c.d, c.s}
	}
	near, sc.sel = sc.sel, near[:0]
	sc.sel2, sc.batch = near, up
	for l := layers - 1; l >= 0; l-- {
		batch := near
		if l > 0 {
			sc.tmp = sc.tmp[:0]
			for _, x := range up {
				if int(ix.levels[x]) >= l {
					sc.tmp = append(sc.tmp, cand{ix.dist(v, x), x})
				}
			}
			slices.SortFunc(sc.tmp, byDist)
			batch = sc.tmp
		}
		sc.out = mergeCands(sc.out[:0], sc.found[l], batch, ef)
		ix.choose(sc)
		pl.sel[l] = append(pl.sel[l], sc.sel...)
	}
}

// mergeCands appends to dst the n closest of a and b (each closest
// first, disjoint), closest first.
func mergeCands(dst, a, b []cand, n int) []cand {
	for len(dst) < n && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || len(a) > 0 && byDist(a[0], b[0]) <= 0 {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return dst
}

// searchPending scores the queued nodes (allowed ones) exactly, appending
// them to cs: the graph cannot reach them yet.
func (ix *Index) searchPending(q []float32, cs []cand, allow *roaring.Bitmap) []cand {
	for _, s := range ix.pending {
		if ix.allowed(s, allow) {
			cs = append(cs, cand{ix.exactDist(q, s), s})
		}
	}
	return cs
}
