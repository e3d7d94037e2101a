package memorlangchaingo_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tmc/langchaingo/chains"

	"github.com/memor-db/memor"
	memorlangchaingo "github.com/memor-db/memor/adapters/langchaingo"
)

// The README's wiring: a conversation chain whose memory is memor, and a
// retriever as of February.
func Example() {
	dir, _ := os.MkdirTemp("", "memorlangchaingo-example")
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
	e.Add(ctx, "alice", "I live in San Francisco.", memor.At(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)))
	llm := &model{} // any llms.Model; this one shows the prompt it is given

	mem := memorlangchaingo.NewMemory(e, "alice")
	conv := chains.NewConversation(llm, mem)
	chains.Run(ctx, conv, "I just moved to Seattle.") // saved by the chain as alice's turn
	chains.Run(ctx, conv, "Where do I live?")
	fmt.Println(llm.last()[strings.Index(llm.last(), "<memor-recall>"):])

	r := memorlangchaingo.NewRetriever(e, "alice", memorlangchaingo.WithValidAt(feb), memorlangchaingo.WithK(1))
	docs, _ := r.GetRelevantDocuments(ctx, "where do I live?")
	fmt.Println("on 2026-02-01:", docs[0].PageContent)
	// Output:
	// <memor-recall>
	// Relevant memories (current as of 2026-08-01):
	// - user lives_in Seattle (since 2026-08-01) via user → lives_in → Seattle
	// </memor-recall>
	// Human: Where do I live?
	// AI:
	// on 2026-02-01: user lives_in San Francisco
}
