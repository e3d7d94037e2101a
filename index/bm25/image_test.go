package bm25

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	realtext "github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/imagetest"
	"github.com/memor-db/memor/kv"
)

// corpusDocs cuts the realistic corpus into documents: its sentences and
// lines, a few whole texts.
func corpusDocs() []string {
	var docs []string
	for _, t := range realtext.MustTexts() {
		docs = append(docs, t.Body)
		for _, line := range strings.Split(t.Body, "\n") {
			for _, s := range strings.SplitAfter(line, ". ") {
				if len(Tokenize(s)) > 0 {
					docs = append(docs, s)
				}
			}
		}
	}
	return docs
}

// indexCorpus adds docs (as documents 3·i, so that some pages hold gaps)
// to a new index under prefix, committing to db, and returns it loaded
// from the store.
func indexCorpus(t *testing.T, db *kv.DB, prefix []byte, docs []string) *Index {
	t.Helper()
	ix := New(prefix, Options{})
	b := db.NewBatch()
	for i, d := range docs {
		if err := ix.Add(b, uint32(3*i), d); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	loaded, err := Load(context.Background(), db, prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// sameAnswers fails unless a and b answer every query alike, to the bit:
// Search with every kind of allow list, Explain of what it found, the
// statistics.
func sameAnswers(t *testing.T, what string, a, b *Index, r *rand.Rand, words []string, maxDoc uint32) {
	t.Helper()
	ctx := context.Background()
	if a.Len() != b.Len() || a.AvgDocLen() != b.AvgDocLen() {
		t.Fatalf("%s: Len %d / %d, AvgDocLen %v / %v", what, a.Len(), b.Len(), a.AvgDocLen(), b.AvgDocLen())
	}
	for q := range 300 {
		var qs []string
		for range 1 + r.IntN(5) {
			qs = append(qs, words[r.IntN(len(words))])
		}
		query := strings.Join(qs, " ")
		var allow *roaring.Bitmap
		switch q % 4 {
		case 1: // sparse: the per-document path where term lists exist
			allow = roaring.New()
			for range 1 + r.IntN(20) {
				allow.Add(r.Uint32N(maxDoc))
			}
		case 2:
			allow = roaring.New()
			for d := uint32(0); d < maxDoc; d++ {
				if r.IntN(3) != 0 {
					allow.Add(d)
				}
			}
		}
		k := 1 + r.IntN(40)
		ha, err := a.Search(ctx, query, k, allow)
		if err != nil {
			t.Fatal(err)
		}
		hb, err := b.Search(ctx, query, k, allow)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ha, hb) {
			t.Fatalf("%s: Search(%q, %d):\n%v\nwant\n%v", what, query, k, hb, ha)
		}
		for _, h := range ha {
			if ea, eb := a.Explain(query, h.Doc), b.Explain(query, h.Doc); !reflect.DeepEqual(ea, eb) {
				t.Fatalf("%s: Explain(%q, %d):\n%v\nwant\n%v", what, query, h.Doc, eb, ea)
			}
			la, _ := a.DocLen(h.Doc)
			lb, _ := b.DocLen(h.Doc)
			if la != lb {
				t.Fatalf("%s: DocLen(%d) %d, want %d", what, h.Doc, lb, la)
			}
		}
	}
}

// TestImageMatchesLoad: an index loaded from its image answers every
// query as the index loaded from the records does, bit for bit, while
// its postings are decoded as queries ask for them; writes then build the
// rest, and the two stay alike: same answers, a clean Check, the same
// image.
func TestImageMatchesLoad(t *testing.T) {
	ctx := context.Background()
	docs := corpusDocs()
	db := openStore(t)
	prefix := kv.UserKey("image user", kv.SubBM25)
	for _, bm := range []int{blockMin, 4} { // 4: per-block bounds on most postings
		t.Run(fmt.Sprintf("blockMin=%d", bm), func(t *testing.T) {
			ref := indexCorpus(t, db, prefix, docs)
			img := ref.AppendImage(nil)
			ix, err := LoadImage(img, prefix, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ref.blockMin, ix.blockMin = bm, bm
			if bm != blockMin {
				// ref's postings were built with the default: rebuilt
				// with this one, as ix's will be.
				if ref, err = Load(ctx, db, prefix, Options{}); err != nil {
					t.Fatal(err)
				}
				ref.blockMin = bm
				ref.mu.Lock()
				for id := range ref.terms {
					if p := &ref.terms[id].posting; p.blocks == nil && p.len() >= bm {
						ref.buildBounds(p)
					}
				}
				ref.mu.Unlock()
			}
			if ix.lazy == nil || ix.lazy.left != len(ix.lazy.terms) {
				t.Fatal("LoadImage decoded postings before any query")
			}
			var words []string
			for _, d := range docs[:200] {
				words = append(words, strings.Fields(d)...)
			}
			words = append(words, "zzzabsent", "the", "東京", "🙂")
			r := rand.New(rand.NewPCG(5, 6))
			maxDoc := uint32(3 * len(docs))
			sameAnswers(t, "image, lazily decoded", ref, ix, r, words, maxDoc)
			if ix.lazy == nil || ix.lazy.left == 0 {
				t.Fatalf("the queries decoded every posting (%v): nothing is lazy", ix.lazy)
			}
			t.Logf("300 queries decoded %d of %d postings", len(ix.lazy.terms)-ix.lazy.left, len(ix.lazy.terms))
			// Writes: the same adds, replacements and deletes on both.
			b := db.NewBatch()
			for i := range 200 {
				d := r.Uint32N(maxDoc + 50)
				if i%3 == 0 {
					if err := ref.Delete(discard{}, d); err != nil {
						t.Fatal(err)
					}
					if err := ix.Delete(b, d); err != nil {
						t.Fatal(err)
					}
					continue
				}
				text := docs[r.IntN(len(docs))]
				if err := ref.Add(discard{}, d, text); err != nil {
					t.Fatal(err)
				}
				if err := ix.Add(b, d, text); err != nil {
					t.Fatal(err)
				}
			}
			commit(t, b)
			if ix.lazy != nil || ix.noRefs {
				t.Fatal("a write left the image's index partly built")
			}
			sameAnswers(t, "image, after writes", ref, ix, r, words, maxDoc+50)
			if err := ix.Check(ctx, db); err != nil {
				t.Fatalf("Check of the image's index after writes: %v", err)
			}
			if !bytes.Equal(ix.AppendImage(nil), ref.AppendImage(nil)) {
				t.Fatal("the two indexes' images differ after the same writes")
			}
			// Put the store back as indexCorpus left it for the next run.
			b = db.NewBatch()
			if err := b.DeleteRange(prefix, kv.PrefixEnd(prefix)); err != nil {
				t.Fatal(err)
			}
			commit(t, b)
		})
	}
}

// TestImageCheckAndWrite: Check of an index just loaded from an image
// builds what it needs and passes against the records; a Delete as the
// first write works on it.
func TestImageCheckAndWrite(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	prefix := kv.UserKey("check user", kv.SubBM25)
	ref := indexCorpus(t, db, prefix, corpusDocs()[:300])
	ix, err := LoadImage(ref.AppendImage(nil), prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatalf("Check of an index loaded from its image: %v", err)
	}
	ix, _ = LoadImage(ref.AppendImage(nil), prefix, Options{})
	b := db.NewBatch()
	if err := ix.Delete(b, 3); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if err := ix.Check(ctx, db); err != nil {
		t.Fatalf("Check after a Delete: %v", err)
	}
	if ix.Len() != ref.Len()-1 {
		t.Fatalf("Len %d after a Delete of %d", ix.Len(), ref.Len())
	}
	// An empty index's image loads as an empty index.
	empty, err := LoadImage(New(prefix, Options{}).AppendImage(nil), prefix, Options{})
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty image: %v, %d documents", err, empty.Len())
	}
}

// TestLoadImageDamaged: an image cut anywhere, or changed in its
// structure, fails with ErrCorrupt (never a panic, never an index that
// fails a later search).
func TestLoadImageDamaged(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	prefix := kv.UserKey("damaged user", kv.SubBM25)
	img := indexCorpus(t, db, prefix, corpusDocs()[:60]).AppendImage(nil)
	load := func(b []byte) (*Index, error) { return LoadImage(b, prefix, Options{}) }
	imagetest.Cuts(t, img, ErrCorrupt, load)
	refused := imagetest.Damage(t, rand.New(rand.NewPCG(8, 9)), img, 3000, ErrCorrupt, load, func(ix *Index) {
		// A change that keeps the structure (a term's letters, a
		// frequency moved between terms) loads an index that works.
		if _, err := ix.Search(ctx, "the quick fox 東京", 10, nil); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(discard{}, 1<<20, "a new document"); err != nil {
			t.Fatal(err)
		}
	})
	if refused < 1500 {
		t.Fatalf("only %d of 3000 damaged images refused", refused)
	}
}

// FuzzLoadImage: LoadImage never panics, and an index it accepts serves
// searches, explanations and writes.
func FuzzLoadImage(f *testing.F) {
	for _, docs := range [][]string{{"I live in Seattle.", "I moved to 東京 last year 🙂"}, corpusDocs()[:20]} {
		ix := New([]byte("p"), Options{})
		for i, d := range docs {
			if err := ix.Add(discard{}, uint32(i*130), d); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(ix.AppendImage(nil))
	}
	f.Add([]byte{imageVersion, 0, 0})
	f.Fuzz(func(t *testing.T, img []byte) {
		ix, err := LoadImage(img, []byte("p"), Options{})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v, not ErrCorrupt", err)
			}
			return
		}
		if _, err := ix.Search(context.Background(), "seattle live moved", 5, nil); err != nil {
			t.Fatal(err)
		}
		_ = ix.Explain("seattle", 0)
		if err := ix.Delete(discard{}, 0); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(discard{}, 1, "seattle again"); err != nil {
			t.Fatal(err)
		}
		if again, err := LoadImage(ix.AppendImage(nil), []byte("p"), Options{}); err != nil || again.Len() != ix.Len() {
			t.Fatalf("the image of an accepted index: %v", err)
		}
	})
}

// TestImageConcurrent: searches and explanations of an index just loaded
// from its image, from many goroutines at once, each decoding the
// postings it meets (run with -race), answer as the records' index does;
// a write in the middle of them builds the rest.
func TestImageConcurrent(t *testing.T) {
	ctx := context.Background()
	docs := corpusDocs()
	db := openStore(t)
	prefix := kv.UserKey("concurrent user", kv.SubBM25)
	ref := indexCorpus(t, db, prefix, docs)
	ix, err := LoadImage(ref.AppendImage(nil), prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, d := range docs[:100] {
		words = append(words, strings.Fields(d)...)
	}
	errs := make(chan error, 9)
	for g := range 8 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range 200 {
				q := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
				got, err := ix.Search(ctx, q, 10, nil)
				if err != nil {
					errs <- err
					return
				}
				want, _ := ref.Search(ctx, q, 10, nil)
				if !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("Search(%q): %v, want %v", q, got, want)
					return
				}
				if len(got) > 0 {
					if a, b := ix.Explain(q, got[0].Doc), ref.Explain(q, got[0].Doc); !reflect.DeepEqual(a, b) {
						errs <- fmt.Errorf("Explain(%q): %v, want %v", q, a, b)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	go func() {
		// A write replacing a document with its own text changes nothing
		// either index answers.
		errs <- ix.Add(discard{}, 0, docs[0])
	}()
	for range 9 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
