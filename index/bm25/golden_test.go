package bm25

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/kv"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden.txt from the current code")

// recorder is a kv.Writer that logs every write, in order, as text, and
// keeps the final state for a reload.
type recorder struct {
	log strings.Builder
	ops []func(kv.Writer) error
}

func (r *recorder) Set(k, v []byte) error {
	fmt.Fprintf(&r.log, "set %x %x\n", k, v)
	k, v = append([]byte(nil), k...), append([]byte(nil), v...)
	r.ops = append(r.ops, func(w kv.Writer) error { return w.Set(k, v) })
	return nil
}

func (r *recorder) Delete(k []byte) error {
	fmt.Fprintf(&r.log, "del %x\n", k)
	k = append([]byte(nil), k...)
	r.ops = append(r.ops, func(w kv.Writer) error { return w.Delete(k) })
	return nil
}

// goldenQueries prints what the index answers: searches with and without a
// filter and explanations, scores to the last bit.
func goldenQueries(ix *Index, out *strings.Builder) {
	allow := roaring.New()
	for d := uint32(0); d < 2000; d += 3 {
		allow.Add(d)
	}
	queries := []string{"user", "like enjoy", "object 17", "city where", "Straße café", "don't", "3.14 1,000",
		"relocated organization", "music play", "object-999", "w3x w5x w7x", "nothing-matches-this", ""}
	for _, q := range queries {
		for _, k := range []int{1, 10, 50} {
			for _, a := range []*roaring.Bitmap{nil, allow} {
				hits, err := ix.Search(context.Background(), q, k, a)
				fmt.Fprintf(out, "search %q k=%d filter=%v: %v %v\n", q, k, a != nil, hits, err)
			}
		}
	}
	for _, d := range []uint32{0, 1, 17, 500, 999, 1500, 1777} {
		fmt.Fprintf(out, "explain %d: %s\n", d, ix.Explain("user like object 17 city", d))
	}
	fmt.Fprintf(out, "len %d\n", ix.Len())
}

// goldenWorkload runs the writes the golden file pins: a bulk import shaped
// like the engine's (one fact per document, most of them naming a new
// object), then replacements, deletions, out-of-order IDs, non-ASCII and
// long text.
func goldenWorkload(t testing.TB, ix *Index, w kv.Writer) {
	preds := []string{"lives in live living home city where reside moved", "likes like enjoy",
		"works at work job employer company", "plays instrument play music", "speaks language speak"}
	add := func(doc uint32, text string) {
		if err := ix.Add(w, doc, text); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		add(uint32(i), fmt.Sprintf("user %s object-%d", preds[i%len(preds)], i))
	}
	r := rand.New(rand.NewPCG(3, 4))
	extra := []string{"Straße café naïve ﬁle Ｆｕｌｌ", "don't Alice's cats' rock’n’roll", "3.14 1,000 1,2 10.0.0.1",
		"relocated relocates relocating organization hopping hoping", strings.Repeat("x", 100) + " " + strings.Repeat("é", 70),
		"the a of and", "日本語 テキスト 中文", "½ ﷺ", "user user user like like"}
	for i := range 800 {
		doc := uint32(1000 + r.IntN(1000))
		switch r.IntN(10) {
		case 0:
			if err := ix.Delete(w, uint32(r.IntN(2000))); err != nil {
				t.Fatal(err)
			}
		case 1, 2:
			add(uint32(r.IntN(1000)), fmt.Sprintf("user %s object-%d %s", preds[i%len(preds)], r.IntN(1000), extra[r.IntN(len(extra))]))
		default:
			ws := make([]string, 2+r.IntN(8))
			for j := range ws {
				ws[j] = fmt.Sprintf("w%dx", r.IntN(40))
			}
			add(doc, strings.Join(ws, " ")+" "+extra[r.IntN(len(extra))])
		}
	}
}

// TestGolden pins the persisted bytes and the answers of the index to what
// they were before the write path was optimised: every write, in order,
// then the query answers of the index that made them and of the index
// loaded from them. Run with -update to rewrite it (only when a change of
// format or results is intended).
func TestGolden(t *testing.T) {
	prefix := kv.UserKey("golden", kv.SubBM25)
	ix := New(prefix, Options{})
	rec := &recorder{}
	goldenWorkload(t, ix, rec)
	var out strings.Builder
	out.WriteString(rec.log.String())
	out.WriteString("-- built\n")
	goldenQueries(ix, &out)

	db := openStore(t)
	b := db.NewBatch()
	for _, op := range rec.ops {
		if err := op(b); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	loaded, err := Load(context.Background(), db, prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Check(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	out.WriteString("-- loaded\n")
	goldenQueries(loaded, &out)

	golden.Check(t, "testdata/golden.txt", out.String(), *updateGolden)

	// Loaded from its image, the index answers to the bit as loaded from
	// its records.
	fromImage, err := LoadImage(loaded.AppendImage(nil), prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b2 strings.Builder
	goldenQueries(loaded, &a)
	goldenQueries(fromImage, &b2)
	if a.String() != b2.String() {
		t.Fatalf("from its image the index answers\n%s\nfrom its records\n%s", b2.String(), a.String())
	}
}

// TestImageGolden pins the bytes of an image (format 11 of the store; see
// image.go): a change of them needs a store format bump.
func TestImageGolden(t *testing.T) {
	ix := New([]byte("p"), Options{})
	for i, text := range []string{"I live in Seattle", "moved to 東京 last year 🙂", "the a of", "live live Seattle", "שלום עולם"} {
		if err := ix.Add(discard{}, uint32(i*70), text); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, "testdata/image.txt", hex.Dump(ix.AppendImage(nil)), *updateGolden)
}
