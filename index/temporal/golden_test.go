package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/kv/kvtest"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden.txt from the current code")

// goldenWorkload runs the writes the golden file pins: a bulk import shaped
// like the engine's (one open version per fact, ValidFrom a minute apart),
// then expiries, updates, deletions and open or closed instants, with
// queries in between so that the snapshot structure is rebuilt midway.
func goldenWorkload(t testing.TB, ix *Index, w *golden.Recorder, out *strings.Builder) {
	put := func(doc uint32, iv Interval) {
		if err := ix.Put(w, doc, iv); err != nil {
			t.Fatal(err)
		}
	}
	rec := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 {
		put(uint32(i), Interval{ValidFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute), RecordedAt: rec})
	}
	goldenQueries(ix, out, "bulk")
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 1500 {
		doc := uint32(r.IntN(1600))
		switch r.IntN(6) {
		case 0:
			if err := ix.Delete(w, doc); err != nil {
				t.Fatal(err)
			}
		case 1:
			if iv, ok := ix.Get(doc); ok && iv.ExpiredAt.IsZero() {
				iv.ExpiredAt = rec.Add(time.Duration(i) * time.Second)
				put(doc, iv)
			}
		default:
			put(doc, randInterval(r, 200))
		}
		if i%500 == 499 {
			goldenQueries(ix, out, fmt.Sprint("mixed ", i))
		}
	}
}

// goldenQueries prints what the index answers at instants around the data.
func goldenQueries(ix *Index, out *strings.Builder, phase string) {
	instants := []time.Time{{}, t0.Add(-time.Hour), t0, t0.Add(37 * time.Hour), t0.Add(150 * time.Hour),
		time.Date(2020, 1, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, v := range instants {
		for _, k := range instants {
			fmt.Fprintf(out, "%s visible %d %d: %s\n", phase, v.UnixNano(), k.UnixNano(), digest(ix.Visible(v, k)))
		}
		fmt.Fprintf(out, "%s current %d: %s\n", phase, v.UnixNano(), digest(ix.Current(v)))
	}
	for _, d := range []uint32{0, 1, 500, 999, 1200, 1599} {
		iv, ok := ix.Get(d)
		fmt.Fprintf(out, "%s get %d: %v %v\n", phase, d, iv, ok)
	}
	fmt.Fprintf(out, "%s len %d\n", phase, ix.Len())
}

// digest is a bitmap's cardinality and a hash of its members: a golden
// line per answer, not a thousand numbers.
func digest(b *roaring.Bitmap) string {
	h := fnv.New64a()
	for _, d := range b.ToArray() {
		_, _ = h.Write(binary.BigEndian.AppendUint32(nil, d))
	}
	return fmt.Sprintf("%d docs, fnv %016x", b.GetCardinality(), h.Sum64())
}

// TestGolden pins the persisted bytes and the answers of the index to what
// they were before the write path was optimised: every write, in order,
// then the answers of the index that made them and of the index loaded
// from them. Run with -update to rewrite it (only when a change of format
// or results is intended).
func TestGolden(t *testing.T) {
	prefix := []byte("golden/temporal/")
	ix := New(prefix)
	store := kvtest.Map{}
	rec := &golden.Recorder{W: store}
	var queries strings.Builder
	goldenWorkload(t, ix, rec, &queries)
	var out strings.Builder
	out.WriteString(rec.Log())
	out.WriteString("-- built\n")
	out.WriteString(queries.String())
	goldenQueries(ix, &out, "final")
	if err := ix.Check(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(context.Background(), store, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Check(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	out.WriteString("-- loaded\n")
	goldenQueries(loaded, &out, "loaded")

	golden.Check(t, "testdata/golden.txt", out.String(), *updateGolden)
}

// TestImageGolden pins the bytes of an image (see image.go): a small
// index's whole, and the length and hash of the golden workload's, whose
// snapshots a small index has none of. The workload's index loaded from
// its image answers as loaded from its records. A change of the bytes
// needs a new image version.
func TestImageGolden(t *testing.T) {
	small := New([]byte("p"))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for d, iv := range []Interval{
		{ValidFrom: at, RecordedAt: at},
		{ValidFrom: at.Add(-time.Hour), ValidTo: at, RecordedAt: at.Add(time.Minute), ExpiredAt: at.Add(2 * time.Minute)},
		{RecordedAt: at},
		{ValidFrom: at.Add(time.Hour), ValidTo: at, RecordedAt: at},
		{ValidFrom: at, RecordedAt: at, ExpiredAt: at.Add(time.Second)},
	} {
		if err := small.Put(discard{}, uint32(d*33), iv); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	out.WriteString(hex.Dump(small.AppendImage(nil)))

	prefix := []byte("golden/temporal/")
	store := kvtest.Map{}
	var discarded strings.Builder
	goldenWorkload(t, New(prefix), &golden.Recorder{W: store}, &discarded)
	loaded, err := Load(context.Background(), store, prefix)
	if err != nil {
		t.Fatal(err)
	}
	img := loaded.AppendImage(nil)
	fmt.Fprintf(&out, "workload: %d bytes, sha256 %x\n", len(img), sha256.Sum256(img))
	golden.Check(t, "testdata/image.txt", out.String(), *updateGolden)

	fromImage, err := LoadImage(img, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var a, b strings.Builder
	goldenQueries(loaded, &a, "loaded")
	goldenQueries(fromImage, &b, "loaded")
	if a.String() != b.String() {
		t.Fatalf("from its image the index answers\n%s\nfrom its records\n%s", b.String(), a.String())
	}
}
