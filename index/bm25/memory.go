package bm25

import (
	"math/bits"
	"sort"
	"sync"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/internal/memsize"
)

// The engine's index cache keeps users' indexes within a memory budget by
// each index's own account of what it holds, and reads that account at
// every use of a user: the account is a counter, kept current as the index
// changes, not a walk of the index.
//
// A walk (measureLocked) counts what the index holds from its structures:
// every allocation rounded to the runtime's size class, the dictionary by
// the runtime's swiss-table costs, the roaring bitmaps by their containers.
// It runs at the end of every load and whenever the index is rebuilt. In
// between, each change adds an estimate of what it allocated or freed
// (acct.Note); once those estimates add up to a quarter of the walked
// size, the next change walks again (memsize.Account). Walks are
// O(terms + documents), so a quarter of growth between them keeps their
// cost O(1) per change amortised, and the account within about a fifth
// of the truth.

// account is what Bytes reports (a memsize.Account, whose writer is
// whoever holds the index's write lock) and the fixed part of it.
type account struct {
	memsize.Account
	// shape is what the O(1) part of the account (fixedBytes) was last
	// computed from, and fixed its value: a change that leaves the shape
	// alone (most do) costs a comparison.
	shape fixedShape
	fixed int64
}

// Sizes of the index's own structures (an allocation of one is rounded up
// to its size class).
const (
	termSize      = int(unsafe.Sizeof(term{}))
	termRefSize   = int(unsafe.Sizeof(termRef{}))
	boundSize     = int(unsafe.Sizeof(blockBound{}))
	lazyTermSize  = int(unsafe.Sizeof(lazyTerm{}))
	lazyTermsSize = int(unsafe.Sizeof(lazyTerms{}))
	indexSize     = int(unsafe.Sizeof(Index{}))
	docPageSize   = int(unsafe.Sizeof(docPage{}))
	// idsSlot is a dictionary entry in the map's table: the string
	// header and the uint32 ID, aligned to 8.
	idsSlot = int(unsafe.Sizeof(struct {
		k string
		v uint32
	}{}))
)

// Roaring's structures (github.com/RoaringBitmap/roaring/v2): a Bitmap is
// a roaringArray of three slices (keys []uint16, containers []container,
// needCopyOnWrite []bool) and a bool; an array container a *struct{
// content []uint16 }, a bitmap container a *struct{ cardinality int;
// bitmap []uint64 } of 8 KiB, a run container a *struct{ iv []interval16 }.
const (
	roaringBitmapSize = 80
	arrayHeaderSize   = 24
	bitmapHeaderSize  = 32
	bitmapWordsSize   = 8192
	runHeaderSize     = 24
)

// oneContainerBytes is a posting's bitmap of one array container, without
// its values: what a posting's second document adds besides the values
// (the bitmap, one key, one container interface, one flag, the container).
var oneContainerBytes = sync.OnceValue(func() int {
	return memsize.Alloc(roaringBitmapSize) + sliceGrown(1, grownU16) +
		sliceGrown(1, grownIface) + sliceGrown(1, grownBool) + memsize.Alloc(arrayHeaderSize)
})

// grown lists the capacities a slice passes through when appended to one
// element at a time from nil, as roaring grows its containers' arrays
// and its key lists.
type grown struct {
	elem int
	caps []int
}

var (
	grownU16   = sync.OnceValue(func() grown { return grownCaps(2, 4096) })
	grownIface = sync.OnceValue(func() grown { return grownCaps(16, 4096) })
	grownBool  = sync.OnceValue(func() grown { return grownCaps(1, 4096) })
)

// grownCaps follows the runtime's growth rule (runtime/slice.go,
// nextslicecap and roundupsize): double below 256 elements, else grow by
// a quarter and 192, and round the allocation up to its size class. (A
// slice measured by appending in a test of this package would not do:
// the compiler gives a slice that does not escape a buffer on the stack.)
func grownCaps(elem, limit int) grown {
	g := grown{elem: elem}
	for c := 0; c < limit; {
		next := 2 * c
		switch {
		case c == 0:
			next = 1
		case c >= 256:
			next = c + (c+3*256)/4
		}
		c = max(memsize.Alloc(next*elem), 8) / elem
		g.caps = append(g.caps, c)
	}
	return g
}

// sliceGrown is what a slice of n elements grown by appending takes: at
// the capacity g lists or, past the largest, an eighth more than n (the
// runtime grows large slices by a quarter).
func sliceGrown(n int, g func() grown) int {
	if n <= 0 {
		return 0
	}
	gs := g()
	if i := sort.SearchInts(gs.caps, n); i < len(gs.caps) {
		return memsize.Slice(gs.caps[i], gs.elem)
	}
	return memsize.Slice(n+n/8, gs.elem)
}

// bitmapBytes is what a roaring bitmap holds. An array container's
// values are counted at the capacity appending them reaches, taking the
// containers' mean cardinality (a posting has one container for each 65,536
// document IDs it spans, most have one).
func bitmapBytes(b *roaring.Bitmap) int {
	st := b.Stats()
	nc := int(st.Containers)
	n := memsize.Alloc(roaringBitmapSize) + sliceGrown(nc, grownU16) +
		sliceGrown(nc, grownIface) + sliceGrown(nc, grownBool)
	if a := int(st.ArrayContainers); a > 0 {
		n += a * (memsize.Alloc(arrayHeaderSize) + sliceGrown(int(st.ArrayContainerValues)/a, grownU16))
	}
	n += int(st.BitmapContainers) * (memsize.Alloc(bitmapHeaderSize) + memsize.Alloc(bitmapWordsSize))
	if r := int(st.RunContainers); r > 0 {
		n += r*memsize.Alloc(runHeaderSize) + memsize.Alloc(int(st.RunContainerBytes))
	}
	return n
}

// bytes is what a posting holds: its bitmap, its frequencies (unless
// they are still the one-element slice carved from the index's slab,
// counted with the slab) and its block bounds.
func (p *posting) bytes() int {
	n := postingCapBytes(cap(p.tfs), cap(p.blocks), false)
	if p.docs != nil {
		n += bitmapBytes(p.docs)
	}
	return n
}

// postingCapBytes is what a posting's frequencies of capacity tfs and
// bounds of capacity blocks take, and, if bitmap, its bitmap of one
// container without the values.
func postingCapBytes(tfs, blocks int, bitmap bool) int {
	n := memsize.Slice(blocks, boundSize)
	if tfs > 1 { // a capacity of 1 is a slab piece (newTermLocked)
		n += memsize.Slice(tfs, 4)
	}
	if bitmap {
		n += oneContainerBytes()
	}
	return n
}

// fixedShape is what the part of the account that costs O(1) to compute
// depends on: the capacities of the index's top-level slices, its pages,
// its dictionary's table size, the slabs' chunks and the image.
type fixedShape struct {
	prefix, terms, free, pages int
	pageCount, idsTables       int
	slabs                      int
	lazy                       *lazyTerms
}

func (ix *Index) shapeLocked() fixedShape {
	return fixedShape{
		prefix: cap(ix.prefix), terms: cap(ix.terms), free: cap(ix.free), pages: cap(ix.pages),
		pageCount: ix.pageCount, idsTables: mapTables(ix.idsPeak),
		slabs: ix.refSlab.held + ix.tfSlab.held,
		lazy:  ix.lazy,
	}
}

// mapTables is what a map's cost depends on, of the number of entries n
// it has held: a swiss table's groups double when n outgrows 7/8 of
// their slots (see memsize.Map), so the cost changes only when the least
// power of two of slots holding n does. A new term then costs a few
// instructions, not the map's estimate.
func mapTables(n int) int {
	if n <= 8 { // one group
		return min(n, 1)
	}
	return 1 + bits.Len(uint((n*8+6)/7-1))
}

// fixedBytes is the part of the account that shape determines (with the
// dictionary's size, of which the shape holds the table step). A map does
// not shrink, so the dictionary is counted at the most terms it has held;
// an image and its dictionary are held while some of its postings are not
// decoded.
func (ix *Index) fixedBytes(s fixedShape) int {
	n := memsize.Alloc(indexSize) + memsize.Alloc(s.prefix) +
		memsize.MapSized(ix.idsHint, ix.idsPeak, idsSlot) +
		memsize.Slice(s.terms, termSize) + memsize.Slice(s.free, 4) +
		memsize.Slice(s.pages, 8) + s.pageCount*memsize.Alloc(docPageSize) + s.slabs
	if lt := s.lazy; lt != nil {
		n += memsize.Alloc(lazyTermsSize) + memsize.Slice(cap(lt.terms), lazyTermSize) + memsize.Alloc(cap(lt.img))
	}
	return n
}

// Bytes returns the heap bytes the index holds: its dictionary (map,
// term table and term texts), postings (bitmaps, frequencies and block
// bounds), document pages and term lists, the live-document set, and,
// while an image's postings are not all decoded, the image and its
// dictionary. Allocations are counted at the runtime's size classes. Not
// counted: the scratch buffers searches share across indexes.
//
// The account is as of the last write, load, or search or explanation
// that decoded postings to end, and within about a fifth of the truth:
// changes add estimates, and the index is measured again once they add
// up to a quarter of its last measured size. Bytes never waits for the
// index's lock, so it is safe to call at any time, from any goroutine.
func (ix *Index) Bytes() int { return ix.acct.Bytes() }

// measureLocked sets the account to a walk of the index (ix.mu held, or
// the index not yet shared).
func (ix *Index) measureLocked() {
	n, s, fixed := ix.walkLocked()
	a := &ix.acct
	a.shape, a.fixed = s, int64(fixed)
	a.Walked(n)
}

// walkLocked counts what the index holds, O(terms + documents), and
// returns it with the fixed part and its shape (ix.mu held).
func (ix *Index) walkLocked() (n int, s fixedShape, fixed int) {
	s = ix.shapeLocked()
	fixed = ix.fixedBytes(s)
	n = fixed + bitmapBytes(ix.live)
	for i := range ix.terms {
		t := &ix.terms[i] // a freed entry is zero: it counts nothing
		n += memsize.String(len(t.text)) + t.posting.bytes()
	}
	for _, p := range ix.pages {
		if p == nil {
			continue
		}
		for _, refs := range &p.terms {
			if cap(refs) > slabMaxPiece { // its own allocation, not a slab piece
				n += memsize.Slice(cap(refs), termRefSize)
			}
		}
	}
	return n, s, fixed
}

// settleLocked publishes the account at the end of a change (ix.mu held):
// the changes noted, plus any change of its fixed part, or a new walk once
// the estimates since the last add up to a quarter of it.
func (ix *Index) settleLocked() {
	a := &ix.acct
	if s := ix.shapeLocked(); s != a.shape {
		f := int64(ix.fixedBytes(s))
		a.Note(int(f - a.fixed))
		a.shape, a.fixed = s, f
	}
	if a.WalkDue() {
		ix.measureLocked()
		return
	}
	a.Publish()
}
