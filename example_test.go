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
