package memor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/memor-db/memor"
)

// The README's quickstart: a move, current state, time travel, audit and
// a query.
func Example() {
	dir, _ := os.MkdirTemp("", "memor-example")
	defer os.RemoveAll(dir)
	// A fixed clock keeps the output stable; real stores use time.Now.
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	e, err := memor.Open(dir, memor.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	day := func(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

	e.Add(ctx, "alice", "I live in San Francisco.", memor.At(day("2026-01-10")))
	e.Add(ctx, "alice", "I just moved to Seattle.", memor.At(day("2026-07-11")))
	e.Flush(ctx, "alice")

	state, _ := e.State(ctx, "alice")
	fmt.Println("now:", state[0])
	feb, _ := e.AsOf(ctx, "alice", day("2026-02-01"), now)
	fmt.Println("on 2026-02-01:", feb[0])
	jan5, _ := e.AsOf(ctx, "alice", day("2026-01-05"), day("2026-01-05"))
	fmt.Println("believed on 2026-01-05:", len(jan5), "facts")
	hist, _ := e.History(ctx, "alice", "user", "lives_in")
	for _, f := range hist {
		fmt.Printf("history: %s valid %s–%s rule=%s\n", f.Object, f.ValidFrom.Format("2006-01-02"), f.ValidTo.Format("2006-01-02"), f.Rule)
	}
	rs, _ := e.Query(ctx, "alice", "where do I live?", memor.QueryOptions{K: 1})
	fmt.Println("query:", rs[0].Text())
	// Output:
	// now: user lives_in Seattle
	// on 2026-02-01: user lives_in San Francisco
	// believed on 2026-01-05: 0 facts
	// history: San Francisco valid 2026-01-10–0001-01-01 rule=add
	// history: San Francisco valid 2026-01-10–2026-07-11 rule=supersede
	// history: Seattle valid 2026-07-11–0001-01-01 rule=supersede
	// query: user lives_in Seattle
}

// Two people in one memory: each speaker's first person is theirs, so
// Melanie's city never supersedes Caroline's, and a question naming
// Caroline is answered from her facts and her turn.
func ExampleSpeaker() {
	dir, _ := os.MkdirTemp("", "memor-example")
	defer os.RemoveAll(dir)
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	at := time.Date(2024, 3, 15, 9, 0, 0, 0, time.UTC)

	for i, turn := range []struct{ speaker, text string }{
		{"Caroline", "I play acoustic guitar."},
		{"Melanie", "I play the clarinet."},
		{"Caroline", "I live in Boston."},
		{"Melanie", "I live in Seattle."},
		{"Caroline", "My brother Alex lives in Austin."},
	} {
		e.Add(ctx, "chat-42", turn.text, memor.At(at.Add(time.Duration(i)*time.Minute)), memor.Speaker(turn.speaker))
	}
	e.Flush(ctx, "chat-42")

	state, _ := e.State(ctx, "chat-42")
	for _, f := range state {
		fmt.Println("fact:", f)
	}
	rs, _ := e.Query(ctx, "chat-42", "Where does Caroline live?", memor.QueryOptions{K: 1})
	for i, r := range rs {
		fmt.Printf("query %d: %s\n", i+1, r.Text())
	}
	// Unordered output:
	// fact: Caroline plays_instrument acoustic guitar
	// fact: Melanie plays_instrument clarinet
	// fact: Caroline lives_in Boston
	// fact: Melanie lives_in Seattle
	// fact: Caroline brother Alex
	// fact: Alex lives_in Austin
	// query 1: Caroline lives_in Boston
}

// Context renders what the memory knows about a question as one fenced
// block for a model's prompt: what bears on it, with valid times and
// graph paths. The fence keeps a reply built from it from being
// remembered again as if the user had said it.
func ExampleEngine_Context() {
	dir, _ := os.MkdirTemp("", "memor-example")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	e, err := memor.Open(dir, memor.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	e.Add(ctx, "alice", "I live in San Francisco.", memor.At(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)), memor.Sync())
	e.Add(ctx, "alice", "I just moved to Seattle.", memor.At(time.Date(2026, 7, 11, 0, 0, 0, 0, time.UTC)), memor.Sync())

	block, err := e.Context(ctx, "alice", "where do I live?")
	if err != nil {
		panic(err)
	}
	fmt.Print(block)
	// Output:
	// <memor-recall>
	// Relevant memories (current as of 2026-08-01):
	// - user lives_in Seattle (since 2026-07-11) via user → lives_in → Seattle
	// </memor-recall>
}
