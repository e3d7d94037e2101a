package hnsw

import (
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"

	"golang.org/x/sys/cpu"
)

// A vector most of whose components are zero (a hashing embedder's: a
// fact of a few words touches a few dozen of 384 buckets) is persisted
// sparse: the half-precision header (marker, scale), then for each
// component whose half is not +0, in index order, its index and its half,
// two little-endian uint16s each. It decodes to exactly what the dense
// half encoding of the same vector decodes to, so the choice is invisible
// to searches; it is made from the vector alone (sparse when shorter:
// fewer than dim/2 such components), so every path that writes a vector
// writes the same bytes. For the default embedder a fact's vector record
// shrinks from 773 bytes to about 120, which the store's compression,
// writes and reads no longer pay for. Sparse records are format 4 of the
// store (kv.FormatVersion); the dense ones written before are read and
// checked as they are.
const (
	sparseMarker byte = 0xF2
	// sparseEntry is the size of one component: index and half.
	sparseEntry = 4
	// maxSparseDim bounds the dimension whose indexes fit a uint16.
	maxSparseDim = 1 << 16
)

// appendVec appends the persisted encoding of v: sparse when that is
// shorter, else dense half precision.
func appendVec(b []byte, v []float32) []byte { return encodeVec16(b, v, false) }

// roundAppendVec is appendVec that also rounds v in place to the values
// the encoding holds (see roundAppendHalf).
func roundAppendVec(b []byte, v []float32) []byte { return encodeVec16(b, v, true) }

// encodeVec16 encodes v at half precision and turns the record sparse
// when fewer than half of its halves are non-zero.
func encodeVec16(b []byte, v []float32, round bool) []byte {
	n := len(b)
	b = encodeHalf(b, v, round)
	if len(v) > maxSparseDim {
		return b
	}
	halves := b[n+halfHeader:]
	nnz := nonZeroHalves(halves)
	if 2*nnz >= len(v) {
		return b
	}
	// Entry k is written at or after half k's place, so the halves are
	// read from a copy (on the stack for dimensions up to 1024).
	var stack [2048]byte
	dense := append(stack[:0], halves...)
	b[n] = sparseMarker
	out := b[n+halfHeader : n+halfHeader+sparseEntry*nnz]
	o, i := 0, 0
	// Four halves at a time: most words of a sparse vector are zero.
	for ; i+4 <= len(v); i += 4 {
		w := binary.LittleEndian.Uint64(dense[2*i:])
		for m := laneMask(w); m != 0; m &= m - 1 {
			lane := bits.TrailingZeros64(m) / 16
			binary.LittleEndian.PutUint32(out[o:], uint32(i+lane)|uint32(uint16(w>>(16*lane)))<<16)
			o += sparseEntry
		}
	}
	for ; i < len(v); i++ {
		if h := binary.LittleEndian.Uint16(dense[2*i:]); h != 0 {
			binary.LittleEndian.PutUint32(out[o:], uint32(i)|uint32(h)<<16)
			o += sparseEntry
		}
	}
	return b[:n+halfHeader+o]
}

// laneMask has the top bit of each 16-bit lane of w set where the lane is
// not zero: adding 0x7fff to a lane's low 15 bits carries into its top bit
// unless they are all zero, and never out of the lane.
func laneMask(w uint64) uint64 {
	const low = 0x7fff7fff7fff7fff
	return ((w & low) + low | w) &^ low
}

// nonZeroHalves counts the halves in b that are not +0 (-0 counts: it is
// kept, so that the sparse record decodes to the same bits).
func nonZeroHalves(b []byte) int {
	n := 0
	for ; len(b) >= 8; b = b[8:] {
		n += bits.OnesCount64(laneMask(binary.LittleEndian.Uint64(b)))
	}
	for ; len(b) >= 2; b = b[2:] {
		if binary.LittleEndian.Uint16(b) != 0 {
			n++
		}
	}
	return n
}

// decodeSparse writes the sparse vector b into dst, reporting false for a
// malformed record (see appendSparse).
func decodeSparse(dst []float32, b []byte) bool {
	var stack [512]component
	es, ok := appendSparse(stack[:0], b, len(dst))
	if !ok {
		return false
	}
	clear(dst)
	for _, e := range es {
		dst[e.i] = e.x
	}
	return true
}

// component is one decoded component of a sparse vector.
type component struct {
	i uint16
	x float32
}

// appendSparse appends the components of the sparse record b of a
// dim-dimensional vector to dst, in index order, each as the dense
// decoding computes it. It reports false for a malformed record: a length
// that is not the header and whole entries, a scale the dense form
// rejects, an index out of order or range, a +0 entry, or as many entries
// as the dense form would have been written with (every encoder writes
// the shorter form).
func appendSparse(dst []component, b []byte, dim int) ([]component, bool) {
	if len(b) < halfHeader || b[0] != sparseMarker || (len(b)-halfHeader)%sparseEntry != 0 {
		return dst, false
	}
	entries := b[halfHeader:]
	if k := len(entries) / sparseEntry; 2*k >= dim || dim > maxSparseDim {
		return dst, false
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b[1:]))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale < 0 {
		return dst, false
	}
	n := len(dst)
	next := 0
	for ; len(entries) > 0; entries = entries[sparseEntry:] {
		i := int(binary.LittleEndian.Uint16(entries))
		h := binary.LittleEndian.Uint16(entries[2:])
		if i < next || i >= dim || h == 0 {
			return dst[:n], false
		}
		dst = append(dst, component{uint16(i), fromHalf(h) * scale})
		next = i + 1
	}
	return dst, true
}

// An index loaded without a graph from sparse records holds its vectors as
// their components (held), not expanded into float32: a 384-d vector of
// the default embedder is a few dozen components, 8 bytes each, instead
// of 1536 bytes, so loading a user costs neither the expansion nor the
// fresh memory it touches, and an exact scan reads a fifth of the bytes.
// The scan computes the same float32 products in the same order as the
// dense dot product (sparseDot), so results and scores are bit for bit
// those of the expanded vectors. Anything that changes vectors (Add,
// Reserve) expands them first, and so does a search once the index has
// been scanned expandAfter times from its components: a component costs
// more to score than a dense element, so a user searched again and again
// is better served expanded.
type held struct {
	// chunks hold each slot's components in index order, a slot's in one
	// chunk, at spans[s]. Chunks, not one array: an array grown by append
	// allocated five times its components (a quarter more each time), and
	// an estimate of its size ahead would be pinned with it.
	chunks [][]component
	spans  []span
}

// span locates a slot's components: chunks[c][start:end].
type span struct{ c, start, end uint32 }

// heldChunk is the components a chunk holds: 32 KB, the largest size the
// allocator serves from reused spans rather than fresh pages.
const heldChunk = 4096

// vector is slot s's components.
func (h *held) vector(s uint32) []component {
	sp := h.spans[s]
	return h.chunks[sp.c][sp.start:sp.end]
}

// push appends a slot holding the sparse record b of a dim-dimensional
// vector, reporting false if b is malformed. expect is how many more
// slots are likely to come (it sizes the first chunk).
func (h *held) push(b []byte, dim, expect int) bool {
	k := max(0, len(b)-halfHeader) / sparseEntry
	n := len(h.chunks)
	if n == 0 || cap(h.chunks[n-1])-len(h.chunks[n-1]) < k {
		size := max(heldChunk, k)
		if n == 0 {
			size = max(k, min(heldChunk, expect*k))
		}
		h.chunks = append(h.chunks, make([]component, 0, size))
		n++
	}
	c := h.chunks[n-1]
	start := len(c)
	c, ok := appendSparse(c, b, dim) // within the capacity: in place
	if !ok {
		return false
	}
	h.chunks[n-1] = c
	h.spans = append(h.spans, span{uint32(n - 1), uint32(start), uint32(len(c))})
	return true
}

// expandAfter is how many exact scans an index serves from its held
// components before the next search expands them (see held).
const expandAfter = 8

// sparseExact says whether sparseDot reproduces dot on this machine: it
// mirrors vek32's AVX2/FMA kernel, which vek picks under this condition
// (elsewhere vek's portable loop runs, and vectors are expanded on load).
var sparseExact = cpu.X86.HasAVX2 && cpu.X86.HasFMA && runtime.GOOS != "darwin"

// expand turns held components into float32 vectors, with room for extra
// more slots (ix.mu held for writing; a no-op when nothing is held).
func (ix *Index) expand(extra int) {
	h := ix.held
	if h == nil {
		return
	}
	ix.vecs = newSlab[float32](ix.dim)
	ix.vecs.reserve(len(ix.ids) + extra)
	for s := range uint32(len(ix.ids)) {
		v := ix.vecs.add()
		clear(v)
		scatter(v, h.vector(s))
	}
	ix.held = nil
	ix.heldScans.Store(0)
	ix.countVectors()
}

// scatter writes the components cs into v (zeroed, len dim).
func scatter(v []float32, cs []component) {
	for _, c := range cs {
		v[c.i] = c.x
	}
}

// vecInto returns slot s's vector: its float32 slot, or its held
// components expanded into buf (len dim).
func (ix *Index) vecInto(s uint32, buf []float32) []float32 {
	if ix.held == nil {
		return ix.vec(s)
	}
	clear(buf)
	scatter(buf, ix.held.vector(s))
	return buf
}

// sparseDot is dot(q, v) for the vector v whose non-zero components are
// cs (in index order), bit for bit the result of vek32's AVX2 kernel on
// the expanded v: that kernel accumulates element i of the whole
// 32-element blocks into lane i mod 32 with a fused multiply-add, sums
// the lanes in a fixed tree, then adds the remaining elements one fused
// multiply-add at a time. A zero element's product leaves its lane as it
// was (a lane starts at +0 and never becomes -0), so skipping it changes
// nothing.
func sparseDot(q []float32, cs []component) float32 {
	blocks := len(q) &^ 31
	var acc [32]float32
	j := 0
	for ; j < len(cs) && int(cs[j].i) < blocks; j++ {
		i := cs[j].i
		acc[i&31] = fma32(q[i], cs[j].x, acc[i&31])
	}
	var r float32
	if blocks > 0 {
		var w [8]float32
		for l := range w {
			w[l] = acc[l] + acc[8+l] + acc[16+l] + acc[24+l]
		}
		r = (w[0] + w[4] + (w[2] + w[6])) + (w[1] + w[5] + (w[3] + w[7]))
	}
	for ; j < len(cs); j++ {
		r = fma32(q[cs[j].i], cs[j].x, r)
	}
	return r
}

// fma32 is a·b + c rounded once to float32, as the FMA instruction
// computes it. The product is exact in float64 (24 + 24 bits), so the
// float64 sum is rounded once, and rounding it to float32 again gives the
// exact sum's float32 unless the first rounding landed on a point halfway
// between two float32s (rounding is monotonic, and the halfway points are
// float64s) or below float32's normal range, where halfway points lie
// elsewhere. Then the sum is rounded to odd instead (truncated toward
// zero, its last bit set if inexact), which rounds to float32 as the exact
// sum would (Boldo and Melquiond: 53 ≥ 24 + 2 bits).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	const low, half = 1<<29 - 1, 1 << 28 // the 29 bits float32 drops, and their halfway value
	if u := math.Float64bits(s); u&low != half && (u>>52)&0x7ff > 1023-126 {
		return float32(s)
	}
	return roundOdd32(p, float64(c), s)
}

// roundOdd32 is fma32's rare path: s = p + c rounded to nearest.
func roundOdd32(p, c, s float64) float32 {
	z := s - p
	e := (p - (s - z)) + (c - z) // the sum's exact error
	if u := math.Float64bits(s); e != 0 && u&1 == 0 {
		if (e > 0) == (s > 0) {
			u++ // s is nearer zero than the sum
		} else {
			u--
		}
		s = math.Float64frombits(u)
	}
	return float32(s)
}
