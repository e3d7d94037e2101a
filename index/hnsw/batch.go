package hnsw

import (
	"context"
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
// takes two phases:
//
//  1. Search, in parallel: every queued node's candidate lists (the
//     efConstruction best per layer, the search of algorithm 1) are
//     found in the graph as it was before the queue (frozen: nothing
//     writes it meanwhile), and its distances to every node queued before
//     it are computed. Each node's results depend only on the frozen graph
//     and the queue, not on which goroutine computed them or when.
//  2. Link, sequentially in queue order: a node's candidates are its
//     frozen-graph candidates merged with the closest earlier queued nodes
//     (exact, so a batch's members find each other though the frozen
//     search could not), selected and back-linked as an immediate insert
//     is.
//
// The graph thus depends only on the inserts and where the queue was cut
// (the flushes), never on scheduling; it is persisted as is, so a reload
// answers as the writer did. A profiled 100k-vector build was three
// quarters candidate search, which phase 1 spreads over the cores.
// Searches see queued nodes too: Search scores them exactly and merges
// them into its results (see searchPending).

// linkWorkers, when positive, fixes the number of goroutines of phase 1
// (tests: the graph must not depend on it).
var linkWorkers = 0

// maxPending bounds the queue: the memory of phase 1's results (about
// efConstruction candidates per node) and of the pairwise distances
// within the queue, and what a search scores exactly besides the walk.
const maxPending = 256

// parallelMin is the queue length below which phase 1 runs on the calling
// goroutine only (a single fact's commit is not worth a goroutine).
const parallelMin = 64

// pendingPlan is phase 1's output for one queued node.
type pendingPlan struct {
	// found[l] holds the frozen graph's candidates on layer l, closest
	// first (layers above the frozen top are empty).
	found [][]cand
	// near holds the closest (up to efConstruction) earlier queued nodes
	// as queue positions, closest first; up holds every earlier queued
	// node whose level is at least 1 (the candidates on upper layers),
	// also as positions, in queue order.
	near, up []cand
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
	var next atomic.Int64
	run := func(sc *searcher) {
		sc.reset(len(ix.ids))
		for {
			i := int(next.Add(1) - 1)
			if i >= len(p) {
				return
			}
			ix.plan(sc, p, i, &plans[i])
		}
	}
	if workers == 1 {
		run(ix.workers[0])
	} else {
		var wg sync.WaitGroup
		for _, sc := range ix.workers[:workers] {
			wg.Go(func() { run(sc) })
		}
		wg.Wait()
	}
	if ix.build == nil {
		ix.build = &searcher{}
	}
	for i, s := range p {
		ix.linkPlanned(ix.build, p, s, &plans[i])
	}
	ix.pending = ix.pending[:0]
}

// plan is phase 1 for the queued node p[i]: it only reads the graph, the
// codes and the levels, and writes only pl and sc.
func (ix *Index) plan(sc *searcher, p []uint32, i int, pl *pendingPlan) {
	s := p[i]
	level := int(ix.levels[s])
	v := ix.qv(s)
	for l := range pl.found {
		pl.found[l] = pl.found[l][:0]
	}
	pl.near, pl.up = pl.near[:0], pl.up[:0]
	if ix.entry >= 0 {
		if len(pl.found) <= level {
			pl.found = append(pl.found, make([][]cand, level+1-len(pl.found))...)
		}
		e := uint32(ix.entry)
		ep := cand{ix.dist(v, e), e}
		for l := ix.top; l > level; l-- {
			ep = ix.greedy(v, ep, l)
		}
		sc.eps = append(sc.eps[:0], ep)
		for l := min(level, ix.top); l >= 0; l-- {
			_ = ix.searchLayer(context.Background(), sc, v, sc.eps, ix.o.EfConstruction, l, nil)
			pl.found[l] = append(pl.found[l][:0], sc.out...)
			sc.eps = append(sc.eps[:0], sc.out...)
		}
	}
	// The closest earlier queued nodes: a bounded max-heap (negated
	// distances, worst at the root) of queue positions, then sorted.
	ef := ix.o.EfConstruction
	h := heap(pl.near)
	for j, x := range p[:i] {
		d := ix.dist(v, x)
		if ix.levels[x] > 0 {
			pl.up = append(pl.up, cand{d, uint32(j)})
		}
		if len(h) < ef {
			h.push(cand{-d, uint32(j)})
		} else if -d > h[0].d {
			h[0] = cand{-d, uint32(j)}
			h.fix0()
		}
	}
	for k := range h {
		h[k].d = -h[k].d
	}
	slices.SortFunc(h, byDist)
	pl.near = h
}

// linkPlanned is phase 2 for queued node s (= p[i]): link as link does,
// with the candidates of each layer taken from the plan. The queued nodes
// before s are linked already.
func (ix *Index) linkPlanned(sc *searcher, p []uint32, s uint32, pl *pendingPlan) {
	level := int(ix.levels[s])
	if ix.entry < 0 {
		ix.entry, ix.top, ix.metaOK = int32(s), level, false
		for l := 0; l <= level; l++ {
			ix.markDirty(s, l)
		}
		return
	}
	for l := min(level, ix.top); l >= 0; l-- {
		// Merge the frozen graph's candidates with the earlier queued
		// nodes that reach layer l, closest first, and keep the ef best:
		// the beam an immediate insert's search would have ended with.
		var found []cand
		if l < len(pl.found) {
			found = pl.found[l]
		}
		sc.tmp = sc.tmp[:0]
		if l == 0 {
			for _, c := range pl.near {
				sc.tmp = append(sc.tmp, cand{c.d, p[c.s]})
			}
		} else {
			for _, c := range pl.up {
				if x := p[c.s]; int(ix.levels[x]) >= l {
					sc.tmp = append(sc.tmp, cand{c.d, x})
				}
			}
			slices.SortFunc(sc.tmp, byDist)
		}
		sc.out = mergeCands(sc.out[:0], found, sc.tmp, ix.o.EfConstruction)
		ix.connect(sc, s, l)
	}
	for l := ix.top + 1; l <= level; l++ {
		ix.markDirty(s, l)
	}
	if level > ix.top {
		ix.entry, ix.top, ix.metaOK = int32(s), level, false
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
