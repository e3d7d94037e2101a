package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv/kvtest"
)

// zipfIndex builds an index of n short documents over a Zipfian vocabulary
// (no store: writes are discarded) and a list of 2–4 word queries.
func zipfIndex(n int) (*Index, []string) {
	r := rand.New(rand.NewPCG(7, 7))
	z := rand.NewZipf(r, 1.07, 2, 30_000)
	word := func() string { return fmt.Sprintf("w%dx", z.Uint64()) }
	ix := New(nil, Options{})
	for d := 0; d < n; d++ {
		ws := make([]string, 4+r.IntN(6))
		for i := range ws {
			ws[i] = word()
		}
		_ = ix.Add(discard{}, uint32(d), strings.Join(ws, " "))
	}
	var qs []string
	for i := 0; i < 256; i++ {
		ws := make([]string, 2+r.IntN(3))
		for i := range ws {
			ws[i] = word()
		}
		qs = append(qs, strings.Join(ws, " "))
	}
	return ix, qs
}

func BenchmarkSearch(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 5000
	}
	ix, qs := zipfIndex(n)
	for _, prune := range []bool{true, false} {
		b.Run(fmt.Sprintf("n=%d/k=10/maxscore=%v", n, prune), func(b *testing.B) {
			ix.noPrune = !prune
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(context.Background(), qs[i%len(qs)], 10, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	ix.noPrune = false
}

// TestMaxScoreExact checks that pruning changes nothing: the same hits, the
// same scores to the bit, on a corpus large enough for pruning to bite.
func TestMaxScoreExact(t *testing.T) {
	ix, qs := zipfIndex(20_000)
	for _, q := range qs[:100] {
		for _, k := range []int{1, 10, 50} {
			ix.noPrune = false
			got, _ := ix.Search(context.Background(), q, k, nil)
			ix.noPrune = true
			want, _ := ix.Search(context.Background(), q, k, nil)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("query %q k=%d: pruned %v, exhaustive %v", q, k, got, want)
			}
		}
	}
}

// BenchmarkSearchFacts is a one-word query over facts shaped like
// BenchmarkQuery's one-tenant load (scores tie by the thousand), with a
// visibility filter of most documents: what block-max pruning is for.
func BenchmarkSearchFacts(b *testing.B) {
	n := 300_000
	if testing.Short() {
		n = 10_000
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"coffee", "hiking", "jazz", "chess", "sushi", "tennis", "python", "painting", "cycling", "poetry"}
	ix := New(nil, Options{})
	allow := roaring.New()
	for i := range n {
		text := fmt.Sprintf("entity %d likes like enjoy %s %d", i/100, words[r.IntN(len(words))], i)
		if i%10 == 0 {
			text = fmt.Sprintf("entity %d lives in live living home city where reside moved city%d", i/100, r.IntN(10))
		}
		_ = ix.Add(discard{}, uint32(i), text)
		if i%10 != 0 || i%100 == 90 {
			allow.Add(uint32(i))
		}
	}
	for _, prune := range []bool{true, false} {
		b.Run(fmt.Sprintf("n=%d/k=50/prune=%v", n, prune), func(b *testing.B) {
			ix.noPrune = !prune
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(context.Background(), words[i%len(words)], 50, allow); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	ix.noPrune = false
}

// bulkTexts are the texts of a bulk import as the engine indexes them
// (factText: subject, predicate gloss, object), most naming a new object.
func bulkTexts(n int) []string {
	preds := []string{"lives in live living home city where reside moved", "likes like enjoy",
		"works at work job employer company", "plays instrument play music", "speaks language speak"}
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("user %s object-%d", preds[i%len(preds)], i)
	}
	return texts
}

// BenchmarkAddBulk is a new user's bulk import: a fresh index and 1000
// new documents (writes discarded: the store's cost is not the index's).
func BenchmarkAddBulk(b *testing.B) {
	const n = 1000
	texts := bulkTexts(n)
	b.ReportAllocs()
	for b.Loop() {
		ix := New([]byte("user/b/"), Options{})
		for i, text := range texts {
			if err := ix.Add(discard{}, uint32(i), text); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/doc")
}

// BenchmarkLoad is reading a 1000-document user's index back (a reopen's
// first query), from an in-memory store: the decoding and building, not
// the store's iteration.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	store := kvtest.Map{}
	ix := New([]byte("u/"), Options{})
	for i, text := range bulkTexts(1000) {
		if err := ix.Add(store, uint32(i), text); err != nil {
			b.Fatal(err)
		}
	}
	sorted := kvtest.Freeze(store)
	for _, capacity := range []int{0, 1000} {
		b.Run(fmt.Sprintf("capacity=%d", capacity), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(ctx, sorted, []byte("u/"), Options{Capacity: capacity}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
