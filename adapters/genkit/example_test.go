package memorgenkit_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/memor-db/memor"
	memorgenkit "github.com/memor-db/memor/adapters/genkit"
)

// The README's wiring: a Genkit retriever over alice's memory, asked now
// and as of February.
func Example() {
	dir, _ := os.MkdirTemp("", "memorgenkit-example")
	defer os.RemoveAll(dir)
	// A fixed clock keeps the output stable; real stores use time.Now.
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	e, err := memor.Open(dir, memor.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	day := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }
	e.Add(ctx, "alice", "I live in San Francisco.", memor.At(day("2026-01-10")))
	e.Add(ctx, "alice", "I just moved to Seattle.", memor.At(day("2026-07-11")))
	e.Flush(ctx, "alice")
	feb := day("2026-02-01")

	g := genkit.Init(ctx)
	memorgenkit.DefineRetriever(g, e, "alice", memorgenkit.Config{User: "alice", K: 1})
	current, _ := genkit.Retrieve(ctx, g, ai.WithRetrieverName("memor/alice"), ai.WithTextDocs("where do I live?"))
	past, _ := genkit.Retrieve(ctx, g, ai.WithRetrieverName("memor/alice"), ai.WithTextDocs("where do I live?"),
		ai.WithConfig(&memorgenkit.RetrieverOptions{ValidAt: feb}))
	fmt.Println("now:", current.Documents[0].Content[0].Text)
	fmt.Println("on 2026-02-01:", past.Documents[0].Content[0].Text)
	// Output:
	// now: user lives_in Seattle
	// on 2026-02-01: user lives_in San Francisco
}
