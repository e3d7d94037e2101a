package hnsw

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/memor-db/memor/kv"
)

// Key tags after the prefix and the meta format version. Part of the file
// format; do not change.
const (
	tagLinks  byte = 'l'
	tagMeta   byte = 'm'
	tagVector byte = 'v'
	// formatV1 has no graph flag: its graphs are always built.
	formatV1     byte = 1
	formatV2     byte = 2
	metaLengthV1      = 14
	metaLength        = 15
)

func (ix *Index) metaKey() []byte {
	return append(slices.Clip(ix.prefix), tagMeta)
}

func (ix *Index) vecKey(id uint32) []byte { return ix.appendVecKey(nil, id) }

// appendVecKey appends the key of id's vector to dst.
func (ix *Index) appendVecKey(dst []byte, id uint32) []byte {
	return kv.AppendUint32(append(append(dst, ix.prefix...), tagVector), id)
}

func (ix *Index) linkKey(id uint32, l int) []byte {
	k := append(slices.Clip(ix.prefix), tagLinks)
	k = kv.AppendUint32(k, id)
	return append(k, byte(l))
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	putVec(b, v)
	return b
}

func putVec(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

// vecRecord is a vector's key and value in one allocation (the writer may
// keep both, so it is not reused): the key is the first vecKeyLen bytes.
type vecRecord []byte

func (ix *Index) vecKeyLen() int { return len(ix.prefix) + 5 }

// newVecRecord starts the record of id's vector: its key, with room for
// the half-precision value of dim.
func (ix *Index) newVecRecord(id uint32) []byte {
	kl := ix.vecKeyLen()
	b := make([]byte, 0, kl+halfLen(ix.dim))
	return ix.appendVecKey(b, id)
}

// recChunk is the most bytes of deferred vector records carved from one
// allocation: the largest small-object size, so that a chunk comes from
// the allocator's reused spans and not fresh pages (a 1000-vector import
// allocated 1000 records of 800 bytes, each in a 896-byte size class).
const recChunk = 32 << 10

// deferredVecRecord is newVecRecord for a record that waits in
// pendingRecs: it is carved from recBuf (the writer may keep records, so
// they never share bytes and recBuf is never reused, only dropped at the
// flush). A chunk holds as many records as are already waiting (or as
// Reserve announced), up to recChunk bytes, so that a one-fact write
// still allocates one record.
func (ix *Index) deferredVecRecord(id uint32) []byte {
	size := ix.vecKeyLen() + halfLen(ix.dim)
	if cap(ix.recBuf)-len(ix.recBuf) < size {
		recs := max(1, min(recChunk/size, max(len(ix.pendingRecs), ix.recHint)))
		ix.recBuf = make([]byte, 0, recs*size)
	}
	o := len(ix.recBuf)
	ix.recBuf = ix.recBuf[:o+size]
	b := ix.recBuf[o : o : o+size]
	return ix.appendVecKey(b, id)
}

// encodeVecRecord is the record of id's held vector v (already rounded).
func (ix *Index) encodeVecRecord(id uint32, v []float32) vecRecord {
	return appendVec(ix.newVecRecord(id), v)
}

// decodeVec reads a persisted vector into dst: sparse or dense half
// precision, or float32 as stores before half precision wrote them (a
// length no half-precision record has: theirs are odd). zeroed says dst
// is all +0 already.
func decodeVec(dst []float32, v []byte, zeroed bool) bool {
	switch {
	case len(v) == 4*len(dst):
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))
		}
		return true
	case len(v) > 0 && v[0] == sparseMarker:
		return decodeSparse(dst, v, zeroed)
	}
	return decodeHalf(dst, v)
}

// vecBytes is the persisted form of a held vector in the encoding of the
// record stored for it, so that Check compares like with like: what the
// index writes now, or float32, or dense half precision for a sparse
// vector written before sparse records.
func vecBytes(v []float32, stored []byte) []byte {
	switch {
	case len(stored) == 4*len(v):
		return encodeVec(v)
	case len(stored) > 0 && stored[0] == halfMarker:
		return appendHalf(nil, v)
	}
	return appendVec(nil, v)
}

func (ix *Index) encodeLinks(s uint32, l int) []byte {
	nb := ix.links(s, l)
	b := make([]byte, 4*len(nb))
	for i, x := range nb {
		binary.LittleEndian.PutUint32(b[4*i:], ix.ids[x])
	}
	return b
}

// meta is the decoded meta key.
type meta struct {
	metric   Metric
	m, dim   int
	hasEntry bool
	entry    uint32
	top      int
	graph    bool
}

func (ix *Index) meta() meta {
	md := meta{metric: ix.o.Metric, m: ix.m, dim: ix.dim, graph: ix.graph}
	if ix.entry >= 0 {
		md.hasEntry, md.entry, md.top = true, ix.ids[ix.entry], ix.top
	}
	return md
}

func (md meta) encode() []byte {
	b := make([]byte, metaLength)
	b[0] = formatV2
	b[1] = byte(md.metric)
	binary.LittleEndian.PutUint16(b[2:], uint16(md.m))
	binary.LittleEndian.PutUint32(b[4:], uint32(md.dim))
	if md.hasEntry {
		b[8] = 1
		binary.LittleEndian.PutUint32(b[9:], md.entry)
		b[13] = byte(md.top)
	}
	if md.graph {
		b[14] = 1
	}
	return b
}

// Flush writes what Adds with a nil writer deferred: their vectors, the
// neighbour lists they changed (each once, however many inserts changed
// it) and the meta key. With nothing deferred it writes nothing.
func (ix *Index) Flush(w kv.Writer) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	defer ix.noteBytes()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.pendingRecs) == 0 && len(ix.pendingDels) == 0 && len(ix.dirty) == 0 {
		return nil
	}
	ix.own()
	return ix.flush(w, nil)
}

// flushPending writes the deferred link deletions and vector records to w
// (nil: keep deferring).
func (ix *Index) flushPending(w kv.Writer) error {
	if w == nil {
		return nil
	}
	ix.linkPending()
	for _, k := range ix.pendingDels {
		if err := w.Delete(k); err != nil {
			return fmt.Errorf("hnsw: delete links: %w", err)
		}
	}
	kl := ix.vecKeyLen()
	for _, rec := range ix.pendingRecs {
		if err := w.Set(rec[:kl:kl], rec[kl:]); err != nil {
			return fmt.Errorf("hnsw: write vector %x: %w", rec[kl-4:kl], err)
		}
	}
	ix.pendingDels, ix.pendingRecs, ix.recBuf, ix.recHint = nil, nil, nil, 0
	return nil
}

// flush writes the vector of a newly added node (rec non-nil), every dirty
// neighbour list, and the meta key when it changed. With w nil it defers
// them to the next flush with a writer.
func (ix *Index) flush(w kv.Writer, rec vecRecord) error {
	if w == nil {
		if rec != nil {
			ix.pendingRecs = append(ix.pendingRecs, rec)
		}
		return nil
	}
	if err := ix.flushPending(w); err != nil {
		return err
	}
	if rec != nil {
		kl := ix.vecKeyLen()
		if err := w.Set(rec[:kl:kl], rec[kl:]); err != nil {
			return fmt.Errorf("hnsw: write vector %x: %w", rec[kl-4:kl], err)
		}
	}
	if len(ix.dirty) > 0 {
		slices.Sort(ix.dirty) // deterministic write order
		keys := slices.Compact(ix.dirty)
		ix.dirty = ix.dirty[:0]
		// Every key and value of this flush in one allocation (the writer
		// may keep them, so they are not reused).
		kl := len(ix.prefix) + 6
		size := 0
		for _, k := range keys {
			size += kl + 4*len(ix.links(uint32(k>>8), int(k&0xFF)))
		}
		buf := make([]byte, 0, size)
		for _, k := range keys {
			s, l := uint32(k>>8), int(k&0xFF)
			o := len(buf)
			buf = append(append(append(buf, ix.prefix...), tagLinks), 0, 0, 0, 0, byte(l))
			binary.BigEndian.PutUint32(buf[o+kl-5:], ix.ids[s])
			key := buf[o : o+kl : o+kl]
			for _, x := range ix.links(s, l) {
				buf = binary.LittleEndian.AppendUint32(buf, ix.ids[x])
			}
			if err := w.Set(key, buf[o+kl:len(buf):len(buf)]); err != nil {
				return fmt.Errorf("hnsw: write links %d/%d: %w", ix.ids[s], l, err)
			}
		}
	}
	if !ix.metaOK {
		if err := w.Set(ix.metaKey(), ix.meta().encode()); err != nil {
			return fmt.Errorf("hnsw: write meta: %w", err)
		}
		ix.metaOK = true
	}
	return nil
}

func decodeMeta(b []byte) (meta, error) {
	if len(b) >= 1 && b[0] > formatV2 {
		return meta{}, fmt.Errorf("%w: version %d, this build reads %d", ErrFormat, b[0], formatV2)
	}
	switch {
	case len(b) == metaLength && b[0] == formatV2 && b[14] <= 1:
	case len(b) == metaLengthV1 && b[0] == formatV1:
	default:
		return meta{}, fmt.Errorf("%w: meta %x", ErrCorrupt, b)
	}
	md := meta{
		metric:   Metric(b[1]),
		m:        int(binary.LittleEndian.Uint16(b[2:])),
		dim:      int(binary.LittleEndian.Uint32(b[4:])),
		hasEntry: b[8] == 1,
		entry:    binary.LittleEndian.Uint32(b[9:]),
		top:      int(b[13]),
		graph:    b[0] == formatV1 || b[14] == 1,
	}
	if md.metric > Dot || md.m < 2 || md.m > 255 || md.dim <= 0 || md.top >= maxLevels || b[8] > 1 ||
		!md.hasEntry && (md.entry != 0 || md.top != 0) || md.hasEntry && !md.graph {
		return meta{}, fmt.Errorf("%w: bad meta %x", ErrCorrupt, b)
	}
	return md, nil
}

// Load reads the index persisted under prefix. It decodes vectors and
// neighbour lists as stored and never recomputes a distance, so opening a
// store costs one scan; an index persisted without its graph (under
// [Options.GraphAt]) is loaded without one, and one with a graph with it,
// whatever o says. The shape (dimension, M, metric) comes from the store;
// the other options (EfSearch, ExactBelow, GraphAt, EfConstruction, Seed)
// from o. With no index under prefix it fails with ErrNotFound.
func Load(ctx context.Context, r kv.Reader, prefix []byte, o Options) (*Index, error) {
	ix := New(0, prefix, o)
	raw, err := r.Get(ix.metaKey())
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("hnsw: load meta: %w", err)
	}
	md, err := decodeMeta(raw)
	if err != nil {
		return nil, err
	}
	ix.dim = md.dim
	ix.vnni = fullVNNI(ix.dim)
	ix.vecs, ix.codes = newSlab[float32](ix.dim), newSlab[int8](ix.dim)
	ix.o.Metric = md.metric
	ix.graph = md.graph
	if o.Capacity > 0 {
		ix.list.refs = make([]vecRef, 0, o.Capacity)
		ix.ids = make([]uint32, 0, o.Capacity)
		ix.levels = make([]int8, 0, o.Capacity)
		ix.slotOf = make(map[uint32]uint32, o.Capacity)
	}
	ix.setM(md.m)
	var lv0 int8 = -1 // set from the link keys
	if !ix.graph {
		lv0 = 0
	}

	vp := append(slices.Clip(ix.prefix), tagVector)
	var dense []float32 // a dense record's values
	err = r.Scan(ctx, vp, func(k, v []byte) error {
		if len(k) != len(vp)+4 {
			return fmt.Errorf("%w: vector key %x", ErrCorrupt, k)
		}
		id := binary.BigEndian.Uint32(k[len(vp):])
		s := uint32(len(ix.ids))
		ok := true
		switch {
		case len(v) > 0 && v[0] == sparseMarker:
			if cap(ix.list.sidx) == 0 && o.Capacity > 0 {
				// Sized once: from the records' sizes where the reader
				// tells them (no record holds more entries than its
				// bytes allow), else from the first vector (the vectors
				// of one embedder have about as many components each).
				n := min(o.Capacity*(len(v)/sparseEntry+4), o.Capacity*ix.dim/2)
				if sz, ok := r.(kv.Sizer); ok {
					if recs, bytes, err := sz.ScanSize(ctx, vp); err == nil {
						n = max(bytes-recs*halfHeader, 0) / sparseEntry
					}
				}
				ix.list.sidx, ix.list.sval = make([]uint16, 0, n), make([]float32, 0, n)
			}
			at := uint32(len(ix.list.sidx))
			ix.list.sidx, ix.list.sval, ok = appendSparse(ix.list.sidx, ix.list.sval, v, ix.dim)
			ix.list.refs = append(ix.list.refs, vecRef{at, uint32(len(ix.list.sidx)) - at})
		default:
			// A dense record (float32, or half precision from before
			// sparse records) may hold a sparse vector: place decides.
			if len(dense) != ix.dim {
				dense = make([]float32, ix.dim)
			}
			if ok = decodeVec(dense, v, false); ok {
				ix.place(uint32(len(ix.ids)), dense)
			}
		}
		if !ok {
			return fmt.Errorf("%w: vector %d has %d malformed bytes", ErrCorrupt, id, len(v))
		}
		ix.ids = append(ix.ids, id)
		ix.levels = append(ix.levels, lv0)
		ix.slotOf[id] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hnsw: load vectors: %w", err)
	}
	if ix.graph {
		ix.links0 = make([]uint32, len(ix.ids)*(ix.m0+1))
		ix.upper = make([][]uint32, len(ix.ids))
		ix.encodeAll()
	}

	lp := append(slices.Clip(ix.prefix), tagLinks)
	var nb []uint32
	err = r.Scan(ctx, lp, func(k, v []byte) error {
		if len(k) != len(lp)+5 || len(v)%4 != 0 {
			return fmt.Errorf("%w: link key %x", ErrCorrupt, k)
		}
		id := binary.BigEndian.Uint32(k[len(lp):])
		l := int(k[len(k)-1])
		if !ix.graph {
			return fmt.Errorf("%w: links of %d in an index without a graph", ErrCorrupt, id)
		}
		s, ok := ix.slotOf[id]
		if !ok {
			return fmt.Errorf("%w: links of %d, which has no vector", ErrCorrupt, id)
		}
		// Keys sort by layer within a node, so layers arrive 0, 1, 2 …
		if l != int(ix.levels[s])+1 || l >= maxLevels || len(v)/4 > ix.maxLinks(l) {
			return fmt.Errorf("%w: links of %d on layer %d (%d entries)", ErrCorrupt, id, l, len(v)/4)
		}
		ix.levels[s] = int8(l)
		if l > 0 {
			ix.upper[s] = append(ix.upper[s], make([]uint32, ix.m+1)...)
		}
		nb = nb[:0]
		for i := 0; i < len(v); i += 4 {
			x, ok := ix.slotOf[binary.LittleEndian.Uint32(v[i:])]
			if !ok {
				return fmt.Errorf("%w: %d links to missing %d", ErrCorrupt, id, binary.LittleEndian.Uint32(v[i:]))
			}
			nb = append(nb, x)
		}
		ix.setLinks(s, l, nb)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hnsw: load links: %w", err)
	}
	ix.dirty = ix.dirty[:0]
	for s, l := range ix.levels {
		if l < 0 {
			return nil, fmt.Errorf("%w: vector %d has no links", ErrCorrupt, ix.ids[s])
		}
	}
	if md.hasEntry {
		s, ok := ix.slotOf[md.entry]
		if !ok || int(ix.levels[s]) != md.top {
			return nil, fmt.Errorf("%w: entry point %d missing or not at level %d", ErrCorrupt, md.entry, md.top)
		}
		ix.entry, ix.top = int32(s), md.top
	} else if len(ix.ids) > 0 && ix.graph {
		return nil, fmt.Errorf("%w: %d vectors but no entry point", ErrCorrupt, len(ix.ids))
	}
	// A version-1 meta is rewritten as version 2 by the next Add or Delete.
	ix.metaOK = raw[0] == formatV2
	// Continue the level sequence from a state fixed by the seed and size,
	// so reloading and inserting the same vectors is reproducible.
	ix.rng = rand.New(rand.NewPCG(uint64(ix.o.Seed), uint64(len(ix.ids))))
	ix.noteBytes()
	return ix, nil
}

// maxFindings bounds how many problems Check reports.
const maxFindings = 50

// Check verifies the in-memory index against the persisted one under r:
// the same vectors, neighbour lists and meta key (including whether the
// graph is built), no extra or missing keys, and structural invariants:
// with a graph, neighbours exist and reach the layer, no self links or
// duplicates, lists within bounds, the entry point is on the top layer;
// without one, no links, levels or entry point at all. It returns the errors.Join of every finding (at most 50), each
// wrapping ErrCheck.
func (ix *Index) Check(ctx context.Context, r kv.Reader) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var errs []error
	add := func(format string, a ...any) {
		if len(errs) < maxFindings {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrCheck}, a...)...))
		}
	}

	// Structure.
	top := -1
	code := make([]int8, ix.dim)
	buf := make([]float32, ix.dim)
	for s := range uint32(len(ix.ids)) {
		lv := int(ix.levels[s])
		if lv < 0 {
			continue
		}
		if ix.slotOf[ix.ids[s]] != s {
			add("slot %d of id %d is not indexed", s, ix.ids[s])
		}
		top = max(top, lv)
		if !ix.graph {
			continue
		}
		if quantize(code, ix.vecInto(s, buf)) != ix.scales[s] || !slices.Equal(code, ix.code(s)) {
			add("codes of node %d do not match its vector", ix.ids[s])
		}
		for l := 0; l <= lv; l++ {
			nb := ix.links(s, l)
			if len(nb) > ix.maxLinks(l) {
				add("node %d layer %d has %d links", ix.ids[s], l, len(nb))
			}
			for i, x := range nb {
				switch {
				case int(x) >= len(ix.ids) || ix.levels[x] < 0:
					add("node %d layer %d links to a deleted node", ix.ids[s], l)
				case int(ix.levels[x]) < l:
					add("node %d layer %d links to %d, which tops out at %d", ix.ids[s], l, ix.ids[x], ix.levels[x])
				case x == s:
					add("node %d layer %d links to itself", ix.ids[s], l)
				case slices.Contains(nb[:i], x):
					add("node %d layer %d links twice to %d", ix.ids[s], l, ix.ids[x])
				}
			}
		}
	}
	switch {
	case !ix.graph:
		if top > 0 || ix.entry >= 0 || len(ix.links0) > 0 || len(ix.upper) > 0 || len(ix.dirty) > 0 || ix.codes.n > 0 {
			add("index without a graph has links (top layer %d, entry slot %d)", top, ix.entry)
		}
	case len(ix.slotOf) > 0 && (ix.entry < 0 || int(ix.levels[ix.entry]) != top || ix.top != top):
		add("entry point is not on the top layer %d", top)
	}
	if len(ix.slotOf) == 0 && ix.entry >= 0 {
		add("empty index has an entry point")
	}
	if len(ix.list.refs) != len(ix.ids) {
		add("%d vectors held for %d slots", len(ix.list.refs), len(ix.ids))
	}
	if len(ix.slotOf)+len(ix.free) != len(ix.ids) {
		add("%d live + %d free slots != %d slots", len(ix.slotOf), len(ix.free), len(ix.ids))
	}

	// Persisted state against memory.
	if n := len(ix.pendingRecs) + len(ix.pendingDels); n > 0 {
		add("%d deferred writes not yet flushed", n)
	}
	if len(ix.dirty) > 0 {
		add("%d neighbour lists not yet written", len(ix.dirty))
	}
	wantMeta := ix.meta()
	seenMeta, seenVec, seenLinks := false, 0, 0
	err := r.Scan(ctx, ix.prefix, func(k, v []byte) error {
		rest := k[len(ix.prefix):]
		switch {
		case len(rest) == 1 && rest[0] == tagMeta:
			seenMeta = true
			// Compared decoded: a version-1 meta not yet rewritten is
			// still correct.
			if md, err := decodeMeta(v); err != nil || md != wantMeta {
				add("meta is %x, want %x", v, wantMeta.encode())
			}
		case len(rest) == 5 && rest[0] == tagVector:
			id := binary.BigEndian.Uint32(rest[1:])
			s, ok := ix.slotOf[id]
			if !ok {
				add("persisted vector %d is not in the index", id)
				return nil
			}
			seenVec++
			if !bytes.Equal(v, vecBytes(ix.vecInto(s, buf), v)) {
				add("persisted vector %d differs", id)
			}
		case len(rest) == 6 && rest[0] == tagLinks:
			id := binary.BigEndian.Uint32(rest[1:])
			l := int(rest[5])
			s, ok := ix.slotOf[id]
			if !ok || l > int(ix.levels[s]) || !ix.graph {
				add("persisted links %d/%d are not in the index", id, l)
				return nil
			}
			seenLinks++
			if !bytes.Equal(v, ix.encodeLinks(s, l)) {
				add("persisted links %d/%d differ", id, l)
			}
		default:
			add("unknown key %x", k)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("hnsw: check scan: %w", err))
	}
	wantLinks := 0
	for _, lv := range ix.levels {
		if lv >= 0 && ix.graph {
			wantLinks += int(lv) + 1
		}
	}
	if !seenMeta && len(ix.ids) > 0 {
		add("meta key is missing")
	}
	if seenVec != len(ix.slotOf) {
		add("%d vectors persisted, %d in memory", seenVec, len(ix.slotOf))
	}
	if seenLinks != wantLinks {
		add("%d neighbour lists persisted, %d in memory", seenLinks, wantLinks)
	}
	return errors.Join(errs...)
}
