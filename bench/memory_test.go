package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/memsize/heaptest"
)

// BenchmarkIndexMemory is what a loaded user's indexes hold in memory,
// per document: shape=small is 200 users × 100 facts (-short: 20 users),
// shape=large one user of 25,000 facts, past the size at which the vector
// index builds its graph (hnsw.DefaultExactBelow), shape=conversation the
// first BEAM-100K conversation (its messages as episodes, per message;
// skipped in -short and without the data). Each user is loaded by a query
// after a reopen, and the live heap they add (after a collection) is
// reported beside the estimate the index cache budgets with
// (Stats.IndexBytes), so the budget's honesty is measured too
// (estimate/heap).
func BenchmarkIndexMemory(b *testing.B) {
	for _, c := range []struct {
		name         string
		users, facts int
	}{{"small", 200, 100}, {"large", 1, 25000}, {"conversation", 1, 0}} {
		b.Run("shape="+c.name, func(b *testing.B) {
			users := c.users
			if testing.Short() {
				if c.users == 1 {
					b.Skip("-short: the small shape only")
				}
				users = 20
			}
			if c.facts == 0 {
				dir, conv := conversationStore(b)
				indexMemory(b, dir, 1, len(conv.Messages), conv.Questions[0].Text)
				return
			}
			dir := filepath.Join(b.TempDir(), "db")
			e, err := memor.Open(dir, memor.Options{NoSync: true, IndexCacheBytes: -1})
			if err != nil {
				b.Fatal(err)
			}
			loadShape(b, e, users, c.facts)
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
			indexMemory(b, dir, users, users*c.facts, "where do I live?")
		})
	}
}

// indexMemory loads the users user-0 … of the store in dir by a query
// each, after a reopen, and reports the heap they add and the cache's
// estimate per document (docs in all).
func indexMemory(b *testing.B, dir string, users, docs int, question string) {
	// No warm-up: it would load the users in the background, before or
	// after the heap is first read.
	o := memor.Options{NoSync: true, IndexCacheBytes: -1, NoIndexWarmup: true}
	ctx := context.Background()
	var heap, estimate float64
	for b.Loop() {
		b.StopTimer()
		e, err := memor.Open(dir, o)
		if err != nil {
			b.Fatal(err)
		}
		before := heaptest.Live()
		b.StartTimer()
		for u := range users {
			if _, err := e.Query(ctx, fmt.Sprintf("user-%d", u), question, memor.QueryOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := heaptest.Live()
		st, err := e.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.IndexedUsers != users {
			b.Fatalf("%d users loaded, want %d", st.IndexedUsers, users)
		}
		heap = float64(after-before) / float64(docs)
		estimate = float64(st.IndexBytes) / float64(docs)
		runtime.KeepAlive(e)
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-B/doc")
	b.ReportMetric(estimate, "estimate-B/doc")
	b.ReportMetric(estimate/heap, "estimate/heap")
}
