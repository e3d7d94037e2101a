package hnsw

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/memor-db/memor/internal/memsize"
)

// A vector whose persisted record is sparse (fewer than dim/2 non-zero
// halves, see sparse.go: a hashing embedder's vector of a short text) is
// held sparse in memory too, with a graph or without: its non-zero
// components' indexes and values, at 6 bytes each instead of 4·dim bytes
// for the whole vector. (With a graph each vector also has its dim int8
// codes, which the walk reads; the float32 values are read only to score
// the final candidates exactly.) For the default embedder that is about 180 bytes
// instead of 1.5 KB a vector: loading a user no longer writes 1.5 KB of
// fresh memory per document (that was two fifths of a first query's
// allocations, and the page faults and collections they bring), more users
// fit the index cache, and an exact scan reads a few dozen components per
// vector instead of 384. A dense record's vector stays in the slab.
//
// Which form a vector takes is decided from its values alone (see place),
// so every path that holds a vector (Add, Load, a replace, a store of
// older dense records) holds it the same way and scores it with the same
// arithmetic: a reloaded index answers exactly as the one it was written
// from. The values are the record's decoded values, the same bits the
// dense form holds. A sparse vector's score sums its products in index
// order, where the dense kernel sums in SIMD lanes: the two differ in
// the last bits, as the kernel already does between platforms.

// vecRef is where a slot's vector is held: the entries
// at..at+n of sidx and sval, or, when n is denseRef, the slab's record at.
type vecRef struct{ at, n uint32 }

const denseRef = ^uint32(0)

// listVecs is the vectors' memory (the dense ones' records are in the
// index's slab).
type listVecs struct {
	refs []vecRef // slot → its vector
	sidx []uint16 // sparse entries: component index
	sval []float32
	// dead counts the sparse entries no slot refers to any more (a
	// deleted or replaced vector's), reclaimed by compact; dfree lists
	// the slab records no slot refers to, reused by the next dense one.
	dead  int
	dfree []uint32
	// image is the image sidx and sval were loaded in place from (nil:
	// copied, or none): while either points into it, all of it stays
	// alive, and bytes counts it whole.
	image []byte
}

// sparseDot is q·v for v held sparse. The products are rounded to
// float32 one by one (the conversion forbids fusing them into the sum),
// so the score is the same on every platform.
func sparseDot(q []float32, idx []uint16, val []float32) float32 {
	var s float32
	for i, j := range idx {
		s += float32(q[j] * val[i])
	}
	return s
}

// listDot is q·(slot s's vector), as it is held.
func (ix *Index) listDot(q []float32, s uint32) float32 {
	r := ix.list.refs[s]
	if r.n == denseRef {
		return dot(q, ix.vecs.at(r.at))
	}
	return sparseDot(q, ix.list.sidx[r.at:r.at+r.n], ix.list.sval[r.at:r.at+r.n])
}

// vecInto returns slot s's vector: a view of the slab when it is held
// dense, else written into buf (of length dim).
func (ix *Index) vecInto(s uint32, buf []float32) []float32 {
	r := ix.list.refs[s]
	if r.n == denseRef {
		return ix.vecs.at(r.at)
	}
	clear(buf)
	for i, j := range ix.list.sidx[r.at : r.at+r.n] {
		buf[j] = ix.list.sval[r.at+uint32(i)]
	}
	return buf
}

// release gives up what slot s's vector holds (the slot is freed or
// about to be overwritten).
func (l *listVecs) release(s uint32) {
	r := l.refs[s]
	if r.n == denseRef {
		l.dfree = append(l.dfree, r.at)
	} else {
		l.dead += int(r.n)
	}
	l.refs[s] = vecRef{}
}

// place sets slot s's vector (released, or new) to v, the values its
// record decodes to: sparse when fewer than half of them are non-zero
// (as bits: a -0 is kept, as the sparse record keeps it), else in the
// slab. The choice is made from the values, not from the record's
// encoding, so that a vector persisted dense before sparse records
// existed is held, and scored, as the same vector written today.
func (ix *Index) place(s uint32, v []float32) {
	l := &ix.list
	for len(l.refs) <= int(s) {
		l.refs = append(l.refs, vecRef{})
	}
	nnz := 0
	for _, x := range v {
		if math.Float32bits(x) != 0 {
			nnz++
		}
	}
	if 2*nnz >= len(v) {
		var at uint32
		if n := len(l.dfree); n > 0 {
			at = l.dfree[n-1]
			l.dfree = l.dfree[:n-1]
		} else {
			at = uint32(ix.vecs.n)
			ix.vecs.add()
		}
		copy(ix.vecs.at(at), v)
		l.refs[s] = vecRef{at, denseRef}
		return
	}
	if l.dead > len(l.sidx)/2 && l.dead > 1024 {
		l.compact()
	}
	at := uint32(len(l.sidx))
	for i, x := range v {
		if math.Float32bits(x) != 0 {
			l.sidx = append(l.sidx, uint16(i))
			l.sval = append(l.sval, x)
		}
	}
	l.refs[s] = vecRef{at, uint32(len(l.sidx)) - at}
}

// appendSparse appends the non-zero values of sparse record b of a
// vector of dim to idx and val, reporting false (and appending nothing)
// for a record decodeSparse refuses. The values are those decodeSparse
// writes (an entry can decode to zero: a subnormal half times a tiny
// scale), so the vector is held as place would hold its decoding.
func appendSparse(idx []uint16, val []float32, b []byte, dim int) ([]uint16, []float32, bool) {
	scale, entries, ok := sparseHeader(b, dim)
	if !ok {
		return idx, val, false
	}
	n0, next := len(idx), 0
	for ; len(entries) > 0; entries = entries[sparseEntry:] {
		i := int(binary.LittleEndian.Uint16(entries))
		h := binary.LittleEndian.Uint16(entries[2:])
		if i < next || i >= dim || h == 0 {
			return idx[:n0], val[:n0], false
		}
		if x := fromHalf(h) * scale; math.Float32bits(x) != 0 {
			idx = append(idx, uint16(i))
			val = append(val, x)
		}
		next = i + 1
	}
	return idx, val, true
}

// compact drops the entries no slot refers to, keeping the slots' order.
func (l *listVecs) compact() {
	idx := make([]uint16, 0, len(l.sidx)-l.dead)
	val := make([]float32, 0, cap(idx))
	for s, r := range l.refs {
		if r.n == denseRef || r.n == 0 {
			continue
		}
		at := uint32(len(idx))
		idx = append(idx, l.sidx[r.at:r.at+r.n]...)
		val = append(val, l.sval[r.at:r.at+r.n]...)
		l.refs[s].at = at
	}
	l.sidx, l.sval, l.dead = idx, val, 0
}

// bytes is the memory the sparse vectors and the references hold (the
// slab's records are counted with the slab), and the image's while
// something lies in it: it lets go of the image once neither the entries
// point into it nor (held) anything else does (called by writers, which
// alone touch image).
func (l *listVecs) bytes(held bool) int {
	n := 8*cap(l.refs) + 4*cap(l.dfree)
	inIdx, inVal := inside(l.sidx, l.image), inside(l.sval, l.image)
	if inIdx || inVal || held {
		n += memsize.Alloc(cap(l.image))
	} else {
		l.image = nil
	}
	if !inIdx {
		n += 2 * cap(l.sidx)
	}
	if !inVal {
		n += 4 * cap(l.sval)
	}
	return n
}

// inside reports whether s's array lies in b's.
func inside[T any](s []T, b []byte) bool {
	if cap(s) == 0 || cap(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p < lo+uintptr(cap(b))
}

// Bytes estimates the memory the index holds: its vectors as held (see
// listVecs), their codes and neighbour lists, the slots' IDs and levels,
// and the ID map (about 24 bytes an entry). It is as of the last Add,
// Delete, Reserve, Flush or Load to end, and never waits for one that is
// running.
func (ix *Index) Bytes() int { return int(ix.held.Load()) }

// noteBytes refreshes what Bytes reports (a writer, holding wmu). It
// costs the same at any size: the upper layers' lists are estimated from
// the level distribution, a 1/M share of the nodes reaching each next
// layer.
func (ix *Index) noteBytes() {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	// What lies in an image is counted with it (list.bytes).
	img := ix.list.image
	n := ix.list.bytes(ix.inImage) + 5*cap(ix.ids) + 24*len(ix.slotOf) + 8*len(ix.scales) +
		ix.vecs.bytesOutside(img) + ix.codes.bytesOutside(img)
	if !inside(ix.links0, img) {
		n += 4 * cap(ix.links0)
	}
	if ix.graph && ix.m > 1 {
		n += 24 * len(ix.upper)
		if !ix.upperInImage() {
			n += len(ix.upper) * 4 * (ix.m + 1) / (ix.m - 1)
		}
	}
	ix.held.Store(int64(n))
}

// upperInImage reports whether the upper layers' lists lie in the image
// (all do, or none: LoadImage lays them out in one array).
func (ix *Index) upperInImage() bool {
	for _, u := range ix.upper {
		if u != nil {
			return inside(u, ix.list.image)
		}
	}
	return false
}

// own copies out of the image what LoadImage left in it and a write may
// change in place: the dense vectors (a slot reused), the codes and the
// neighbour lists. The image is its caller's and never written. Writers
// call it first, holding both locks.
func (ix *Index) own() {
	if !ix.inImage {
		return
	}
	ix.inImage = false
	img := ix.list.image
	if inside(ix.links0, img) {
		ix.links0 = slices.Clone(ix.links0)
	}
	if ix.upperInImage() {
		total := 0
		for _, u := range ix.upper {
			total += len(u)
		}
		flat := make([]uint32, 0, total)
		for s, u := range ix.upper {
			if u != nil {
				k := len(flat)
				flat = append(flat, u...)
				ix.upper[s] = flat[k:len(flat):len(flat)]
			}
		}
	}
	ix.vecs.own(img)
	ix.codes.own(img)
}
