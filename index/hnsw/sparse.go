package hnsw

import (
	"encoding/binary"
	"math"
	"math/bits"
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

// sparseHeader checks sparse record b of a vector of dim up to its
// entries (see decodeSparse) and returns its scale and entries.
func sparseHeader(b []byte, dim int) (scale float32, entries []byte, ok bool) {
	if len(b) < halfHeader || b[0] != sparseMarker || (len(b)-halfHeader)%sparseEntry != 0 {
		return 0, nil, false
	}
	entries = b[halfHeader:]
	if k := len(entries) / sparseEntry; 2*k >= dim || dim > maxSparseDim {
		return 0, nil, false
	}
	scale = math.Float32frombits(binary.LittleEndian.Uint32(b[1:]))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale < 0 {
		return 0, nil, false
	}
	return scale, entries, true
}

// decodeSparse writes the sparse vector b into dst, reporting false for a
// malformed record: a length that is not the header and whole entries, a
// scale the dense form rejects, an index out of order or range, a +0
// entry, or as many entries as the dense form would have been written
// with (every encoder writes the shorter form).
func decodeSparse(dst []float32, b []byte, zeroed bool) bool {
	scale, entries, ok := sparseHeader(b, len(dst))
	if !ok {
		return false
	}
	if !zeroed {
		clear(dst)
	}
	next := 0
	for ; len(entries) > 0; entries = entries[sparseEntry:] {
		i := int(binary.LittleEndian.Uint16(entries))
		h := binary.LittleEndian.Uint16(entries[2:])
		if i < next || i >= len(dst) || h == 0 {
			return false
		}
		dst[i] = fromHalf(h) * scale
		next = i + 1
	}
	return true
}
