package graph

import (
	"sync"
	"unsafe"

	"github.com/memor-db/memor/internal/memsize"
)

// Bytes returns the heap memory the graph holds, in bytes: the entities
// with their names, words and adjacency lists, the edges, the maps by
// identity, first word, doc and label and their match lists, the free
// lists and slabs, the compressed adjacency walks read, the write buffer,
// and, in a graph loaded by [LoadImage], the image its strings lie in and
// the index that stands for the maps until the first write. It leaves out
// the walks' pooled state, which the runtime drops when idle.
//
// Allocations are counted at their size classes, and each map at the room
// its most entries needed (Go's maps never shrink). The count is a walk
// over the graph, made at every load, CSR rebuild and first write after an
// image load, plus each write's change since; once those changes add up to
// a quarter of the walked size the graph is walked again, so the count
// stays within about a fifth of the truth. It is as of the last write to
// end, and Bytes never waits: it is an atomic load, safe to call
// concurrently with anything, and costs the same at any size.
func (g *Graph) Bytes() int { return g.acct.Bytes() }

// account is what Bytes reports and what keeps it current. Every field
// but held is the write lock's (or the loader's, before the graph is
// returned).
type account struct {
	// The count (measureLocked walks the graph; writes note their
	// changes).
	memsize.Account
	// The maps' rooms: a map keeps the room of its most entries, or of
	// its size hint.
	byNorm, byDoc, first, labelID room
	// image is the image a graph loaded by LoadImage keeps its strings in,
	// counted once, whole (imageBytes): the labels point into it, and
	// labels are never dropped. names, the one string LoadSized copies the
	// entities' names into, is counted whole while a name lies in it and
	// let go once none does.
	image      string
	imageBytes int
	names      string
	// adjArena is the array LoadImage lays every adjacency list out in,
	// counted whole while a list lies in it, and let go once none does.
	adjArena []uint32
	// lists is what the match lists of first hold, kept as they change
	// (a walk of the map would cost more than the rest of the walk).
	lists int
	// deadWords and deadAdj are the slots dropped entities left in the
	// word and adjacency slabs (or an image's arrays), which no walk
	// sees: held until compactSlabs moves the live ones out. liveWords is
	// the words the last walk counted.
	deadWords, deadAdj, liveWords int
}

// The maps' slots (key and value as the runtime lays them out in a group).
const (
	normSlot = int(unsafe.Sizeof(struct {
		k string
		v uint32
	}{}))
	docSlot   = int(unsafe.Sizeof([2]uint32{}))
	firstSlot = int(unsafe.Sizeof(struct {
		k string
		v []uint32
	}{}))
	labelSlot = normSlot
)

// settle brings the count up to date at the end of a write, noting the room
// its maps grew by, and walks the graph if the changes since the last
// walk have drifted too far from it. Caller holds the write lock.
func (g *Graph) settle() {
	a := &g.acct
	a.Note(a.byNorm.fill(len(g.byNorm)) + a.byDoc.fill(len(g.byDoc)) +
		a.first.fill(len(g.first)) + a.labelID.fill(len(g.labelID)))
	if a.deadWords > max(a.liveWords, 256) {
		g.compactSlabs()
		g.measureLocked()
		return
	}
	if a.WalkDue() {
		g.measureLocked()
		return
	}
	a.Publish()
}

// installed notes the strings of entity e, new and written (a load is
// walked whole). Its words' slots are carved from wordSlab, whose rest
// counted them.
func (a *account) installed(e *entity) { a.Note(ownStrings(e)) }

// dropped notes that entity e is being dropped: its strings and an
// adjacency list of its own are freed, while its slab slots become dead.
func (a *account) dropped(e *entity) {
	d := ownStrings(e)
	if e.held != 0 {
		d = int(e.held) - len(e.words)*int(unsafe.Sizeof(""))
	}
	a.deadWords += len(e.words)
	switch {
	case inside(e.adj, a.adjArena): // the arena is counted whole
	case cap(e.adj) == 1:
		a.deadAdj++
	default:
		d += adjBytes(cap(e.adj))
	}
	a.Note(-d)
}

// ownStrings estimates what the strings of entity e, made by a write,
// hold: each rounded up to a word, which is its size class up to 32 bytes
// (most names), a little under it beyond. The next walk counts them
// exactly (entityBytes), and a write is spared the size-class lookups.
func ownStrings(e *entity) int {
	n := roundWord(len(e.display))
	if !within(e.norm, e.display) {
		n += roundWord(len(e.norm))
	}
	for _, w := range e.words {
		if !within(w, e.display) && !within(w, e.norm) {
			n += roundWord(len(w))
		}
	}
	return n
}

func roundWord(n int) int { return (n + 7) &^ 7 }

// compactSlabs moves the live entities' words and one-slot adjacency
// lists into new slabs, so that the old ones, where the dropped entities'
// slots lie, are freed: without it a graph whose entities come and go
// would hold the slots of every entity it ever had. Called once the dead
// slots outnumber the live, it costs a drop O(1) amortised. Caller holds
// the write lock.
func (g *Graph) compactSlabs() {
	g.wordSlab, g.adjSlab = nil, nil
	for i := range g.ents {
		e := &g.ents[i]
		if e.norm == "" {
			continue
		}
		if n := len(e.words); n > 0 {
			if len(g.wordSlab) < n {
				g.wordSlab = make([]string, max(256, n))
			}
			e.words = append(g.wordSlab[:0:n], e.words...)
			g.wordSlab = g.wordSlab[n:]
		}
		if cap(e.adj) == 1 {
			if len(g.adjSlab) == 0 {
				g.adjSlab = make([]uint32, 256)
			}
			e.adj = append(g.adjSlab[:0:1], e.adj...)
			g.adjSlab = g.adjSlab[1:]
		}
	}
	g.acct.deadWords, g.acct.deadAdj = 0, 0
}

// measureLocked counts everything Bytes counts, afresh but for what is
// kept exact as it changes (the entities' cached strings, the match
// lists, the maps' rooms). It is O(entities + labels), a few nanoseconds
// an entity. Caller owns g or holds the write lock.
func (g *Graph) measureLocked() {
	a := &g.acct
	const str = int(unsafe.Sizeof(""))
	c := &g.adj
	n := memsize.Alloc(int(unsafe.Sizeof(*g))) + memsize.Alloc(cap(g.prefix)) + memsize.Alloc(int(unsafe.Sizeof(sync.Pool{}))) +
		memsize.Slice(cap(g.ents), int(unsafe.Sizeof(entity{}))) + memsize.Slice(cap(g.edges), int(unsafe.Sizeof(edge{}))) +
		listBytes(cap(g.free)) + listBytes(cap(g.freeEnts)) + memsize.Alloc(cap(g.buf)) + memsize.Slice(cap(g.labels), str) +
		listBytes(cap(c.off)) + memsize.Slice(cap(c.e), int(unsafe.Sizeof(csrEdge{}))) + memsize.Slice(cap(c.names), str) +
		memsize.Slice(cap(c.dirty), 8)
	// The slabs' rest counts by its length, as the lists and words carved
	// from it are counted by theirs: carving one costs nothing.
	n += 4*cap(g.adjSlab) + str*cap(g.wordSlab)
	a.byNorm.fill(len(g.byNorm))
	a.byDoc.fill(len(g.byDoc))
	a.first.fill(len(g.first))
	a.labelID.fill(len(g.labelID))
	n += a.byNorm.bytes + a.byDoc.bytes + a.first.bytes + a.labelID.bytes
	inNames, inArena := false, false
	a.liveWords = 0
	for i := range g.ents {
		e := &g.ents[i]
		if e.norm == "" { // a free ID
			continue
		}
		n += a.heldBy(e)
		if inside(e.adj, a.adjArena) {
			inArena = true
		} else {
			n += adjBytes(cap(e.adj))
		}
		a.liveWords += len(e.words)
		inNames = inNames || within(e.display, a.names)
	}
	n += a.deadWords*str + a.deadAdj*adjBytes(1)
	if inNames {
		n += memsize.String(len(a.names))
	} else {
		a.names = ""
	}
	if inArena {
		n += listBytes(cap(a.adjArena))
	} else {
		a.adjArena = nil
	}
	n += a.lists
	for _, l := range g.labels {
		n += a.str(l)
	}
	if a.image != "" {
		n += a.imageBytes
	}
	if x := g.img; x != nil {
		n += memsize.Alloc(int(unsafe.Sizeof(*x))) + listBytes(cap(x.byNorm)) + listBytes(cap(x.lists)) + listBytes(cap(x.off))
	}
	a.Walked(n)
}

// heldBy returns entityBytes(e), from e's cache once counted.
func (a *account) heldBy(e *entity) int {
	if e.held == 0 {
		e.held = uint32(a.entityBytes(e))
	}
	return int(e.held)
}

// resizeList notes that a match list of first went from capacity was to
// now (0: made or dropped).
func (a *account) resizeList(was, now int) {
	d := listBytes(now) - listBytes(was)
	a.lists += d
	a.Note(d)
}

// entityBytes is what entity e's strings and words hold (its adjacency
// list is counted apart, as it changes on its own). A norm or word that
// lies in the display (a name already in normal form, a word already in
// lower case) is the display's memory.
func (a *account) entityBytes(e *entity) int {
	if within(e.display, a.image) {
		// So are its identity and words (LoadImage reads them all from
		// it): only the words' slots are the entity's.
		return len(e.words) * int(unsafe.Sizeof(""))
	}
	n := a.str(e.display)
	if !within(e.norm, e.display) {
		n += a.str(e.norm)
	}
	for _, w := range e.words {
		n += int(unsafe.Sizeof(w)) // its header, in a word slab or the image's word array
		if !within(w, e.display) && !within(w, e.norm) {
			n += a.str(w)
		}
	}
	return n
}

// str is what string s holds on its own: nothing if it lies in the image
// or the names string, which are counted whole.
func (a *account) str(s string) int {
	if within(s, a.image) || within(s, a.names) {
		return 0
	}
	return memsize.String(len(s))
}

// within reports whether s's bytes lie in outer's.
func within(s, outer string) bool {
	if s == "" || outer == "" {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.StringData(outer)))
	return p >= lo && p-lo < uintptr(len(outer))
}

// inside reports whether s's array lies in b's.
func inside[T any](s, b []T) bool {
	if cap(s) == 0 || cap(b) == 0 {
		return false
	}
	var t T
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p-lo < uintptr(cap(b))*unsafe.Sizeof(t)
}

// adjOwn is what adjacency list adj holds on its own: nothing if it lies
// in the image's arena, which is counted whole.
func (a *account) adjOwn(adj []uint32) int {
	if inside(adj, a.adjArena) {
		return 0
	}
	return adjBytes(cap(adj))
}

// adjBytes is what an adjacency list of capacity c holds: a list carved
// from adjSlab (capacity 1) its slot, one grown by insertion its
// allocation. An image's lists lie in one arena, counted whole.
func adjBytes(c int) int { return memsize.Slice(c, 4) }

// listBytes is what a []uint32 of capacity c holds.
func listBytes(c int) int { return memsize.Slice(c, 4) }

// room is the memory of one of the graph's maps. Go's maps never shrink:
// a map holds the room its most entries needed, or its size hint's.
type room struct {
	slot, hint, peak int
	bytes            int // memsize.MapSized(hint, peak, slot)
	// upTo is the most entries bytes has room for (the end of its step):
	// below it, a new entry costs no more than a comparison.
	upTo int
}

// made records that the map was made with size hint hint, of slots of
// slot bytes.
func (r *room) made(hint, slot int) {
	*r = room{slot: slot, hint: hint, peak: -1, upTo: -1}
	r.fill(0)
}

// fill records that the map holds n entries and returns the bytes its
// room grew by. A map not made (nil, or not yet recorded) takes none.
func (r *room) fill(n int) int {
	if n <= r.upTo || r.slot == 0 { // the common case, inlined
		r.peak = max(r.peak, n)
		return 0
	}
	return r.grow(n)
}

// grow is fill past the end of the room's step.
func (r *room) grow(n int) int {
	was := r.bytes
	r.peak = n
	r.bytes = r.size(n)
	// The end of the step: doubling past it, then halving back.
	lo, hi := n, n+1
	for r.size(hi) == r.bytes {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; r.size(mid) == r.bytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	r.upTo = lo
	return r.bytes - was
}

func (r *room) size(n int) int { return memsize.MapSized(r.hint, n, r.slot) }
