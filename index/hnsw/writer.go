package hnsw

import (
	"errors"
	"fmt"

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
}

// NewWriter returns a Writer for the index New(dim, prefix, o) would make.
func NewWriter(dim int, prefix []byte, o Options) *Writer {
	return &Writer{ix: New(dim, prefix, o), vec: make([]float32, dim)}
}

// Add writes id's vector record to w (the index's Add of a new id).
func (wr *Writer) Add(w kv.Writer, id uint32, vec []float32) error {
	ix := wr.ix
	if ix.graph || wr.n+1 >= ix.o.GraphAt {
		return ErrWriterFull
	}
	if wr.n > 0 && id <= wr.last {
		return fmt.Errorf("hnsw: writer: id %d after %d", id, wr.last)
	}
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
