package graph

import (
	"unsafe"

	"github.com/kelindar/bitmap"
)

// csr is the graph's adjacency in compressed sparse row form: the entries
// of entity u are off[u]..off[u+1] of e, in the order of the entity's adj
// list (by doc). A walk reads one flat array instead of chasing each edge
// slot into g.edges, which is what made walks slow and their time swing
// with the cache. The fields of an entry sit together (16 bytes, four to
// a cache line) rather than in parallel arrays: an entity's edges are one
// or two cache lines, where four arrays cost four or more misses per
// entity walked and made the walk's time follow how much of the cache the
// machine's other work left it.
//
// It is built when the graph loads and patched on writes: a write marks
// the entities whose edges changed as dirty, and a walk reads a dirty
// entity's edges (and those of entities newer than the arrays) from its
// adj list. Once the dirty entities are more than an eighth of those
// covered, or the new ones more than all covered (at least minStale
// either way), the write rebuilds the arrays: a copy of the edge records'
// fields, costing a write O(edges/entities) amortised, and a graph built
// by writes from empty O(1) (it doubles between rebuilds).
type csr struct {
	n   int      // entities covered: IDs ≥ n are dirty by definition
	off []uint32 // len n+1
	e   []csrEdge
	// names are the entities' display names by ID (valid for clean IDs):
	// a path is rendered from these arrays alone, not from the larger
	// entity and edge records.
	names []string

	dirty  bitmap.Bitmap // entity IDs < n whose entries are stale
	nDirty int
}

// csrEdge is one edge seen from one of its ends.
type csrEdge struct {
	nbr  uint32 // the entity at the other end
	doc  uint32 // the edge's doc: its time filter key
	slot uint32 // the edge slot, invBit set when walked against its direction
	lab  uint32 // the label's index in Graph.labels
}

const (
	invBit = 1 << 31
	// minStale is the number of dirty entities a graph keeps before it
	// rebuilds: below it a rebuild costs more than reading a few adj lists.
	minStale = 64
)

// name returns entity id's display name.
func (g *Graph) name(id uint32) string {
	if g.adj.clean(id) {
		return g.adj.names[id]
	}
	return g.ents[id].display
}

// clean reports whether entity id's CSR entries are current.
func (c *csr) clean(id uint32) bool {
	return int(id) < c.n && !c.dirty.Contains(id)
}

// markDirty records that entity id's edges changed. Caller holds the write
// lock.
func (g *Graph) markDirty(id uint32) {
	c := &g.adj
	if int(id) < c.n && !c.dirty.Contains(id) {
		was := cap(c.dirty)
		c.dirty.Set(id)
		g.acct.Resized(was, cap(c.dirty), 8)
		c.nDirty++
	}
}

// stale returns the number of dirty entities and of entities newer than
// the CSR: those a walk reads from their adj lists.
func (g *Graph) stale() (dirty, newer int) {
	return g.adj.nDirty, max(0, len(g.ents)-g.adj.n)
}

// patched rebuilds the CSR once too many entities are stale. Caller owns g
// or holds the write lock.
func (g *Graph) patched() {
	dirty, newer := g.stale()
	if (dirty > minStale && dirty > g.adj.n/8) || (newer > minStale && newer > g.adj.n) {
		g.buildCSR()
		g.measureLocked()
	}
}

// buildCSR lays the adjacency of every entity out in c, reusing its
// arrays' memory. Caller owns g or holds the write lock.
func (g *Graph) buildCSR() {
	c := &g.adj
	n := len(g.ents)
	total := 0
	for i := range g.ents {
		total += len(g.ents[i].adj)
	}
	c.n = n
	c.off = grow(c.off, n+1)
	c.e = grow(c.e, total)
	if cap(c.names) >= n {
		c.names = c.names[:n]
	} else {
		c.names = make([]string, n, n+n/8)
	}
	k := uint32(0)
	for id := range g.ents {
		c.names[id] = g.ents[id].display
		c.off[id] = k
		for _, s := range g.ents[id].adj {
			e := &g.edges[s]
			other, sl := e.to, s
			if e.from != uint32(id) {
				other, sl = e.from, s|invBit
			}
			c.e[k] = csrEdge{nbr: other, doc: e.doc, slot: sl, lab: e.lab}
			k++
		}
	}
	c.off[n] = k
	c.dirty.Clear()
	c.nDirty = 0
}

// grow returns s resized to n, reusing its memory when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/8)
}

// checkCSR reports, through bad, every clean entity whose CSR entries
// differ from its adj list. Caller holds the read lock.
func (g *Graph) checkCSR(bad func(string, ...any)) {
	c := &g.adj
	if c.n > len(g.ents) || (len(c.off) != c.n+1 && c.n+len(c.off) > 0) {
		bad("adjacency covers %d entities (%d offsets), graph has %d", c.n, len(c.off), len(g.ents))
		return
	}
	n := 0
	for id := range c.n {
		if c.dirty.Contains(uint32(id)) {
			n++
			continue
		}
		lo, hi := c.off[id], c.off[id+1]
		adj := g.ents[id].adj
		if int(hi-lo) != len(adj) {
			bad("entity %d: %d adjacency entries, %d edges", id, hi-lo, len(adj))
			continue
		}
		for i, s := range adj {
			e := &g.edges[s]
			other, sl := e.to, s
			if e.from != uint32(id) {
				other, sl = e.from, s|invBit
			}
			k := lo + uint32(i)
			if x := c.e[k]; x.slot != sl || x.nbr != other || x.doc != e.doc || x.lab != e.lab || g.labels[e.lab] != e.label || c.names[id] != g.ents[id].display {
				bad("entity %d: adjacency entry %d differs from edge of doc %d", id, i, e.doc)
			}
		}
	}
	if n != c.nDirty {
		bad("%d dirty entities counted, %d marked", c.nDirty, n)
	}
}

// internLabel returns label's index in g.labels, adding it if it is new.
// Labels are predicates, few and reused, so the dictionary only grows.
// Caller owns g or holds the write lock.
func (g *Graph) internLabel(label string) uint32 {
	if l, ok := g.labelID[label]; ok {
		return l
	}
	l := uint32(len(g.labels))
	was := cap(g.labels)
	g.labels = append(g.labels, label)
	g.acct.Resized(was, cap(g.labels), int(unsafe.Sizeof("")))
	g.labelID[label] = l
	g.acct.Note(g.acct.str(label))
	return l
}
