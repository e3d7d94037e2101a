package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	texts "github.com/memor-db/memor/internal/corpus"

	"github.com/RoaringBitmap/roaring/v2"
)

// bruteTopK is the reference for pruning: every live document allowed is
// scored by Explain (its own code path, the same formula) and the k best
// kept, best first, ties by ascending document.
func bruteTopK(ix *Index, query string, k int, allow *roaring.Bitmap) []Hit {
	var hits []Hit
	ix.mu.RLock()
	docs := ix.live.ToArray()
	ix.mu.RUnlock()
	for _, d := range docs {
		if allow != nil && !allow.Contains(d) {
			continue
		}
		e := ix.Explain(query, d)
		matched := false
		for _, t := range e.Terms {
			matched = matched || t.TF > 0
		}
		if matched {
			hits = append(hits, Hit{d, e.Score})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmpFloat(b.Score, a.Score); c != 0 {
			return c
		}
		return cmpUint32(a.Doc, b.Doc)
	})
	return hits[:min(k, len(hits))]
}

// tieCorpus writes facts shaped like an agent's memory: most documents
// have the same length and each word once, so that a query's scores tie by
// the thousand; some repeat a word or are longer or shorter, so that the
// bounds differ between blocks.
type tieCorpus struct {
	r     *rand.Rand
	words []string
}

func (c *tieCorpus) text(i int) string {
	w := func() string { return c.words[c.r.IntN(len(c.words))] }
	switch c.r.IntN(20) {
	case 0:
		return w() + " " + w() + " " + w() // shorter, maybe a repeat
	case 1:
		return fmt.Sprintf("entity %d %s %s %s %s extra words", i/100, w(), w(), w(), w()) // longer
	case 2:
		x := w()
		return fmt.Sprintf("entity %d %s %s", i/100, x, x) // tf 2
	}
	return fmt.Sprintf("entity %d likes %s %d", i/100, w(), i)
}

// checkPruned compares Search with pruning against Search without it and
// against bruteTopK (when brute), bit for bit.
func checkPruned(t testing.TB, ix *Index, query string, k int, allow *roaring.Bitmap, brute bool) {
	t.Helper()
	ctx := context.Background()
	ix.noPrune = false
	got, err := ix.Search(ctx, query, k, allow)
	if err != nil {
		t.Fatal(err)
	}
	ix.noPrune = true
	want, err := ix.Search(ctx, query, k, allow)
	ix.noPrune = false
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("query %q k=%d allow=%v: pruned %v\nexhaustive %v", query, k, allow != nil, got, want)
	}
	if brute {
		if ref := bruteTopK(ix, query, k, allow); !slices.Equal(got, ref) {
			t.Fatalf("query %q k=%d allow=%v: pruned %v\nbrute force %v", query, k, allow != nil, got, ref)
		}
	}
}

// TestBlockMaxExact checks that MaxScore and block-max pruning return
// exactly the full-scoring top k (same documents, same score bits, ties
// broken the same way) on corpora full of ties, after deletes and
// replacements, with allow-lists of several shapes, for postings with
// per-block bounds (the real threshold and a lowered one) and without.
func TestBlockMaxExact(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			c := &tieCorpus{r: r, words: []string{"coffee", "hiking", "jazz", "chess", "sushi", "tennis", "python", "berlin", "lisbon", "kyoto"}}
			ix := New(nil, Options{})
			if seed%2 == 0 {
				ix.blockMin = 3
			}
			n := 12_000
			step := uint32(1 + seed) // IDs spread over several blocks
			for i := range n {
				if err := ix.Add(discard{}, uint32(i)*step, c.text(i)); err != nil {
					t.Fatal(err)
				}
			}
			// Deletes and replacements leave the bounds loose.
			for range n / 5 {
				d := r.Uint32N(uint32(n)) * step
				if r.IntN(2) == 0 {
					_ = ix.Delete(discard{}, d)
				} else {
					_ = ix.Add(discard{}, d, c.text(int(d)))
				}
			}
			// A few documents far beyond the rest, and at the top of the
			// ID space (the last block).
			for _, d := range []uint32{1 << 30, 1<<32 - 1, 1<<32 - 5000} {
				_ = ix.Add(discard{}, d, "entity 0 likes coffee jazz 7")
			}
			if err := ix.checkAll(); err != nil {
				t.Fatal(err)
			}
			live := ix.live.ToArray()
			allows := []*roaring.Bitmap{nil, roaring.New(), roaring.New(), roaring.New()}
			for i, d := range live {
				if r.IntN(3) != 0 {
					allows[1].Add(d) // dense
				}
				if i%10 == 9 {
					allows[2].Add(d) // one in ten, like current facts among versions
				}
				if (d>>windowShift)%3 == 1 {
					allows[3].Add(d) // whole blocks in and out
				}
			}
			queries := []string{"coffee", "Berlin", "jazz", "entity", "likes", "coffee jazz", "entity coffee", "likes tennis kyoto",
				"do I like chess?", "extra coffee", "nothing-matches", "coffee coffee"}
			for qi, q := range queries {
				for _, k := range []int{1, 10, 50} {
					for ai, a := range allows {
						checkPruned(t, ix, q, k, a, qi%3 == int(seed)%3 && ai < 3)
					}
				}
			}
		})
	}
}

// checkAll runs the in-memory invariants of Check.
func (ix *Index) checkAll() error {
	var f findings
	ix.mu.RLock()
	ix.checkMemory(&f)
	ix.mu.RUnlock()
	return f.err()
}

// FuzzBlockMax builds a small index from the input (a lowered blockMin
// gives it per-block bounds) and compares pruned, exhaustive and
// brute-force top k.
func FuzzBlockMax(f *testing.F) {
	f.Add([]byte("coffee jazz coffee entity likes berlin"), uint8(3), uint16(500))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(1), uint16(40000))
	for _, tx := range texts.MustTexts() {
		f.Add([]byte(tx.Body), uint8(10), uint16(1000))
	}
	f.Fuzz(func(t *testing.T, data []byte, k uint8, spread uint16) {
		if len(data) > 4096 {
			return
		}
		words := []string{"coffee", "jazz", "entity", "likes", "berlin", "one", "two", "three"}
		ix := New(nil, Options{})
		ix.blockMin = 2
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(spread)))
		step := uint32(spread)/64 + 1
		for i, b := range data {
			doc := uint32(i) * step
			if b&0x80 != 0 && i > 0 { // delete an earlier document
				_ = ix.Delete(discard{}, uint32(int(b)%i)*step)
				continue
			}
			var sb strings.Builder
			for j := range int(b%5) + 1 {
				sb.WriteString(words[(int(b)>>(j%3)+j)%len(words)])
				sb.WriteByte(' ')
			}
			_ = ix.Add(discard{}, doc, sb.String())
		}
		if err := ix.checkAll(); err != nil {
			t.Fatal(err)
		}
		allow := roaring.New()
		ix.live.Iterate(func(d uint32) bool {
			if r.IntN(2) == 0 {
				allow.Add(d)
			}
			return true
		})
		for _, q := range []string{"coffee", "jazz entity", "likes berlin one", "two three coffee"} {
			checkPruned(t, ix, q, int(k%20)+1, nil, true)
			checkPruned(t, ix, q, int(k%20)+1, allow, true)
		}
	})
}
