package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv/kvtest"
)

// model is the reference for the walk: the graph as a plain edge list by
// doc, entities by identity, walked by a naive breadth-first search.
type model struct {
	edges map[uint32]modelEdge
}

type modelEdge struct{ from, label, to string } // identities, clean label

// hopKey is a hop compared by identity: display forms are the graph's
// first-seen ones, which the model does not track.
type hopKey struct {
	from, label, to string
	doc             uint32
	inverse         bool
}

func keys(ps []Path) [][]hopKey {
	out := make([][]hopKey, len(ps))
	for i, p := range ps {
		for _, h := range p.Hops {
			out[i] = append(out[i], hopKey{norm.Key(h.From), h.Label, norm.Key(h.To), h.Doc, h.Inverse})
		}
	}
	return out
}

// bfs is the naive walk: each entity's edges in doc order, each entity
// and edge walked once, one path per walked edge, at most limit.
func (m *model) bfs(seeds []string, depth, limit int, allow *roaring.Bitmap) [][]hopKey {
	adj := map[string][]uint32{}
	for doc, e := range m.edges {
		adj[e.from] = append(adj[e.from], doc)
		if e.to != e.from {
			adj[e.to] = append(adj[e.to], doc)
		}
	}
	for _, l := range adj {
		slices.Sort(l)
	}
	type mnode struct {
		ent  string
		path []hopKey
	}
	seenEnt, seenEdge := map[string]bool{}, map[uint32]bool{}
	var frontier []mnode
	for _, s := range seeds {
		k := norm.Key(s)
		if _, ok := adj[k]; !ok || seenEnt[k] {
			continue
		}
		seenEnt[k] = true
		frontier = append(frontier, mnode{ent: k})
	}
	var out [][]hopKey
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []mnode
		for _, n := range frontier {
			for _, doc := range adj[n.ent] {
				if seenEdge[doc] || (allow != nil && !allow.Contains(doc)) {
					continue
				}
				seenEdge[doc] = true
				e := m.edges[doc]
				other, inverse := e.to, false
				if e.from != n.ent {
					other, inverse = e.from, true
				}
				p := append(slices.Clone(n.path), hopKey{n.ent, e.label, other, doc, inverse})
				out = append(out, p)
				if len(out) >= limit {
					return out
				}
				if !seenEnt[other] {
					seenEnt[other] = true
					next = append(next, mnode{ent: other, path: p})
				}
			}
		}
		frontier = next
	}
	return out
}

// out is the model's Out: edges leaving subject with label, by doc.
func (m *model) out(subject, label string, allow *roaring.Bitmap) []hopKey {
	var out []hopKey
	for doc, e := range m.edges {
		if e.from == norm.Key(subject) && e.label == label && (allow == nil || allow.Contains(doc)) {
			out = append(out, hopKey{e.from, e.label, e.to, doc, false})
		}
	}
	slices.SortFunc(out, func(a, b hopKey) int { return int(a.doc) - int(b.doc) })
	return out
}

// randomEdge draws an edge of a graph with hubs (entities 0–2 are an
// endpoint of about a third of the edges), self loops and short cycles.
func randomEdge(r *rand.Rand, entities int) (from, label, to string) {
	pick := func() int {
		if r.IntN(3) == 0 {
			return r.IntN(3)
		}
		return r.IntN(entities)
	}
	a, b := pick(), pick()
	switch r.IntN(10) {
	case 0:
		b = a // self loop
	case 1:
		b = (a + 1) % entities // a ring through every entity: cycles
	}
	spell := func(i int) string {
		if r.IntN(2) == 0 {
			return fmt.Sprintf("Entity %d", i)
		}
		return fmt.Sprintf("  entity   %d ", i)
	}
	return spell(a), fmt.Sprintf("rel%d", r.IntN(4)), spell(b)
}

// TestCSRWalkMatchesNaiveBFS is the property test of the CSR walk: on
// random graphs with hubs, self loops, cycles and time-filtered edges,
// loaded (adjacency built once) and then patched by random adds,
// replacements and removals (some entities dirty, rebuilds as writes
// accumulate), BFSLimit, Reach and Out return exactly what the naive
// model does, in the same order, and Check (which verifies the adjacency
// against the adj lists) passes.
func TestCSRWalkMatchesNaiveBFS(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		// Odd seeds are never loaded: their adjacency is built by the
		// writes alone, from empty.
		loaded := seed%2 == 0
		r := rand.New(rand.NewPCG(seed, 19))
		entities := 20 + r.IntN(200)
		nEdges := entities * (1 + r.IntN(6))
		w := kvtest.Map{}
		m := &model{edges: map[uint32]modelEdge{}}
		g0 := New([]byte("g/"))
		add := func(g *Graph, doc uint32) {
			from, label, to := randomEdge(r, entities)
			if err := g.AddEdge(w, doc, from, label, to); err != nil {
				t.Fatal(err)
			}
			m.edges[doc] = modelEdge{norm.Key(from), label, norm.Key(to)}
		}
		for doc := range uint32(nEdges) {
			add(g0, doc)
		}
		g := g0
		if loaded {
			var err error
			if g, err = Load(ctx, w, []byte("g/")); err != nil {
				t.Fatal(err)
			}
			if dirty, newer := g.stale(); dirty+newer != 0 {
				t.Fatalf("seed %d: %d dirty, %d new entities after Load", seed, dirty, newer)
			}
		}
		compare := func(round int) {
			t.Helper()
			if err := g.Check(ctx, w); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			if dirty, newer := g.stale(); dirty > max(minStale, g.adj.n/8) || newer > max(minStale, g.adj.n) {
				t.Fatalf("seed %d round %d: %d dirty and %d new entities of %d, not rebuilt", seed, round, dirty, newer, len(g.ents))
			}
			for trial := range 12 {
				var allow *roaring.Bitmap
				if trial%3 != 0 {
					allow = roaring.New()
					for doc := range m.edges {
						if r.IntN(3) != 0 {
							allow.Add(doc)
						}
					}
					allow.Add(uint32(nEdges * 4)) // a doc beyond the graph's
					if trial%3 == 2 {
						allow.RunOptimize()
					}
				}
				seeds := []string{fmt.Sprintf("ENTITY %d", r.IntN(3)), fmt.Sprintf("entity %d", r.IntN(entities)), "nobody"}
				if trial%4 == 0 {
					seeds = seeds[1:]
				}
				depth := 1 + trial%4
				limit := []int{1, 7, 50, 1 << 30}[r.IntN(4)]
				want := m.bfs(seeds, depth, limit, allow)
				ps, err := g.BFSLimit(ctx, seeds, depth, limit, allow)
				if err != nil {
					t.Fatal(err)
				}
				if got := keys(ps); !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("seed %d round %d trial %d (depth %d, limit %d): %d paths, want %d\n got %v\nwant %v",
						seed, round, trial, depth, limit, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
				}
				all, err := g.BFSLimit(ctx, seeds, depth, 1<<30, allow)
				if err != nil {
					t.Fatal(err)
				}
				var reached []Path
				err = g.Reach(ctx, seeds, depth, allow, func(x Reached) bool {
					p := x.Path()
					if x.Doc() != p.Doc() || x.Len() != len(p.Hops) {
						t.Fatalf("Reached.Doc %d, Len %d; path %s", x.Doc(), x.Len(), p)
					}
					reached = append(reached, p)
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(keys(reached), keys(all), slices.Equal) {
					t.Fatalf("seed %d round %d trial %d: Reach differs from BFSLimit", seed, round, trial)
				}
				for _, subj := range seeds {
					for l := range 4 {
						label := fmt.Sprintf("rel%d", l)
						var got []hopKey
						for _, h := range g.Out(subj, label, allow) {
							got = append(got, hopKey{norm.Key(h.From), h.Label, norm.Key(h.To), h.Doc, h.Inverse})
						}
						if want := m.out(subj, label, allow); !slices.Equal(got, want) {
							t.Fatalf("seed %d round %d: Out(%q, %q) = %v, want %v", seed, round, subj, label, got, want)
						}
					}
				}
			}
		}
		compare(0)
		for round := 1; round <= 8; round++ {
			// A batch of patches: new docs, replaced docs (same doc, new
			// edge), removals; sometimes enough to force a rebuild.
			for range r.IntN(3) * entities / 6 {
				switch doc := uint32(r.IntN(nEdges * 2)); r.IntN(3) {
				case 0:
					if err := g.RemoveEdge(w, doc); err != nil {
						t.Fatal(err)
					}
					delete(m.edges, doc)
				default:
					add(g, doc)
				}
			}
			compare(round)
		}
	}
}

// TestReachStopsAndCancels: fn returning false ends the calls, and a
// cancelled context ends the walk with its error.
func TestReachStopsAndCancels(t *testing.T) {
	w := kvtest.Map{}
	g := New(nil)
	for i := range uint32(3000) {
		if err := g.AddEdge(w, i, "hub", "rel", fmt.Sprintf("leaf %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := g.Reach(context.Background(), []string{"hub"}, 1, nil, func(Reached) bool { n++; return n < 5 }); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("fn called %d times after returning false at 5", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Reach(ctx, []string{"hub"}, 2, nil, func(Reached) bool { return true }); err == nil {
		t.Fatal("cancelled walk returned no error")
	}
	if _, err := g.BFSLimit(ctx, []string{"hub"}, 2, 1<<30, nil); err == nil {
		t.Fatal("cancelled BFS returned no error")
	}
}
