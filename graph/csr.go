package graph

import "github.com/kelindar/bitmap"

// csr is the graph's adjacency in compressed sparse row form: the entries
// of entity u are off[u]..off[u+1] of the parallel arrays, in the order of
// the entity's adj list (by doc). A walk reads four flat arrays instead of
// chasing each edge slot into g.edges, which is what made walks slow and
// their time swing with the cache.
//
// It is built when the graph loads and patched on writes: a write marks
// the entities whose edges changed as dirty, and a walk reads a dirty
// entity's edges from its adj list. Once the dirty entities are more than
// an eighth of all (at least minStale), the write rebuilds the arrays, so
// rebuilding costs a write O(edges / (entities/8)) amortised.
type csr struct {
	n    int      // entities covered: IDs ≥ n are dirty by definition
	off  []uint32 // len n+1
	nbr  []uint32 // the entity at the other end
	doc  []uint32 // the edge's doc: its time filter key
	slot []uint32 // the edge slot, invBit set when walked against its direction
	lab  []uint32 // the label's index in labels
	// names are the entities' display names by ID (valid for clean IDs):
	// a path is rendered from these arrays alone, not from the larger
	// entity and edge records.
	names []string
	// labels and labelID intern the labels of the edges (for Out).
	labels  []string
	labelID map[string]uint32

	dirty  bitmap.Bitmap // entity IDs < n whose entries are stale
	nDirty int
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
		c.dirty.Set(id)
		c.nDirty++
	}
}

// stale is the number of entities whose edges a walk reads from adj.
func (g *Graph) stale() int {
	return g.adj.nDirty + max(0, len(g.ents)-g.adj.n)
}

// patched rebuilds the CSR once too many entities are dirty. Caller owns g
// or holds the write lock.
func (g *Graph) patched() {
	if s := g.stale(); s > minStale && s > len(g.ents)/8 {
		g.buildCSR()
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
	c.nbr, c.doc, c.slot, c.lab = grow(c.nbr, total), grow(c.doc, total), grow(c.slot, total), grow(c.lab, total)
	// A fresh dictionary each time: labels no longer used drop out.
	c.labelID, c.labels = make(map[string]uint32, len(c.labelID)), c.labels[:0]
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
			l, ok := c.labelID[e.label]
			if !ok {
				l = uint32(len(c.labels))
				c.labels = append(c.labels, e.label)
				c.labelID[e.label] = l
			}
			c.nbr[k], c.doc[k], c.slot[k], c.lab[k] = other, e.doc, sl, l
			k++
		}
	}
	c.off[n] = k
	c.dirty.Clear()
	c.nDirty = 0
}

// grow returns s resized to n, reusing its memory when it is large enough.
func grow(s []uint32, n int) []uint32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]uint32, n, n+n/8)
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
			if c.slot[k] != sl || c.nbr[k] != other || c.doc[k] != e.doc || c.labels[c.lab[k]] != e.label || c.names[id] != g.ents[id].display {
				bad("entity %d: adjacency entry %d differs from edge of doc %d", id, i, e.doc)
			}
		}
	}
	if n != c.nDirty {
		bad("%d dirty entities counted, %d marked", c.nDirty, n)
	}
}
