package graph

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	realtext "github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/memsize/heaptest"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv/kvtest"
)

// Bytes must be within these of the heap a graph adds: the engine's cache
// keeps users within a memory budget by it.
const minRatio, maxRatio = 0.8, 1.25

// checkBytes builds a graph attempts times and fails unless Bytes is
// within the bounds of the heap it added. Only the least heap counts:
// noise (the runtime's and the test framework's own allocations) only
// adds to it. (The walks' pool is emptied by heaptest's second
// collection, as it is not the graph's.)
func checkBytes(t *testing.T, attempts int, build func() *Graph) {
	t.Helper()
	g, heap := heaptest.Added(attempts, build)
	r := float64(g.Bytes()) / float64(heap)
	ents, edges := g.Len()
	t.Logf("%d entities, %d edges: Bytes %d, heap %d: %.3f×", ents, edges, g.Bytes(), heap, r)
	if r < minRatio || r > maxRatio {
		t.Errorf("Bytes %d, heap added %d: %.3f×, outside [%.2f, %.2f]", g.Bytes(), heap, r, minRatio, maxRatio)
	}
}

// userNames returns n distinct names of the kinds a user's facts name:
// people (one or two names, some with accents or in CJK), places, things
// and phrases cut from the corpus (many scripts, emoji).
func userNames(n int) []string {
	first := []string{"Alex", "Sarah", "Priya", "José", "Zoë", "Mei", "Oluwaseun", "Liam", "Fatima", "Hiroshi",
		"Anna", "Dmitri", "Chloé", "Mohammed", "Ingrid", "Carlos", "Aisha", "Tom", "Yuki", "Noah", "李", "김민준", "Björn"}
	last := []string{"Chen", "García", "Natarajan", "O'Brien", "Kowalski", "Nakamura", "Smith", "Müller", "Okafor",
		"Rossi", "Haddad", "Johansson", "Nguyen", "Silva", "Ivanova", "Dubois", "小龙", "Park", "Andersen"}
	places := []string{"Oslo", "San Francisco Bay Area", "東京", "Lisbon", "Rīga", "New York City", "São Paulo",
		"the lake house", "Grandma's farm", "Fremont", "Gas Works Park", "القاهرة", "Zürich", "the office on 5th"}
	r := rand.New(rand.NewPCG(7, uint64(n)))
	corpus := corpusNames()
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var name string
		switch k := r.IntN(20); {
		case k < 5:
			name = first[r.IntN(len(first))] + " " + last[r.IntN(len(last))]
		case k < 6:
			name = first[r.IntN(len(first))]
		case k < 8:
			name = places[r.IntN(len(places))]
		case k < 10:
			name = corpus[r.IntN(len(corpus))]
		default:
			name = realtext.Words(r, 1+r.IntN(3))
		}
		if key := norm.Key(name); key != "" && !seen[key] && len(name) < 80 {
			seen[key] = true
			out = append(out, name)
		}
	}
	return out
}

// userLabels are a user's predicates: a few, one not in normal form.
var userLabels = []string{"lives_in", "works_at", "brother", "likes", "has_pet", "visited", "friend_of", "  Allergic To ", "說"}

// A workload is the writes that build a graph: edge i is froms[i]
// -labels[i]-> tos[i], all indexes into names. Written with copies of
// the names, as the engine writes names decoded from its facts.
type workload struct {
	names      []string
	froms, tos []int
	labels     []int
	docs       []uint32
}

// knowledgeGraph is a user's graph of facts: most from the user or from
// an entity already met, most to an entity not met before, so most
// entities have one or two edges.
func knowledgeGraph(edges int) *workload {
	w := &workload{names: userNames(edges)}
	r := rand.New(rand.NewPCG(11, uint64(edges)))
	next := 1 // names[0] is the user
	met := func() int { return r.IntN(next) }
	fresh := func() int {
		if next == len(w.names) {
			return met()
		}
		next++
		return next - 1
	}
	for i := range edges {
		var from, to int
		switch k := r.IntN(10); {
		case k < 3:
			from = 0
		case k < 8:
			from = met()
		default:
			from = fresh()
		}
		if r.IntN(10) < 7 {
			to = fresh()
		} else {
			to = met()
		}
		w.add(uint32(i), from, r.IntN(len(userLabels)), to)
	}
	return w
}

// hubGraph is a graph with a few entities of thousands of edges each, to
// entities most of which have one.
func hubGraph(hubs, per int) *workload {
	w := &workload{names: userNames(hubs * per)}
	r := rand.New(rand.NewPCG(13, uint64(hubs*per)))
	for i := range hubs * per {
		to := hubs + r.IntN(len(w.names)-hubs)
		w.add(uint32(i), i%hubs, r.IntN(len(userLabels)), to)
	}
	return w
}

func (w *workload) add(doc uint32, from, label, to int) {
	w.docs = append(w.docs, doc)
	w.froms, w.tos, w.labels = append(w.froms, from), append(w.tos, to), append(w.labels, label)
}

// write applies the workload to g, with fresh copies of the names and
// labels (what the engine hands in is its own).
func (w *workload) write(tb testing.TB, g *Graph, kw interface {
	Set(k, v []byte) error
	Delete(k []byte) error
}) {
	for i, doc := range w.docs {
		from, to := strings.Clone(w.names[w.froms[i]]), strings.Clone(w.names[w.tos[i]])
		if err := g.AddEdge(kw, doc, from, strings.Clone(userLabels[w.labels[i]]), to); err != nil {
			tb.Fatal(err)
		}
	}
}

// walk queries g as the engine's queries do: the entities of a text,
// walks of two hops from them and from the user.
func walk(tb testing.TB, g *Graph, names []string) {
	ctx := context.Background()
	for i := 0; i < len(names); i += max(1, len(names)/50) {
		seeds := append(g.Entities("what about "+names[i]+" and "+names[(i*7)%len(names)]+"?"), names[0])
		if _, err := g.BFS(ctx, seeds, 2, nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestBytesMatchesHeap: Bytes is within a fifth of the heap a graph adds,
// for the shapes of users' graphs, however the graph came to be: written
// edge by edge, loaded from its records or from its image (before a walk
// and after walks), and written on top of an image (which builds the maps
// an image leaves out).
func TestBytesMatchesHeap(t *testing.T) {
	ctx := context.Background()
	shapes := []struct {
		name string
		w    *workload
	}{
		{"knowledge/edges=2000", knowledgeGraph(2000)},
		{"knowledge/edges=25000", knowledgeGraph(25000)},
		{"hubs=5x4000", hubGraph(5, 4000)},
	}
	attempts := 3
	if testing.Short() {
		attempts = 1
	}
	for _, sh := range shapes {
		w := sh.w
		store := kvtest.Map{}
		written := New([]byte("g/"))
		w.write(t, written, store)
		frozen, img := kvtest.Freeze(store), written.AppendImage(nil)
		fromImage := func() *Graph {
			g, err := LoadImage(bytes.Clone(img), []byte("g/"))
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		// More writes, on an image: new docs, to entities old and new,
		// and a few removals.
		more := &workload{names: w.names}
		r := rand.New(rand.NewPCG(17, uint64(len(w.docs))))
		for i := range len(w.docs) / 10 {
			more.add(uint32(len(w.docs)+i), r.IntN(len(w.names)), r.IntN(len(userLabels)), r.IntN(len(w.names)))
		}
		cases := []struct {
			name  string
			build func() *Graph
		}{
			{"written", func() *Graph {
				g := New([]byte("g/"))
				w.write(t, g, discard{})
				return g
			}},
			{"records", func() *Graph {
				g, err := LoadSized(ctx, frozen, []byte("g/"), len(w.docs))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}},
			{"image", fromImage},
			{"image+walks", func() *Graph {
				g := fromImage()
				walk(t, g, w.names)
				return g
			}},
			{"written+walks", func() *Graph {
				g := New([]byte("g/"))
				w.write(t, g, discard{})
				walk(t, g, w.names)
				return g
			}},
			{"image+writes", func() *Graph {
				g := fromImage()
				more.write(t, g, discard{})
				for doc := uint32(0); doc < uint32(len(w.docs)); doc += 97 {
					if err := g.RemoveEdge(discard{}, doc); err != nil {
						t.Fatal(err)
					}
				}
				walk(t, g, w.names)
				return g
			}},
		}
		for _, c := range cases {
			t.Run(sh.name+"/"+c.name, func(t *testing.T) { checkBytes(t, attempts, c.build) })
		}
	}
}

// TestBytesAcrossWrites: across a long run of writes and removals, on a
// graph written from empty and on one loaded from an image, Bytes stays
// within its bounds of the heap the graph holds, and the changes noted
// since the last walk never pass a quarter of what it counted (the
// amortised re-walk).
func TestBytesAcrossWrites(t *testing.T) {
	ops := 60000
	if testing.Short() {
		ops = 20000
	}
	names := userNames(ops / 2)
	base := knowledgeGraph(2000)
	img := func() []byte {
		g := New([]byte("g/"))
		base.write(t, g, discard{})
		return g.AppendImage(nil)
	}()
	for _, from := range []string{"empty", "image"} {
		t.Run(from, func(t *testing.T) {
			// Everything the run needs is made before the heap is first
			// read: what the heap gains is the graph's.
			r := rand.New(rand.NewPCG(19, 20))
			live := make([]uint32, 0, ops+len(base.docs))
			next := uint32(0)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			var g *Graph
			if from == "empty" {
				g = New([]byte("g/"))
			} else {
				var err error
				if g, err = LoadImage(bytes.Clone(img), []byte("g/")); err != nil {
					t.Fatal(err)
				}
				live = append(live, base.docs...)
				next = uint32(len(base.docs))
			}
			worst, best := 0.0, 2.0
			for i := range ops {
				// Grow for the first half (more adds than removals), then
				// shrink: the graph's memory is held by slices and maps
				// that do not shrink as it does.
				add := r.IntN(10) < 6
				if i > ops/2 {
					add = r.IntN(10) < 3
				}
				if add || len(live) == 0 {
					from, to := names[r.IntN(1+i/2)], names[r.IntN(len(names))]
					if r.IntN(4) == 0 {
						from = names[0]
					}
					if err := g.AddEdge(discard{}, next, strings.Clone(from), userLabels[r.IntN(len(userLabels))], strings.Clone(to)); err != nil {
						t.Fatal(err)
					}
					live = append(live, next)
					next++
				} else {
					k := r.IntN(len(live))
					if err := g.RemoveEdge(discard{}, live[k]); err != nil {
						t.Fatal(err)
					}
					live[k] = live[len(live)-1]
					live = live[:len(live)-1]
				}
				if a := &g.acct; a.WalkDue() {
					t.Fatalf("after write %d: %d bytes of changes since a walk of %d", i, a.Drift(), a.LastWalk())
				}
				if (i+1)%(ops/10) == 0 {
					runtime.GC()
					runtime.GC()
					runtime.ReadMemStats(&after)
					heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
					ratio := float64(g.Bytes()) / float64(heap)
					worst, best = max(worst, ratio), min(best, ratio)
					if ratio < minRatio || ratio > maxRatio {
						ents, edges := g.Len()
						t.Errorf("after write %d (%d entities, %d edges): Bytes %d, heap added %d: %.3f×", i, ents, edges, g.Bytes(), heap, ratio)
					}
				}
			}
			// The names too: freed before the last reading, they would
			// take their bytes off the heap the graph seems to add.
			runtime.KeepAlive(names)
			runtime.KeepAlive(g)
			t.Logf("%d writes: Bytes/heap from %.3f to %.3f", ops, best, worst)
		})
	}
}

// TestBytesConcurrent: Bytes may be called while writes and walks run
// (run with -race), and never reports an empty graph for a full one.
func TestBytesConcurrent(t *testing.T) {
	w := knowledgeGraph(2000)
	g := New([]byte("g/"))
	w.write(t, g, discard{})
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range 3000 {
			doc := uint32(len(w.docs) + i)
			if err := g.AddEdge(discard{}, doc, "user", "likes", fmt.Sprint("thing ", i)); err != nil {
				t.Error(err)
				return
			}
			if err := g.RemoveEdge(discard{}, doc-1000); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				walk(t, g, w.names[:100])
			}
		}
	})
	for {
		select {
		case <-done:
			wg.Wait()
			return
		default:
			if n := g.Bytes(); n < 100_000 {
				t.Fatalf("Bytes %d of a graph of 2000 edges", n)
			}
		}
	}
}
