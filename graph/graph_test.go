package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

type fact struct {
	doc         uint32
	from, l, to string
}

func build(t *testing.T, w kvtest.Map, facts ...fact) *Graph {
	t.Helper()
	g := New([]byte("g/"))
	for _, f := range facts {
		if err := g.AddEdge(w, f.doc, f.from, f.l, f.to); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return g
}

func render(ps []Path) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

var family = []fact{
	{1, "user", "brother", "Alex"},
	{2, "Alex", "has_pet", "golden retriever"},
	{3, "user", "lives_in", "Paris"},
	{4, "user", "lives_in", "Berlin"}, // supersedes doc 3
	{5, "golden retriever", "named", "Rex"},
}

func TestPathRendering(t *testing.T) {
	w := kvtest.Map{}
	g := build(t, w, family...)
	ctx := context.Background()
	ps, err := g.BFS(ctx, []string{"user"}, 0, roaring.BitmapOf(1, 2, 4, 5))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user → brother → Alex",
		"user → lives_in → Berlin",
		"user → brother → Alex → has_pet → golden retriever",
		"user → brother → Alex → has_pet → golden retriever → named → Rex",
	}
	if got := render(ps); !slices.Equal(got, want) {
		t.Fatalf("from user:\n got %q\nwant %q", got, want)
	}
	if d := ps[2].Doc(); d != 2 {
		t.Fatalf("Doc() = %d, want 2", d)
	}
	// Seeded by Alex (any case): the user is reached against the edge.
	ps, err = g.BFS(ctx, []string{"ALEX"}, 2, roaring.BitmapOf(1, 2, 4, 5))
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		"Alex ← brother ← user",
		"Alex → has_pet → golden retriever",
		"Alex ← brother ← user → lives_in → Berlin",
		"Alex → has_pet → golden retriever → named → Rex",
	}
	if got := render(ps); !slices.Equal(got, want) {
		t.Fatalf("from Alex:\n got %q\nwant %q", got, want)
	}
	if h := ps[0].Hops[0]; !h.Inverse || h.From != "Alex" || h.To != "user" || h.Doc != 1 {
		t.Fatalf("inverse hop = %+v", h)
	}
}

func TestAsOfFiltering(t *testing.T) {
	g := build(t, kvtest.Map{}, family...)
	ctx := context.Background()
	current := roaring.BitmapOf(1, 2, 4, 5) // doc 3 superseded
	ps, err := g.BFS(ctx, []string{"user"}, 1, current)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if strings.Contains(p.String(), "Paris") {
			t.Fatalf("superseded edge walked: %s", p)
		}
	}
	past := roaring.BitmapOf(1, 3)
	ps, _ = g.BFS(ctx, []string{"user"}, 3, past)
	if got, want := render(ps), []string{"user → brother → Alex", "user → lives_in → Paris"}; !slices.Equal(got, want) {
		t.Fatalf("as of the past: %q, want %q", got, want)
	}
	// A disallowed edge also blocks what lies behind it.
	ps, _ = g.BFS(ctx, []string{"user"}, 3, roaring.BitmapOf(2, 5))
	if len(ps) != 0 {
		t.Fatalf("walked past a disallowed edge: %q", render(ps))
	}
	// nil allow walks everything.
	ps, _ = g.BFS(ctx, []string{"user"}, 3, nil)
	if len(ps) != 5 {
		t.Fatalf("nil allow: %d paths, want 5: %q", len(ps), render(ps))
	}
}

func TestCyclesAndDepth(t *testing.T) {
	var facts []fact
	// A ring a0 → a1 → … → a9 → a0, plus a self-loop and a parallel edge.
	for i := range 10 {
		facts = append(facts, fact{uint32(i + 1), fmt.Sprintf("a%d", i), "next", fmt.Sprintf("a%d", (i+1)%10)})
	}
	facts = append(facts, fact{20, "a0", "likes", "a0"}, fact{21, "a1", "knows", "a0"})
	g := build(t, kvtest.Map{}, facts...)
	ctx := context.Background()
	ps, err := g.BFS(ctx, []string{"a0"}, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[uint32]bool{}
	for _, p := range ps {
		if docs[p.Doc()] {
			t.Fatalf("edge %d returned twice", p.Doc())
		}
		docs[p.Doc()] = true
		if len(p.Hops) > 6 {
			t.Fatalf("path longer than the ring's radius: %s", p)
		}
	}
	if len(docs) != 12 {
		t.Fatalf("walked %d edges, want 12", len(docs))
	}
	for depth, want := range map[int]int{1: 4, 2: 6, 3: 8} { // a0's edges: 1, 10, 20, 21
		ps, _ := g.BFS(ctx, []string{"a0"}, depth, nil)
		if len(ps) != want {
			t.Fatalf("depth %d: %d paths, want %d: %q", depth, len(ps), want, render(ps))
		}
		for _, p := range ps {
			if len(p.Hops) > depth {
				t.Fatalf("depth %d: path %s", depth, p)
			}
		}
	}
	if ps, _ := g.BFS(ctx, []string{"a0"}, 0, nil); len(ps) != 8 {
		t.Fatalf("default depth gave %d paths, want 8", len(ps))
	}
	if ps, _ := g.BFSLimit(ctx, []string{"a0"}, 10, 3, nil); len(ps) != 3 {
		t.Fatalf("limit 3 gave %d paths", len(ps))
	}
	if ps, _ := g.BFS(ctx, []string{"nobody", ""}, 3, nil); len(ps) != 0 {
		t.Fatalf("unknown seed gave %q", render(ps))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.BFS(cctx, []string{"a0"}, 3, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled walk: err = %v", err)
	}
}

func TestEntities(t *testing.T) {
	w := kvtest.Map{}
	g := build(t, w, append(slices.Clone(family), fact{6, "Rex", "is_a", "retriever"}, fact{7, "user", "visited", "New York City"}, fact{10, "user", "born_in", "new york"})...)
	cases := []struct {
		text string
		want []string
	}{
		{"my brother Alex", []string{"Alex"}},
		{"does my brother alex still have the Golden  Retriever?", []string{"Alex", "golden retriever"}},
		{"a retriever, Alexander, alex's dog", []string{"retriever", "Alex"}},
		{"PARIS or berlin or paris", []string{"Paris", "Berlin"}},
		{"new york city trip and york", []string{"New York City"}},
		{"New York, then new-york-city", []string{"new york", "New York City"}},
		{"nothing here", nil},
		{"", nil},
		{"I moved to new york", []string{"new york"}}, // longer names do not fit
		{"york city", nil},
	}
	for _, c := range cases {
		if got := g.Entities(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Entities(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	// Identity is case-insensitive; the first display form stays.
	if err := g.AddEdge(w, 8, "ALEX", "likes", "paris"); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Len(); n != 9 {
		t.Fatalf("%d entities, want 9", n)
	}
	if got := g.Entities("alex"); !slices.Equal(got, []string{"Alex"}) {
		t.Fatalf("display form changed: %q", got)
	}
	// Removing the last edge of an entity removes it.
	for _, d := range []uint32{5, 6} {
		if err := g.RemoveEdge(w, d); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.Entities("rex the retriever"); got != nil {
		t.Fatalf("orphans still matched: %q", got)
	}
	if err := g.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

func TestReplaceAndErrors(t *testing.T) {
	w := kvtest.Map{}
	g := build(t, w, family...)
	if err := g.AddEdge(w, 2, "Alex", "has_pet", "cat"); err != nil {
		t.Fatal(err)
	}
	ps, _ := g.BFS(context.Background(), []string{"Alex"}, 1, nil)
	if got := render(ps); !slices.Contains(got, "Alex → has_pet → cat") || slices.Contains(got, "Alex → has_pet → golden retriever") {
		t.Fatalf("replaced edge: %q", got)
	}
	if err := g.AddEdge(w, 9, " ", "x", "y"); !errors.Is(err, ErrEmptyName) {
		t.Fatalf("empty name: %v", err)
	}
	if err := g.AddEdge(w, 9, "x", "", "y"); !errors.Is(err, ErrEmptyName) {
		t.Fatalf("empty label: %v", err)
	}
	if err := g.AddEdge(nil, 9, "x", "l", "y"); !errors.Is(err, ErrNilWriter) {
		t.Fatalf("nil writer: %v", err)
	}
	if err := g.RemoveEdge(w, 12345); err != nil {
		t.Fatalf("removing a missing edge: %v", err)
	}
	if err := g.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// randomGraph builds a graph of random edges over n entities, with some
// replaced and removed.
func randomGraph(t *testing.T, r *rand.Rand, w kv.Writer, prefix []byte, entities, edges int) *Graph {
	t.Helper()
	g := New(prefix)
	name := func() string {
		i := r.IntN(entities)
		if r.IntN(2) == 0 {
			return fmt.Sprintf("Entity %d", i)
		}
		return fmt.Sprintf("entity  %d", i)
	}
	for range edges {
		doc := uint32(r.IntN(edges * 2))
		if r.IntN(8) == 0 {
			if err := g.RemoveEdge(w, doc); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := g.AddEdge(w, doc, name(), fmt.Sprintf("rel%d", r.IntN(5)), name()); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// TestBFSMatchesReference checks the walk against a reference: the docs
// returned are exactly the allowed edges with an endpoint closer than depth
// to a seed, and each path is a chain of real, allowed edges whose length
// is that distance plus one.
func TestBFSMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w := kvtest.Map{}
	g := randomGraph(t, r, w, []byte("g/"), 300, 1500)
	if err := g.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	type e struct{ from, label, to string }
	all := map[uint32]e{}
	for doc, slot := range g.byDoc {
		ed := g.edges[slot]
		all[doc] = e{g.ents[ed.from].display, ed.label, g.ents[ed.to].display}
	}
	for trial := range 30 {
		allow := roaring.New()
		for doc := range all {
			if r.IntN(4) != 0 {
				allow.Add(doc)
			}
		}
		seeds := []string{fmt.Sprintf("ENTITY %d", r.IntN(300)), fmt.Sprintf("entity %d", r.IntN(300))}
		depth := 1 + trial%4
		// Reference: BFS distances over allowed edges, undirected.
		dist := map[string]int{}
		var queue []string
		for _, s := range seeds {
			if _, ok := g.byNorm[norm.Key(s)]; ok {
				d := g.ents[g.byNorm[norm.Key(s)]].display
				if _, seen := dist[d]; !seen {
					dist[d] = 0
					queue = append(queue, d)
				}
			}
		}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for doc, ed := range all {
				if !allow.Contains(doc) {
					continue
				}
				for _, p := range [][2]string{{ed.from, ed.to}, {ed.to, ed.from}} {
					if p[0] == x {
						if _, seen := dist[p[1]]; !seen {
							dist[p[1]] = dist[x] + 1
							queue = append(queue, p[1])
						}
					}
				}
			}
		}
		want := map[uint32]int{} // doc → path length
		for doc, ed := range all {
			if !allow.Contains(doc) {
				continue
			}
			best := -1
			for _, end := range []string{ed.from, ed.to} {
				if d, ok := dist[end]; ok && d < depth && (best < 0 || d < best) {
					best = d
				}
			}
			if best >= 0 {
				want[doc] = best + 1
			}
		}
		ps, err := g.BFSLimit(context.Background(), seeds, depth, 1<<30, allow)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != len(want) {
			t.Fatalf("trial %d: %d paths, want %d", trial, len(ps), len(want))
		}
		for _, p := range ps {
			if want[p.Doc()] != len(p.Hops) {
				t.Fatalf("trial %d: path %s has %d hops, want %d", trial, p, len(p.Hops), want[p.Doc()])
			}
			at := p.Hops[0].From
			if dist[at] != 0 {
				t.Fatalf("trial %d: path %s does not start at a seed", trial, p)
			}
			for _, h := range p.Hops {
				ed, ok := all[h.Doc]
				if !ok || !allow.Contains(h.Doc) || h.From != at || h.Label != ed.label {
					t.Fatalf("trial %d: bad hop %+v in %s", trial, h, p)
				}
				if (!h.Inverse && (ed.from != h.From || ed.to != h.To)) || (h.Inverse && (ed.to != h.From || ed.from != h.To)) {
					t.Fatalf("trial %d: hop %+v does not match edge %+v", trial, h, ed)
				}
				at = h.To
			}
		}
	}
}

func TestReloadEquality(t *testing.T) {
	ctx := context.Background()
	db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prefix := kv.UserKey("bob", kv.SubGraph)
	r := rand.New(rand.NewPCG(5, 6))
	b := db.NewBatch()
	g := randomGraph(t, r, b, prefix, 200, 1000)
	// Another user's graph in the same store must not leak in.
	if _, err := db.Get(prefix); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("unexpected key at the bare prefix")
	}
	other := New(kv.UserKey("bob/", kv.SubGraph))
	if err := other.AddEdge(b, 1, "Entity 1", "secret", "mallory"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	re, err := Load(ctx, db, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	ge, gd := g.Len()
	rn, rd := re.Len()
	if ge != rn || gd != rd {
		t.Fatalf("reloaded %d entities / %d edges, want %d / %d", rn, rd, ge, gd)
	}
	for i := range 50 {
		seed := []string{fmt.Sprintf("entity %d", i)}
		a, err1 := g.BFSLimit(ctx, seed, 3, 1<<20, nil)
		c, err2 := re.BFSLimit(ctx, seed, 3, 1<<20, nil)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(render(a), render(c)) {
			t.Fatalf("seed %s: paths differ after reload", seed)
		}
	}
	text := "entity 1 and Entity 2 met entity 199"
	if a, c := g.Entities(text), re.Entities(text); !slices.Equal(a, c) {
		t.Fatalf("Entities differ after reload: %q vs %q", a, c)
	}
	if got := re.Entities("mallory"); got != nil {
		t.Fatalf("another user's entity leaked: %q", got)
	}
	// New entities after reload get fresh IDs and everything stays consistent.
	b = db.NewBatch()
	for i := range 20 {
		if err := re.AddEdge(b, uint32(10_000+i), fmt.Sprintf("new %d", i), "rel", "entity 1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Check reports a store that disagrees with memory.
	b = db.NewBatch()
	_ = b.Set(append(append([]byte(nil), prefix...), tagEntity, 0xFF, 0, 0, 0), []byte("ghost"))
	_ = b.Delete(re.appendKey(nil, tagEdge, 10_000))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, db); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Check = %v, want ErrInconsistent", err)
	}
	if _, err := Load(ctx, db, prefix); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of orphan entity: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	g := New(nil)
	var mu sync.Mutex // kvtest.Map is not safe for concurrent use
	w := kvtest.Map{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 9))
			for range 500 {
				a, b := fmt.Sprintf("e%d", r.IntN(50)), fmt.Sprintf("e%d", r.IntN(50))
				switch i % 2 {
				case 0:
					mu.Lock()
					if r.IntN(4) == 0 {
						_ = g.RemoveEdge(w, uint32(r.IntN(300)))
					} else {
						_ = g.AddEdge(w, uint32(r.IntN(300)), a, "rel", b)
					}
					mu.Unlock()
				default:
					if _, err := g.BFS(context.Background(), []string{a}, 3, nil); err != nil {
						t.Error(err)
					}
					_ = g.Entities(a + " and " + b)
				}
			}
		})
	}
	wg.Wait()
	if err := g.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// TestSubjectDocsAndOut checks the two lookups by subject against the
// edges themselves: AddSubjectDocs gives the documents of the edges a
// subject is the source of (not those it is the target of), Out the edges
// of one label leaving it, filtered.
func TestSubjectDocsAndOut(t *testing.T) {
	w := kvtest.Map{}
	g := build(t, w, append(slices.Clone(family), fact{6, "Alex", "brother", "user"}, fact{7, "Alex", "lives_in", "Paris"})...)
	got := roaring.New()
	g.AddSubjectDocs(got, "USER", "nobody")
	if want := roaring.BitmapOf(1, 3, 4); !got.Equals(want) {
		t.Fatalf("AddSubjectDocs(user) = %v, want %v", got, want)
	}
	g.AddSubjectDocs(got, "alex")
	if want := roaring.BitmapOf(1, 2, 3, 4, 6, 7); !got.Equals(want) {
		t.Fatalf("AddSubjectDocs(user, alex) = %v, want %v", got, want)
	}
	hops := g.Out("user", "lives_in", nil)
	want := []Hop{{From: "user", Label: "lives_in", To: "Paris", Doc: 3}, {From: "user", Label: "lives_in", To: "Berlin", Doc: 4}}
	if !slices.Equal(hops, want) {
		t.Fatalf("Out(user, lives_in) = %+v, want %+v", hops, want)
	}
	if hops := g.Out("user", "lives_in", roaring.BitmapOf(4, 7)); !slices.Equal(hops, want[1:]) {
		t.Fatalf("Out(user, lives_in) filtered = %+v, want %+v", hops, want[1:])
	}
	if hops := g.Out("Paris", "lives_in", nil); hops != nil {
		t.Fatalf("Out(Paris) walked edges against their direction: %+v", hops)
	}
}

// TestLoadFindsEndpoints: a load finds every edge's endpoints whether
// the stored entity IDs are dense (a table) or sparse, after most
// entities went (binary search), and refuses an edge naming an entity
// the store does not hold, in both.
func TestLoadFindsEndpoints(t *testing.T) {
	ctx := context.Background()
	for _, every := range []int{1, 20} { // every edge kept: dense IDs; one in 20: sparse
		t.Run(fmt.Sprintf("every=%d", every), func(t *testing.T) {
			db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			prefix := kv.UserKey("ann", kv.SubGraph)
			g := New(prefix)
			b := db.NewBatch()
			for i := range 100 {
				if err := g.AddEdge(b, uint32(i), fmt.Sprintf("person %d", i), "knows", fmt.Sprintf("place %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 100 {
				if i%every != 0 {
					if err := g.RemoveEdge(b, uint32(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			re, err := Load(ctx, db, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if err := re.Check(ctx, db); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i += every {
				seed := []string{fmt.Sprintf("person %d", i)}
				a, _ := g.BFS(ctx, seed, 2, nil)
				c, _ := re.BFS(ctx, seed, 2, nil)
				if !slices.Equal(render(a), render(c)) || len(c) != 1 {
					t.Fatalf("%s: %q after a load, want %q", seed, render(c), render(a))
				}
			}
			// The entity "place 0" goes from the store, its edge stays.
			var placeKey []byte
			err = db.Scan(ctx, append(slices.Clone(prefix), tagEntity), func(k, v []byte) error {
				if string(v) == "place 0" {
					placeKey = slices.Clone(k)
				}
				return nil
			})
			if err != nil || placeKey == nil {
				t.Fatalf("no record of place 0: %v", err)
			}
			b = db.NewBatch()
			if err := b.Delete(placeKey); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(ctx, db, prefix); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load of an edge naming a missing entity: %v", err)
			}
		})
	}
}
