package graph

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/kelindar/bitmap"
	"github.com/memor-db/memor/internal/norm"
)

// node is one entity reached by a walk.
type node struct {
	ent    uint32
	parent int32 // index in walkState.nodes; -1 for a seed
	depth  int32 // hops from its seed
	by     reach // the edge it was reached by
}

// reach is one walked edge: the node it was walked from, the edge's slot
// (invBit set if walked against its direction), the entity at its other
// end, its doc and its label's index in Graph.labels. Paths are built
// from these only for the edges a caller serves.
type reach struct {
	from             int32
	slot, other, doc uint32
	lab              uint32
}

type walkState struct {
	// seenEnt (entity IDs) and seenEdge (edge slots) are the visited sets,
	// kept across hops and, cleared bit by bit, across walks.
	seenEnt, seenEdge bitmap.Bitmap
	nodes             []node
	frontier, next    []int32
	reached           []reach
	// allowBits is allow as a dense bitmap over docs, materialised once
	// the walk is large enough that copying allow's containers costs less
	// than a roaring lookup per edge (dense reports it is filled).
	allowBits []uint64
	dense     bool
	arena     []Hop // hops of the returned paths, carved in chunks
}

// hops returns a slice of n hops carved from the arena, so that a walk
// allocates a few chunks rather than one slice per path. The arena is not
// reused across walks: returned paths keep their chunks.
func (ws *walkState) hops(n int) []Hop {
	if cap(ws.arena)-len(ws.arena) < n {
		// Chunks double from 16 to 512 hops: most walks (a one-hop look
		// around an entity) return a few paths, and a fixed 512-hop chunk
		// (28 KB) per walk was most of what Query allocated.
		ws.arena = make([]Hop, 0, max(n, min(512, max(16, 2*cap(ws.arena)))))
	}
	l := len(ws.arena)
	ws.arena = ws.arena[:l+n]
	return ws.arena[l : l+n : l+n]
}

// allowed reports whether doc passes the time filter.
func (ws *walkState) allowed(allow *roaring.Bitmap, doc uint32) bool {
	if allow == nil {
		return true
	}
	if ws.dense {
		w := int(doc >> 6)
		return w < len(ws.allowBits) && ws.allowBits[w]&(1<<(doc&63)) != 0
	}
	return allow.Contains(doc)
}

// densify materialises allow as a dense bitmap if the hop about to be
// walked, cand edges, would spend more on roaring lookups (~15 ns each)
// than copying allow's containers (~0.5 ns per 64 docs) costs.
func (ws *walkState) densify(allow *roaring.Bitmap, cand int) {
	if allow == nil || ws.dense {
		return
	}
	words := int(allow.DenseSize())
	if cand*32 < words {
		return
	}
	if cap(ws.allowBits) < words {
		ws.allowBits = make([]uint64, words)
	} else {
		ws.allowBits = ws.allowBits[:words]
		clear(ws.allowBits)
	}
	allow.WriteDenseTo(ws.allowBits)
	ws.dense = true
}

func (g *Graph) getWalk() *walkState {
	ws, _ := g.pool.Get().(*walkState)
	if ws == nil {
		ws = &walkState{}
	}
	return ws
}

// putWalk clears what the walk set, bit by bit (a small walk in a large
// graph would otherwise pay for clearing all of both bitmaps).
func (g *Graph) putWalk(ws *walkState) {
	for _, nd := range ws.nodes {
		ws.seenEnt.Remove(nd.ent)
	}
	for _, r := range ws.reached {
		ws.seenEdge.Remove(r.slot &^ invBit)
	}
	ws.nodes, ws.frontier, ws.next, ws.reached, ws.arena = ws.nodes[:0], ws.frontier[:0], ws.next[:0], ws.reached[:0], nil
	ws.dense = false
	g.pool.Put(ws)
}

// degree returns the number of edges of entity u, from the CSR's offsets
// when they are current: the entity records are six times larger, and
// reading them per frontier node was a cache miss the walk itself does
// not need.
func (g *Graph) degree(u uint32) int {
	if c := &g.adj; c.clean(u) {
		return int(c.off[u+1] - c.off[u])
	}
	return len(g.ents[u].adj)
}

// walk runs the breadth-first walk BFSLimit documents, appending each
// walked edge to ws.reached (at most limit). Caller holds the read lock.
func (g *Graph) walk(ctx context.Context, ws *walkState, seeds []string, depth, limit int, allow *roaring.Bitmap) error {
	for _, s := range seeds {
		id, ok := g.lookup(norm.Key(s))
		if !ok || ws.seenEnt.Contains(id) {
			continue
		}
		ws.seenEnt.Set(id)
		ws.nodes = append(ws.nodes, node{ent: id, parent: -1})
		ws.frontier = append(ws.frontier, int32(len(ws.nodes)-1))
	}
	c := &g.adj
	steps := 0
	for d := 0; d < depth && len(ws.frontier) > 0; d++ {
		if allow != nil && !ws.dense {
			cand := 0
			for _, ni := range ws.frontier {
				cand += g.degree(ws.nodes[ni].ent)
			}
			ws.densify(allow, cand)
		}
		for _, ni := range ws.frontier {
			u := ws.nodes[ni].ent
			if !c.clean(u) {
				// Its edges changed since the CSR was built: read them
				// from the adj list.
				for _, s := range g.ents[u].adj {
					if steps++; steps&1023 == 0 {
						if err := ctx.Err(); err != nil {
							return err
						}
					}
					if ws.seenEdge.Contains(s) {
						continue
					}
					e := &g.edges[s]
					if !ws.allowed(allow, e.doc) {
						continue
					}
					other, sl := e.to, s
					if e.from != u {
						other, sl = e.from, s|invBit
					}
					if ws.step(d, reach{from: ni, slot: sl, other: other, doc: e.doc, lab: e.lab}, limit) {
						return nil
					}
				}
				continue
			}
			for _, x := range c.e[c.off[u]:c.off[u+1]] {
				if steps++; steps&1023 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if ws.seenEdge.Contains(x.slot&^invBit) || !ws.allowed(allow, x.doc) {
					continue
				}
				if ws.step(d, reach{from: ni, slot: x.slot, other: x.nbr, doc: x.doc, lab: x.lab}, limit) {
					return nil
				}
			}
		}
		ws.frontier, ws.next = ws.next, ws.frontier[:0]
	}
	return ctx.Err()
}

// step records the walk of edge r from a node at depth d, and reports
// whether the walk has reached its limit.
func (ws *walkState) step(d int, r reach, limit int) bool {
	ws.seenEdge.Set(r.slot &^ invBit)
	ws.reached = append(ws.reached, r)
	if len(ws.reached) >= limit {
		return true
	}
	if !ws.seenEnt.Contains(r.other) {
		ws.seenEnt.Set(r.other)
		ws.nodes = append(ws.nodes, node{ent: r.other, parent: r.from, depth: int32(d + 1), by: r})
		ws.next = append(ws.next, int32(len(ws.nodes)-1))
	}
	return false
}

// hop renders edge r walked from entity from.
func (g *Graph) hop(from uint32, r reach) Hop {
	return Hop{From: g.name(from), Label: g.labels[r.lab], To: g.name(r.other), Doc: r.doc, Inverse: r.slot&invBit != 0}
}

// path builds the path of reached edge r: the hops from a seed to the node
// it was walked from, then the edge.
func (g *Graph) path(ws *walkState, r reach) Path {
	nd := ws.nodes[r.from]
	n := int(nd.depth) + 1
	hops := ws.hops(n)
	hops[n-1] = g.hop(nd.ent, r)
	ni := r.from
	for i := n - 2; i >= 0; i-- {
		nd := ws.nodes[ni]
		hops[i] = g.hop(ws.nodes[nd.parent].ent, nd.by)
		ni = nd.parent
	}
	return Path{Hops: hops}
}

// BFS walks at most depth hops (DefaultDepth when depth ≤ 0) from the named
// seed entities (unknown names are ignored) over the edges whose doc is in
// allow (every edge when allow is nil) and returns one path per walked edge,
// at most DefaultMaxPaths, shortest first. It returns ctx's error if ctx
// ends during the walk.
func (g *Graph) BFS(ctx context.Context, seeds []string, depth int, allow *roaring.Bitmap) ([]Path, error) {
	return g.BFSLimit(ctx, seeds, depth, DefaultMaxPaths, allow)
}

// BFSLimit is BFS returning at most maxPaths paths (DefaultMaxPaths when
// maxPaths ≤ 0).
func (g *Graph) BFSLimit(ctx context.Context, seeds []string, depth, maxPaths int, allow *roaring.Bitmap) ([]Path, error) {
	if depth <= 0 {
		depth = DefaultDepth
	}
	if maxPaths <= 0 {
		maxPaths = DefaultMaxPaths
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	ws := g.getWalk()
	defer g.putWalk(ws)
	if err := g.walk(ctx, ws, seeds, depth, maxPaths, allow); err != nil {
		return nil, fmt.Errorf("graph: bfs: %w", err)
	}
	var paths []Path
	if len(ws.reached) > 0 {
		paths = make([]Path, len(ws.reached))
		// Every path is built: carve them all from one allocation.
		total := 0
		for _, r := range ws.reached {
			total += int(ws.nodes[r.from].depth) + 1
		}
		ws.arena = make([]Hop, 0, total)
	}
	for i, r := range ws.reached {
		paths[i] = g.path(ws, r)
	}
	return paths, nil
}

// Reached is one edge reached by [Graph.Reach]. It is valid only during
// the callback it is passed to.
type Reached struct {
	g  *Graph
	ws *walkState
	r  reach
}

// Doc returns the fact version of the reached edge.
func (r Reached) Doc() uint32 { return r.r.doc }

// Len returns the number of hops of the edge's path.
func (r Reached) Len() int { return int(r.ws.nodes[r.r.from].depth) + 1 }

// Path builds the edge's path, as BFS returns it.
func (r Reached) Path() Path { return r.g.path(r.ws, r.r) }

// Reach walks as BFS does, from seeds up to depth hops (DefaultDepth when
// depth ≤ 0) over the edges of allow, without a path limit and without
// building paths: it calls fn with every walked edge in the order BFS
// returns them, and the caller builds the paths of the edges it serves
// (Reached.Path). fn returning false ends the calls. fn runs under the
// graph's read lock: it must not call g's methods.
func (g *Graph) Reach(ctx context.Context, seeds []string, depth int, allow *roaring.Bitmap, fn func(Reached) bool) error {
	if depth <= 0 {
		depth = DefaultDepth
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	ws := g.getWalk()
	defer g.putWalk(ws)
	if err := g.walk(ctx, ws, seeds, depth, int(^uint(0)>>1), allow); err != nil {
		return fmt.Errorf("graph: reach: %w", err)
	}
	for _, r := range ws.reached {
		if !fn(Reached{g: g, ws: ws, r: r}) {
			break
		}
	}
	return nil
}

// Out returns the edges of allow (nil: every edge) leaving subject with
// the given label, in document order, each as a hop from subject: the
// values of one of subject's slots. It builds no paths, so it is cheap to
// ask for many subjects.
func (g *Graph) Out(subject, label string, allow *roaring.Bitmap) []Hop {
	g.mu.RLock()
	defer g.mu.RUnlock()
	id, ok := g.lookup(norm.Key(subject))
	if !ok {
		return nil
	}
	var out []Hop
	add := func(sl uint32) {
		e := &g.edges[sl]
		if allow == nil || allow.Contains(e.doc) {
			out = append(out, Hop{From: g.ents[id].display, Label: e.label, To: g.ents[e.to].display, Doc: e.doc})
		}
	}
	if c := &g.adj; c.clean(id) {
		l, ok := g.labelID[label]
		if !ok {
			return nil
		}
		for _, x := range c.e[c.off[id]:c.off[id+1]] {
			if x.slot&invBit == 0 && x.lab == l {
				add(x.slot)
			}
		}
		return out
	}
	for _, sl := range g.ents[id].adj {
		if e := &g.edges[sl]; e.from == id && e.label == label {
			add(sl)
		}
	}
	return out
}
