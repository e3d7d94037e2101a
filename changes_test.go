package memor_test

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// Every add can say what it changed: the decisions of its episode, and
// their summary.
func TestAddDecisions(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, c := range []struct {
		text string
		at   string
		want memor.Changes
	}{
		{"I live in Oslo.", "2026-01-10", memor.Changes{Added: 1}},
		{"I live in Oslo.", "2026-02-10", memor.Changes{Reinforced: 1}},
		{"I just moved to Bergen.", "2026-03-10", memor.Changes{Added: 1, Superseded: 1}},
		{"I might move to Austin.", "2026-04-10", memor.Changes{Contested: 1}},
		{"What a lovely day it was.", "2026-05-10", memor.Changes{Nothing: true}},
	} {
		var ds []memor.Decision
		ep, err := e.Add(ctx, "u", c.text, memor.At(day(c.at)), memor.Decisions(&ds))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Episode != ep.Seq {
				t.Errorf("%q: decision of episode %d, want %d", c.text, d.Episode, ep.Seq)
			}
		}
		if got := memor.Summarize(ds); got != c.want {
			t.Errorf("%q: %+v, want %+v (decisions %+v)", c.text, got, c.want, ds)
		}
	}
	// Applied on return, as with Sync.
	st, err := e.State(ctx, "u")
	if err != nil || len(st) != 1 || st[0].Object != "Bergen" {
		t.Errorf("state %v %v, want Bergen", st, err)
	}
}
