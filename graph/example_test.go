package graph_test

import (
	"context"
	"fmt"
	"os"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/kv"
)

// A query naming Alex walks to the user (against the edge) and to Alex's
// pet; the superseded edge (doc 3) is not in the allowed set.
func Example() {
	dir, _ := os.MkdirTemp("", "graph-example")
	defer os.RemoveAll(dir)
	db, err := kv.Open(dir, kv.Options{NoSync: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	g := graph.New(kv.UserKey("alice", kv.SubGraph))
	b := db.NewBatch()
	_ = g.AddEdge(b, 1, "user", "brother", "Alex")
	_ = g.AddEdge(b, 2, "Alex", "has_pet", "golden retriever")
	_ = g.AddEdge(b, 3, "Alex", "has_pet", "hamster")
	if err := b.Commit(); err != nil {
		panic(err)
	}
	seeds := g.Entities("What breed is my brother alex's dog?")
	paths, err := g.BFS(context.Background(), seeds, 3, roaring.BitmapOf(1, 2))
	if err != nil {
		panic(err)
	}
	fmt.Println(seeds)
	for _, p := range paths {
		fmt.Println(p)
	}
	// Output:
	// [Alex]
	// Alex ← brother ← user
	// Alex → has_pet → golden retriever
}
