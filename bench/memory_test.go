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
// per document: 200 users × 100 facts (-short: 20 users) are loaded by a
// query each after a reopen, and the live heap they add (after a
// collection) is reported beside the estimate the index cache budgets
// with (Stats.IndexBytes), so the budget's honesty is measured too.
func BenchmarkIndexMemory(b *testing.B) {
	users, facts := 200, 100
	if testing.Short() {
		users = 20
	}
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
