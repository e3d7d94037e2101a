package temporal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/memsize"
)

// An image is an index serialised in the form a query reads: the docs'
// intervals, and per axis its spans in sorted order with the stabbing-set
// snapshots, so that [LoadImage] builds without the sort and the sweep of
// a [Load] (which sorts every span's events and replays them through a
// bitmap to cut the snapshots). The engine keeps images in its users'
// index images; the records stay the truth, and an image is rebuilt from
// them.
//
// An image holds what a Load of the index's records would build, whatever
// the index's history: the snapshot structure over every doc held, no
// delta, nothing stale, the latest instants of the docs held (a Load's,
// where an index that deleted docs may keep higher ones). So it depends
// only on the stored state, and LoadImage builds the index Load builds.
//
// Layout (every integer little-endian, fixed width):
//
//	0x01                          image version
//	uint32 p                      pages held
//	p × (uint32 page, uint32 has) ascending, has ≠ 0 (bit i: doc 32·page+i)
//	n × 4 × int64                 the docs' ValidFrom, ValidTo, RecordedAt,
//	                              ExpiredAt in doc order (n: the bits of has)
//
// then per axis, transaction time then valid time:
//
//	uint32 s, s × uint32          the docs of the spans' starts, in (start,
//	                              doc) order; the instants are the docs'
//	uint32 e, e × uint32          the docs of the closed spans' ends, in
//	                              (end, doc) order
//	uint32 m, m × snapshot        the stabbing-set snapshots, ascending:
//	  uint32 i, uint32 j          starts and ends before it (its instant is
//	                              the latest of those events')
//	  uint32 len, len bytes       the set, in roaring's portable format
//
// Spans name docs rather than repeat their instants: an image is some
// 40% smaller, and each span is checked against its doc's interval, which
// the checks need anyway. A 1,000-fact user's image is about 43 KB (the
// records are 37 bytes a doc and the user's key; the snapshots,
// two bytes a doc each, make an image of 100,000 docs 65 bytes a doc).
//
// LoadImage checks the structure whole, cheaply: pages ascending; each
// axis's spans those of the docs' non-empty intervals, each once and in
// strict order; each snapshot's events a prefix of the axis's ending at
// an instant, its set a valid bitmap of held docs of the size those events
// give. A damaged image fails with [ErrCorrupt] and never in a later
// query or write. A snapshot's members are not checked one by one (that
// is the sweep the image saves): a changed member that is another held
// doc is served as it is, and Check finds it.
const imageVersion = 1

// maxSparsePage bounds the page table of a sparse image (mostly empty
// pages) that LoadImage accepts, at 8 MB: the engine's doc IDs are a
// per-user counter, and an image past it (IDs beyond 32M, most of them
// gone) is refused, for a load from the records.
const maxSparsePage = 1 << 20

// imageLE: the image's integers.
var imageLE = binary.LittleEndian

// AppendImage appends the index's image (see [LoadImage]) to dst, under
// the read lock. Indexes holding the same docs with the same intervals
// give the same bytes.
func (ix *Index) AppendImage(dst []byte) []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var tx, valid *axis
	if ix.base != nil && len(ix.delta) == 0 && ix.stale.IsEmpty() {
		tx, valid = ix.base.tx, ix.base.valid
	} else {
		// What the next rebuild would make, built aside: the image is a
		// load's, and the index is not changed under a read lock.
		ev := newEvents(len(ix.delta))
		for _, e := range ix.delta {
			ev.add(e.doc, e.q)
		}
		tx, valid = ix.rebuiltAxes(ev)
	}
	dst = append(dst, imageVersion)
	np := 0
	for _, p := range ix.pages {
		if p != nil && p.has != 0 {
			np++
		}
	}
	dst = imageLE.AppendUint32(dst, uint32(np))
	for pi, p := range ix.pages {
		if p != nil && p.has != 0 {
			dst = imageLE.AppendUint32(imageLE.AppendUint32(dst, uint32(pi)), p.has)
		}
	}
	dst = slices.Grow(dst, 32*ix.n)
	ix.each(func(_ uint32, q quad) bool {
		dst = imageLE.AppendUint64(dst, uint64(q.vf))
		dst = imageLE.AppendUint64(dst, uint64(q.vt))
		dst = imageLE.AppendUint64(dst, uint64(q.ra))
		dst = imageLE.AppendUint64(dst, uint64(q.ea))
		return true
	})
	return valid.appendImage(tx.appendImage(dst))
}

// appendImage appends a's part of an image to dst.
func (a *axis) appendImage(dst []byte) []byte {
	dst = imageLE.AppendUint32(dst, uint32(len(a.starts)))
	for _, e := range a.starts {
		dst = imageLE.AppendUint32(dst, e.doc)
	}
	dst = imageLE.AppendUint32(dst, uint32(len(a.ends)))
	for _, e := range a.ends {
		dst = imageLE.AppendUint32(dst, e.doc)
	}
	dst = imageLE.AppendUint32(dst, uint32(len(a.snaps)))
	for j, s := range a.snaps {
		dst = imageLE.AppendUint32(imageLE.AppendUint32(dst, uint32(a.snapS[j])), uint32(a.snapE[j]))
		at := len(dst)
		buf := bytes.NewBuffer(append(dst, 0, 0, 0, 0))
		_, _ = s.WriteTo(buf) // a bytes.Buffer does not fail
		dst = buf.Bytes()
		imageLE.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst
}

// imageReader cuts an image into its sections; err is its first failure.
type imageReader struct {
	b   []byte
	at  int
	err error
}

func (r *imageReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: image: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

// count reads a uint32 count of elements of size bytes each that the
// rest of the image can hold.
func (r *imageReader) count(what string, size int) int {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.at < 4 {
		r.fail("%s count cut at byte %d", what, r.at)
		return 0
	}
	n := imageLE.Uint32(r.b[r.at:])
	r.at += 4
	if uint64(n) > uint64((len(r.b)-r.at)/size) { // unsigned: int may be 32 bits
		r.fail("%d %s overrun the image at byte %d", n, what, r.at)
		return 0
	}
	return int(n)
}

// take returns the next n elements of size bytes each.
func (r *imageReader) take(what string, n, size int) []byte {
	if r.err != nil {
		return nil
	}
	if n > (len(r.b)-r.at)/size {
		r.fail("%d %s overrun the image at byte %d", n, what, r.at)
		return nil
	}
	out := r.b[r.at : r.at+n*size : r.at+n*size]
	r.at += n * size
	return out
}

// array returns the next elements of size bytes each, after their count.
func (r *imageReader) array(what string, size int) []byte {
	return r.take(what, r.count(what, size), size)
}

// axisImage is an axis's part of an image, cut but not checked.
type axisImage struct {
	starts, ends []byte // uint32 docs
	snaps        []snapImage
}

type snapImage struct {
	s, e uint32
	set  []byte
}

func (r *imageReader) axis() axisImage {
	var a axisImage
	a.starts = r.array("spans", 4)
	a.ends = r.array("span ends", 4)
	m := r.count("snapshots", 12) // each at least its positions and length
	a.snaps = make([]snapImage, 0, m)
	for range m {
		h := r.take("snapshot positions", 2, 4)
		set := r.array("snapshot bytes", 1)
		if r.err != nil {
			break
		}
		a.snaps = append(a.snaps, snapImage{s: imageLE.Uint32(h), e: imageLE.Uint32(h[4:]), set: set})
	}
	return a
}

// LoadImage returns the index b holds (see [Index.AppendImage]), keyed
// under prefix: the index [Load] builds from the records the image was
// made from. b is checked whole, so that a damaged image fails here with
// [ErrCorrupt] and never in a later query; the index keeps references
// into b, which must not be modified while it lives.
func LoadImage(b []byte, prefix []byte) (*Index, error) {
	if len(b) == 0 || b[0] != imageVersion {
		return nil, fmt.Errorf("%w: image version %x", ErrCorrupt, b[:min(len(b), 1)])
	}
	r := &imageReader{b: b, at: 1}
	hdr := r.array("pages", 8)
	np, n, last := len(hdr)/8, 0, -1
	for k := 0; k < np && r.err == nil; k++ {
		pi, has := int(imageLE.Uint32(hdr[8*k:])), imageLE.Uint32(hdr[8*k+4:])
		if pi <= last || pi > math.MaxUint32>>pageShift || has == 0 {
			r.fail("page %d (after %d) holds %032b", pi, last, has)
		}
		n += bits.OnesCount32(has)
		last = pi
	}
	quads := r.take("intervals", n, 32)
	axes := [2]axisImage{r.axis(), r.axis()}
	if r.err == nil && r.at != len(b) {
		r.fail("%d bytes after the end", len(b)-r.at)
	}
	if r.err != nil {
		return nil, r.err
	}
	if last+1 > 2*np+64 { // as dense, below
		// A sparse page table: before it is allocated, every span's doc
		// must be on a page held, so that a damaged page number does not
		// cost a table of gigabytes unchecked. A page whose docs have no
		// span cannot be checked so: past maxSparsePage it is refused.
		if last > maxSparsePage {
			return nil, fmt.Errorf("%w: image: doc IDs up to %d on %d pages", ErrCorrupt, last<<pageShift|pageMask, np)
		}
		for _, a := range axes {
			for _, docs := range [][]byte{a.starts, a.ends} {
				for i := 0; i < len(docs); i += 4 {
					pi := imageLE.Uint32(docs[i:]) >> pageShift
					if !pageHeld(hdr, pi) {
						return nil, fmt.Errorf("%w: image: a span names doc %d, on no page held", ErrCorrupt, imageLE.Uint32(docs[i:]))
					}
				}
			}
		}
	}

	ix := New(prefix)
	ix.pages = make([]*docPage, last+1)
	slab := make([]docPage, np)
	ix.slabBytes = memsize.Slice(np, int(unsafe.Sizeof(docPage{})))
	// The docs held and the open ones, as dense bitmaps (a page's has is
	// half a word) when the pages are: roaring builds its containers from
	// them at once, where adding docs one by one was a sixth of the load.
	dense := last+1 <= 2*np+64
	var held, open []uint64
	var heldDocs, openDocs []uint32
	if dense {
		held, open = make([]uint64, (last+2)/2), make([]uint64, (last+2)/2)
	} else {
		heldDocs, openDocs = make([]uint32, 0, n), make([]uint32, 0, n)
	}
	// Per axis, the spans and closed spans the docs' intervals make.
	var wantS, wantE [2]int
	qi := 0
	for k := range np {
		pi, p := imageLE.Uint32(hdr[8*k:]), &slab[k]
		p.has = imageLE.Uint32(hdr[8*k+4:])
		ix.pages[pi] = p
		if dense {
			held[pi>>1] |= uint64(p.has) << (32 * (pi & 1))
		}
		for h := p.has; h != 0; h &= h - 1 {
			i := uint32(bits.TrailingZeros32(h))
			o := quads[32*qi : 32*qi+32]
			qi++
			q := quad{int64(imageLE.Uint64(o)), int64(imageLE.Uint64(o[8:])), int64(imageLE.Uint64(o[16:])), int64(imageLE.Uint64(o[24:]))}
			p.q[i] = q
			doc := pi<<pageShift | i
			if !dense {
				heldDocs = append(heldDocs, doc)
			}
			// As set does for each record a Load reads.
			if q.vf != openStart {
				ix.maxValid = max(ix.maxValid, q.vf)
			}
			if q.vt != openEnd {
				ix.maxValid = max(ix.maxValid, q.vt)
			}
			if q.ea == openEnd {
				if dense {
					open[doc>>6] |= 1 << (doc & 63)
				} else {
					openDocs = append(openDocs, doc)
				}
			}
			ix.maxRec = max(ix.maxRec, q.ra)
			for v := range 2 {
				if lo, hi := q.span(v == 1); lo < hi {
					wantS[v]++
					if hi != openEnd {
						wantE[v]++
					}
				}
			}
		}
	}
	ix.n, ix.gen = n, uint64(n)
	if dense {
		ix.inBase, ix.open = roaring.FromDense(held, false), roaring.FromDense(open, false)
	} else {
		ix.inBase.AddMany(heldDocs)
		ix.open.AddMany(openDocs)
	}
	tx, err := ix.loadAxis(&axes[0], false, wantS[0], wantE[0])
	if err != nil {
		return nil, err
	}
	valid, err := ix.loadAxis(&axes[1], true, wantS[1], wantE[1])
	if err != nil {
		return nil, err
	}
	ix.base = newBase(tx, valid, cap(b))
	ix.measureLocked()
	return ix, nil
}

// pageHeld reports whether the page headers hdr (ascending) hold page pi.
func pageHeld(hdr []byte, pi uint32) bool {
	lo, hi := 0, len(hdr)/8
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch p := imageLE.Uint32(hdr[8*m:]); {
		case p == pi:
			return true
		case p < pi:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

// span returns q's span on the valid-time axis, or else on the
// transaction-time one.
func (q quad) span(valid bool) (lo, hi int64) {
	if valid {
		return q.vf, q.vt
	}
	return q.ra, q.ea
}

// loadAxis builds an axis from its image, checked against the docs'
// intervals (ix's pages and inBase, built): the axis holds wantS spans,
// wantE of them closed.
func (ix *Index) loadAxis(ai *axisImage, valid bool, wantS, wantE int) (*axis, error) {
	name := map[bool]string{false: "transaction-time", true: "valid-time"}[valid]
	if len(ai.starts)/4 != wantS || len(ai.ends)/4 != wantE {
		return nil, fmt.Errorf("%w: image: %s axis holds %d spans and %d ends, the intervals %d and %d",
			ErrCorrupt, name, len(ai.starts)/4, len(ai.ends)/4, wantS, wantE)
	}
	a := &axis{starts: make([]startEv, wantS), ends: make([]endEv, wantE)}
	for i := range a.starts {
		doc := imageLE.Uint32(ai.starts[4*i:])
		q, ok := ix.get(doc)
		lo, hi := q.span(valid)
		e := startEv{t: lo, end: hi, doc: doc}
		// Strictly ascending: with the count, each doc's span once.
		if !ok || hi <= lo || i > 0 && cmpStart(a.starts[i-1], e) >= 0 {
			return nil, fmt.Errorf("%w: image: %s span %d (doc %d) out of order or not the doc's", ErrCorrupt, name, i, doc)
		}
		a.starts[i] = e
	}
	for i := range a.ends {
		doc := imageLE.Uint32(ai.ends[4*i:])
		q, ok := ix.get(doc)
		lo, hi := q.span(valid)
		e := endEv{t: hi, doc: doc}
		if !ok || hi <= lo || hi == openEnd || i > 0 && cmpEnd(a.ends[i-1], e) >= 0 {
			return nil, fmt.Errorf("%w: image: %s span end %d (doc %d) out of order or not the doc's", ErrCorrupt, name, i, doc)
		}
		a.ends[i] = e
	}
	if len(ai.snaps) == 0 {
		return a, nil
	}
	m := len(ai.snaps)
	a.snapT, a.snapS, a.snapE, a.snaps = make([]int64, m), make([]int, m), make([]int, m), make([]*roaring.Bitmap, m)
	for j, sn := range ai.snaps {
		if uint64(sn.s) > uint64(len(a.starts)) || uint64(sn.e) > uint64(len(a.ends)) || sn.s == 0 && sn.e == 0 {
			return nil, fmt.Errorf("%w: image: %s snapshot %d after %d spans and %d ends", ErrCorrupt, name, j, sn.s, sn.e)
		}
		si, ei := int(sn.s), int(sn.e)
		// The snapshot's instant is its last event's; the next events
		// must come after it, as the sweep cuts them.
		t := int64(math.MinInt64)
		if si > 0 {
			t = a.starts[si-1].t
		}
		if ei > 0 {
			t = max(t, a.ends[ei-1].t)
		}
		if j > 0 && t <= a.snapT[j-1] || si < len(a.starts) && a.starts[si].t <= t || ei < len(a.ends) && a.ends[ei].t <= t {
			return nil, fmt.Errorf("%w: image: %s snapshot %d is not at an instant after the one before", ErrCorrupt, name, j)
		}
		s, ok := decodeSet(sn.set)
		if !ok {
			return nil, fmt.Errorf("%w: image: %s snapshot %d does not decode", ErrCorrupt, name, j)
		}
		// The spans started and not ended by t: si − ei docs, all held.
		if c := s.GetCardinality(); si < ei || c != uint64(si-ei) || s.AndCardinality(ix.inBase) != c {
			return nil, fmt.Errorf("%w: image: %s snapshot %d holds %d docs, its events say %d", ErrCorrupt, name, j, c, si-ei)
		}
		a.snapT[j], a.snapS[j], a.snapE[j], a.snaps[j] = t, si, ei, s
	}
	return a, nil
}

// decodeSet returns the bitmap b holds whole, in roaring's portable
// format, checked (its containers refer to b). The decoder is roaring's,
// not written for hostile input: a panic in it is a damaged image too.
func decodeSet(b []byte) (s *roaring.Bitmap, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = nil, false
		}
	}()
	s = roaring.New()
	k, err := s.FromBuffer(b)
	return s, err == nil && k == int64(len(b)) && s.Validate() == nil
}
