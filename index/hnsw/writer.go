package hnsw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/memor-db/memor/kv"
)

// ErrWriterFull is returned by [Writer.Add] for the vector that would
// bring a new index to [Options.GraphAt]: from there the index needs its
// graph, which only an [Index] builds.
var ErrWriterFull = errors.New("hnsw: writer full: the index needs its graph")

// Writer writes the records of a new index, exactly as [New], Adds and
// [Index.Flush] would, without holding the vectors in memory: for a bulk
// import whose index is loaded (by [Load]) only when first searched. It
// takes IDs in increasing order and fewer than [Options.GraphAt] vectors
// (an index that builds its graph from the start cannot be written this
// way). Not safe for concurrent use.
type Writer struct {
	ix   *Index // empty: options, prefix and dimension
	n    int
	last uint32
	vec  []float32
	rec  []byte
	// AddSparse's dense copy (zero between calls), and its components
	// scaled and encoded.
	dense  []float32
	packed []float32
	halves []byte
}

// NewWriter returns a Writer for the index New(dim, prefix, o) would make.
func NewWriter(dim int, prefix []byte, o Options) *Writer {
	return &Writer{ix: New(dim, prefix, o), vec: make([]float32, dim)}
}

// Add writes id's vector record to w (the index's Add of a new id).
func (wr *Writer) Add(w kv.Writer, id uint32, vec []float32) error {
	if err := wr.admit(id); err != nil {
		return err
	}
	return wr.add(w, id, vec)
}

// admit refuses an id the writer cannot take next.
func (wr *Writer) admit(id uint32) error {
	if wr.ix.graph || wr.n+1 >= wr.ix.o.GraphAt {
		return ErrWriterFull
	}
	if wr.n > 0 && id <= wr.last {
		return fmt.Errorf("hnsw: writer: id %d after %d", id, wr.last)
	}
	return nil
}

// AddSparse is Add of the vector whose non-zero components are val at
// the increasing indexes idx (an [embed.Sparse] vector), writing the same
// record without building the dense vector: the components are scaled and
// encoded as Add scales and encodes them (element by element, so the
// same bits), and only the scale itself is computed over a dense copy,
// through the same SIMD kernel in the same order as Add. A vector with as
// many components as its dense record is shorter goes through Add, and
// so does a subnormal one.
func (wr *Writer) AddSparse(w kv.Writer, id uint32, idx []int32, val []float32) error {
	if err := wr.admit(id); err != nil {
		return err
	}
	ix := wr.ix
	if len(idx) != len(val) {
		return fmt.Errorf("%w: %d indexes for %d values", ErrDimension, len(idx), len(val))
	}
	if wr.dense == nil {
		wr.dense = make([]float32, ix.dim)
	}
	dense := wr.dense
	for k, i := range idx {
		if i < 0 || int(i) >= ix.dim || k > 0 && i <= idx[k-1] {
			for _, j := range idx[:k] {
				dense[j] = 0
			}
			return fmt.Errorf("%w: sparse index %d at %d (dimension %d, indexes must increase)", ErrDimension, i, k, ix.dim)
		}
		dense[i] = val[k]
	}
	scale, err := ix.scaleOf(dense)
	var top float32
	viaAdd := err == nil && 2*len(idx) >= ix.dim
	if err == nil && !viaAdd {
		// put, maxAbs and halfScaled act on each component alone; on the
		// packed components they give the bits they give on the dense
		// vector.
		packed := wr.packed[:0]
		for _, x := range val {
			if scale != 1 {
				x *= scale
			}
			packed = append(packed, x)
		}
		wr.packed = packed
		top = maxAbs(packed)
		viaAdd = top != 0 && math.IsInf(float64(1/top), 0)
	}
	// A dense vector goes through Add, and so does one whose largest
	// scaled component inverts to infinity (a subnormal vector under
	// Dot): there the zero components become NaN.
	if viaAdd {
		err = wr.add(w, id, dense)
	}
	for _, i := range idx {
		dense[i] = 0
	}
	if err != nil || viaAdd {
		return err
	}
	packed := wr.packed
	kl := ix.vecKeyLen()
	rec := ix.appendVecKey(wr.rec[:0], id)
	rec = binary.LittleEndian.AppendUint32(append(rec, sparseMarker), math.Float32bits(top))
	if top != 0 { // else every half is +0, as encodeHalf writes them
		halves := slices.Grow(wr.halves[:0], 2*len(packed))[:2*len(packed)]
		halfScaled(halves, packed, 1/top, top, false)
		wr.halves = halves
		for k, i := range idx {
			if h := binary.LittleEndian.Uint16(halves[2*k:]); h != 0 {
				rec = binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(rec, uint16(i)), h)
			}
		}
	}
	wr.rec = rec
	if err := w.Set(rec[:kl:kl], rec[kl:]); err != nil {
		return fmt.Errorf("hnsw: write vector %d: %w", id, err)
	}
	wr.n, wr.last = wr.n+1, id
	return nil
}

// add writes id's record of vec.
func (wr *Writer) add(w kv.Writer, id uint32, vec []float32) error {
	ix := wr.ix
	scale, err := ix.scaleOf(vec)
	if err != nil {
		return err
	}
	put(wr.vec, vec, scale)
	kl := ix.vecKeyLen()
	wr.rec = roundAppendVec(ix.appendVecKey(wr.rec[:0], id), wr.vec)
	if err := w.Set(wr.rec[:kl:kl], wr.rec[kl:]); err != nil {
		return fmt.Errorf("hnsw: write vector %d: %w", id, err)
	}
	wr.n, wr.last = wr.n+1, id
	return nil
}

// Room is how many more vectors Add takes.
func (wr *Writer) Room() int {
	if wr.ix.graph {
		return 0
	}
	return max(0, wr.ix.o.GraphAt-1-wr.n)
}

// Len is the number of vectors written.
func (wr *Writer) Len() int { return wr.n }

// Finish writes the index's meta key, if a vector was written (an index
// that never flushed a vector has none).
func (wr *Writer) Finish(w kv.Writer) error {
	if wr.n == 0 {
		return nil
	}
	if err := w.Set(wr.ix.metaKey(), wr.ix.meta().encode()); err != nil {
		return fmt.Errorf("hnsw: write meta: %w", err)
	}
	return nil
}
