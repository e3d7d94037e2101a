package graph

import (
	"fmt"
	"math"

	"github.com/memor-db/memor/kv"
)

// Writer writes the records of a new graph, exactly as [New] and AddEdge
// would, without holding the graph in memory: for a bulk import whose
// graph is loaded (by [Load]) only when first walked. It numbers entities
// as a Graph does, so it keeps one map entry per entity. Each doc takes
// one edge. Not safe for concurrent use.
type Writer struct {
	g    *Graph // empty: the prefix and the key buffer
	keys map[string]uint32
	docs map[uint32]struct{}
}

// NewWriter returns a Writer for the graph New(prefix) would make.
func NewWriter(prefix []byte) *Writer {
	return &Writer{g: New(prefix), keys: map[string]uint32{}, docs: map[uint32]struct{}{}}
}

// AddEdge writes the records of the edge of a new doc: from -label-> to,
// and of the entities it names first.
func (wr *Writer) AddEdge(w kv.Writer, doc uint32, from, label, to string) error {
	if w == nil {
		return ErrNilWriter
	}
	label = collapse(label)
	fromNorm, toNorm := normalize(from), normalize(to)
	if fromNorm == "" || toNorm == "" || label == "" {
		return fmt.Errorf("%w: doc %d: %q -%q-> %q", ErrEmptyName, doc, from, label, to)
	}
	if _, ok := wr.docs[doc]; ok {
		return fmt.Errorf("graph: writer: doc %d already has an edge", doc)
	}
	fk, err := wr.entity(w, from, fromNorm)
	if err != nil {
		return err
	}
	tk, err := wr.entity(w, to, toNorm)
	if err != nil {
		return err
	}
	err = wr.g.set(w, tagEdge, doc, func(v []byte) []byte {
		return append(kv.AppendUint32(kv.AppendUint32(v, fk), tk), label...)
	})
	if err != nil {
		return fmt.Errorf("graph: write edge of doc %d: %w", doc, err)
	}
	wr.docs[doc] = struct{}{}
	return nil
}

// entity returns the stored key of the entity named norm, writing its
// record if it is new (Graph.entityID).
func (wr *Writer) entity(w kv.Writer, name, norm string) (uint32, error) {
	if k, ok := wr.keys[norm]; ok {
		return k, nil
	}
	if uint64(len(wr.keys)) > math.MaxUint32 {
		return 0, ErrTooManyEntities
	}
	key := uint32(len(wr.keys))
	display := collapse(name)
	if err := wr.g.set(w, tagEntity, key, func(v []byte) []byte { return append(v, display...) }); err != nil {
		return 0, fmt.Errorf("graph: write entity: %w", err)
	}
	wr.keys[norm] = key
	return key, nil
}
