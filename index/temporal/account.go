package temporal

import (
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/memsize"
)

// The account of the memory an index holds, for the engine's index
// cache, which keeps its users within a budget by it and reads it at
// every use of a user: so Bytes is one atomic load, never the lock.
//
// A walk (measureLocked) sums what the index holds from the lengths it
// knows, without visiting a doc: a page count is kept, and a snapshot
// structure's size is taken once, when it is built (it is immutable).
// Every load path and every rebuild ends with one. Between walks a
// writer adds what it changed: exactly for the page table, pages, the
// delta and the write buffer (whose capacities it sees change), and by
// estimate for the roaring sets, whose growth is not visible from
// outside (two bytes a member added to an array container, none to a
// bitmap container). When the estimates since the last walk add up to
// more than a quarter of what it measured, the writer walks again: the
// account stays within a fifth of the truth, at an amortised constant
// cost per change.

// What the index's fixed-size allocations take, as the runtime rounds
// them (variables only because memsize.Alloc is a function).
var (
	docPageBytes = memsize.Alloc(int(unsafe.Sizeof(docPage{})))
	indexBytes   = memsize.Alloc(int(unsafe.Sizeof(Index{})))
	baseBytes    = memsize.Alloc(int(unsafe.Sizeof(base{})))
	axisBytes    = memsize.Alloc(int(unsafe.Sizeof(axis{})))
	cachedBytes  = memsize.Alloc(int(unsafe.Sizeof(cachedSet{})))
)

const (
	deltaEntryBytes = int(unsafe.Sizeof(deltaEntry{}))
	startEvBytes    = int(unsafe.Sizeof(startEv{}))
	endEvBytes      = int(unsafe.Sizeof(endEv{}))
	// setHeader is what a roaring set of one container spends beside the
	// container's values: the Bitmap, its key, container and
	// copy-on-write slices, and the container's struct (measured on
	// roaring v2.30.0, cloned sets of 1 to 10,000 members; a set over doc
	// IDs below 65,536, a user's, has one container).
	setHeader = 120
	// setMember is the estimated growth of a set by one member: an array
	// container's two bytes (a bitmap container's is none).
	setMember = 2
)

// Bytes returns the heap memory the index holds: its docs' pages and
// page table, the sets of open, indexed and stale docs, the snapshot
// structure (and, for an index loaded by [LoadImage], the image its
// snapshots refer to, while they are its), the delta, the cached
// current set and the write buffer. It counts allocations as the
// runtime rounds them, and is within about a fifth of the truth (the
// tests hold it to a quarter of the heap the index adds). It is as of
// the last write, load or rebuild to end, and never waits for one that
// is running: it is safe to call concurrently with anything.
func (ix *Index) Bytes() int {
	n := int64(ix.acct.Bytes())
	if c := ix.current.Load(); c != nil {
		// Apart from held: Current stores it under the read lock.
		n += int64(c.bytes)
	}
	return int(n)
}

// measureLocked walks the index's account afresh and publishes it.
// Caller holds the write lock (or owns ix).
func (ix *Index) measureLocked() { ix.acct.Walked(ix.measure()) }

// measure sums what the index holds but the cached current set, at a
// cost that does not grow with the docs (the roaring sets' containers
// are one per 65,536 doc IDs). Caller holds mu (or owns ix).
func (ix *Index) measure() int {
	n := indexBytes + memsize.Alloc(cap(ix.prefix)) + memsize.Alloc(cap(ix.buf)) +
		memsize.Slice(cap(ix.pages), 8) + ix.slabBytes + ix.loosePages*docPageBytes +
		setBytes(ix.open) + setBytes(ix.inBase) + setBytes(ix.stale) +
		memsize.Slice(cap(ix.delta), deltaEntryBytes)
	if ix.base != nil {
		n += ix.base.bytes
	}
	return n
}

// publishLocked makes the account of a write that ends visible to
// Bytes, first walking again if the estimates since the last walk have
// grown past a quarter of it. Caller holds the write lock.
func (ix *Index) publishLocked() {
	if ix.acct.WalkDue() {
		ix.measureLocked()
		return
	}
	ix.acct.Publish()
}

// setBytes is what the roaring set s holds, its values as roaring counts
// them (an array container's members, not its capacity).
func setBytes(s *roaring.Bitmap) int { return setHeader + int(s.GetSizeInBytes()) }

// newBase returns the snapshot structure of two axes built from events
// (or, with image, from an image of image bytes whose snapshots refer to
// it), with its account taken.
func newBase(tx, valid *axis, image int) *base {
	b := &base{tx: tx, valid: valid}
	b.bytes = baseBytes + tx.bytes(image != 0) + valid.bytes(image != 0)
	if len(tx.snaps)+len(valid.snaps) > 0 {
		// The snapshots' containers are views of the image: it lives as
		// long as any does.
		b.bytes += memsize.Alloc(image)
	}
	return b
}

// bytes is what the axis holds; with inImage, its snapshots' values are
// in an image, counted apart.
func (a *axis) bytes(inImage bool) int {
	n := axisBytes + memsize.Slice(cap(a.starts), startEvBytes) + memsize.Slice(cap(a.ends), endEvBytes) +
		memsize.Slice(cap(a.snapT), 8) + memsize.Slice(cap(a.snapS), 8) + memsize.Slice(cap(a.snapE), 8) +
		memsize.Slice(cap(a.snaps), 8)
	for _, s := range a.snaps {
		if inImage {
			n += setHeader
		} else {
			n += setBytes(s)
		}
	}
	return n
}
