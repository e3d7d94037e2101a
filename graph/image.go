package graph

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/memor-db/memor/internal/memsize"
)

// An image is a graph serialised in the form memory holds it, so that
// [LoadImage] slices it instead of decoding records: the entities with
// their identities and words (a load from the records computes both, by
// Unicode folding, and that is most of its cost), the edges with their
// endpoints as dense IDs and their labels as indexes, and the match lists
// of Graph.first in their order. The strings stay in the image (the
// graph's names, words and labels point into it). A load builds the
// adjacency, by one counting pass over the edges (stored, it would cost
// as much to check against the edges as to build), and the labels' map (a
// few entries); entities are looked up by identity and first word in the
// image's sorted arrays, and the maps a write needs in their place (by
// identity, first word and doc) are built by the first write: reads do
// not need them, and building them was most of what a load from an image
// cost.
//
// An image is canonical: it is the graph as [LoadSized] would build it
// from the records, entities numbered in stored-ID order, edges in doc
// order without free slots, labels in order of first use. So two graphs
// holding the same records make the same image, whatever writes made
// them, and a graph loaded from an image is the graph a load of those
// records makes. The engine keeps images in its users' index images; the
// records stay the truth, and an image is rebuilt from them.
//
// Layout (every integer a uvarint, every string its byte length then
// its bytes):
//
//	0x01                            image version
//	n, m, l, w                      entities, edges, labels, words of all entities
//	l × label                       labels, in order of first use by the edges
//	n × (key − previous key,        entities, stored IDs ascending (the first
//	     display, identity,          key from 0): display name, norm.Key of it,
//	     words, words × word)        its words (see words)
//	m × (doc − previous doc,        edges, docs ascending: endpoints as entity
//	     from, to, label)            IDs (indexes of the entities above), label index
//	n × entity                      entity IDs in identity order
//	f, then f × (k, k × entity)     match lists of first words, in order of the
//	                                 first word; each ordered as cmpMatch orders
const imageVersion = 1

// AppendImage appends the graph's image (see [LoadImage]) to dst.
func (g *Graph) AppendImage(dst []byte) []byte {
	g.mu.RLock()
	defer g.mu.RUnlock()
	// The canonical numbering: entities by stored ID, edges by doc,
	// labels by first use.
	ids := make([]uint32, 0, len(g.ents))
	for id := range g.ents {
		if g.ents[id].norm != "" {
			ids = append(ids, uint32(id))
		}
	}
	slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(g.ents[a].key, g.ents[b].key) })
	rank := make([]uint32, len(g.ents))
	nw := 0
	for i, id := range ids {
		rank[id] = uint32(i)
		nw += len(g.ents[id].words)
	}
	var slots []uint32
	if g.img != nil { // as the image left it: every slot used, in doc order
		slots = make([]uint32, len(g.edges))
		for s := range slots {
			slots[s] = uint32(s)
		}
	} else {
		slots = make([]uint32, 0, len(g.byDoc))
		for _, s := range g.byDoc {
			slots = append(slots, s)
		}
		slices.SortFunc(slots, func(a, b uint32) int { return cmp.Compare(g.edges[a].doc, g.edges[b].doc) })
	}
	labRank := make([]uint32, len(g.labels))
	for i := range labRank {
		labRank[i] = math.MaxUint32
	}
	var labs []uint32
	for _, s := range slots {
		if l := g.edges[s].lab; labRank[l] == math.MaxUint32 {
			labRank[l] = uint32(len(labs))
			labs = append(labs, l)
		}
	}

	str := func(dst []byte, s string) []byte { return append(binary.AppendUvarint(dst, uint64(len(s))), s...) }
	dst = append(dst, imageVersion)
	for _, x := range []int{len(ids), len(slots), len(labs), nw} {
		dst = binary.AppendUvarint(dst, uint64(x))
	}
	for _, l := range labs {
		dst = str(dst, g.labels[l])
	}
	prev := uint32(0)
	for _, id := range ids {
		e := &g.ents[id]
		dst = binary.AppendUvarint(dst, uint64(e.key-prev))
		prev = e.key
		dst = str(str(dst, e.display), e.norm)
		dst = binary.AppendUvarint(dst, uint64(len(e.words)))
		for _, w := range e.words {
			dst = str(dst, w)
		}
	}
	prev = 0
	for _, s := range slots {
		e := &g.edges[s]
		dst = binary.AppendUvarint(dst, uint64(e.doc-prev))
		prev = e.doc
		dst = binary.AppendUvarint(dst, uint64(rank[e.from]))
		dst = binary.AppendUvarint(dst, uint64(rank[e.to]))
		dst = binary.AppendUvarint(dst, uint64(labRank[e.lab]))
	}
	slices.SortFunc(ids, func(a, b uint32) int { return strings.Compare(g.ents[a].norm, g.ents[b].norm) })
	for _, id := range ids {
		dst = binary.AppendUvarint(dst, uint64(rank[id]))
	}
	// cmpMatch orders by word count and stored ID, which the renumbering
	// keeps: each list is written in its order.
	first := g.firstMap()
	firsts := make([]string, 0, len(first))
	for w := range first {
		firsts = append(firsts, w)
	}
	slices.Sort(firsts)
	dst = binary.AppendUvarint(dst, uint64(len(firsts)))
	for _, w := range firsts {
		list := first[w]
		dst = binary.AppendUvarint(dst, uint64(len(list)))
		for _, id := range list {
			dst = binary.AppendUvarint(dst, uint64(rank[id]))
		}
	}
	return dst
}

// imageIndex is what a graph loaded from an image looks entities up by
// until its first write: sorted arrays, read where the load left them, in
// place of the maps a load would build (most of what a load from an image
// would cost, and the first query needs a few lookups of each).
type imageIndex struct {
	byNorm []uint32 // entity IDs in identity order
	// lists holds the match lists, in order of their first word; list i
	// is lists[off[i]:off[i+1]].
	lists []uint32
	off   []uint32
}

// lookup returns the ID of the entity whose identity is nk. Caller holds
// the lock, shared or not.
func (g *Graph) lookup(nk string) (uint32, bool) {
	x := g.img
	if x == nil {
		id, ok := g.byNorm[nk]
		return id, ok
	}
	i, ok := slices.BinarySearchFunc(x.byNorm, nk, func(id uint32, nk string) int { return strings.Compare(g.ents[id].norm, nk) })
	if !ok {
		return 0, false
	}
	return x.byNorm[i], true
}

// firstList returns the match list of first word w. Caller holds the
// lock, shared or not.
func (g *Graph) firstList(w string) []uint32 {
	x := g.img
	if x == nil {
		return g.first[w]
	}
	n := len(x.off) - 1
	word := func(i int) string { return g.ents[x.lists[x.off[i]]].words[0] }
	i := sort.Search(n, func(i int) bool { return word(i) >= w })
	if i == n || word(i) != w {
		return nil
	}
	return x.lists[x.off[i]:x.off[i+1]:x.off[i+1]]
}

// docs returns the doc → edge slot map: byDoc, or one built from the
// edges an image left in doc order. Caller holds the lock, shared or not.
func (g *Graph) docs() map[uint32]uint32 {
	if g.img == nil {
		return g.byDoc
	}
	m := make(map[uint32]uint32, len(g.edges))
	for s := range g.edges {
		m[g.edges[s].doc] = uint32(s)
	}
	return m
}

// normMap returns the identity → entity ID map: byNorm, or one built from
// an image's index. Caller holds the lock, shared or not.
func (g *Graph) normMap() map[string]uint32 {
	if g.img == nil {
		return g.byNorm
	}
	m := make(map[string]uint32, len(g.img.byNorm))
	for _, id := range g.img.byNorm {
		m[g.ents[id].norm] = id
	}
	return m
}

// firstMap returns the match lists by first word: first, or a map built
// from an image's index, of lists that are its own (installEntity
// inserts into them). Caller holds the lock, shared or not.
func (g *Graph) firstMap() map[string][]uint32 {
	x := g.img
	if x == nil {
		return g.first
	}
	m := make(map[string][]uint32, len(x.off)-1)
	for i := range len(x.off) - 1 {
		list := x.lists[x.off[i]:x.off[i+1]:x.off[i+1]]
		m[g.ents[list[0]].words[0]] = list
	}
	return m
}

// index builds the maps an image left unbuilt: the first write needs
// them. Caller holds the write lock.
func (g *Graph) index() {
	x := g.img
	if x == nil {
		return
	}
	g.byDoc, g.byNorm, g.first = g.docs(), g.normMap(), g.firstMap()
	a := &g.acct
	a.byDoc.made(len(g.edges), docSlot)
	a.byNorm.made(len(x.byNorm), normSlot)
	a.first.made(len(x.off)-1, firstSlot)
	a.lists = 0
	for i := range len(x.off) - 1 {
		a.lists += listBytes(int(x.off[i+1] - x.off[i]))
	}
	g.img = nil
	g.measureLocked()
}

// imageReader reads an image's integers and strings. An error sticks:
// once set, reads return zero values and "", so that a caller may check
// it after a loop rather than after every read.
type imageReader struct {
	b   []byte
	at  int
	err error
}

func (r *imageReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: image: bad %s at byte %d", ErrCorrupt, what, r.at)
	}
}

// uv reads a uvarint of at most max.
func (r *imageReader) uv(what string, max uint64) uint64 {
	// Most are one byte: read inline, without the general decode.
	if r.at < len(r.b) && r.b[r.at] < 0x80 && uint64(r.b[r.at]) <= max && r.err == nil {
		r.at++
		return uint64(r.b[r.at-1])
	}
	return r.uvLong(what, max)
}

func (r *imageReader) uvLong(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	x, w := binary.Uvarint(r.b[r.at:])
	if w <= 0 || x > max {
		r.fail(what)
		return 0
	}
	r.at += w
	return x
}

// str reads a string, non-empty, left where it lies in the image.
func (r *imageReader) str(what string) string {
	n := r.uv(what, uint64(len(r.b)))
	if r.err != nil {
		return ""
	}
	if n == 0 || uint64(len(r.b)-r.at) < n {
		r.fail(what)
		return ""
	}
	// The image is the caller's private copy, never modified: its bytes
	// are the strings' (a copy of every name and word is what a load from
	// an image saves).
	s := unsafe.String(&r.b[r.at], int(n))
	r.at += int(n)
	return s
}

// LoadImage returns the graph img holds (see [Graph.AppendImage]), keyed
// under prefix: the graph [LoadSized] builds from the records the image
// was made of, which answers, checks and writes as that one does. The
// graph keeps strings pointing into img, which must not be modified while
// the graph lives. A damaged image fails with [ErrCorrupt]; the structure
// is checked whole (counts, order, IDs in range, identities and first
// words unique, every entity with an edge), so that an image that loads
// cannot fail later, though a changed name or word is not noticed until
// [Graph.Check] compares the graph with the records.
func LoadImage(img []byte, prefix []byte) (*Graph, error) {
	if len(img) == 0 || img[0] != imageVersion {
		return nil, fmt.Errorf("%w: image version %x", ErrCorrupt, img[:min(len(img), 1)])
	}
	r := &imageReader{b: img, at: 1}
	// Every entity, edge, label and word takes a byte at least: counts
	// beyond the image's length are damage, not allocations to make.
	lim := uint64(len(img))
	n, m, nl, nw := r.uv("entity count", lim), r.uv("edge count", lim), r.uv("label count", lim), r.uv("word count", lim)
	if r.err != nil {
		return nil, r.err
	}
	// The least each takes: an entity six bytes (key, two strings, word
	// count), an edge four, a label or word two.
	if 6*n+4*m+2*nl+2*nw > lim || n == 0 && m > 0 {
		return nil, fmt.Errorf("%w: image: %d entities, %d edges, %d labels, %d words in %d bytes", ErrCorrupt, n, m, nl, nw, lim)
	}
	g := New(prefix)
	g.labels = make([]string, nl)
	g.labelID = make(map[string]uint32, nl)
	g.acct.labelID.made(int(nl), labelSlot)
	for i := range g.labels {
		l := r.str("label")
		if _, dup := g.labelID[l]; dup && r.err == nil {
			return nil, fmt.Errorf("%w: image: label %q twice", ErrCorrupt, l)
		}
		g.labels[i], g.labelID[l] = l, uint32(i)
	}

	g.ents = make([]entity, n)
	g.byNorm, g.first, g.byDoc = nil, nil, nil // built by the first write
	g.acct.byNorm, g.acct.first, g.acct.byDoc = room{}, room{}, room{}
	wordArr := make([]string, nw)
	key, wi := uint64(0), uint64(0)
	for i := range g.ents {
		d := r.uv("entity key", math.MaxUint32)
		if key += d; key > math.MaxUint32 || i > 0 && d == 0 {
			r.fail("entity key order")
		}
		e := &g.ents[i]
		e.key, e.display, e.norm = uint32(key), r.str("display name"), r.str("identity")
		k := r.uv("word count", nw-wi)
		for j := range k {
			wordArr[wi+j] = r.str("word")
		}
		if k > 0 {
			e.words = wordArr[wi : wi+k : wi+k]
		}
		wi += k
		if r.err != nil {
			return nil, r.err
		}
	}
	if wi != nw {
		return nil, fmt.Errorf("%w: image: %d words, the header says %d", ErrCorrupt, wi, nw)
	}
	if n > 0 {
		g.nextKey = key + 1
	}

	// Edges, counting each entity's edges into the CSR offsets (shifted
	// by one: off[id+1] counts id's, summed below into starts).
	c := &g.adj
	c.n = int(n)
	c.off = make([]uint32, n+1)
	g.edges = make([]edge, m)
	doc, used := uint64(0), uint32(0)
	for i := range g.edges {
		d := r.uv("edge doc", math.MaxUint32)
		if doc += d; doc > math.MaxUint32 || i > 0 && d == 0 {
			r.fail("edge doc order")
		}
		from, to := uint32(r.uv("edge source", n-1)), uint32(r.uv("edge target", n-1))
		lab := uint32(r.uv("edge label", uint64(used)))
		if r.err != nil {
			return nil, r.err
		}
		if lab == used {
			if used++; used > uint32(nl) {
				return nil, fmt.Errorf("%w: image: edge of doc %d names label %d of %d", ErrCorrupt, doc, lab, nl)
			}
		}
		g.edges[i] = edge{doc: uint32(doc), from: from, to: to, label: g.labels[lab], lab: lab, live: true}
		c.off[from+1]++
		if to != from {
			c.off[to+1]++
		}
	}
	if used != uint32(nl) {
		return nil, fmt.Errorf("%w: image: %d labels, the edges use %d", ErrCorrupt, nl, used)
	}
	for id := range n {
		if c.off[id+1] == 0 {
			return nil, fmt.Errorf("%w: image: entity %d %q has no edges", ErrCorrupt, g.ents[id].key, g.ents[id].display)
		}
		c.off[id+1] += c.off[id]
	}
	// The adjacency: edges in doc order appended to their ends' lists
	// leave each list sorted by doc, as link keeps it. The lists share one
	// array, each capped at its length so that a later insert copies it
	// out rather than overwriting the next.
	total := c.off[n]
	adj := make([]uint32, total)
	c.e = make([]csrEdge, total)
	c.names = make([]string, n)
	for s := range g.edges {
		e := &g.edges[s]
		f := &g.ents[e.from]
		k := c.off[e.from] + uint32(f.refs)
		f.refs++
		adj[k] = uint32(s)
		c.e[k] = csrEdge{nbr: e.to, doc: e.doc, slot: uint32(s), lab: e.lab}
		if e.to != e.from {
			t := &g.ents[e.to]
			k := c.off[e.to] + uint32(t.refs)
			t.refs++
			adj[k] = uint32(s)
			c.e[k] = csrEdge{nbr: e.from, doc: e.doc, slot: uint32(s) | invBit, lab: e.lab}
		}
	}
	for id := range g.ents {
		lo, hi := c.off[id], c.off[id+1]
		g.ents[id].adj = adj[lo:hi:hi]
		c.names[id] = g.ents[id].display
	}

	// The identity order: strictly ascending (so identities are unique)
	// over n entries, a permutation.
	// (The last identity is kept: the entities are read in this order,
	// not their own, and each read is a cache miss.)
	x := &imageIndex{byNorm: make([]uint32, n)}
	var last string
	for i := range x.byNorm {
		id := uint32(r.uv("identity order", n-1))
		if r.err != nil {
			return nil, r.err
		}
		norm := g.ents[id].norm
		if i > 0 && last >= norm {
			return nil, fmt.Errorf("%w: image: identity %q out of order", ErrCorrupt, norm)
		}
		x.byNorm[i], last = id, norm
	}
	// The match lists, checked as installEntity would build them: every
	// entity with words is in the list of its first word, in cmpMatch
	// order (strictly: so once), and the lists' words ascend (so are
	// unique), so the count of entries settles that none is missing.
	f := r.uv("first-word count", n)
	if r.err != nil {
		return nil, r.err
	}
	lists := make([]uint32, 0, n)
	x.off = make([]uint32, 1, f+1)
	for range f {
		k := r.uv("match list length", n-uint64(len(lists)))
		if r.err == nil && k == 0 {
			r.fail("match list length")
		}
		start := len(lists)
		for j := range k {
			id := uint32(r.uv("match list entity", n-1))
			if r.err != nil {
				return nil, r.err
			}
			ws := g.ents[id].words
			if len(ws) == 0 || j > 0 && (ws[0] != g.ents[lists[start]].words[0] || g.cmpMatch(lists[len(lists)-1], id) >= 0) {
				return nil, fmt.Errorf("%w: image: match list of entity %d out of order", ErrCorrupt, id)
			}
			lists = append(lists, id)
		}
		if r.err != nil {
			return nil, r.err
		}
		if w := g.ents[lists[start]].words[0]; start > 0 && g.ents[lists[x.off[len(x.off)-2]]].words[0] >= w {
			return nil, fmt.Errorf("%w: image: match list of %q out of order", ErrCorrupt, w)
		}
		x.off = append(x.off, uint32(len(lists)))
	}
	with := 0
	for i := range g.ents {
		if len(g.ents[i].words) > 0 {
			with++
		}
	}
	if len(lists) != with {
		return nil, fmt.Errorf("%w: image: match lists hold %d entities, %d have words", ErrCorrupt, len(lists), with)
	}
	if r.at != len(img) {
		return nil, fmt.Errorf("%w: image: %d bytes after the graph", ErrCorrupt, len(img)-r.at)
	}
	x.lists = lists
	g.img = x
	if nl > 0 {
		// The strings lie in img, which the labels keep alive as long as
		// the graph: it is counted once, whole.
		g.acct.image, g.acct.imageBytes = unsafe.String(&img[0], len(img)), memsize.Alloc(cap(img))
	}
	g.acct.adjArena = adj
	g.measureLocked()
	return g, nil
}
