package memoreino_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/memor-db/memor"
	memoreino "github.com/memor-db/memor/adapters/eino"
)

// The README's wiring: an indexer and a retriever over one engine, the
// retriever run as a node of an Eino chain, now and as of February.
func Example() {
	dir, _ := os.MkdirTemp("", "memoreino-example")
	defer os.RemoveAll(dir)
	// A fixed clock keeps the output stable; real stores use time.Now.
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	e, err := memor.Open(dir, memor.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

	ix, _ := memoreino.NewIndexer(ctx, &memoreino.IndexerConfig{Engine: e, User: "alice"})
	r, _ := memoreino.NewRetriever(ctx, &memoreino.RetrieverConfig{Engine: e, User: "alice", TopK: 1})
	ix.Store(ctx, []*schema.Document{
		{Content: "I live in San Francisco.", MetaData: map[string]any{memoreino.MetaAt: "2026-01-10"}},
		{Content: "I just moved to Seattle.", MetaData: map[string]any{memoreino.MetaAt: "2026-07-11"}},
	})

	chain, _ := compose.NewChain[string, []*schema.Document]().AppendRetriever(r).Compile(ctx)
	current, _ := chain.Invoke(ctx, "where do I live?")
	past, _ := chain.Invoke(ctx, "where do I live?", compose.WithRetrieverOption(memoreino.WithValidAt(feb)))
	fmt.Println("now:", current[0].Content)
	fmt.Println("on 2026-02-01:", past[0].Content)
	// Output:
	// now: user lives_in Seattle
	// on 2026-02-01: user lives_in San Francisco
}
