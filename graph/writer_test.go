package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/kv/kvtest"
)

// TestWriterEqualsGraph: a Writer writes, byte for byte and in order, what
// a new Graph's AddEdge writes for the same new docs (names that need
// normalising, entities met again under another spelling, self-loops);
// the store it leaves loads, checks clean and walks like the graph; and it
// refuses a doc twice and empty names.
func TestWriterEqualsGraph(t *testing.T) {
	ctx := context.Background()
	prefix := []byte("u/g")
	names := []string{"user", "User", "  Alex  ", "alex", "Golden Retriever", "golden   retriever", "Ünïcode Straße", "Buddy", "Sarah"}
	labels := []string{"brother", "has_pet", "lives  in", "likes"}
	rng := rand.New(rand.NewPCG(3, 4))
	gotKV := kvtest.Map{}
	g, want := New(prefix), &golden.Recorder{W: kvtest.Map{}}
	wr, got := NewWriter(prefix), &golden.Recorder{W: gotKV}
	for doc := uint32(1); doc < 400; doc += 1 + uint32(rng.IntN(3)) {
		from, to := names[rng.IntN(len(names))], fmt.Sprint("object ", rng.IntN(150))
		if rng.IntN(3) == 0 {
			to = names[rng.IntN(len(names))]
		}
		label := labels[rng.IntN(len(labels))]
		if err := g.AddEdge(want, doc, from, label, to); err != nil {
			t.Fatal(err)
		}
		if err := wr.AddEdge(got, doc, from, label, to); err != nil {
			t.Fatal(err)
		}
	}
	if got.Log() != want.Log() {
		t.Fatalf("Writer wrote\n%.500s\nGraph wrote\n%.500s", got.Log(), want.Log())
	}
	loaded, err := Load(ctx, gotKV, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Check(ctx, gotKV); err != nil {
		t.Fatal(err)
	}
	a, err := g.BFSLimit(ctx, []string{"user", "sarah"}, 2, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loaded.BFSLimit(ctx, []string{"user", "sarah"}, 2, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("walk of the written graph:\n%v\nof the graph:\n%v", b, a)
	}
	if err := wr.AddEdge(got, 1, "a", "b", "c"); err == nil {
		t.Fatal("a doc's second edge was written")
	}
	if err := wr.AddEdge(got, 1000, " ", "b", "c"); err == nil {
		t.Fatal("an empty name was written")
	}
}
