package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/memor-db/memor"
)

// BenchmarkIndexMemory is what a loaded user's indexes hold in memory,
// per document: shape=small is 200 users × 100 facts (-short: 20 users),
// shape=large one user of 25,000 facts, past the size at which the vector
// index builds its graph (hnsw.DefaultExactBelow). Each user is loaded by
// a query after a reopen, and the live heap they add (after a collection)
// is reported beside the estimate the index cache budgets with
// (Stats.IndexBytes), so the budget's honesty is measured too.
func BenchmarkIndexMemory(b *testing.B) {
	for _, c := range []struct {
		name         string
		users, facts int
	}{{"small", 200, 100}, {"large", 1, 25000}} {
		b.Run("shape="+c.name, func(b *testing.B) {
			users := c.users
			if testing.Short() {
				if c.users == 1 {
					b.Skip("-short: the small shape only")
				}
				users = 20
			}
			indexMemory(b, users, c.facts)
		})
	}
}

func indexMemory(b *testing.B, users, facts int) {
	dir := filepath.Join(b.TempDir(), "db")
	o := memor.Options{NoSync: true, IndexCacheBytes: -1}
	e, err := memor.Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	loadShape(b, e, users, facts)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var heap, estimate float64
	for b.Loop() {
		b.StopTimer()
		e, err := memor.Open(dir, o)
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for u := range users {
			if _, err := e.Query(ctx, fmt.Sprintf("user-%d", u), "where do I live?", memor.QueryOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		st, err := e.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.IndexedUsers != users {
			b.Fatalf("%d users loaded, want %d", st.IndexedUsers, users)
		}
		docs := float64(users * facts)
		heap = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / docs
		estimate = float64(st.IndexBytes) / docs
		runtime.KeepAlive(e)
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-B/doc")
	b.ReportMetric(estimate, "estimate-B/doc")
}
