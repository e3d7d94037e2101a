package bm25

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	realtext "github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/memsize/heaptest"
	"github.com/memor-db/memor/kv/kvtest"
)

// The engine's index cache keeps users within a memory budget by Bytes:
// these tests hold it to the heap the index adds, as the runtime measures
// it, within [0.8, 1.25].
const minRatio, maxRatio = 0.8, 1.25

// chatDocs are n short documents, the most common shape of a user's
// memory: a sentence of the realistic corpus (a chat turn, a line of code,
// a CJK phrase, a table row) and, as a turn's names and numbers do, a few
// words of its own.
func chatDocs(n int) []string {
	var sents []string
	for _, d := range corpusDocs() {
		if len(d) < 300 {
			sents = append(sents, d)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf("%s (turn %d: %s)", sents[r.IntN(len(sents))], i, realtext.Words(r, 2))
	}
	return docs
}

// longDocs are fewer, long documents over many distinct terms: every
// corpus text whole (the 60k document, the many-distinct-terms one, code,
// CJK…) cut into pieces of at most 4 KB, and documents of 200 to 800
// words drawn from the corpus's whole vocabulary.
func longDocs() []string {
	var docs []string
	for _, t := range realtext.MustTexts() {
		for body := t.Body; body != ""; {
			cut := min(len(body), 4096)
			for cut < len(body) && body[cut]&0xC0 == 0x80 { // not inside a rune
				cut++
			}
			docs = append(docs, body[:cut])
			body = body[cut:]
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 250 {
		docs = append(docs, realtext.Words(r, 200+r.IntN(600)))
	}
	return docs
}

func addAll(t testing.TB, ix *Index, first int, docs []string) {
	t.Helper()
	for i, d := range docs {
		if err := ix.Add(discard{}, uint32(first+i), d); err != nil {
			t.Fatal(err)
		}
	}
}

// termQueries are queries that name, 16 to a query, most terms of ix's
// dictionary.
func termQueries(ix *Index, share float64) []string {
	ix.mu.RLock()
	var terms []string
	for text := range ix.ids {
		terms = append(terms, text)
	}
	ix.mu.RUnlock()
	slices.Sort(terms)
	terms = terms[:int(float64(len(terms))*share)]
	var qs []string
	for len(terms) > 0 {
		n := min(16, len(terms))
		qs = append(qs, strings.Join(terms[:n], " "))
		terms = terms[n:]
	}
	return qs
}

// TestBytesMatchesHeap compares Bytes with the heap each shape of index
// adds, built from nothing else: documents added, loaded from records,
// loaded from an image before and after queries decode its postings, and
// written to after loading from an image.
func TestBytesMatchesHeap(t *testing.T) {
	ctx := context.Background()
	shapes := []struct {
		name string
		docs []string
	}{
		{"chat", chatDocs(2000)},
		{"long", longDocs()},
	}
	for _, sh := range shapes {
		src := New([]byte("u/"), Options{})
		store := kvtest.Map{}
		for i, d := range sh.docs {
			if err := src.Add(store, uint32(i), d); err != nil {
				t.Fatal(err)
			}
		}
		records := kvtest.Freeze(store)
		img := src.AppendImage(nil)
		queries := termQueries(src, 0.9)
		extra := chatDocs(300)
		src = nil
		cases := []struct {
			name  string
			build func() *Index
		}{
			{"added", func() *Index {
				ix := New([]byte("u/"), Options{})
				addAll(t, ix, 0, sh.docs)
				return ix
			}},
			{"loaded", func() *Index {
				ix, err := Load(ctx, records, []byte("u/"), Options{Capacity: len(sh.docs)})
				if err != nil {
					t.Fatal(err)
				}
				return ix
			}},
			// The image is the index's: the engine reads it for the
			// index alone, which keeps it while postings are lazy.
			{"image", func() *Index {
				ix, err := LoadImage(bytes.Clone(img), []byte("u/"), Options{})
				if err != nil {
					t.Fatal(err)
				}
				return ix
			}},
			{"image-searched", func() *Index {
				ix, err := LoadImage(bytes.Clone(img), []byte("u/"), Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range queries {
					if _, err := ix.Search(ctx, q, 10, nil); err != nil {
						t.Fatal(err)
					}
				}
				if ix.lazy == nil {
					t.Fatal("the queries decoded every posting: the image is not held")
				}
				return ix
			}},
			{"image-written", func() *Index {
				ix, err := LoadImage(bytes.Clone(img), []byte("u/"), Options{})
				if err != nil {
					t.Fatal(err)
				}
				addAll(t, ix, len(sh.docs), extra)
				return ix
			}},
		}
		for _, c := range cases {
			t.Run(sh.name+"/"+c.name, func(t *testing.T) {
				ix, heap := heaptest.Added(2, c.build)
				got := ix.Bytes()
				r := float64(got) / float64(heap)
				t.Logf("Bytes %d, heap %d: %.3f", got, heap, r)
				if r < minRatio || r > maxRatio {
					t.Errorf("Bytes %d for a heap of %d bytes (%.2f×), want within [%.2f, %.2f]×", got, heap, r, minRatio, maxRatio)
				}
			})
		}
	}
}

// walk is what a full walk of ix counts now.
func walk(ix *Index) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n, _, _ := ix.walkLocked()
	return n
}

// TestBytesBetweenWalks: across a stream of adds, replacements and
// deletes, Bytes stays within the bound of what a walk counts after every
// one, the index is walked a logarithmic number of times while it grows
// (the increments carry the account between walks), and the account
// follows the heap at the end.
func TestBytesBetweenWalks(t *testing.T) {
	docs := chatDocs(2000)
	long := longDocs()[:40]
	before := heaptest.Live()
	ix := New([]byte("u/"), Options{})
	walks, last := 0, ix.acct.LastWalk()
	lo, hi := 1.0, 1.0
	check := func(i int, what string) {
		t.Helper()
		if w := ix.acct.LastWalk(); w != last {
			walks, last = walks+1, w
		}
		got, want := ix.Bytes(), walk(ix)
		r := float64(got) / float64(want)
		lo, hi = min(lo, r), max(hi, r)
		if r < minRatio || r > maxRatio {
			t.Fatalf("after %d %s: Bytes %d, a walk counts %d (%.2f×)", i, what, got, want, r)
		}
	}
	most := 0
	for i, d := range docs {
		if err := ix.Add(discard{}, uint32(i), d); err != nil {
			t.Fatal(err)
		}
		check(i+1, "adds")
		// Adds only grow the index: a walk may correct the estimates,
		// not undo the growth.
		if got := ix.Bytes(); float64(got) < 0.95*float64(most) {
			t.Fatalf("after %d adds: Bytes fell to %d from %d", i+1, got, most)
		}
		most = max(most, ix.Bytes())
	}
	// Growth by a quarter between walks, from a few hundred bytes to a
	// few megabytes, is some 40 walks at most; a walk per document would
	// be 2000, and none at all would leave the estimates uncorrected.
	if walks < 5 || walks > 60 {
		t.Errorf("%d adds walked the index %d times, want 5 to 60: a walk each time the estimates since the last add up to a quarter", len(docs), walks)
	}
	for i, d := range long {
		if err := ix.Add(discard{}, uint32(len(docs)+i), d); err != nil {
			t.Fatal(err)
		}
		check(i+1, "long adds")
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 1000 {
		doc := uint32(r.IntN(len(docs) + len(long)))
		if i%3 == 0 {
			if err := ix.Delete(discard{}, doc); err != nil {
				t.Fatal(err)
			}
		} else if err := ix.Add(discard{}, doc, docs[r.IntN(len(docs))]); err != nil {
			t.Fatal(err)
		}
		check(i+1, "replacements and deletes")
	}
	heap := int(heaptest.Live() - before)
	runtime.KeepAlive(ix)
	runtime.KeepAlive(docs) // the texts were there before: not the index's
	runtime.KeepAlive(long)
	if r := float64(ix.Bytes()) / float64(heap); r < minRatio || r > maxRatio {
		t.Errorf("Bytes %d for a heap of %d bytes (%.2f×) after writes", ix.Bytes(), heap, r)
	}
	t.Logf("%d walks; Bytes within [%.3f, %.3f]× of a walk; at the end %d for a heap of %d", walks, lo, hi, ix.Bytes(), heap)
}

// TestBytesConcurrent reads Bytes while writers and searchers of an
// index loaded from an image run (searches decode postings, the first
// write builds the rest); run it with -race: Bytes takes no lock.
func TestBytesConcurrent(t *testing.T) {
	ctx := context.Background()
	docs := chatDocs(400)
	src := New(nil, Options{})
	addAll(t, src, 0, docs)
	ix, err := LoadImage(src.AppendImage(nil), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	queries := termQueries(src, 1)
	var work sync.WaitGroup
	stop := heaptest.ReadBeside(t, ix.Bytes)
	work.Go(func() {
		for _, q := range queries {
			if _, err := ix.Search(ctx, q, 5, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	work.Go(func() {
		for i, d := range docs {
			if err := ix.Add(discard{}, uint32(len(docs)+i), d); err != nil {
				t.Error(err)
				return
			}
		}
	})
	work.Wait()
	stop()
	if got, want := ix.Bytes(), walk(ix); float64(got) < minRatio*float64(want) || float64(got) > maxRatio*float64(want) {
		t.Errorf("Bytes %d, a walk counts %d", got, want)
	}
}
