package hnsw

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// An image is an index serialised in the form it is held in memory, so
// that [LoadImage] mostly copies arrays where [Load] decodes a record per
// vector (the half-precision or sparse encoding, fromHalf per component)
// and, with a graph, recomputes every vector's int8 codes and error
// bounds. The engine keeps images in its users' index images; the records
// stay the truth, and an image is rebuilt from them.
//
// An image holds what a [Load] of the index's records would build: the
// live vectors in ID order (their slots in the loaded index), each as the
// index holds it, and with a graph the neighbour lists as slots of that
// order. So it depends only on the stored state, not on the slots an
// index's history left (an index after Deletes images as its reload
// does), and LoadImage builds, slot for slot, the index Load builds.
//
// Layout (every integer little-endian, fixed width, so that each array is
// the typed memory the index holds, used in place or copied at once):
//
//	0x03                      image version (1: a graph's vectors were
//	                          all held dense; 2: no padding)
//	flags                     1: the graph is built; 2: the stored meta is
//	                          not current (format 1, rewritten by the next
//	                          write, see Load)
//	metric, M                 one byte each
//	dim, n                    uint32 each: dimension, live vectors
//	n × uint32                their IDs, ascending
//
// then the vectors, as they are held (see list.go):
//
//	n × uint32                per vector its sparse entries' count, or
//	                          0xFFFFFFFF for one held dense
//	e × float32               every sparse entry's value (e: the counts'
//	                          sum), vector after vector
//	e × uint16                their indexes
//	0 to 3 zero bytes         to a multiple of 4 from the image's start
//	d × dim × float32         the dense vectors, in ID order
//
// and with a graph:
//
//	uint32                    the entry point's slot (0xFFFFFFFF: none)
//	n × int8                  levels
//	0 to 3 zero bytes         to a multiple of 4 from the image's start
//	n × (2M+1) × uint32       layer-0 lists: count, then 2M slots, the
//	                          unused ones 0
//	Σlevel × (M+1) × uint32   the upper layers' lists likewise, by slot
//	                          then layer
//	d × dim × int8            the dense vectors' codes (quant.go)
//	e × int8                  the sparse vectors' codes at their entries
//	                          (0 elsewhere), vector after vector
//	n × 3 × float32           per vector its codes' scale, then its qbound
//
// What a search reads is used where it lies when the image is aligned
// for it (the padding puts every array of 4-byte values on a multiple of
// 4 from the start): the sparse entries (the bulk of the engine's common
// image), the dense vectors, the neighbour lists and, when every vector
// is dense, the codes. The index never writes the image: the sparse
// entries are only ever appended to, which copies them out, and the
// first write after a load copies the rest out (own). The IDs, levels
// and bounds are copied, each array at once.
//
// A sparse vector costs 6 bytes a component (a fact of the default
// embedder 150 to 600 bytes, its record 120 to 400), and with a graph
// 4·(2M+1) of layer-0 list more; a dense 384-d vector 4·384 bytes, with
// a graph 384 + 12 and the lists more, about 2.3 times its records,
// bought with a tenth of the load.
//
// LoadImage checks the structure whole (lengths, IDs ascending, sparse
// counts under dim/2 and indexes below dim, list counts, targets and
// unused entries, the padding, levels and the entry point), so that a
// damaged image fails with [ErrCorrupt] and never in a later search or
// write. The values are not checked: a vector
// may hold NaN or ±Inf (Dot accepts subnormal vectors, whose halves are
// persisted as such), and a changed value is served as it is.
const imageVersion = 3

// Image flags.
const (
	imageGraph     = 1 << 0
	imageMetaStale = 1 << 1
)

const (
	// imageHeader is the bytes before the IDs.
	imageHeader = 12
	// noEntry is the entry slot of an image without an entry point;
	// denseCount is the count of a vector held dense.
	noEntry    = ^uint32(0)
	denseCount = ^uint32(0)
	// maxImageDim bounds the dimension LoadImage accepts: no embedding
	// comes near it, and it keeps a damaged header of an index holding no
	// dense vector from naming a dimension whose first Add would allocate
	// gigabytes.
	maxImageDim = 1 << 20
)

// littleEndian: the image's arrays are this CPU's memory layout, copied
// as bytes (else converted element by element).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// AppendImage appends the index's image to dst (under the read lock). It
// is the image of the index's records: writes deferred by Adds with a nil
// writer must be flushed first (the engine images an index it just
// loaded). Two indexes whose records are the same have the same image.
func (ix *Index) AppendImage(dst []byte) []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	order := ix.liveByID()
	var flags byte
	if ix.graph {
		flags |= imageGraph
	}
	if !ix.metaOK {
		flags |= imageMetaStale
	}
	start := len(dst)
	dst = append(dst, imageVersion, flags, byte(ix.o.Metric), byte(ix.m))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(ix.dim))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(order)))
	for _, s := range order {
		dst = binary.LittleEndian.AppendUint32(dst, ix.ids[s])
	}
	dst = ix.appendVectorsImage(dst, start, order)
	if ix.graph {
		return ix.appendGraphImage(dst, start, order)
	}
	return dst
}

// pad4 is the zero bytes an image puts at offset off (from its start) so
// that the array after it is 4-byte aligned, as the image's own start is
// (Go allocates a buffer of 8 bytes or more so): a version-2 image has
// none.
func pad4(off int) int { return (4 - off%4) % 4 }

// liveByID returns the live slots in ID order: the slots a Load gives
// them.
func (ix *Index) liveByID() []uint32 {
	order := make([]uint32, 0, len(ix.slotOf))
	sorted := true
	for s, lv := range ix.levels {
		if lv < 0 {
			continue
		}
		if k := len(order); k > 0 && ix.ids[order[k-1]] > ix.ids[s] {
			sorted = false
		}
		order = append(order, uint32(s))
	}
	if !sorted {
		slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(ix.ids[a], ix.ids[b]) })
	}
	return order
}

func (ix *Index) appendVectorsImage(dst []byte, start int, order []uint32) []byte {
	l := &ix.list
	e, d := 0, 0
	for _, s := range order {
		r := l.refs[s]
		if r.n == denseRef {
			d++
			dst = binary.LittleEndian.AppendUint32(dst, denseCount)
			continue
		}
		e += int(r.n)
		dst = binary.LittleEndian.AppendUint32(dst, r.n)
	}
	dst = slices.Grow(dst, 6*e+4*d*ix.dim)
	for _, s := range order {
		if r := l.refs[s]; r.n != denseRef {
			dst = appendU32s(dst, f32bits(l.sval[r.at:r.at+r.n]), littleEndian)
		}
	}
	for _, s := range order {
		if r := l.refs[s]; r.n != denseRef {
			dst = appendU16s(dst, l.sidx[r.at:r.at+r.n], littleEndian)
		}
	}
	dst = append(dst, make([]byte, pad4(len(dst)-start))...)
	for _, s := range order {
		if r := l.refs[s]; r.n == denseRef {
			dst = appendU32s(dst, f32bits(ix.vecs.at(r.at)), littleEndian)
		}
	}
	return dst
}

func (ix *Index) appendGraphImage(dst []byte, start int, order []uint32) []byte {
	// rank maps a slot to its place in order (nil: the same, as in an
	// index just loaded).
	var rank []uint32
	for i, s := range order {
		if s != uint32(i) {
			rank = make([]uint32, len(ix.ids))
			for i, s := range order {
				rank[s] = uint32(i)
			}
			break
		}
	}
	rk := func(s uint32) uint32 {
		if rank == nil {
			return s
		}
		return rank[s]
	}
	entry := noEntry
	if ix.entry >= 0 {
		entry = rk(uint32(ix.entry))
	}
	dst = binary.LittleEndian.AppendUint32(dst, entry)
	lists := 0
	for _, s := range order {
		dst = append(dst, byte(ix.levels[s]))
		lists += int(ix.levels[s])
	}
	dst = append(dst, make([]byte, pad4(len(dst)-start))...)
	dst = slices.Grow(dst, 4*len(order)*(ix.m0+1)+4*lists*(ix.m+1)+len(order)*(ix.dim+12))
	list := func(s uint32, l int) {
		nb := ix.links(s, l)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(nb)))
		for _, x := range nb {
			dst = binary.LittleEndian.AppendUint32(dst, rk(x))
		}
		dst = append(dst, make([]byte, 4*(ix.maxLinks(l)-len(nb)))...)
	}
	for _, s := range order {
		list(s, 0)
	}
	for _, s := range order {
		for l := 1; l <= int(ix.levels[s]); l++ {
			list(s, l)
		}
	}
	// A sparse vector's codes are 0 but at its entries: only those are
	// imaged (deriving them at the load, quantizeSparse, took a quarter
	// of it).
	for _, s := range order {
		if ix.list.refs[s].n == denseRef {
			dst = append(dst, int8Bytes(ix.code(s))...)
		}
	}
	for _, s := range order {
		if r := ix.list.refs[s]; r.n != denseRef {
			c := ix.code(s)
			for _, i := range ix.list.sidx[r.at : r.at+r.n] {
				dst = append(dst, byte(c[i]))
			}
		}
	}
	for _, s := range order {
		q := ix.qerr[s]
		dst = appendU32s(dst, f32bits([]float32{ix.scales[s], q.err, q.norm}), littleEndian)
	}
	return dst
}

// imageErr is the error of a damaged image.
func imageErr(format string, a ...any) error {
	return fmt.Errorf("%w: image: "+format, append([]any{ErrCorrupt}, a...)...)
}

// LoadImage returns the index image b holds (see [Index.AppendImage]),
// keyed under prefix: the index [Load] builds from the records the image
// was made of, answering and writing as that one does. As with Load, the
// shape (dimension, M, metric) comes from the image and the other options
// from o; o.Capacity is a hint. b is checked whole (see image.go), so that
// a damaged image fails here with [ErrCorrupt]. The index may keep
// references into b (it never writes them): b must not be modified while
// the index lives.
func LoadImage(b, prefix []byte, o Options) (*Index, error) {
	if len(b) < imageHeader || (b[0] != imageVersion && b[0] != 2) {
		return nil, imageErr("version %x or header of %d bytes", b[:min(len(b), 1)], len(b))
	}
	flags, metric, m := b[1], Metric(b[2]), int(b[3])
	dim := binary.LittleEndian.Uint32(b[4:])
	n := uint64(binary.LittleEndian.Uint32(b[8:]))
	if flags&^(imageGraph|imageMetaStale) != 0 || metric > Dot || m < 2 || dim == 0 || dim > maxImageDim {
		return nil, imageErr("header %x", b[:imageHeader])
	}
	// Every count is checked against the bytes that hold what it counts
	// before anything of its size is allocated.
	if uint64(len(b)-imageHeader)/8 < n {
		return nil, imageErr("%d vectors in %d bytes", n, len(b))
	}
	ix := New(0, prefix, o)
	ix.dim = int(dim)
	ix.vnni = fullVNNI(ix.dim)
	ix.vecs, ix.codes = newSlab[float32](ix.dim), newSlab[int8](ix.dim)
	ix.o.Metric = metric
	ix.graph = flags&imageGraph != 0
	ix.setM(m)
	ix.metaOK = flags&imageMetaStale == 0

	c := max(int(n), o.Capacity)
	ix.ids = make([]uint32, n, c)
	getU32s(ix.ids, b[imageHeader:], littleEndian)
	ix.slotOf = make(map[uint32]uint32, c)
	for s, id := range ix.ids {
		if s > 0 && id <= ix.ids[s-1] {
			return nil, imageErr("ID %d after %d", id, ix.ids[s-1])
		}
		ix.slotOf[id] = uint32(s)
	}
	im := imageIn{b: b, padded: b[0] >= 3}
	at, err := ix.loadVectorsImage(im, imageHeader+4*int(n), c, o.Capacity)
	switch {
	case err != nil:
	case ix.graph:
		err = ix.loadGraphImage(im, at, c)
	case at != len(b):
		err = imageErr("%d bytes after the vectors", len(b)-at)
	}
	if err != nil {
		return nil, err
	}
	if ix.list.image != nil || ix.inImage {
		ix.list.image = b // what lies in it keeps the whole image alive
	}
	// As Load: the level sequence continues from the seed and the size.
	ix.rng = rand.New(rand.NewPCG(uint64(ix.o.Seed), n))
	ix.noteBytes()
	return ix, nil
}

// imageIn is an image being loaded: its bytes, and whether its arrays
// of 4-byte values are padded to be aligned (version 3 on).
type imageIn struct {
	b      []byte
	padded bool
}

// pad checks the padding an image has at offset at and returns its
// length.
func (im imageIn) pad(at int) (int, error) {
	if !im.padded {
		return 0, nil
	}
	p := pad4(at)
	if len(im.b)-at < p {
		return 0, imageErr("padding at %d in %d bytes", at, len(im.b))
	}
	for _, x := range im.b[at : at+p] {
		if x != 0 {
			return 0, imageErr("padding at %d is not zero", at)
		}
	}
	return p, nil
}

// loadVectorsImage reads the vectors of an image (from offset at, the
// counts), with room for c slots, and returns the offset after them.
func (ix *Index) loadVectorsImage(im imageIn, at, c, capacity int) (int, error) {
	b := im.b[at:]
	n := len(ix.ids)
	if uint64(len(b)) < 4*uint64(n) {
		return 0, imageErr("vector counts in %d bytes", len(b))
	}
	counts := b[:4*n]
	var e, d uint64
	for s := range n {
		switch k := binary.LittleEndian.Uint32(counts[4*s:]); {
		case k == denseCount:
			d++
		case 2*uint64(k) >= uint64(ix.dim):
			// Held dense, as place holds it.
			return 0, imageErr("vector %d has %d sparse components of %d", ix.ids[s], k, ix.dim)
		default:
			e += uint64(k)
		}
	}
	if uint64(len(b)) < uint64(4*n)+6*e {
		return 0, imageErr("sparse entries in %d bytes, want %d", len(b), uint64(4*n)+6*e)
	}
	p, err := im.pad(at + 4*n + 6*int(e))
	if err != nil {
		return 0, err
	}
	want := uint64(4*n) + 6*e + uint64(p) + 4*d*uint64(ix.dim)
	if uint64(len(b)) < want {
		return 0, imageErr("vectors in %d bytes, want %d", len(b), want)
	}
	ix.levels = make([]int8, n, c)
	l := &ix.list
	l.refs = make([]vecRef, n, c)
	var pos, dn uint32
	for s := range n {
		k := binary.LittleEndian.Uint32(counts[4*s:])
		if k == denseCount {
			l.refs[s] = vecRef{dn, denseRef}
			dn++
			continue
		}
		l.refs[s] = vecRef{pos, k}
		pos += k
	}
	b = b[4*n:]
	vals, idx, dense := b[:4*e], b[4*e:6*e], b[6*e+uint64(p):want-uint64(4*n)]
	// The indexes are checked in range (a score reads the query at each)
	// and nothing else: no code relies on their order.
	if i, ok := indexesBelow(idx, ix.dim); !ok {
		return 0, imageErr("sparse index %d of dimension %d", i, ix.dim)
	}
	// The sparse entries are only ever appended to (a vector replaced or
	// deleted leaves its entries dead until compact copies the live
	// ones), so they are used where they lie, capped so that the first
	// append copies them out: the bulk of such an image loads without a
	// copy. Elsewhere (a CPU of the other byte order, an image not
	// aligned for them) they are copied, with room for the vectors
	// Capacity expects beyond these, at their mean size, as Load sizes
	// its arrays.
	if v, ok := alias[float32](vals); ok {
		l.sval, l.image = v, im.b
	} else {
		room := int(e)
		if capacity > n && n > 0 {
			room += int(e) / n * (capacity - n)
		}
		l.sval = make([]float32, e, room)
		getU32s(f32bits(l.sval), vals, littleEndian)
	}
	if v, ok := alias[uint16](idx); ok {
		l.sidx, l.image = v, im.b
	} else {
		l.sidx = make([]uint16, e, cap(l.sval))
		getU16s(l.sidx, idx, littleEndian)
	}
	// The dense vectors are written in place (a slot reused), so a
	// writer copies them out first (own).
	if v, ok := alias[float32](dense); ok && d > 0 {
		ix.vecs, ix.inImage = slabIn(ix.dim, int(d), v), true
	} else {
		ix.vecs = slabOf[float32](ix.dim, int(d), func(dst []float32, off int) {
			getU32s(f32bits(dst), dense[4*off:], littleEndian)
		})
	}
	return at + int(want), nil
}

// loadGraphImage reads the graph of an image (from offset at, the entry
// point), with room for c slots.
func (ix *Index) loadGraphImage(im imageIn, at, c int) error {
	b := im.b[at:]
	n := len(ix.ids)
	if len(b) < 4+n {
		return imageErr("levels in %d bytes", len(b))
	}
	entry := binary.LittleEndian.Uint32(b)
	ix.levels = make([]int8, n, c)
	copy(int8Bytes(ix.levels), b[4:4+n])
	lists, top := 0, -1
	for _, lv := range ix.levels {
		if lv < 0 || lv >= maxLevels {
			return imageErr("level %d", lv)
		}
		lists += int(lv)
		top = max(top, int(lv))
	}
	switch {
	case n == 0 && entry != noEntry:
		return imageErr("an empty graph with an entry point")
	case n > 0 && (entry >= uint32(n) || int(ix.levels[entry]) != top):
		return imageErr("entry point %d not on the top layer %d", entry, top)
	case n > 0:
		ix.entry, ix.top = int32(entry), top
	}
	w0, w := ix.m0+1, ix.m+1
	var dense, entries uint64
	for _, r := range ix.list.refs {
		if r.n == denseRef {
			dense++
		} else {
			entries += uint64(r.n)
		}
	}
	p, err := im.pad(at + 4 + n)
	if err != nil {
		return err
	}
	want := uint64(4+n+p) + 4*(uint64(n)*uint64(w0)+uint64(lists)*uint64(w)) + dense*uint64(ix.dim) + entries + 12*uint64(n)
	if uint64(len(b)) != want {
		return imageErr("graph in %d bytes, want %d", len(b), want)
	}
	b = b[4+n+p:]
	// The lists are written in place, so a writer copies them out first
	// (own).
	ix.links0 = ix.u32sIn(b[:4*n*w0])
	b = b[4*n*w0:]
	flat := ix.u32sIn(b[:4*lists*w])
	b = b[4*lists*w:]
	// Every list: a count within bounds, targets that are nodes reaching
	// the layer (a walk of layer l reads its targets' lists of layer l),
	// the unused entries 0.
	check := func(s, l int, list []uint32) error {
		k := list[0]
		if k > uint32(ix.maxLinks(l)) {
			return imageErr("node %d has %d links on layer %d", ix.ids[s], k, l)
		}
		for _, x := range list[1 : 1+k] {
			if x >= uint32(n) || int(ix.levels[x]) < l {
				return imageErr("node %d links to slot %d on layer %d", ix.ids[s], x, l)
			}
		}
		for _, x := range list[1+k:] {
			if x != 0 {
				return imageErr("node %d: unused link entries on layer %d", ix.ids[s], l)
			}
		}
		return nil
	}
	for s := range n {
		if err := check(s, 0, ix.links0[s*w0:(s+1)*w0]); err != nil {
			return err
		}
	}
	ix.upper = make([][]uint32, n)
	o := 0
	for s, lv := range ix.levels {
		if lv == 0 {
			continue
		}
		u := flat[o : o+int(lv)*w : o+int(lv)*w]
		o += int(lv) * w
		for l := 1; l <= int(lv); l++ {
			if err := check(s, l, u[(l-1)*w:l*w]); err != nil {
				return err
			}
		}
		ix.upper[s] = u
	}
	dim := uint64(ix.dim)
	codes, sparse, bounds := b[:dense*dim], b[dense*dim:dense*dim+entries], b[dense*dim+entries:]
	ix.scales = make([]float32, n, c)
	ix.qerr = make([]qbound, n, c)
	if dense == uint64(n) && n > 0 {
		// Every code is in the image, slot after slot: used where it
		// lies (written in place, so copied out by own).
		ix.codes, ix.inImage = slabIn(ix.dim, n, unsafe.Slice((*int8)(unsafe.Pointer(&codes[0])), len(codes))), true
		for s := range n {
			ix.scales[s] = f32(bounds[12*s:])
			ix.qerr[s] = qbound{f32(bounds[12*s+4:]), f32(bounds[12*s+8:])}
		}
		return nil
	}
	// (A fresh slab is zero: a sparse vector's codes are set at its
	// entries only.)
	ix.codes = slabOf[int8](ix.dim, n, func([]int8, int) {})
	for s := range n {
		code := ix.code(uint32(s))
		if r := ix.list.refs[s]; r.n != denseRef {
			for k, i := range ix.list.sidx[r.at : r.at+r.n] {
				code[i] = int8(sparse[k])
			}
			sparse = sparse[r.n:]
		} else {
			copy(int8Bytes(code), codes)
			codes = codes[dim:]
		}
		ix.scales[s] = f32(bounds[12*s:])
		ix.qerr[s] = qbound{f32(bounds[12*s+4:]), f32(bounds[12*s+8:])}
	}
	return nil
}

// indexesBelow reports whether every little-endian uint16 in b is below
// dim, else returns one that is not. Four at a time: below 2¹⁵ (no lane's
// top bit set in the OR of all words), x + 2¹⁵ − dim has its top bit set
// exactly when x ≥ dim, and carries out of no lane. That is a quarter of
// the time of a comparison per index, which was most of a load of the
// engine's common image.
func indexesBelow(b []byte, dim int) (uint16, bool) {
	const top = 0x8000800080008000
	i := 0
	if dim <= 1<<15 {
		var or, ge uint64
		add := uint64(1<<15-dim) * 0x0001000100010001
		for ; i+8 <= len(b); i += 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			or |= w
			ge |= w + add
		}
		if (or|ge)&top != 0 {
			i = 0 // found below, one at a time
		}
	}
	for ; i+2 <= len(b); i += 2 {
		if x := binary.LittleEndian.Uint16(b[i:]); int(x) >= dim {
			return x, false
		}
	}
	return 0, true
}

// slabOf returns a slab of n slots of width, its chunks filled by fill
// (with a chunk's records and the offset of its first element); the
// first chunk has room for no more (the slab grows as add needs).
func slabOf[T any](width, n int, fill func(dst []T, off int)) slab[T] {
	b := slab[T]{width: width, n: n}
	for s := 0; s < n; s += slabSlots {
		k := min(n-s, slabSlots)
		room := slabSlots
		if s == 0 {
			room = k
		}
		c := make([]T, k*width, room*width)
		fill(c, s*width)
		b.chunks = append(b.chunks, c)
	}
	return b
}

// u32sIn returns the little-endian uint32s of b, where they lie when they
// can be (noting that ix.image holds them), else copied.
func (ix *Index) u32sIn(b []byte) []uint32 {
	if v, ok := alias[uint32](b); ok && len(v) > 0 {
		ix.inImage = true
		return v
	}
	v := make([]uint32, len(b)/4)
	getU32s(v, b, littleEndian)
	return v
}

// alias returns b as the float32s, uint32s or uint16s it holds
// little-endian, without a copy, when this CPU reads them so and b is
// aligned for them.
func alias[T float32 | uint32 | uint16](b []byte) ([]T, bool) {
	if len(b) == 0 {
		return nil, true
	}
	size := int(unsafe.Sizeof(T(0)))
	p := unsafe.SliceData(b)
	if !littleEndian || uintptr(unsafe.Pointer(p))%uintptr(size) != 0 {
		return nil, false
	}
	n := len(b) / size
	return unsafe.Slice((*T)(unsafe.Pointer(p)), n)[:n:n], true
}

// f32 is the little-endian float32 at the start of b.
func f32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// f32bits is v's memory as uint32s (the bits of its values).
func f32bits(v []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// int8Bytes is v's memory as bytes.
func int8Bytes(v []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// getU32s fills dst from the little-endian uint32s at the start of b:
// one copy of the bytes when native (the CPU is little-endian).
func getU32s(dst []uint32, b []byte, native bool) {
	if native {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst)), b)
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
}

// getU16s is getU32s for uint16s.
func getU16s(dst []uint16, b []byte, native bool) {
	if native {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 2*len(dst)), b)
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
}

// appendU32s appends v little-endian: its memory when native.
func appendU32s(dst []byte, v []uint32, native bool) []byte {
	if native {
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))...)
	}
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, x)
	}
	return dst
}

// appendU16s is appendU32s for uint16s.
func appendU16s(dst []byte, v []uint16, native bool) []byte {
	if native {
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))...)
	}
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint16(dst, x)
	}
	return dst
}
