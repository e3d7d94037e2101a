package hnsw

import (
	"cmp"
	"context"
	"math"
	"slices"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/viterin/vek/vek32"
)

// dot is the inner product through vek's AVX2/FMA kernel (pure Go on CPUs
// without it). vek rather than gonum: gonum's float32 dot is SSE-only,
// measured ≈ 37 ns against vek's ≈ 18 ns at 384-d, and the dot product is
// nearly all of the time of a search. Callers guarantee equal, non-zero
// lengths (vek panics otherwise).
func dot(a, b []float32) float32 { return vek32.Dot(a, b) }

// cand is a node and its distance (negated similarity: smaller is closer).
type cand struct {
	d float32
	s uint32
}

// heap is a binary min-heap on d. A max-heap is the same heap holding
// negated distances.
type heap []cand

func (h *heap) push(c cand) {
	*h = append(*h, c)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].d <= a[i].d {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

// pop repeats fix0's sift-down inline: calling fix0 made a 100k-vector
// search 10–30% slower (HNSWSearch, ef 64).
func (h *heap) pop() cand {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r].d < a[l].d {
			m = r
		}
		if a[i].d <= a[m].d {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// searcher is the per-search scratch space, pooled so that a search does
// not allocate beyond its result.
type searcher struct {
	// visited is a bitset of the slots the current layer search reached,
	// touched the words it set bits in: a bitset (12.5 KB at 100k slots)
	// stays in the cache while codes stream through it, where a per-slot
	// generation array (400 KB) did not.
	visited []uint64
	touched []uint32
	cands   heap // frontier, closest first
	res     heap // results, negated: worst first
	out     []cand
	eps     []cand
	sel     []cand
	tmp     []cand
	sel2    []cand
	nb      []uint32  // a neighbour list being written (setLinks copies it)
	batch   []uint32  // unvisited neighbours of the node being expanded
	q       []float32 // the prepared query
	qc      []int8    // its codes
	// Batched linking (batch.go): candidates per layer, and the lists
	// marked dirty by back links.
	found [][]cand
	dirty []uint64
	// stats counts the current search's distance computations (an
	// insert's search counts too, unread).
	stats SearchStats
}

func (sc *searcher) reset(n int) {
	if len(sc.visited)*64 < n {
		sc.visited = make([]uint64, (n+n/4+64)/64+1)
		sc.touched = sc.touched[:0]
	}
}

// newGen empties the visited set: word by word when few were touched.
func (sc *searcher) newGen() {
	if len(sc.touched) > len(sc.visited)/16 {
		clear(sc.visited)
	} else {
		for _, w := range sc.touched {
			sc.visited[w] = 0
		}
	}
	sc.touched = sc.touched[:0]
}

// visit marks slot s visited, reporting whether it was already.
func (sc *searcher) visit(s uint32) bool {
	w, b := s>>6, uint64(1)<<(s&63)
	x := sc.visited[w]
	if x&b != 0 {
		return true
	}
	if x == 0 {
		sc.touched = append(sc.touched, w)
	}
	sc.visited[w] = x | b
	return false
}

// dist is the distance the graph is built and walked with: q against the
// int8 codes of s (see quant.go). exactDist uses the float32 vector.
func (ix *Index) dist(q qvec, s uint32) float32 {
	c := ix.code(s)
	var p int32
	if ix.vnni {
		p = dot8Full(q.c, c)
	} else {
		p = dot8(q.c, c)
	}
	return -float32(p) * (q.s * ix.scales[s])
}

// qv is the quantised vector of slot s.
func (ix *Index) qv(s uint32) qvec { return qvec{ix.code(s), ix.scales[s]} }

func (ix *Index) exactDist(q []float32, s uint32) float32 { return -ix.listDot(q, s) }

func (ix *Index) allowed(s uint32, allow *roaring.Bitmap) bool {
	return allow == nil || allow.Contains(ix.ids[s])
}

// unvisited collects s's neighbours on layer l that sc has not visited
// (marking them) into sc.batch and has their codes fetched while the
// earlier ones are compared: at 100k vectors the codes no longer fit in
// the cache and each comparison would otherwise wait for memory.
func (ix *Index) unvisited(sc *searcher, s uint32, l int) {
	sc.batch = sc.batch[:0]
	for _, nb := range ix.links(s, l) {
		if sc.visit(nb) {
			continue
		}
		sc.batch = append(sc.batch, nb)
		prefetch(unsafe.Pointer(&ix.code(nb)[0]), ix.dim)
	}
}

// greedy walks layer l from ep to a local minimum (ef = 1), counting its
// distances in st.
func (ix *Index) greedy(st *SearchStats, q qvec, ep cand, l int) cand {
	for changed := true; changed; {
		changed = false
		links := ix.links(ep.s, l)
		st.Dists += len(links)
		for _, nb := range links {
			if d := ix.dist(q, nb); d < ep.d {
				ep, changed = cand{d, nb}, true
			}
		}
	}
	return ep
}

// searchLayer is the beam search of the HNSW paper (algorithm 2) on layer
// l, leaving the ef best allowed nodes in sc.out, closest first. Nodes
// outside allow are still walked through (the graph's connectivity is that
// of all nodes), they just never enter the results.
func (ix *Index) searchLayer(ctx context.Context, sc *searcher, q qvec, eps []cand, ef, l int, allow *roaring.Bitmap) error {
	sc.newGen()
	sc.cands, sc.res = sc.cands[:0], sc.res[:0]
	for _, e := range eps {
		if sc.visit(e.s) {
			continue
		}
		sc.cands.push(e)
		if ix.allowed(e.s, allow) {
			sc.keep(cand{-e.d, e.s}, ef)
		}
	}
	steps := 0
	for len(sc.cands) > 0 {
		c := sc.cands.pop()
		if len(sc.res) >= ef && c.d > -sc.res[0].d {
			break
		}
		if len(sc.cands) > 0 && l == 0 {
			// The next node expanded is likely the new frontier top.
			prefetch(unsafe.Pointer(&ix.links0[int(sc.cands[0].s)*(ix.m0+1)]), 4*(ix.m0+1))
		}
		if steps++; steps&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ix.unvisited(sc, c.s, l)
		sc.stats.Dists += len(sc.batch)
		for _, nb := range sc.batch {
			d := ix.dist(q, nb)
			if len(sc.res) < ef || d < -sc.res[0].d {
				sc.cands.push(cand{d, nb})
				if ix.allowed(nb, allow) {
					sc.keep(cand{-d, nb}, ef)
				}
			}
		}
	}
	sc.drain()
	return nil
}

// keep adds c (negated distance) to the ef best results, replacing the
// worst in place when full rather than pushing and popping.
func (sc *searcher) keep(c cand, ef int) {
	if len(sc.res) < ef {
		sc.res.push(c)
	} else if c.d > sc.res[0].d {
		sc.res[0] = c
		sc.res.fix0()
	}
}

// drain empties sc.res into sc.out, closest first.
func (sc *searcher) drain() {
	n := len(sc.res)
	sc.out = slices.Grow(sc.out[:0], n)[:n]
	for i := n - 1; i >= 0; i-- {
		c := sc.res.pop()
		sc.out[i] = cand{-c.d, c.s}
	}
}

// selectNeighbors is the heuristic of the HNSW paper (algorithm 4) over
// candidates sorted closest first: keep a candidate only if it is closer to
// the base than to every neighbour already kept. This spreads links across
// directions, which is what keeps clustered data navigable.
func (ix *Index) selectNeighbors(dst, cands []cand, m int) []cand {
	dst = dst[:0]
	for _, c := range cands {
		if len(dst) >= m {
			break
		}
		if ix.diverse(c, dst) {
			dst = append(dst, c)
		}
	}
	return dst
}

func (ix *Index) diverse(c cand, kept []cand) bool {
	v := ix.qv(c.s)
	for _, r := range kept {
		if ix.dist(v, r.s) < c.d {
			return false
		}
	}
	return true
}

func byDist(a, b cand) int {
	if c := cmp.Compare(a.d, b.d); c != 0 {
		return c
	}
	return cmp.Compare(a.s, b.s)
}

// descend is an insert's search for v of level: a greedy walk down to
// level, then a beam of efConstruction on each layer from min(level, top)
// to 0, calling found(l) with the layer's candidates in sc.out (which
// seed the next layer). The graph must have an entry point.
func (ix *Index) descend(sc *searcher, v qvec, level int, found func(l int)) {
	e := uint32(ix.entry)
	ep := cand{ix.dist(v, e), e}
	for l := ix.top; l > level; l-- {
		ep = ix.greedy(&sc.stats, v, ep, l)
	}
	sc.eps = append(sc.eps[:0], ep)
	for l := min(level, ix.top); l >= 0; l-- {
		ix.beamSearch(sc, v, sc.eps, ix.o.EfConstruction, l)
		found(l)
		sc.eps = append(sc.eps[:0], sc.out...)
	}
}

// link connects slot s, whose vector and level are set and whose lists
// are empty, into the graph (algorithm 1 of the paper).
func (ix *Index) link(s uint32) {
	level := int(ix.levels[s])
	v := ix.qv(s)
	if ix.entry < 0 {
		ix.entry, ix.top, ix.metaOK = int32(s), level, false
		for l := 0; l <= level; l++ {
			ix.markDirty(s, l)
		}
		return
	}
	if ix.build == nil {
		ix.build = &searcher{}
	}
	sc := ix.build
	sc.reset(len(ix.ids))
	ix.descend(sc, v, level, func(l int) { ix.connect(sc, s, l) })
	// Layers above the old top have only this node: empty lists, persisted
	// so that the node's level survives a reload.
	for l := ix.top + 1; l <= level; l++ {
		ix.markDirty(s, l)
	}
	if level > ix.top {
		ix.entry, ix.top, ix.metaOK = int32(s), level, false
	}
}

// connect gives s its neighbours on layer l, chosen from the candidates
// in sc.out (closest first), and links them back to s.
func (ix *Index) connect(sc *searcher, s uint32, l int) {
	ix.choose(sc)
	sc.nb = sc.nb[:0]
	for _, c := range sc.sel {
		sc.nb = append(sc.nb, c.s)
	}
	ix.setLinks(s, l, sc.nb)
	for _, c := range sc.sel {
		ix.addLink(sc, c.s, s, c.d, l)
		ix.markDirty(c.s, l)
	}
}

// choose leaves in sc.sel the M neighbours a node gets from the
// candidates in sc.out (closest first): those the heuristic selects, then
// the closest it rejected until there are M. It reads only codes.
func (ix *Index) choose(sc *searcher) {
	sc.sel = ix.selectNeighbors(sc.sel, sc.out, ix.m)
	for _, c := range sc.out {
		if len(sc.sel) >= ix.m {
			break
		}
		if !slices.Contains(sc.sel, c) {
			sc.sel = append(sc.sel, c)
		}
	}
}

// emptyGraph returns an index with ix's shape and options, empty, with a
// graph: what buildFrom fills. Called under ix.mu.
func (ix *Index) emptyGraph() *Index {
	o := ix.o
	o.GraphAt = -1
	g := New(ix.dim, ix.prefix, o)
	g.o.GraphAt = ix.o.GraphAt
	g.setM(ix.m)
	return g
}

// buildFrom builds into the empty graph g every vector of the list ix:
// slots in ID order, levels from a generator freshly seeded with Seed,
// nodes linked one by one. The graph therefore depends only on the set of
// vectors and the seed, not on the order they were added in or on whether
// the index was reloaded meanwhile; added in ID order, it is the graph an
// always-built index would have. Every list is left dirty.
//
// ix is only read, without its lock: the caller holds ix.wmu, so nothing
// changes it, and concurrent searches only read too. When ix's slots are
// already in ID order g shares its vectors, IDs and ID map (neither side
// writes them until install).
func (g *Index) buildFrom(ix *Index) {
	n := len(ix.slotOf)
	order := make([]uint32, 0, n) // live slots by ID
	for s, lv := range ix.levels {
		if lv >= 0 {
			order = append(order, uint32(s))
		}
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(ix.ids[a], ix.ids[b]) })
	inPlace := len(order) == len(ix.ids)
	for i, s := range order {
		inPlace = inPlace && s == uint32(i)
	}
	// The graph holds every vector as the list does (sparse or in the
	// slab, see list.go), in its slot: placed again in ID order.
	g.vecs = newSlab[float32](ix.dim)
	g.list.refs = make([]vecRef, 0, cap(ix.ids))
	if inPlace {
		g.ids, g.slotOf = ix.ids, ix.slotOf
	} else {
		g.ids = make([]uint32, n, cap(ix.ids))
		g.slotOf = make(map[uint32]uint32, n)
	}
	buf := make([]float32, ix.dim)
	for i, s := range order {
		g.place(uint32(i), ix.vecInto(s, buf))
		if !inPlace {
			g.ids[i] = ix.ids[s]
			g.slotOf[g.ids[i]] = uint32(i)
		}
	}
	g.encodeAll()
	g.levels = make([]int8, n, cap(g.ids))
	g.links0 = make([]uint32, n*(g.m0+1), cap(g.ids)*(g.m0+1))
	g.upper = make([][]uint32, n, cap(g.ids))
	for s := range uint32(n) {
		level := g.randomLevel()
		g.levels[s] = int8(level)
		if level > 0 {
			g.upper[s] = make([]uint32, level*(g.m+1))
		}
		g.link(s)
	}
}

// install replaces ix's memory with the graph g built from it (after g
// was flushed). Called under ix.mu.
func (ix *Index) install(g *Index) {
	ix.graph = true
	ix.vecs, ix.ids, ix.levels, ix.slotOf, ix.free = g.vecs, g.ids, g.levels, g.slotOf, nil
	ix.list = g.list
	ix.links0, ix.upper = g.links0, g.upper
	ix.codes, ix.scales, ix.qerr = g.codes, g.scales, g.qerr
	ix.entry, ix.top, ix.rng = g.entry, g.top, g.rng
	ix.dirty, ix.metaOK, ix.build = g.dirty, g.metaOK, g.build
	ix.pendingRecs = append(ix.pendingRecs, g.pendingRecs...)
}

// addLink adds the back link n → s (distance d) on layer l, shrinking n's
// list with the heuristic when it is full. It reads and writes n's list
// only, and leaves marking it dirty to the caller.
func (ix *Index) addLink(sc *searcher, n, s uint32, d float32, l int) {
	cur := ix.links(n, l)
	mx := ix.maxLinks(l)
	if len(cur) < mx {
		ix.appendLink(n, l, s)
		return
	}
	v := ix.qv(n)
	sc.tmp = append(sc.tmp[:0], cand{d, s})
	for _, x := range cur {
		prefetch(unsafe.Pointer(&ix.code(x)[0]), ix.dim)
	}
	for _, x := range cur {
		sc.tmp = append(sc.tmp, cand{ix.dist(v, x), x})
	}
	slices.SortFunc(sc.tmp, byDist)
	sc.sel2 = ix.selectNeighbors(sc.sel2, sc.tmp, mx)
	sc.nb = sc.nb[:0]
	for _, c := range sc.sel2 {
		sc.nb = append(sc.nb, c.s)
	}
	ix.writeLinks(n, l, sc.nb)
}

// remove unlinks slot s: every list pointing at it loses the link and is
// offered s's own neighbours as replacements, then s is freed.
func (ix *Index) remove(s uint32) {
	if !ix.graph {
		ix.list.release(s)
		delete(ix.slotOf, ix.ids[s])
		ix.levels[s] = -1
		ix.free = append(ix.free, s)
		return
	}
	if ix.build == nil {
		ix.build = &searcher{}
	}
	sc := ix.build
	level := int(ix.levels[s])
	for p := range uint32(len(ix.ids)) {
		pl := int(ix.levels[p])
		if pl < 0 || p == s {
			continue
		}
		for l := 0; l <= min(level, pl); l++ {
			if slices.Contains(ix.links(p, l), s) {
				ix.repair(sc, p, s, l)
			}
		}
	}
	ix.dirty = slices.DeleteFunc(ix.dirty, func(k uint64) bool { return uint32(k>>8) == s })
	if i := slices.Index(ix.pending, s); i >= 0 {
		ix.pending = slices.Delete(ix.pending, i, i+1)
	}
	ix.list.release(s)
	delete(ix.slotOf, ix.ids[s])
	ix.levels[s] = -1
	clear(ix.links0[int(s)*(ix.m0+1) : int(s+1)*(ix.m0+1)])
	ix.upper[s] = nil
	ix.free = append(ix.free, s)
	if ix.entry == int32(s) {
		ix.entry, ix.top, ix.metaOK = -1, 0, false
		for p := range uint32(len(ix.ids)) {
			// Queued nodes are not in the graph yet.
			if pl := int(ix.levels[p]); pl >= 0 && (ix.entry < 0 || pl > ix.top) && !slices.Contains(ix.pending, p) {
				ix.entry, ix.top = int32(p), pl
			}
		}
	}
}

// repair drops s from p's list on layer l and fills the freed room with
// the closest of s's neighbours that pass the diversity heuristic. p keeps
// every other link it had, so a delete never thins the graph.
func (ix *Index) repair(sc *searcher, p, s uint32, l int) {
	v := ix.qv(p)
	cur := ix.links(p, l)
	sc.sel2 = sc.sel2[:0]
	for _, x := range cur {
		if x != s {
			sc.sel2 = append(sc.sel2, cand{ix.dist(v, x), x})
		}
	}
	sc.tmp = sc.tmp[:0]
	for _, x := range ix.links(s, l) {
		if x != p && !slices.Contains(cur, x) {
			sc.tmp = append(sc.tmp, cand{ix.dist(v, x), x})
		}
	}
	slices.SortFunc(sc.tmp, byDist)
	mx := ix.maxLinks(l)
	for _, c := range sc.tmp {
		if len(sc.sel2) >= mx {
			break
		}
		if ix.diverse(c, sc.sel2) {
			sc.sel2 = append(sc.sel2, c)
		}
	}
	slices.SortFunc(sc.sel2, byDist)
	sc.nb = sc.nb[:0]
	for _, c := range sc.sel2 {
		sc.nb = append(sc.nb, c.s)
	}
	ix.setLinks(p, l, sc.nb)
}

// graphSearch descends the upper layers greedily, then beam-searches layer
// 0 with the filter inside the walk.
func (ix *Index) graphSearch(ctx context.Context, sc *searcher, q []float32, k, ef int, allow *roaring.Bitmap) ([]Hit, error) {
	sc.qc = slices.Grow(sc.qc[:0], len(q))[:len(q)]
	qq := qvec{sc.qc, quantize(sc.qc, q)}
	e := uint32(ix.entry)
	ep := cand{ix.dist(qq, e), e}
	sc.stats.Dists++
	for l := ix.top; l > 0; l-- {
		ep = ix.greedy(&sc.stats, qq, ep, l)
	}
	sc.eps = append(sc.eps[:0], ep)
	if err := ix.searchLayer(ctx, sc, qq, sc.eps, ef, 0, allow); err != nil {
		return nil, err
	}
	// The walk ranked by the quantised distance; re-score the beam with
	// the float32 vectors so that the order and the scores are exact.
	for i, c := range sc.out {
		sc.out[i].d = ix.exactDist(q, c.s)
	}
	sc.out = ix.searchPending(q, sc.out, allow)
	sc.stats.Exact += len(sc.out) // the beam and the pending vectors
	slices.SortFunc(sc.out, byDist)
	return ix.hits(sc.out, k), nil
}

// exact scans the allowed set (or every node) and keeps the k best by the
// float32 vectors. An index with codes (one with a graph) ranks by them
// first, see scan8.
func (ix *Index) exact(ctx context.Context, sc *searcher, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	if ix.graph {
		return ix.scan8(ctx, sc, q, k, allow)
	}
	sc.res = sc.res[:0]
	err := ix.eachSlot(ctx, allow, func(s uint32) {
		sc.stats.Exact++
		sc.consider(k, s, ix.exactDist(q, s))
	})
	if err != nil {
		return nil, err
	}
	sc.drain()
	return ix.hits(sc.out, k), nil
}

// consider offers slot s at distance d to the k best in sc.res: a slot
// replaces the worst only if strictly closer, so among equal distances the
// first offered stays.
func (sc *searcher) consider(k int, s uint32, d float32) {
	if len(sc.res) < k {
		sc.res.push(cand{-d, s})
	} else if d < -sc.res[0].d {
		sc.res[0] = cand{-d, s}
		sc.res.fix0()
	}
}

// scanSlack is the relative margin scan8 adds to its bounds: the float32
// product it must reproduce carries a rounding error of up to about
// dim·2⁻²⁴·‖q‖·‖v‖ (2.3e-5 at 384-d), and the code-based estimate a few
// float32 roundings more.
const scanSlack = 1e-4

// scan8 returns exactly what the float32 scan returns, reading mostly the
// int8 codes (a quarter of the bytes, and a quarter of the work with
// VNNI): each vector's code-based similarity a and its error bound b (see
// qbound) bracket its float32 similarity in [a−b, a+b]. The k-th best lower
// bound θ only rises; a vector whose upper bound falls below it cannot be
// among the k best, and only the others are re-scored with their float32
// vectors, in scan order, through the same top-k as the float32 scan. A
// vector left out scores strictly less than the k-th result, so ties are
// broken as the float32 scan breaks them.
func (ix *Index) scan8(ctx context.Context, sc *searcher, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	sc.qc = slices.Grow(sc.qc[:0], len(q))[:len(q)]
	qs := quantize(sc.qc, q)
	qb := boundOf(sc.qc, qs, q)
	qhat := qb.norm + qb.err // ≥ ‖q̂‖
	lows := sc.res[:0]       // the k best lower bounds, worst at the root
	ups := sc.tmp[:0]        // (upper bound, slot) of vectors still in the running
	theta := float32(math.Inf(-1))
	err := ix.eachSlot(ctx, allow, func(s uint32) {
		sc.stats.Dists++
		qe := ix.qerr[s]
		a := float32(dot8(sc.qc, ix.code(s))) * (qs * ix.scales[s])
		b := qhat*qe.err + qb.err*qe.norm + scanSlack*qhat*qe.norm
		if a+b < theta {
			return
		}
		ups = append(ups, cand{a + b, s})
		if len(lows) < k {
			lows.push(cand{a - b, s})
			if len(lows) == k {
				theta = lows[0].d
			}
		} else if a-b > lows[0].d {
			lows[0] = cand{a - b, s}
			lows.fix0()
			theta = lows[0].d
		}
	})
	sc.tmp = ups
	if err != nil {
		return nil, err
	}
	sc.res = lows[:0]
	for _, c := range ups {
		if c.d >= theta {
			sc.stats.Exact++
			sc.consider(k, c.s, ix.exactDist(q, c.s))
		}
	}
	sc.drain()
	return ix.hits(sc.out, k), nil
}

// eachSlot calls f with the slot of every live vector (allow nil), or of
// every ID in allow that has a vector, in slot or ID order, checking ctx
// every few thousand.
func (ix *Index) eachSlot(ctx context.Context, allow *roaring.Bitmap, f func(s uint32)) error {
	if allow == nil {
		for s := range uint32(len(ix.ids)) {
			if s&4095 == 4095 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if ix.levels[s] >= 0 {
				f(s)
			}
		}
		return nil
	}
	// IDs mostly sit at a constant offset from their slots (added in ID
	// order, a graph built in ID order): try the last offset seen before
	// the map, which costs more than the scan's arithmetic.
	var off uint32
	n := uint32(len(ix.ids))
	var buf [256]uint32
	it := allow.ManyIterator()
	for m := it.NextMany(buf[:]); m > 0; m = it.NextMany(buf[:]) {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, id := range buf[:m] {
			if s := id - off; s < n && ix.ids[s] == id && ix.levels[s] >= 0 {
				f(s)
			} else if s, ok := ix.slotOf[id]; ok {
				off = id - s
				f(s)
			}
		}
	}
	return nil
}

// fix0 restores the heap after its root was replaced.
func (h heap) fix0() {
	n := len(h)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].d < h[l].d {
			m = r
		}
		if h[i].d <= h[m].d {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// hits turns the closest-first candidates into at most k hits; equal
// scores are ordered by ID so results are deterministic.
func (ix *Index) hits(cs []cand, k int) []Hit {
	cs = cs[:min(k, len(cs))]
	out := make([]Hit, len(cs))
	for i, c := range cs {
		out[i] = Hit{ID: ix.ids[c.s], Score: -c.d}
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// expanded marks a beam entry whose neighbours beamSearch has compared
// (slots stay below 2³¹).
const expanded = 1 << 31

// beamSearch is searchLayer without a filter, for building: the ef best
// nodes are kept in one array sorted closest first, and the closest not
// yet expanded is expanded next, until none is left. Without a filter
// that is the paper's algorithm 2 (a candidate the two heaps would expand
// is one the beam still holds: one dropped from the results is no closer
// than the worst kept, which stops the walk), but it needs no frontier
// heap and no draining, which were a fifth of a build. Leaves the result
// in sc.out, closest first.
func (ix *Index) beamSearch(sc *searcher, q qvec, eps []cand, ef, l int) {
	sc.newGen()
	beam := sc.out[:0]
	for _, e := range eps {
		if !sc.visit(e.s) {
			beam = insertBeam(beam, e, ef)
		}
	}
	for i := 0; i < len(beam); {
		c := beam[i]
		if c.s&expanded != 0 {
			i++
			continue
		}
		beam[i].s |= expanded
		if l == 0 {
			// The next node expanded is likely the next unexpanded one in
			// the beam: have its list fetched meanwhile.
			for j := i + 1; j < len(beam); j++ {
				if nx := beam[j].s; nx&expanded == 0 {
					prefetch(unsafe.Pointer(&ix.links0[int(nx)*(ix.m0+1)]), 4*(ix.m0+1))
					break
				}
			}
		}
		ix.unvisited(sc, c.s, l)
		lo := i + 1
		for _, nb := range sc.batch {
			d := ix.dist(q, nb)
			if len(beam) < ef || d < beam[len(beam)-1].d {
				var at int
				beam, at = insertBeamAt(beam, cand{d, nb}, ef)
				lo = min(lo, at)
			}
		}
		i = lo
	}
	for i := range beam {
		beam[i].s &^= expanded
	}
	sc.out = beam
}

// insertBeam inserts c into the sorted beam of at most ef entries.
func insertBeam(beam []cand, c cand, ef int) []cand {
	if len(beam) >= ef && c.d >= beam[len(beam)-1].d {
		return beam
	}
	beam, _ = insertBeamAt(beam, c, ef)
	return beam
}

// insertBeamAt inserts c (closer than the worst when the beam is full)
// after the entries no farther than it, dropping the worst when full,
// and returns where it went.
func insertBeamAt(beam []cand, c cand, ef int) ([]cand, int) {
	lo, hi := 0, len(beam)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if beam[m].d <= c.d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if len(beam) < ef {
		beam = append(beam, cand{})
	}
	copy(beam[lo+1:], beam[lo:len(beam)-1])
	beam[lo] = c
	return beam, lo
}
