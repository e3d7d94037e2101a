package graph

import (
	"fmt"
	"testing"
)

// discard is a kv.Writer that drops every write.
type discard struct{}

func (discard) Set(k, v []byte) error { return nil }
func (discard) Delete(k []byte) error { return nil }

// BenchmarkAddEdgeBulk is a new user's bulk import: a fresh graph and 1000
// edges user -pred-> object-i, each object a new entity (writes
// discarded: the store's cost is not the graph's).
func BenchmarkAddEdgeBulk(b *testing.B) {
	const n = 1000
	preds := []string{"lives_in", "likes", "works_at", "plays_instrument", "speaks_language"}
	objects := make([]string, n)
	for i := range objects {
		objects[i] = fmt.Sprintf("object-%d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		g := New([]byte("user/g/"))
		for i, o := range objects {
			if err := g.AddEdge(discard{}, uint32(i), "user", preds[i%len(preds)], o); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/doc")
}
