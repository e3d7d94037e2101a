package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/imagetest"
	"github.com/memor-db/memor/kv/kvtest"
)

// imageWorkload writes a realistic index through the write API to store
// and returns the index that wrote it: an engine's bulk import (RecordedAt
// a minute apart, in runs of equal instants, ValidFrom up to a month
// before), a third expired by later writes, versions from a coarse grid
// (equal starts, empty and inverted intervals, open starts and ends),
// the extreme storable instants, deletions, and queries in between so that
// the snapshot structure is rebuilt midway and left with a delta. Two
// records are written raw with instants Put refuses but Load reads. With
// sparse, some doc IDs are far beyond the others.
func imageWorkload(t testing.TB, store kvtest.Map, prefix []byte, n int, sparse bool) *Index {
	t.Helper()
	r := rand.New(rand.NewPCG(11, uint64(n)))
	ix := New(prefix)
	put := func(doc uint32, iv Interval) {
		if err := ix.Put(store, doc, iv); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64-1)
	clock := t0
	for d := range uint32(n) {
		if r.IntN(4) != 0 {
			clock = clock.Add(time.Minute)
		}
		switch r.IntN(10) {
		case 0, 1:
			put(d, randInterval(r, 60))
		case 2:
			ext := []time.Time{{}, lo, hi, lo.Add(1), hi.Add(-1), clock}
			put(d, Interval{ValidFrom: ext[r.IntN(len(ext))], ValidTo: ext[r.IntN(len(ext))], RecordedAt: ext[r.IntN(len(ext))], ExpiredAt: ext[r.IntN(len(ext))]})
		default:
			put(d, Interval{ValidFrom: clock.Add(-time.Duration(r.IntN(30*24)) * time.Hour), RecordedAt: clock})
		}
		if d > 0 && r.IntN(3) == 0 {
			old := uint32(r.IntN(int(d)))
			if iv, ok := ix.Get(old); ok && iv.ExpiredAt.IsZero() {
				iv.ExpiredAt = clock
				put(old, iv)
				if r.IntN(2) == 0 { // the replacement, valid until then
					iv.ExpiredAt, iv.ValidTo, iv.RecordedAt = time.Time{}, clock, clock
					put(uint32(n)+old, iv)
				}
			}
		}
		if r.IntN(12) == 0 {
			if err := ix.Delete(store, uint32(r.IntN(int(d)+1))); err != nil {
				t.Fatal(err)
			}
		}
		if d%1000 == 999 {
			_ = ix.Visible(clock, clock) // rebuilds
		}
	}
	if sparse {
		for i := range uint32(40) {
			put(1<<22+i*7, randInterval(r, 60))
		}
	}
	// Raw records: a start at +∞ and an end at −∞ (empty), and a span over
	// every instant on both axes.
	for i, q := range []quad{{math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64}, {openStart, openEnd, openStart, openEnd}} {
		if err := store.Set(appendKey(nil, prefix, uint32(3*n+i)), appendValue(nil, q)); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

// imageInstants are instants to query an index at: the test grid's, some
// of the data's (and a nanosecond either side), the extremes.
func imageInstants(ix *Index, r *rand.Rand, k int) []time.Time {
	out := append(queryInstants(60), time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64-1), time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64))
	var data []int64
	ix.mu.RLock()
	ix.each(func(_ uint32, q quad) bool { data = append(data, q.vf, q.vt, q.ra, q.ea); return true })
	ix.mu.RUnlock()
	for range k {
		n := data[r.IntN(len(data))]
		if n > math.MinInt64+1 && n < math.MaxInt64-1 {
			out = append(out, time.Unix(0, n-1), time.Unix(0, n), time.Unix(0, n+1))
		}
	}
	return out
}

// sameImageAnswers fails unless a and b answer alike: Len, Get of every
// doc up to maxDoc (and some beyond), Visible at every pair of instants,
// Current at each (Visible with each instant of valid time at a few of
// transaction time, drawn by r).
func sameImageAnswers(t *testing.T, what string, a, b *Index, instants []time.Time, maxDoc uint32, r *rand.Rand) {
	t.Helper()
	if a.Len() != b.Len() {
		t.Fatalf("%s: Len %d, want %d", what, b.Len(), a.Len())
	}
	for d := range maxDoc + 100 {
		ia, oka := a.Get(d)
		ib, okb := b.Get(d)
		if oka != okb || ia != ib {
			t.Fatalf("%s: Get(%d) = %+v %v, want %+v %v", what, d, ib, okb, ia, oka)
		}
	}
	for _, v := range instants {
		for i := range 9 {
			k := v
			if i > 0 {
				k = instants[r.IntN(len(instants))]
			}
			if va, vb := a.Visible(v, k), b.Visible(v, k); !va.Equals(vb) {
				t.Fatalf("%s: Visible(%v, %v): %s", what, v, k, diff(vb, va))
			}
		}
		if ca, cb := a.Current(v), b.Current(v); !ca.Equals(cb) {
			t.Fatalf("%s: Current(%v): %s", what, v, diff(cb, ca))
		}
	}
}

// sameState fails unless a and b hold the same state, structure for
// structure: the docs' pages, the summaries, the snapshot structure, the
// delta.
func sameState(t *testing.T, what string, a, b *Index) {
	t.Helper()
	a.mu.RLock()
	defer a.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	if a.n != b.n || a.gen != b.gen || a.maxRec != b.maxRec || a.maxValid != b.maxValid || !bytes.Equal(a.prefix, b.prefix) {
		t.Fatalf("%s: n %d/%d gen %d/%d maxRec %d/%d maxValid %d/%d", what, a.n, b.n, a.gen, b.gen, a.maxRec, b.maxRec, a.maxValid, b.maxValid)
	}
	if !a.open.Equals(b.open) || !a.inBase.Equals(b.inBase) || !a.stale.Equals(b.stale) || !slices.Equal(a.delta, b.delta) {
		t.Fatalf("%s: open, inBase, stale or delta differ", what)
	}
	if len(a.pages) != len(b.pages) {
		t.Fatalf("%s: %d pages, want %d", what, len(b.pages), len(a.pages))
	}
	for i := range a.pages {
		pa, pb := a.pages[i], b.pages[i]
		if pa == nil || pb == nil {
			if (pa == nil || pa.has == 0) != (pb == nil || pb.has == 0) {
				t.Fatalf("%s: page %d held by one index only", what, i)
			}
			continue
		}
		if *pa != *pb {
			t.Fatalf("%s: page %d differs", what, i)
		}
	}
	if (a.base == nil) != (b.base == nil) {
		t.Fatalf("%s: one index has no snapshot structure", what)
	}
	if a.base == nil {
		return
	}
	for _, x := range [][2]*axis{{a.base.tx, b.base.tx}, {a.base.valid, b.base.valid}} {
		xa, xb := x[0], x[1]
		if !slices.Equal(xa.starts, xb.starts) || !slices.Equal(xa.ends, xb.ends) || !slices.Equal(xa.snapT, xb.snapT) ||
			!slices.Equal(xa.snapS, xb.snapS) || !slices.Equal(xa.snapE, xb.snapE) || len(xa.snaps) != len(xb.snaps) {
			t.Fatalf("%s: axes differ", what)
		}
		for j := range xa.snaps {
			if !xa.snaps[j].Equals(xb.snaps[j]) {
				t.Fatalf("%s: snapshot %d differs", what, j)
			}
		}
	}
}

// TestImageMatchesLoad: an index loaded from its image holds, structure
// for structure, what the index loaded from the records holds, and answers
// alike; the same writes on both then write the same records and leave
// them alike: same answers, same state, a clean Check, the same image,
// which is the image of a load of the records written.
func TestImageMatchesLoad(t *testing.T) {
	ctx := context.Background()
	for _, sparse := range []bool{false, true} {
		t.Run(fmt.Sprint("sparse=", sparse), func(t *testing.T) {
			prefix := []byte("u/t/")
			store := kvtest.Map{}
			writer := imageWorkload(t, store, prefix, 5000, sparse)
			ref, err := Load(ctx, store, prefix)
			if err != nil {
				t.Fatal(err)
			}
			img := ref.AppendImage(nil)
			ix, err := LoadImage(bytes.Clone(img), prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref.base.tx.snaps) < 4 || len(ref.base.valid.snaps) < 4 {
				t.Fatalf("only %d and %d snapshots: the image is not exercised", len(ref.base.tx.snaps), len(ref.base.valid.snaps))
			}
			recs := 0
			for k, v := range store {
				recs += len(k) + len(v)
			}
			t.Logf("%d docs: image %d bytes, records %d", ref.Len(), len(img), recs)
			sameState(t, "loaded", ref, ix)
			// The writer's image, built aside from its delta and stale
			// docs, is a load's: one of the records, changed alike
			// without them.
			re, err := Load(ctx, store, prefix)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []uint32{15000, 15001} { // the raw records
				if err := re.Delete(discard{}, d); err != nil {
					t.Fatal(err)
				}
			}
			iv := Interval{ValidFrom: t0, RecordedAt: t0.Add(time.Hour)}
			if err := writer.Put(discard{}, 1, iv); err != nil {
				t.Fatal(err)
			}
			if err := re.Put(discard{}, 1, iv); err != nil {
				t.Fatal(err)
			}
			if len(writer.delta) == 0 && writer.stale.IsEmpty() {
				t.Fatal("the writer has no delta")
			}
			if !bytes.Equal(writer.AppendImage(nil), re.AppendImage(nil)) {
				t.Fatal("the image of an index with a delta is not its reload's")
			}

			r := rand.New(rand.NewPCG(3, 4))
			instants := imageInstants(ref, r, 60)
			maxDoc := uint32(15010)
			sameImageAnswers(t, "loaded", ref, ix, instants, maxDoc, r)
			sameState(t, "after queries", ref, ix)
			if err := ix.Check(ctx, store); err != nil {
				t.Fatalf("Check of the image's index: %v", err)
			}

			// The same writes on both, with queries that rebuild.
			storeRef, storeIx := maps.Clone(store), maps.Clone(store)
			clock := t0.Add(1000 * time.Hour)
			for i := range 3000 {
				d := r.Uint32N(maxDoc)
				var errRef, errIx error
				switch op := r.IntN(10); {
				case op == 0:
					errRef, errIx = ref.Delete(storeRef, d), ix.Delete(storeIx, d)
				case op < 4:
					if iv, ok := ref.Get(d); ok && iv.ExpiredAt.IsZero() {
						iv.ExpiredAt = clock
						errRef, errIx = ref.Put(storeRef, d, iv), ix.Put(storeIx, d, iv)
					}
				default:
					iv := randInterval(r, 60)
					errRef, errIx = ref.Put(storeRef, d, iv), ix.Put(storeIx, d, iv)
				}
				if errRef != nil || errIx != nil {
					t.Fatal(errRef, errIx)
				}
				clock = clock.Add(time.Minute)
				if i%400 == 0 {
					v, k := instants[r.IntN(len(instants))], instants[r.IntN(len(instants))]
					if a, b := ref.Visible(v, k), ix.Visible(v, k); !a.Equals(b) {
						t.Fatalf("write %d: Visible(%v, %v): %s", i, v, k, diff(b, a))
					}
				}
			}
			sameImageAnswers(t, "after writes", ref, ix, instants[:60], maxDoc, r)
			sameState(t, "after writes", ref, ix)
			if !reflect.DeepEqual(storeRef, storeIx) {
				t.Fatal("the two indexes wrote different records")
			}
			if err := ix.Check(ctx, storeIx); err != nil {
				t.Fatalf("Check of the image's index after writes: %v", err)
			}
			if err := ref.Check(ctx, storeRef); err != nil {
				t.Fatalf("Check of the records' index after writes: %v", err)
			}
			imgIx := ix.AppendImage(nil)
			if !bytes.Equal(imgIx, ref.AppendImage(nil)) {
				t.Fatal("the two indexes' images differ after the same writes")
			}
			reload, err := Load(ctx, storeIx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(imgIx, reload.AppendImage(nil)) {
				t.Fatal("the image after writes is not the image of a load of the records")
			}
		})
	}
}

// TestImageSmall: an empty index, one written but never queried, and one
// whose every doc was deleted image as their loads do.
func TestImageSmall(t *testing.T) {
	ctx := context.Background()
	prefix := []byte("p")
	iv := Interval{ValidFrom: t0, RecordedAt: t0.Add(time.Second)}
	for name, build := range map[string]func(*Index, kvtest.Map){
		"empty": func(*Index, kvtest.Map) {},
		"unqueried": func(ix *Index, w kvtest.Map) {
			for d := range uint32(5) {
				_ = ix.Put(w, d*40, iv)
			}
		},
		"all deleted": func(ix *Index, w kvtest.Map) {
			for d := range uint32(2000) {
				_ = ix.Put(w, d, iv)
			}
			_ = ix.Visible(t0, t0)
			for d := range uint32(2000) {
				_ = ix.Delete(w, d)
			}
		},
	} {
		store := kvtest.Map{}
		ix := New(prefix)
		build(ix, store)
		ref, err := Load(ctx, store, prefix)
		if err != nil {
			t.Fatal(err)
		}
		img := ix.AppendImage(nil)
		if !bytes.Equal(img, ref.AppendImage(nil)) {
			t.Fatalf("%s: image differs from its reload's", name)
		}
		got, err := LoadImage(img, prefix)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameState(t, name, ref, got)
		if err := got.Check(ctx, store); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// damagedImage is the image of a small index with a snapshot on each
// axis.
func damagedImage(t testing.TB) []byte {
	store := kvtest.Map{}
	imageWorkload(t, store, []byte("p"), 1000, false)
	ix, err := Load(context.Background(), store, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.base.tx.snaps) == 0 || len(ix.base.valid.snaps) == 0 {
		t.Fatal("no snapshots in the damaged image")
	}
	return ix.AppendImage(nil)
}

// exercise uses every API of an index a damaged image loaded: none may
// panic, and its image must load again.
func exercise(t *testing.T, ix *Index) {
	t.Helper()
	for _, at := range []time.Time{{}, t0, t0.Add(20 * time.Hour), t0.Add(2000 * time.Hour), time.Unix(0, math.MaxInt64-1)} {
		_ = ix.Visible(at, at)
		_ = ix.Visible(at, t0.Add(10*time.Hour))
		_ = ix.Current(at)
	}
	_, _ = ix.Get(0)
	_ = ix.Len()
	_ = ix.Check(context.Background(), kvtest.Map{})
	img := ix.AppendImage(nil)
	if _, err := LoadImage(img, []byte("p")); err != nil {
		t.Fatalf("the image of an accepted index: %v", err)
	}
	for d := range uint32(300) {
		if d%3 == 0 {
			_ = ix.Delete(discard{}, d)
		} else {
			_ = ix.Put(discard{}, d, Interval{ValidFrom: t0, RecordedAt: t0.Add(time.Duration(d) * time.Minute)})
		}
	}
	_ = ix.Visible(t0, t0.Add(time.Hour))
	_ = ix.Current(t0.Add(time.Hour))
	if _, err := LoadImage(ix.AppendImage(nil), []byte("p")); err != nil {
		t.Fatalf("the image of an accepted index after writes: %v", err)
	}
}

// TestLoadImageDamaged: an image cut anywhere fails with ErrCorrupt;
// one changed anywhere fails with ErrCorrupt or loads an index that
// serves queries and writes (never a panic).
func TestLoadImageDamaged(t *testing.T) {
	img := damagedImage(t)
	load := func(b []byte) (*Index, error) { return LoadImage(b, []byte("p")) }
	imagetest.Cuts(t, img, ErrCorrupt, load)
	r := rand.New(rand.NewPCG(8, 9))
	const tries = 3000
	refused := imagetest.Damage(t, r, img, tries, ErrCorrupt, load, func(ix *Index) { exercise(t, ix) })
	// The last snapshot, which ends the image, changed alone: roaring's
	// decoder meets the damage.
	ix, err := LoadImage(img, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	last := ix.base.valid.snaps[len(ix.base.valid.snaps)-1].GetSerializedSizeInBytes()
	for range 1000 {
		bad := bytes.Clone(img)
		for range 1 + r.IntN(3) {
			bad[len(bad)-1-r.IntN(int(last))] ^= byte(1 + r.IntN(255))
		}
		if ix, err := LoadImage(bad, []byte("p")); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("damaged snapshot: %v, not ErrCorrupt", err)
			}
		} else {
			exercise(t, ix)
		}
	}
	t.Logf("%d of %d damaged images refused", refused, tries)
	if refused < tries/2 {
		t.Fatalf("only %d of %d damaged images refused", refused, tries)
	}
}

// FuzzLoadImage: LoadImage never panics, fails only with ErrCorrupt, and
// an index it accepts serves queries and writes.
func FuzzLoadImage(f *testing.F) {
	f.Add(New([]byte("p")).AppendImage(nil))
	small := New([]byte("p"))
	for d, iv := range []Interval{
		{ValidFrom: t0, RecordedAt: t0},
		{ValidFrom: t0, ValidTo: t0.Add(time.Hour), RecordedAt: t0.Add(time.Minute), ExpiredAt: t0.Add(2 * time.Minute)},
		{RecordedAt: t0},
		{ValidFrom: t0.Add(time.Hour), ValidTo: t0, RecordedAt: t0},
	} {
		if err := small.Put(discard{}, uint32(d*33), iv); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(small.AppendImage(nil))
	// No seed holds a snapshot: the smallest that does (512 docs) is 20 KB,
	// which leaves the fuzzer minimising for most of its time.
	// TestLoadImageDamaged changes the snapshots of a larger image.
	f.Fuzz(func(t *testing.T, img []byte) {
		ix, err := LoadImage(img, []byte("p"))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v, not ErrCorrupt", err)
			}
			return
		}
		exercise(t, ix)
	})
}

// TestImageConcurrent: queries of an index just loaded from its image
// (whose snapshots are read from the image's bytes), from many goroutines
// at once and with writes among them (run with -race), answer as the
// records' index does.
func TestImageConcurrent(t *testing.T) {
	ctx := context.Background()
	store := kvtest.Map{}
	imageWorkload(t, store, []byte("p"), 3000, false)
	ref, err := Load(ctx, store, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := LoadImage(ref.AppendImage(nil), []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	instants := imageInstants(ref, rand.New(rand.NewPCG(1, 1)), 20)
	errs := make(chan error, 5)
	for g := range 4 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range 150 {
				v, k := instants[r.IntN(len(instants))], instants[r.IntN(len(instants))]
				if got, want := ix.Visible(v, k), ref.Visible(v, k); !got.Equals(want) {
					errs <- fmt.Errorf("Visible(%v, %v): %s", v, k, diff(got, want))
					return
				}
				_ = ix.Current(k)
				_, _ = ix.Get(r.Uint32N(6000))
			}
			errs <- nil
		}()
	}
	go func() {
		// Writes that change nothing either index answers: an interval
		// put again as it is, a doc not held deleted.
		for d := range uint32(300) {
			if iv, ok := ref.Get(d); ok {
				if err := ix.Put(discard{}, d, iv); err != nil {
					errs <- err
					return
				}
			} else if err := ix.Delete(discard{}, d); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
