package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrEmptyName reports an entity name or label that is empty after
	// trimming space.
	ErrEmptyName = errors.New("graph: empty entity name or label")
	// ErrNilWriter reports a nil kv.Writer passed to a write method.
	ErrNilWriter = errors.New("graph: nil writer")
	// ErrCorrupt reports stored graph data that does not decode.
	ErrCorrupt = errors.New("graph: corrupt graph data")
	// ErrInconsistent reports a disagreement found by Check.
	ErrInconsistent = errors.New("graph: graph inconsistent")
	// ErrTooManyEntities reports an entity dictionary that has used every
	// uint32 ID.
	ErrTooManyEntities = errors.New("graph: entity IDs exhausted")
)

const (
	// DefaultDepth is the hop bound BFS uses when given depth ≤ 0.
	DefaultDepth = 3
	// DefaultMaxPaths bounds the paths BFS returns; BFSLimit takes another.
	DefaultMaxPaths = 256

	tagEdge   = 'd' // part of the file format
	tagEntity = 'e' // part of the file format
)

type entity struct {
	key uint32 // stored ID: the entity's key and edges' references to it
	// held caches what the strings and words hold (account.entityBytes),
	// which do not change: a walk of the account would otherwise recount
	// every name. 0: not counted yet.
	held    uint32
	display string
	norm    string
	words   []string // lower-cased words of the name, for Entities
	refs    int      // edges with this entity as an endpoint (0: slot unused)
	adj     []uint32 // edge slots touching the entity, sorted by doc
}

type edge struct {
	doc      uint32
	from, to uint32
	label    string
	lab      uint32 // label's index in Graph.labels
	live     bool
}

// Graph is the fact graph of one user. Safe for concurrent use.
type Graph struct {
	prefix []byte

	mu     sync.RWMutex
	ents   []entity          // by entity ID; refs == 0 marks a free ID
	byNorm map[string]uint32 // identity → entity ID
	edges  []edge            // by edge slot
	byDoc  map[uint32]uint32 // doc → edge slot
	free   []uint32          // unused edge slots
	// first maps an entity's first word to the IDs of entities starting
	// with it, longest name first, for Entities.
	first map[string][]uint32
	// freeEnts holds entity IDs below len(ents) that no entity uses.
	freeEnts []uint32
	// nextKey is the stored ID the next new entity gets. Stored IDs are
	// never reused within a process; in memory, entities get dense IDs
	// (indexes into ents) so that walk bitmaps stay small whatever the
	// stored IDs are.
	nextKey uint64
	// buf holds the key and value of the write under way (under the write
	// lock): kv.Batch copies what it is given, so writes allocate nothing.
	buf []byte
	// adjSlab is carved into the one-slot adjacency lists of new entities
	// (most have one edge), so that each does not cost an allocation.
	adjSlab []uint32
	// wordSlab is carved into the entities' words (see entityWords).
	wordSlab []string
	// adj is the adjacency walks read (see csr).
	adj csr
	// labels and labelID intern the edges' labels: the CSR and walks carry
	// an index, not a string.
	labels  []string
	labelID map[string]uint32
	// img, set in a graph loaded from an image and not written since,
	// stands for byNorm, first and byDoc, which are nil until the first
	// write builds them (see index).
	img *imageIndex
	// acct is what Bytes reports (memory.go).
	acct account

	// pool (of *walkState) is apart from the graph: the runtime keeps a
	// used pool reachable for a collection after its last use, and a pool
	// inside the graph would keep the whole graph alive with it after the
	// cache evicts it.
	pool *sync.Pool
}

// New returns an empty graph whose keys start with prefix.
func New(prefix []byte) *Graph {
	g := &Graph{
		pool:   new(sync.Pool),
		prefix: append([]byte(nil), prefix...),
		byNorm: make(map[string]uint32),
		byDoc:  make(map[uint32]uint32),
		first:  make(map[string][]uint32),

		labelID: make(map[string]uint32),
	}
	a := &g.acct
	a.byNorm.made(0, normSlot)
	a.byDoc.made(0, docSlot)
	a.first.made(0, firstSlot)
	a.labelID.made(0, labelSlot)
	g.measureLocked()
	return g
}

// Load reads the graph stored under prefix.
func Load(ctx context.Context, r kv.Reader, prefix []byte) (*Graph, error) {
	return LoadSized(ctx, r, prefix, 0)
}

// LoadSized is Load expecting about n edges (a hint; an upper bound such
// as the caller's document count is fine): what the scan decodes is held
// in arrays of that size instead of grown by doubling as records come.
func LoadSized(ctx context.Context, r kv.Reader, prefix []byte, n int) (*Graph, error) {
	g := New(prefix)
	st, err := g.scan(ctx, r, max(n, 0))
	if err != nil {
		return nil, fmt.Errorf("graph: load: %w", err)
	}
	// Sized once: a load knows how many entities and edges it installs,
	// so the maps and slices are not grown (and rehashed) as they fill.
	g.byNorm = make(map[string]uint32, len(st.ents))
	g.byDoc = make(map[uint32]uint32, len(st.edges))
	g.acct.byNorm.made(len(st.ents), normSlot)
	g.acct.byDoc.made(len(st.edges), docSlot)
	g.acct.names = st.names
	g.ents = make([]entity, 0, len(st.ents))
	for i, se := range st.ents {
		display, nk, err := st.entityName(se)
		if err != nil {
			return nil, fmt.Errorf("graph: load: %w", err)
		}
		// Installed in key order into an empty graph, the i-th stored
		// entity gets ID i, so an edge's endpoints are found by a binary
		// search of st.ents rather than through a map of every entity.
		if id, err := g.installEntity(se.key, display, nk); err != nil {
			return nil, fmt.Errorf("graph: load: %w", err)
		} else if id != uint32(i) {
			return nil, fmt.Errorf("graph: load: entity %d installed as %d, not %d", se.key, id, i)
		}
		g.nextKey = max(g.nextKey, uint64(se.key)+1)
	}
	idOf := func(key uint32) (uint32, bool) {
		i, ok := slices.BinarySearchFunc(st.ents, key, func(se storedEntity, k uint32) int { return cmp.Compare(se.key, k) })
		return uint32(i), ok
	}
	// Stored IDs are handed out in sequence, so they are mostly dense: a
	// table from stored ID to entity ID then replaces the two binary
	// searches per edge (a sixth of a load).
	if k := len(st.ents); k > 0 && int(st.ents[k-1].key-st.ents[0].key) < 4*k {
		lo := st.ents[0].key
		table := make([]uint32, st.ents[k-1].key-lo+1)
		for i := range table {
			table[i] = math.MaxUint32
		}
		for i, se := range st.ents {
			table[se.key-lo] = uint32(i)
		}
		idOf = func(key uint32) (uint32, bool) {
			if key < lo || key-lo >= uint32(len(table)) || table[key-lo] == math.MaxUint32 {
				return 0, false
			}
			return table[key-lo], true
		}
	}
	// Each edge goes to the slot it is read from: the scan's array is the
	// graph's.
	g.edges = st.edges[:0]
	for i := range st.edges {
		e := st.edges[i]
		from, ok1 := idOf(e.from)
		to, ok2 := idOf(e.to)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("graph: load: %w: edge of doc %d names a missing entity", ErrCorrupt, e.doc)
		}
		e.from, e.to = from, to
		g.installEdge(e)
	}
	for _, ent := range g.ents {
		if ent.refs == 0 {
			return nil, fmt.Errorf("graph: load: %w: entity %d %q has no edges", ErrCorrupt, ent.key, ent.display)
		}
	}
	g.buildCSR()
	g.measureLocked()
	return g, nil
}

// stored is what scan decodes: entities by stored ID in key order, and
// edges whose endpoints are stored IDs.
type stored struct {
	ents  []storedEntity
	edges []edge
	names string // every entity's name, one after the other
}

type storedEntity struct {
	key      uint32
	from, to uint32 // the entity's name in names
}

// display returns se's name.
func (st *stored) display(se storedEntity) string { return st.names[se.from:se.to] }

// entityName returns se's name and its norm.Key, refusing an empty one.
func (st *stored) entityName(se storedEntity) (display, nk string, err error) {
	display = st.display(se)
	if nk = norm.Key(display); nk == "" {
		return "", "", fmt.Errorf("%w: entity %d has an empty name", ErrCorrupt, se.key)
	}
	return display, nk, nil
}

// scan decodes everything stored under the prefix, expecting about n
// edges (and as many entities at most, one more than the edges in a
// chain).
func (g *Graph) scan(ctx context.Context, r kv.Reader, n int) (stored, error) {
	ents, edges, nameBytes := n, n, 0
	if sz, ok := r.(kv.Sizer); ok {
		// Sized exactly where the reader can tell (an index image).
		ne, nb, err1 := sz.ScanSize(ctx, append(slices.Clip(g.prefix), tagEntity))
		nd, _, err2 := sz.ScanSize(ctx, append(slices.Clip(g.prefix), tagEdge))
		if err1 == nil && err2 == nil {
			ents, edges, nameBytes = ne, nd, nb
		}
	}
	st := stored{ents: make([]storedEntity, 0, ents), edges: make([]edge, 0, edges)}
	// A graph has a few labels and many edges: each label is copied once.
	labels := map[string]string{}
	// The entities' names are copied into one string, which their
	// displays slice: one allocation, not one per entity.
	names := make([]byte, 0, nameBytes)
	err := r.Scan(ctx, g.prefix, func(k, v []byte) error {
		rest := k[len(g.prefix):]
		if len(rest) != 5 {
			return fmt.Errorf("%w: key %x", ErrCorrupt, k)
		}
		id := kv.NewDecoder(rest[1:]).Uint32()
		switch rest[0] {
		case tagEntity:
			st.ents = append(st.ents, storedEntity{key: id, from: uint32(len(names)), to: uint32(len(names) + len(v))})
			names = append(names, v...)
		case tagEdge:
			d := kv.NewDecoder(v)
			from, to := d.Uint32(), d.Uint32()
			if d.Err != nil || len(d.Rest()) == 0 {
				return fmt.Errorf("%w: edge of doc %d: value %x", ErrCorrupt, id, v)
			}
			label, ok := labels[string(d.Rest())]
			if !ok {
				label = string(d.Rest())
				labels[label] = label
			}
			st.edges = append(st.edges, edge{doc: id, from: from, to: to, label: label, live: true})
		default:
			return fmt.Errorf("%w: key %x has unknown tag", ErrCorrupt, k)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	st.names = string(names)
	return st, nil
}

// appendKey appends the key of a record (tagEntity or tagEdge) to dst.
func (g *Graph) appendKey(dst []byte, tag byte, id uint32) []byte {
	return kv.AppendUint32(append(append(dst, g.prefix...), tag), id)
}

// set writes key = value, both built in g.buf: the key by appendKey, the
// value by val appending to it. Caller holds the write lock.
func (g *Graph) set(w kv.Writer, tag byte, id uint32, val func([]byte) []byte) error {
	was := cap(g.buf)
	g.buf = g.appendKey(g.buf[:0], tag, id)
	kl := len(g.buf)
	g.buf = val(g.buf)
	g.acct.Resized(was, cap(g.buf), 1)
	return w.Set(g.buf[:kl:kl], g.buf[kl:])
}

// del deletes a record. Caller holds the write lock.
func (g *Graph) del(w kv.Writer, tag byte, id uint32) error {
	was := cap(g.buf)
	g.buf = g.appendKey(g.buf[:0], tag, id)
	g.acct.Resized(was, cap(g.buf), 1)
	return w.Delete(g.buf)
}

// words splits s into lower-cased runs of letters and digits.
func words(s string) []string { return appendWords(nil, s) }

// appendWords appends the words of s (see words) to dst, which it grows
// at most once.
func appendWords(dst []string, s string) []string {
	// Count first: one allocation of the right size, not a growing slice.
	n, in := 0, false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		if w && !in {
			n++
		}
		in = w
	}
	if n == 0 {
		return dst
	}
	dst = slices.Grow(dst, n)
	start := -1
	for i, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		switch {
		case w && start < 0:
			start = i
		case !w && start >= 0:
			dst = append(dst, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		dst = append(dst, strings.ToLower(s[start:]))
	}
	return dst
}

// entityWords returns the words of an entity's name, carved from
// g.wordSlab (caller owns g or holds the write lock): most names have a
// word or two, which do not each cost an allocation.
func (g *Graph) entityWords(display string) []string {
	// A name of n bytes has at most n words: appending them to the
	// slab's first n slots never outgrows it.
	if len(g.wordSlab) < len(display) {
		// The rest of the old slab, too short, is no walk's to see.
		was := cap(g.wordSlab)
		g.wordSlab = make([]string, max(256, len(display)))
		g.acct.Note(int(unsafe.Sizeof("")) * (cap(g.wordSlab) - was))
	}
	ws := appendWords(g.wordSlab[:0:len(display)], display)
	if len(ws) == 0 {
		return nil
	}
	g.wordSlab = g.wordSlab[len(ws):]
	return ws[:len(ws):len(ws)]
}

// installEntity adds an entity with the given stored ID, display name and
// identity (norm.Key(display)) to memory and returns its in-memory ID.
// Caller owns g or holds the write lock.
func (g *Graph) installEntity(key uint32, display, norm string) (uint32, error) {
	if other, ok := g.byNorm[norm]; ok {
		return 0, fmt.Errorf("%w: entities %d and %d are both %q", ErrCorrupt, g.ents[other].key, key, norm)
	}
	var id uint32
	if n := len(g.freeEnts); n > 0 {
		id = g.freeEnts[n-1]
		g.freeEnts = g.freeEnts[:n-1]
	} else {
		id = uint32(len(g.ents))
		was := cap(g.ents)
		g.ents = append(g.ents, entity{})
		g.acct.Resized(was, cap(g.ents), int(unsafe.Sizeof(entity{})))
	}
	e := &g.ents[id]
	*e = entity{key: key, display: display, norm: norm, words: g.entityWords(display)}
	g.byNorm[norm] = id
	if len(e.words) > 0 {
		w := e.words[0]
		list := g.first[w]
		was := cap(list)
		i, _ := slices.BinarySearchFunc(list, id, g.cmpMatch)
		list = slices.Insert(list, i, id)
		g.first[w] = list
		if cap(list) != was {
			g.acct.resizeList(was, cap(list))
		}
	}
	return id, nil
}

// cmpMatch orders candidates for one first word: longest name first, then
// stored ID (stable across reloads).
func (g *Graph) cmpMatch(a, b uint32) int {
	return cmp.Or(cmp.Compare(len(g.ents[b].words), len(g.ents[a].words)), cmp.Compare(g.ents[a].key, g.ents[b].key))
}

func (g *Graph) dropEntity(id uint32) {
	e := &g.ents[id]
	g.acct.dropped(e)
	delete(g.byNorm, e.norm)
	if len(e.words) > 0 {
		w := e.words[0]
		list := g.first[w]
		if i, ok := slices.BinarySearchFunc(list, id, g.cmpMatch); ok {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(g.first, w)
			g.acct.resizeList(cap(list), 0)
		} else {
			g.first[w] = list
		}
	}
	// The words' slots stay in their slab until compactSlabs: emptied, so
	// that they do not keep the words (and the name) alive.
	clear(e.words)
	*e = entity{}
	was := cap(g.freeEnts)
	g.freeEnts = append(g.freeEnts, id)
	g.acct.Resized(was, cap(g.freeEnts), 4)
}

// installEdge links e in memory. Caller owns g or holds the write lock.
func (g *Graph) installEdge(e edge) {
	e.lab = g.internLabel(e.label)
	// The interned string, not the caller's: one copy per label, however
	// many edges carry it.
	e.label = g.labels[e.lab]
	var slot uint32
	if n := len(g.free); n > 0 {
		slot = g.free[n-1]
		g.free = g.free[:n-1]
		g.edges[slot] = e
	} else {
		slot = uint32(len(g.edges))
		was := cap(g.edges)
		g.edges = append(g.edges, e)
		g.acct.Resized(was, cap(g.edges), int(unsafe.Sizeof(edge{})))
	}
	g.byDoc[e.doc] = slot
	g.link(e.from, slot)
	if e.to != e.from {
		g.link(e.to, slot)
	}
}

func (g *Graph) link(id, slot uint32) {
	g.markDirty(id)
	ent := &g.ents[id]
	ent.refs++
	if ent.adj == nil {
		if len(g.adjSlab) == 0 {
			g.adjSlab = make([]uint32, 256)
			g.acct.Note(4 * len(g.adjSlab))
		}
		ent.adj, g.adjSlab = append(g.adjSlab[:0:1], slot), g.adjSlab[1:]
		return
	}
	was := ent.adj
	i, _ := slices.BinarySearchFunc(ent.adj, g.edges[slot].doc, func(s, doc uint32) int { return cmp.Compare(g.edges[s].doc, doc) })
	ent.adj = slices.Insert(ent.adj, i, slot)
	if cap(ent.adj) != cap(was) {
		g.acct.Note(adjBytes(cap(ent.adj)) - g.acct.adjOwn(was))
	}
}

// unlink removes edge slot from entity id and reports whether the entity
// has no edges left.
func (g *Graph) unlink(id, slot uint32) bool {
	g.markDirty(id)
	ent := &g.ents[id]
	if i, ok := slices.BinarySearchFunc(ent.adj, g.edges[slot].doc, func(s, doc uint32) int { return cmp.Compare(g.edges[s].doc, doc) }); ok {
		ent.adj = slices.Delete(ent.adj, i, i+1)
	}
	ent.refs--
	return ent.refs == 0
}

// entityID returns the ID for name, whose identity is norm, creating the
// entity (and writing it to w) if it is new.
func (g *Graph) entityID(w kv.Writer, name, norm string) (uint32, error) {
	if id, ok := g.byNorm[norm]; ok {
		return id, nil
	}
	if g.nextKey > math.MaxUint32 {
		return 0, ErrTooManyEntities
	}
	key := uint32(g.nextKey)
	display, err := g.setEntity(w, key, name)
	if err != nil {
		return 0, err
	}
	// norm.Key(norm.Clean(name)) == norm.Key(name): Clean is idempotent.
	id, err := g.installEntity(key, display, norm)
	if err != nil {
		return 0, err
	}
	g.acct.installed(&g.ents[id])
	g.nextKey++
	return id, nil
}

// edgeNames returns an edge's label and its entities' identities, or
// ErrEmptyName.
func edgeNames(doc uint32, from, label, to string) (string, string, string, error) {
	label = norm.Clean(label)
	fromNorm, toNorm := norm.Key(from), norm.Key(to)
	if fromNorm == "" || toNorm == "" || label == "" {
		return "", "", "", fmt.Errorf("%w: doc %d: %q -%q-> %q", ErrEmptyName, doc, from, label, to)
	}
	return label, fromNorm, toNorm, nil
}

// setEntity writes the record of the entity stored as key, named name,
// and returns its display form.
func (g *Graph) setEntity(w kv.Writer, key uint32, name string) (string, error) {
	display := norm.Clean(name)
	if err := g.set(w, tagEntity, key, func(v []byte) []byte { return append(v, display...) }); err != nil {
		return "", fmt.Errorf("graph: write entity: %w", err)
	}
	return display, nil
}

// setEdge writes doc's edge record: from and to are entities' stored keys.
func (g *Graph) setEdge(w kv.Writer, doc, from, to uint32, label string) error {
	err := g.set(w, tagEdge, doc, func(v []byte) []byte {
		return append(kv.AppendUint32(kv.AppendUint32(v, from), to), label...)
	})
	if err != nil {
		return fmt.Errorf("graph: write edge of doc %d: %w", doc, err)
	}
	return nil
}

// AddEdge records the edge of fact version doc: from -label-> to. Entity
// names are matched by identity (case-insensitive), the first display form
// being kept. Adding an edge for a doc that already has one replaces it.
func (g *Graph) AddEdge(w kv.Writer, doc uint32, from, label, to string) error {
	if w == nil {
		return ErrNilWriter
	}
	label, fromNorm, toNorm, err := edgeNames(doc, from, label, to)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.index()
	defer g.settle()
	if slot, ok := g.byDoc[doc]; ok {
		old := g.edges[slot]
		if old.label == label && g.ents[old.from].norm == fromNorm && g.ents[old.to].norm == toNorm {
			return nil
		}
		if err := g.removeEdge(w, doc); err != nil {
			return err
		}
	}
	fid, err := g.entityID(w, from, fromNorm)
	if err != nil {
		return err
	}
	tid, err := g.entityID(w, to, toNorm)
	if err == nil {
		err = g.setEdge(w, doc, g.ents[fid].key, g.ents[tid].key, label)
	}
	if err != nil {
		// Keep invariant 1 in memory: drop entities this call created.
		for _, id := range []uint32{fid, tid} {
			if int(id) < len(g.ents) && g.ents[id].norm != "" && g.ents[id].refs == 0 {
				g.dropEntity(id)
			}
		}
		return err
	}
	g.installEdge(edge{doc: doc, from: fid, to: tid, label: label, live: true})
	g.patched()
	return nil
}

// RemoveEdge removes the edge of doc, and any entity left without edges.
// Removing a doc that has no edge is not an error.
func (g *Graph) RemoveEdge(w kv.Writer, doc uint32) error {
	if w == nil {
		return ErrNilWriter
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.index()
	defer g.settle()
	if err := g.removeEdge(w, doc); err != nil {
		return err
	}
	g.patched()
	return nil
}

func (g *Graph) removeEdge(w kv.Writer, doc uint32) error {
	slot, ok := g.byDoc[doc]
	if !ok {
		return nil
	}
	e := g.edges[slot]
	if err := g.del(w, tagEdge, doc); err != nil {
		return fmt.Errorf("graph: delete edge of doc %d: %w", doc, err)
	}
	ends := []uint32{e.from}
	if e.to != e.from {
		ends = append(ends, e.to)
	}
	for _, id := range ends {
		if g.ents[id].refs == 1 {
			if err := g.del(w, tagEntity, g.ents[id].key); err != nil {
				return fmt.Errorf("graph: delete entity %d: %w", g.ents[id].key, err)
			}
		}
	}
	for _, id := range ends {
		if g.unlink(id, slot) {
			g.dropEntity(id)
		}
	}
	delete(g.byDoc, doc)
	g.edges[slot] = edge{}
	was := cap(g.free)
	g.free = append(g.free, slot)
	g.acct.Resized(was, cap(g.free), 4)
	return nil
}

// Len returns the number of entities and edges.
func (g *Graph) Len() (entities, edges int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.img != nil { // no free entity IDs or edge slots
		return len(g.ents), len(g.edges)
	}
	return len(g.byNorm), len(g.byDoc)
}

// AddSubjectDocs adds to out the documents of the edges whose source
// entity is one of names (matched by identity, as AddEdge matches): the
// fact versions whose subject that entity is. Unknown names add nothing.
func (g *Graph) AddSubjectDocs(out *roaring.Bitmap, names ...string) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var buf [256]uint32
	n := 0
	for _, name := range names {
		id, ok := g.lookup(norm.Key(name))
		if !ok {
			continue
		}
		for _, slot := range g.ents[id].adj {
			if e := &g.edges[slot]; e.from == id {
				buf[n] = e.doc
				if n++; n == len(buf) {
					out.AddMany(buf[:n])
					n = 0
				}
			}
		}
	}
	out.AddMany(buf[:n])
}

// Entities returns the display names of known entities that occur in text,
// in order of first occurrence, each once. Matching is on word boundaries,
// case-insensitive, longest name first at each position, without overlaps:
// with entities "Alex", "retriever" and "golden retriever", the text "my
// brother Alex has a Golden Retriever" gives [Alex golden retriever].
func (g *Graph) Entities(text string) []string {
	ws := words(text)
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []string
	seen := map[uint32]bool{}
	for i := 0; i < len(ws); {
		n := 1
		// The list is ordered longest name first: skip the names longer
		// than the rest of the text (a first word shared by many long
		// names, "coffee" of "coffee 123", would otherwise cost a
		// comparison each).
		list := g.firstList(ws[i])
		rest := len(ws) - i
		j, _ := slices.BinarySearchFunc(list, rest, func(id uint32, rest int) int { return cmp.Compare(rest, len(g.ents[id].words)) })
		for _, id := range list[j:] {
			ew := g.ents[id].words
			if len(ew) <= len(ws)-i && slices.Equal(ew, ws[i:i+len(ew)]) {
				if !seen[id] {
					seen[id] = true
					out = append(out, g.ents[id].display)
				}
				n = len(ew)
				break
			}
		}
		i += n
	}
	return out
}

// Hop is one walked edge. From and To are in walk order; the fact itself
// reads From -Label-> To, or To -Label-> From when Inverse is set (the edge
// was walked against its direction).
type Hop struct {
	From, Label, To string
	Doc             uint32
	Inverse         bool
}

// Path is the walk from a seed entity to one fact: the last hop's Doc.
type Path struct {
	Hops []Hop
}

// Doc returns the fact version the path ends with.
func (p Path) Doc() uint32 {
	if len(p.Hops) == 0 {
		return 0
	}
	return p.Hops[len(p.Hops)-1].Doc
}

// String renders the path: "user → brother → Alex → has_pet → golden
// retriever", with ← arrows around a hop walked against its direction
// ("Alex ← brother ← user").
func (p Path) String() string {
	if len(p.Hops) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.Hops[0].From)
	for _, h := range p.Hops {
		arrow := " → "
		if h.Inverse {
			arrow = " ← "
		}
		b.WriteString(arrow)
		b.WriteString(h.Label)
		b.WriteString(arrow)
		b.WriteString(h.To)
	}
	return b.String()
}

// Check verifies the graph against what r holds under its prefix and its
// own invariants: dictionary and edges equal in store and memory, reference
// counts, adjacency and the match index. It returns the errors.Join of
// every finding, each wrapping ErrInconsistent or ErrCorrupt.
func (g *Graph) Check(ctx context.Context, r kv.Reader) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	st, err := g.scan(ctx, r, len(g.edges))
	if err != nil {
		return fmt.Errorf("graph: check: %w", err)
	}
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInconsistent}, args...)...))
		}
	}
	stEnts := make(map[uint32]string, len(st.ents))
	for _, se := range st.ents {
		display, nk, err := st.entityName(se)
		if err != nil {
			return fmt.Errorf("graph: check: %w", err)
		}
		stEnts[se.key] = display
		if id, ok := g.lookup(nk); !ok || g.ents[id].key != se.key || g.ents[id].display != display {
			bad("stored entity %d %q not in memory", se.key, display)
		}
	}
	refs := make([]int, len(g.ents))
	stEdges := map[uint32]edge{}
	for _, e := range st.edges {
		stEdges[e.doc] = e
	}
	byDoc := g.docs()
	for doc, slot := range byDoc {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := g.edges[slot]
		if e.doc != doc || !e.live {
			bad("doc %d maps to slot %d holding doc %d", doc, slot, e.doc)
			continue
		}
		if s, ok := stEdges[doc]; !ok || int(e.from) >= len(g.ents) || int(e.to) >= len(g.ents) ||
			s != (edge{doc: doc, from: g.ents[e.from].key, to: g.ents[e.to].key, label: e.label, live: true}) {
			bad("edge of doc %d differs between store (%v) and memory", doc, ok)
		}
		for _, id := range []uint32{e.from, e.to} {
			if int(id) >= len(g.ents) || g.ents[id].norm == "" {
				bad("edge of doc %d names missing entity %d", doc, id)
				continue
			}
			if _, ok := slices.BinarySearchFunc(g.ents[id].adj, doc, func(s, d uint32) int { return cmp.Compare(g.edges[s].doc, d) }); !ok {
				bad("edge of doc %d missing from the adjacency of entity %d", doc, id)
			}
		}
		if int(e.from) < len(refs) && int(e.to) < len(refs) {
			refs[e.from]++
			if e.to != e.from {
				refs[e.to]++
			}
		}
	}
	if len(stEdges) != len(byDoc) {
		bad("store holds %d edges, memory %d", len(stEdges), len(byDoc))
	}
	live := 0
	for id, ent := range g.ents {
		if ent.norm == "" {
			continue
		}
		live++
		if d, ok := stEnts[ent.key]; !ok || d != ent.display {
			bad("entity %d %q not stored", ent.key, ent.display)
		}
		if ent.refs != refs[id] || ent.refs != len(ent.adj) || ent.refs == 0 {
			bad("entity %d %q: refs %d, adjacency %d, edges %d", id, ent.display, ent.refs, len(ent.adj), refs[id])
		}
		if other, _ := g.lookup(ent.norm); other != uint32(id) {
			bad("entity %d %q not found by identity", id, ent.display)
		}
		if len(ent.words) > 0 && !slices.Contains(g.firstList(ent.words[0]), uint32(id)) {
			bad("entity %d %q missing from the match index", id, ent.display)
		}
	}
	g.checkCSR(bad)
	if byNorm := len(g.normMap()); live != byNorm || live != len(st.ents) {
		bad("%d live entities, %d by identity, %d stored", live, byNorm, len(st.ents))
	}
	return errors.Join(errs...)
}
