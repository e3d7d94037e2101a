package memor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/memsize/heaptest"
)

// TestIndexCacheAccountsHeap loads users of three shapes, from their
// records and from their images, and requires the index cache's account
// of them (Stats.IndexBytes, what its budget is spent by) to be within
// 15 % of the heap their loads add: an account that over-counts holds
// fewer users than the budget allows (the per-document constant it
// replaced counted an imaged user three times over), one that
// under-counts lets the cache outgrow it.
func TestIndexCacheAccountsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads some 10,000 documents")
	}
	texts := corpus.MustTexts()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	shapes := []struct {
		name  string
		users int
		write func(t *testing.T, e *Engine, user string, r *rand.Rand)
	}{
		{"facts", 30, func(t *testing.T, e *Engine, user string, r *rand.Rand) {
			// A user's facts: a few predicates about a few subjects,
			// objects of realistic words.
			var fs []FactInput
			for i := range 150 {
				subj := "user"
				if i%3 == 0 {
					subj = fmt.Sprintf("friend %d", i%7)
				}
				fs = append(fs, FactInput{Subject: subj, Predicate: []string{"lives_in", "works_at", "likes", "knows"}[i%4],
					Object: corpus.Words(r, 1+r.IntN(6)), ValidFrom: base.Add(time.Duration(i) * time.Hour)})
			}
			if _, err := e.AssertBatch(context.Background(), user, fs); err != nil {
				t.Fatal(err)
			}
		}},
		{"large", 1, func(t *testing.T, e *Engine, user string, r *rand.Rand) {
			for b := range 4 {
				var fs []FactInput
				for i := range 1000 {
					fs = append(fs, FactInput{Subject: fmt.Sprintf("entity %d", r.IntN(400)), Predicate: []string{"lives_in", "works_at", "likes", "knows", "owns"}[i%5],
						Object: corpus.Words(r, 1+r.IntN(8)), ValidFrom: base.Add(time.Duration(b*1000+i) * time.Minute)})
				}
				if _, err := e.AssertBatch(context.Background(), user, fs); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"conversation", 2, func(t *testing.T, e *Engine, user string, r *rand.Rand) {
			// Chat turns of the corpus's texts, cut at paragraphs, two
			// speakers taking turns.
			n := 0
			for _, tx := range texts {
				for p := range strings.SplitSeq(tx.Body, "\n\n") {
					if p = strings.TrimSpace(p); len(p) < 20 || len(p) > 4000 {
						continue
					}
					opts := []AddOption{At(base.Add(time.Duration(n) * time.Minute))}
					if n%2 == 1 {
						opts = append(opts, Speaker("Maya"))
					}
					if _, err := e.Add(context.Background(), user, p, opts...); err != nil {
						t.Fatal(err)
					}
					n++
				}
			}
			if err := e.Flush(context.Background(), user); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, sh := range shapes {
		t.Run("shape="+sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			tune := defaultTuning()
			tune.imageMinDocs, tune.imageMinBytes = 1, 1
			open := func(images bool) *Engine {
				tune.images = images
				e, err := openTuned(dir, Options{NoSync: true, IndexCacheBytes: -1, NoIndexWarmup: true}, tune)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			e := open(true)
			r := rand.New(rand.NewPCG(7, 9))
			var users []string
			for u := range sh.users {
				users = append(users, fmt.Sprintf("u%d", u))
				sh.write(t, e, users[u], r)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Close wrote the users' images: a reopen without images
			// loads from the records, one with them from the images.
			for _, from := range []string{"image", "records"} {
				e := open(from == "image")
				loads := e.idx.imageLoads.Load()
				ratio := accountOverHeap(t, e, users)
				if got := e.idx.imageLoads.Load() - loads; (from == "image") != (got > 0) {
					t.Fatalf("from the %s: %d loads from an image", from, got)
				}
				t.Logf("from the %s: account/heap %.2f", from, ratio)
				if ratio < 0.85 || ratio > 1.15 {
					t.Errorf("from the %s: the cache's account is %.2f× the heap the loads added", from, ratio)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// accountOverHeap loads users by a query each and returns the cache's
// account of them over the heap the loads added, the median of three
// tries. Each try first drops them from the cache after a load: the store's own caches
// (Pebble's blocks, which are Go memory in a build without cgo) are then
// filled before the heap is first read, and only the indexes remain.
func accountOverHeap(t *testing.T, e *Engine, users []string) float64 {
	t.Helper()
	ctx := context.Background()
	query := func() {
		for _, u := range users {
			if _, err := e.Query(ctx, u, "where does Maya live and what does she like?", QueryOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ratios []float64
	for range 3 {
		query()
		for _, u := range users {
			e.idx.dropUser(u)
		}
		before := heaptest.Live()
		query()
		after := heaptest.Live()
		st, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.IndexedUsers != len(users) {
			t.Fatalf("%d users loaded, want %d", st.IndexedUsers, len(users))
		}
		heap := float64(after - before)
		ratios = append(ratios, float64(st.IndexBytes)/heap)
	}
	slices.Sort(ratios)
	return ratios[1]
}
