package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/memor-db/memor/kv/kvtest"
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

// BenchmarkLoad is reading a 1000-edge graph back (a reopen's first
// query) from a store whose scan costs next to nothing, without and with
// the size hint.
func BenchmarkLoad(b *testing.B) {
	const n = 1000
	store := kvtest.Map{}
	g := New([]byte("g/"))
	preds := []string{"lives_in", "likes", "works_at", "plays_instrument", "speaks_language"}
	for i := range n {
		if err := g.AddEdge(store, uint32(i), "user", preds[i%len(preds)], fmt.Sprintf("object %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	frozen := kvtest.Freeze(store)
	for _, hint := range []int{0, n} {
		b.Run(fmt.Sprintf("hint=%d", hint), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadSized(context.Background(), frozen, []byte("g/"), hint); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
