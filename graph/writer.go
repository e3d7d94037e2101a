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
	label, fromNorm, toNorm, err := edgeNames(doc, from, label, to)
	if err != nil {
		return err
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
	if err := wr.g.setEdge(w, doc, fk, tk, label); err != nil {
		return err
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
	if _, err := wr.g.setEntity(w, key, name); err != nil {
		return 0, err
	}
	wr.keys[norm] = key
	return key, nil
}
