package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv"
)

// model is the brute-force reference: every document's terms, scored by the
// BM25 formula written out plainly.
type model struct {
	k1, b float64
	docs  map[uint32][]string
}

func (m *model) score(query []string) map[uint32]float64 {
	n := float64(len(m.docs))
	var total float64
	df := map[string]float64{}
	for _, terms := range m.docs {
		total += float64(len(terms))
		seen := map[string]bool{}
		for _, t := range terms {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avgdl := total / n
	q := slices.Clone(query)
	slices.Sort(q)
	q = slices.Compact(q)
	out := map[uint32]float64{}
	for doc, terms := range m.docs {
		dl := float64(len(terms))
		var s float64
		matched := false
		for _, t := range q {
			tf := 0.0
			for _, x := range terms {
				if x == t {
					tf++
				}
			}
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[t]+0.5)/(df[t]+0.5))
			s += idf * tf * (m.k1 + 1) / (tf + m.k1*(1-m.b+m.b*dl/avgdl))
			matched = true
		}
		if matched {
			out[doc] = s
		}
	}
	return out
}

func (m *model) search(query []string, k int, allow *roaring.Bitmap) ([]Hit, map[uint32]float64) {
	scores := m.score(query)
	var hits []Hit
	for d, s := range scores {
		if allow == nil || allow.Contains(d) {
			hits = append(hits, Hit{d, s})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return int(int64(a.Doc) - int64(b.Doc))
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, scores
}

const tol = 1e-6

// compare checks got against the brute-force top k: same length, each
// position's score within tol of the reference, and each returned
// document's own score right; documents may differ only between ties.
func compare(t *testing.T, what string, got, want []Hit, scores map[uint32]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if math.Abs(got[i].Score-want[i].Score) > tol {
			t.Fatalf("%s: hit %d score %v, want %v\ngot  %v\nwant %v", what, i, got[i].Score, want[i].Score, got, want)
		}
		ref, ok := scores[got[i].Doc]
		if !ok || math.Abs(ref-got[i].Score) > tol {
			t.Fatalf("%s: doc %d scored %v, brute force %v (present %v)", what, got[i].Doc, got[i].Score, ref, ok)
		}
	}
}

// corpus draws random documents over a small vocabulary (so terms repeat
// within and across documents), salted with stop words, case and
// punctuation that the tokenizer must see through.
type corpus struct {
	r     *rand.Rand
	vocab []string
}

func newCorpus(seed uint64, vocab int) *corpus {
	c := &corpus{r: rand.New(rand.NewPCG(seed, 1))}
	for i := 0; i < vocab; i++ {
		var b strings.Builder
		for j := 0; j < 3+c.r.IntN(5); j++ {
			b.WriteByte(byte('a' + c.r.IntN(26)))
		}
		c.vocab = append(c.vocab, b.String())
	}
	return c
}

func (c *corpus) word() string {
	// Squared uniform: a skewed, Zipf-like draw.
	f := c.r.Float64()
	return c.vocab[int(f*f*float64(len(c.vocab)))]
}

func (c *corpus) text(maxWords int) string {
	var b strings.Builder
	n := c.r.IntN(maxWords + 1)
	for i := 0; i < n; i++ {
		switch c.r.IntN(10) {
		case 0:
			b.WriteString("the ")
		case 1:
			b.WriteString(strings.ToUpper(c.word()) + ", ")
		default:
			b.WriteString(c.word() + " ")
		}
	}
	return b.String()
}

func openStore(t testing.TB) *kv.DB {
	t.Helper()
	db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func commit(t testing.TB, b *kv.Batch) {
	t.Helper()
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBruteForce compares Search with the brute-force model over random
// corpora, through adds, replacements and deletes, with and without allow
// lists of every density, and after reloading from the store.
func TestBruteForce(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 12; seed++ {
		opts := Options{}
		if seed%3 == 0 {
			opts = Options{K1: 2, B: 0.3}
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := newCorpus(seed, 10+int(seed)*15)
			db := openStore(t)
			prefix := kv.UserKey(fmt.Sprintf("user%d", seed), kv.SubBM25)
			ix := New(prefix, opts)
			o := ix.Options()
			m := &model{k1: o.K1, b: o.B, docs: map[uint32][]string{}}
			maxDoc := uint32(200 + seed*300)
			if seed%4 == 0 {
				maxDoc = 1 << 31 // sparse IDs: many pages, many blocks
			}
			randDoc := func() uint32 {
				if maxDoc > 1<<20 {
					return c.r.Uint32N(200) * (1 << 22) / 2 // far apart
				}
				return c.r.Uint32N(maxDoc)
			}
			verify := func(phase string) {
				t.Helper()
				if len(m.docs) != ix.Len() {
					t.Fatalf("%s: Len %d, want %d", phase, ix.Len(), len(m.docs))
				}
				for qi := 0; qi < 40; qi++ {
					query := c.text(5)
					qt := Tokenize(query)
					k := 1 + c.r.IntN(15)
					var allow *roaring.Bitmap
					switch qi % 4 {
					case 1: // sparse: takes the per-document path
						allow = roaring.New()
						for d := range m.docs {
							if c.r.IntN(50) == 0 {
								allow.Add(d)
							}
						}
						allow.Add(randDoc()) // maybe a document that does not exist
					case 2: // dense: filtered while walking postings
						allow = roaring.New()
						for d := range m.docs {
							if c.r.IntN(3) != 0 {
								allow.Add(d)
							}
						}
					case 3:
						allow = roaring.New() // allows nothing
					}
					got, err := ix.Search(ctx, query, k, allow)
					if err != nil {
						t.Fatal(err)
					}
					want, scores := m.search(qt, k, allow)
					what := fmt.Sprintf("%s: query %q k=%d allow=%v", phase, query, k, allow != nil)
					compare(t, what, got, want, scores)
					for _, h := range got {
						if e := ix.Explain(query, h.Doc); e.Score != h.Score || !e.Found {
							t.Fatalf("%s: Explain(doc %d) = %v, Search scored %v", what, h.Doc, e.Score, h.Score)
						}
					}
				}
			}
			// Phase 1: adds (some replacing) in random ID order.
			b := db.NewBatch()
			for i := 0; i < int(maxDoc%1000)+150; i++ {
				d, text := randDoc(), c.text(12)
				if err := ix.Add(b, d, text); err != nil {
					t.Fatal(err)
				}
				m.docs[d] = Tokenize(text)
			}
			commit(t, b)
			verify("after adds")
			// Phase 2: deletes, replacements and adds, interleaved.
			b = db.NewBatch()
			for i := 0; i < 150; i++ {
				d := randDoc()
				switch c.r.IntN(3) {
				case 0, 1:
					if err := ix.Delete(b, d); err != nil {
						t.Fatal(err)
					}
					delete(m.docs, d)
				default:
					text := c.text(12)
					if err := ix.Add(b, d, text); err != nil {
						t.Fatal(err)
					}
					m.docs[d] = Tokenize(text)
				}
			}
			commit(t, b)
			verify("after deletes")
			if err := ix.Check(ctx, db); err != nil {
				t.Fatalf("Check: %v", err)
			}
			// Phase 3: a fresh index loaded from the store is the same.
			ix, err := Load(ctx, db, prefix, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Check(ctx, db); err != nil {
				t.Fatalf("Check after Load: %v", err)
			}
			verify("after load")
			// Phase 4: so is one loaded from its image, its postings
			// decoded as the queries ask.
			if ix, err = LoadImage(ix.AppendImage(nil), prefix, opts); err != nil {
				t.Fatal(err)
			}
			verify("after image load")
		})
	}
}

func TestDeleteEverything(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	ix := New([]byte("p"), Options{})
	b := db.NewBatch()
	for d := uint32(0); d < 100; d++ {
		if err := ix.Add(b, d, fmt.Sprintf("fact number %d about cats", d)); err != nil {
			t.Fatal(err)
		}
	}
	for d := uint32(0); d < 100; d++ {
		if err := ix.Delete(b, d); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	if ix.Len() != 0 || len(ix.ids) != 0 || ix.total != 0 {
		t.Fatalf("after deleting all: Len %d, %d terms, total %d", ix.Len(), len(ix.ids), ix.total)
	}
	if hits, err := ix.Search(ctx, "cats", 10, nil); err != nil || len(hits) != 0 {
		t.Fatalf("Search on empty index = %v, %v", hits, err)
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Term IDs are reused.
	b = db.NewBatch()
	if err := ix.Add(b, 7, "dogs and cats"); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if len(ix.terms) > 110 {
		t.Fatalf("term slots not reused: %d", len(ix.terms))
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
}

// TestRelocate is the issue's example: a query for "relocate" finds a fact
// saying "relocated".
func TestRelocate(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	ix := New(kv.UserKey("u", kv.SubBM25), Options{})
	b := db.NewBatch()
	for d, text := range []string{
		"User relocated to Berlin in March 2024",
		"User works at Acme as a software engineer",
		"User plays the violin",
	} {
		if err := ix.Add(b, uint32(d), text); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	hits, err := ix.Search(ctx, "When did the user relocate?", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Doc != 0 {
		t.Fatalf("hits = %v, want doc 0 first", hits)
	}
	e := ix.Explain("relocate", 0)
	if len(e.Terms) != 1 || e.Terms[0].TF != 1 || e.Terms[0].DF != 1 || e.Score <= 0 {
		t.Fatalf("Explain = %+v", e)
	}
	if s := e.String(); !strings.Contains(s, `weight("relocat")`) {
		t.Fatalf("Explain string lacks the term:\n%s", s)
	}
}

func TestCheckFindsDivergence(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	prefix := kv.UserKey("u", kv.SubBM25)
	ix := New(prefix, Options{})
	b := db.NewBatch()
	for d := uint32(0); d < 10; d++ {
		if err := ix.Add(b, d, fmt.Sprintf("doc %d text", d)); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Changes written to a batch that is never committed: memory is ahead
	// of the store.
	lost := db.NewBatch()
	if err := ix.Add(lost, 3, "different words now"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(lost, 42, "brand new"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(lost, 5); err != nil {
		t.Fatal(err)
	}
	_ = lost.Close()
	err := ix.Check(ctx, db)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Check = %v, want ErrMismatch", err)
	}
	for _, want := range []string{"doc 3: terms", "doc 5 is stored but not in memory", "[42] are in memory but not stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error lacks %q:\n%v", want, err)
		}
	}
	// Corrupt bytes in the store are reported, not loaded.
	b = db.NewBatch()
	if err := b.Set(appendDocKey(nil, prefix, 1), []byte{1, 5, 1, 3, 'a'}); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if _, err := Load(ctx, db, prefix, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of a corrupt record = %v, want ErrCorrupt", err)
	}
	b = db.NewBatch()
	if err := b.Set(append(kv.UserKey("u", kv.SubBM25), 'z'), nil); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if _, err := Load(ctx, db, prefix, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load with a foreign key = %v, want ErrCorrupt", err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	terms := []termCount{{"a", 2}, {"b\x00c", 1}, {"é", 300}}
	v := appendRecord(nil, 303, terms)
	l, got, err := decodeRecord(v)
	if err != nil || l != 303 || !slices.Equal(got, terms) {
		t.Fatalf("round trip: %d %v %v", l, got, err)
	}
	for i := range v {
		if _, _, err := decodeRecord(v[:i]); err == nil {
			t.Fatalf("truncated record (%d bytes) decoded", i)
		}
	}
	for _, bad := range [][]byte{
		appendRecord(nil, 4, terms),                               // length ≠ Σ tf
		appendRecord(nil, 3, []termCount{{"b", 1}, {"a", 2}}),     // unsorted
		appendRecord(nil, 0, []termCount{{"a", 0}}),               // zero tf
		append(appendRecord(nil, 2, []termCount{{"a", 2}}), 0x00), // trailing
	} {
		if _, _, err := decodeRecord(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeRecord(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}

type failWriter struct{}

var errWrite = errors.New("write refused")

func (failWriter) Set(k, v []byte) error { return errWrite }
func (failWriter) Delete(k []byte) error { return errWrite }

// TestFailedWriteLeavesMemory: a refused write changes nothing in memory.
func TestFailedWriteLeavesMemory(t *testing.T) {
	db := openStore(t)
	ix := New([]byte("p"), Options{})
	b := db.NewBatch()
	if err := ix.Add(b, 1, "hello world"); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if err := ix.Add(failWriter{}, 2, "more words"); !errors.Is(err, errWrite) {
		t.Fatalf("Add = %v", err)
	}
	if err := ix.Delete(failWriter{}, 1); !errors.Is(err, errWrite) {
		t.Fatalf("Delete = %v", err)
	}
	if ix.Len() != 1 {
		t.Fatalf("Len = %d after refused writes", ix.Len())
	}
	if err := ix.Check(context.Background(), db); err != nil {
		t.Fatal(err)
	}
}

func TestSearchEdges(t *testing.T) {
	ctx := context.Background()
	ix := New(nil, Options{K1: math.NaN(), B: 7})
	if o := ix.Options(); o.K1 != DefaultK1 || o.B != DefaultB {
		t.Fatalf("invalid options not defaulted: %+v", o)
	}
	db := openStore(t)
	b := db.NewBatch()
	for d := uint32(0); d < 20; d++ {
		if err := ix.Add(b, d, "alpha beta"); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Add(b, 100, "the of and"); err != nil { // only stop words
		t.Fatal(err)
	}
	commit(t, b)
	for _, k := range []int{0, -1} {
		if hits, err := ix.Search(ctx, "alpha", k, nil); err != nil || hits != nil {
			t.Fatalf("k=%d: %v, %v", k, hits, err)
		}
	}
	if hits, _ := ix.Search(ctx, "the", 5, nil); len(hits) != 0 {
		t.Fatalf("stop-word query matched %v", hits)
	}
	hits, _ := ix.Search(ctx, "alpha alpha ALPHA", 1000, nil)
	if len(hits) != 20 || hits[0].Doc != 0 || hits[19].Doc != 19 {
		t.Fatalf("ties must order by doc: %v", hits)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cctx, "alpha", 5, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Search = %v", err)
	}
	if e := ix.Explain("alpha", 999); e.Found || e.Score != 0 {
		t.Fatalf("Explain of an absent doc = %+v", e)
	}
}

func ExampleIndex_Search() {
	ix := New([]byte("example"), Options{})
	var w discard
	_ = ix.Add(w, 1, "Alice moved to Lisbon in 2023.")
	_ = ix.Add(w, 2, "Alice is relocating to Berlin next month.")
	_ = ix.Add(w, 3, "Bob plays the violin.")
	hits, _ := ix.Search(context.Background(), "Where did Alice relocate?", 10, nil)
	for _, h := range hits {
		fmt.Printf("doc %d %.3f\n", h.Doc, h.Score)
	}
	// Output:
	// doc 2 1.316
	// doc 1 0.470
}

// discard is a kv.Writer that drops writes, for examples without a store.
type discard struct{}

func (discard) Set(k, v []byte) error { return nil }
func (discard) Delete(k []byte) error { return nil }

// TestConcurrent runs searches, explains and checks against adds and
// deletes; run it with -race.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	ix := New([]byte("c"), Options{})
	c := newCorpus(99, 50)
	done := make(chan struct{})
	errs := make(chan error, 3)
	for g := 0; g < 3; g++ {
		go func() {
			var err error
			for i := 0; err == nil; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				_, err = ix.Search(ctx, c.vocab[i%len(c.vocab)]+" "+c.vocab[(i*7)%len(c.vocab)], 5, nil)
				_ = ix.Explain(c.vocab[i%len(c.vocab)], uint32(i%100))
				_ = ix.Len()
			}
			errs <- err
		}()
	}
	for i := 0; i < 300; i++ {
		b := db.NewBatch()
		if err := ix.Add(b, uint32(i%100), c.text(8)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := ix.Delete(b, uint32((i*13)%100)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, b)
	}
	close(done)
	for g := 0; g < 3; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
}

// TestSlabServesEveryRequestSize takes every size a slab serves from its
// chunks, first and after others, including sizes larger than the first
// chunk (a 17-term document once panicked in take).
func TestSlabServesEveryRequestSize(t *testing.T) {
	for first := 1; first <= 100; first++ {
		var s slab[uint32]
		for _, n := range []int{first, 1, first, 64, 17, 65, first} {
			out := s.take(n)
			if len(out) != n || cap(out) != n {
				t.Fatalf("take(%d) after first %d: len %d cap %d", n, first, len(out), cap(out))
			}
		}
	}
}

// TestManyDistinctTerms indexes documents with more distinct terms than a
// first chunk holds, the shape of an ordinary sentence.
func TestManyDistinctTerms(t *testing.T) {
	ix := New([]byte("t"), Options{})
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango")
	for n := 1; n <= len(words); n++ {
		if err := ix.Add(discard{}, uint32(n), strings.Join(words[:n], " ")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ix.Search(context.Background(), "quebec", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("search quebec: %d hits, want 4", len(got))
	}
}
