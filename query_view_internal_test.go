package memor

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueryViewRetriesAfterCommit: a write that commits after a Query
// read the indexes and before it took its snapshot (the one window the
// pending documents do not cover) makes the Query build its view again,
// and a write in every such window makes it build the view under the
// user's lock. Either way it serves the value in force. The write is
// recorded before the Query's now (the clock stepped back meanwhile):
// without the commit counter the Query served nothing, the old value
// being expired in its snapshot and the new one missing from the indexes
// it read.
func TestQueryViewRetriesAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var clock atomic.Int64
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock.Store(now.UnixNano())
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true,
		Clock: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	assert := func() {
		t.Helper()
		if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in",
			Object: fmt.Sprintf("city%d", n), ValidFrom: base.Add(time.Duration(n) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	assert()
	for _, c := range []struct {
		name   string
		writes int // in the first writes tries
		tries  int // tries made without the lock
	}{
		{"one commit in the way", 1, 2},
		{"a commit in every try", queryViewTries, queryViewTries},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The Query reads the clock at now; the writes in its way
			// read it half an hour earlier (after every earlier write).
			now = now.Add(time.Hour)
			clock.Store(now.UnixNano())
			tries := 0
			e.hookQueryView = func(try int) {
				tries = try
				if try <= c.writes {
					clock.Store(now.Add(-30*time.Minute + time.Duration(try)*time.Second).UnixNano())
					assert()
				}
			}
			defer func() { e.hookQueryView = nil }()
			rs, err := e.Query(ctx, "u", "where do I live", QueryOptions{NoEpisodes: true})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("city%d", n-1)
			if len(rs) != 1 || rs[0].Fact == nil || rs[0].Fact.Object != want {
				var got []string
				for _, r := range rs {
					got = append(got, r.Text())
				}
				t.Fatalf("Query served %q, want the value in force: %s", got, want)
			}
			if tries != c.tries {
				t.Errorf("%d tries without the lock, want %d", tries, c.tries)
			}
		})
	}
}
