package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
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

// userGraph writes, into a store, a graph shaped like an engine user's
// of the given number of facts: one edge per fact, most from the user,
// to objects named from the corpus (about a third as many as the facts),
// over twenty predicates.
func userGraph(tb testing.TB, edges int) (*kvtest.Frozen, *Graph) {
	store := kvtest.Map{}
	g := New([]byte("g/"))
	names := corpusNames()
	r := rand.New(rand.NewPCG(1, uint64(edges)))
	objects := names[:min(len(names), edges/3)]
	for i := range edges {
		from := "user"
		if r.IntN(5) < 2 {
			from = objects[r.IntN(len(objects))]
		}
		pred := fmt.Sprintf("predicate_%d", r.IntN(20))
		if err := g.AddEdge(store, uint32(i), from, pred, objects[r.IntN(len(objects))]); err != nil {
			tb.Fatal(err)
		}
	}
	return kvtest.Freeze(store), g
}

// BenchmarkLoad is reading a user's graph back on a reopen's first query,
// from the records (a store whose scan costs next to nothing, with the
// size hint the engine passes) or from its image; "+query" adds what the
// first query then asks (the entities of a text, a two-hop walk from
// them), so that work a load leaves for later is counted.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 20000} {
		frozen, g := userGraph(b, n)
		img := g.AppendImage(nil)
		text := "what did the user say about " + strings.Join(corpusNames()[:3], " and ")
		query := func(b *testing.B, g *Graph) {
			if _, err := g.BFS(ctx, append(g.Entities(text), "user"), 2, nil); err != nil {
				b.Fatal(err)
			}
		}
		load := map[string]func(b *testing.B) *Graph{
			"records": func(b *testing.B) *Graph {
				g, err := LoadSized(ctx, frozen, []byte("g/"), n)
				if err != nil {
					b.Fatal(err)
				}
				return g
			},
			"image": func(b *testing.B) *Graph {
				g, err := LoadImage(img, []byte("g/"))
				if err != nil {
					b.Fatal(err)
				}
				return g
			},
		}
		for _, how := range []string{"records", "image"} {
			for _, q := range []bool{false, true} {
				name := fmt.Sprintf("edges=%d/%s", n, how)
				if q {
					name += "+query"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(img)))
					cpu := cpuTime()
					for b.Loop() {
						g := load[how](b)
						if q {
							query(b, g)
						}
					}
					// The process's CPU time, the collector's included: on
					// a shared machine, steadier than the wall clock.
					b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// cpuTime returns the CPU time the process has used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
