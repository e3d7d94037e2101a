package graph

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/kv/kvtest"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden.txt from the current code")

// goldenWorkload runs the writes the golden file pins: a bulk import
// shaped like the engine's (user -pred-> a new object per fact), then
// replacements, removals and names that need normalising.
func goldenWorkload(t testing.TB, g *Graph, w *golden.Recorder) {
	preds := []string{"lives_in", "likes", "works_at", "plays_instrument", "speaks_language"}
	add := func(doc uint32, from, label, to string) {
		if err := g.AddEdge(w, doc, from, label, to); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		add(uint32(i), "user", preds[i%len(preds)], fmt.Sprintf("object-%d", i))
	}
	r := rand.New(rand.NewPCG(5, 6))
	names := []string{"Alex", "alex", "  Golden   Retriever ", "golden retriever", "retriever", "Straße",
		"STRASSE", "Ünïcödé Name", "user", "User", "object-3", "Object-3", "tab\tname", "café\u00a0au lait", "x"}
	labels := []string{"brother", "has_pet", "  spaced   label ", "likes", "Likes"}
	for range 600 {
		doc := uint32(r.IntN(1400))
		switch r.IntN(8) {
		case 0:
			if err := g.RemoveEdge(w, doc); err != nil {
				t.Fatal(err)
			}
		case 1:
			add(doc, "user", preds[r.IntN(len(preds))], fmt.Sprintf("object-%d", r.IntN(1000)))
		default:
			add(doc, names[r.IntN(len(names))], labels[r.IntN(len(labels))], names[r.IntN(len(names))])
		}
	}
	// An edge re-added unchanged, and a self-loop.
	add(2000, "Alex", "knows", "alex")
	add(2000, "alex", "knows", "ALEX")
}

// goldenQueries prints what the graph answers: walks, matches, slots.
func goldenQueries(g *Graph, out *strings.Builder) {
	allow := roaring.New()
	for d := uint32(0); d < 2100; d += 2 {
		allow.Add(d)
	}
	seeds := [][]string{{"user"}, {"Alex"}, {"golden retriever", "straße"}, {"object-3"}, {"nobody"}}
	for _, s := range seeds {
		for _, depth := range []int{1, 2, 3} {
			for _, a := range []*roaring.Bitmap{nil, allow} {
				paths, err := g.BFSLimit(context.Background(), s, depth, 40, a)
				fmt.Fprintf(out, "bfs %q depth=%d filter=%v: %d %v\n", s, depth, a != nil, len(paths), err)
				for _, p := range paths {
					fmt.Fprintf(out, "  %d %s %+v\n", p.Doc(), p, p.Hops)
				}
			}
		}
		docs := roaring.New()
		g.AddSubjectDocs(docs, s...)
		fmt.Fprintf(out, "subject docs %q: %v\n", s, docs.ToArray())
	}
	for _, text := range []string{"my brother Alex has a Golden Retriever", "object 3 and object-999 in Straße",
		"user likes Ünïcödé name", "café au lait", ""} {
		fmt.Fprintf(out, "entities %q: %q\n", text, g.Entities(text))
	}
	for _, l := range []string{"likes", "brother", "spaced label", "has_pet"} {
		fmt.Fprintf(out, "out user %q: %+v\n", l, g.Out("user", l, nil))
		fmt.Fprintf(out, "out alex %q: %+v\n", l, g.Out("alex", l, allow))
	}
	e, d := g.Len()
	fmt.Fprintf(out, "len %d %d\n", e, d)
}

// TestGolden pins the persisted bytes and the answers of the graph to what
// they were before the write path was optimised: every write, in order,
// then the answers of the graph that made them and of the graph loaded
// from them. Run with -update to rewrite it (only when a change of format
// or results is intended).
func TestGolden(t *testing.T) {
	prefix := []byte("golden/graph/")
	g := New(prefix)
	store := kvtest.Map{}
	rec := &golden.Recorder{W: store}
	goldenWorkload(t, g, rec)
	var out strings.Builder
	out.WriteString(rec.Log())
	out.WriteString("-- built\n")
	goldenQueries(g, &out)
	if err := g.Check(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(context.Background(), store, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Check(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	out.WriteString("-- loaded\n")
	goldenQueries(loaded, &out)

	golden.Check(t, "testdata/golden.txt", out.String(), *updateGolden)
}
