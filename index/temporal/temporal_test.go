package temporal

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// instant draws from a small grid of instants so that equal times (and
// boundary hits of queries) are common.
func instant(r *rand.Rand, grid int) time.Time {
	return t0.Add(time.Duration(r.IntN(grid)) * time.Hour)
}

func randInterval(r *rand.Rand, grid int) Interval {
	var iv Interval
	if r.IntN(20) != 0 {
		iv.ValidFrom = instant(r, grid)
	}
	if r.IntN(2) == 0 {
		iv.ValidTo = instant(r, grid) // may be before or equal to ValidFrom: empty
	}
	if r.IntN(30) != 0 {
		iv.RecordedAt = instant(r, grid)
	}
	if r.IntN(2) == 0 {
		iv.ExpiredAt = instant(r, grid)
	}
	return iv
}

// queryInstants are the grid points, one nanosecond either side of them,
// the zero time and far past and future.
func queryInstants(grid int) []time.Time {
	out := []time.Time{{}, time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := -1; i <= grid; i++ {
		t := t0.Add(time.Duration(i) * time.Hour)
		out = append(out, t, t.Add(-1), t.Add(1))
	}
	return out
}

func bruteVisible(m map[uint32]Interval, v, k time.Time) *roaring.Bitmap {
	out := roaring.New()
	for d, iv := range m {
		if iv.VisibleAt(v, k) {
			out.Add(d)
		}
	}
	return out
}

func diff(got, want *roaring.Bitmap) string {
	extra := roaring.AndNot(got, want).ToArray()
	missing := roaring.AndNot(want, got).ToArray()
	return "extra " + fmtDocs(extra) + " missing " + fmtDocs(missing)
}

func fmtDocs(d []uint32) string {
	if len(d) > 10 {
		d = d[:10]
	}
	b := []byte{'['}
	for i, x := range d {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, uint64(x), 10)
	}
	return string(append(b, ']'))
}

func checkAgainstBrute(t *testing.T, ix *Index, ref map[uint32]Interval, qs []time.Time, r *rand.Rand, samples int) {
	t.Helper()
	for range samples {
		v, k := qs[r.IntN(len(qs))], qs[r.IntN(len(qs))]
		if r.IntN(4) == 0 {
			v = k
		}
		got, want := ix.Visible(v, k), bruteVisible(ref, v, k)
		if !got.Equals(want) {
			t.Fatalf("Visible(%v, %v): %s", v, k, diff(got, want))
		}
		cur, wantCur := ix.Current(k), bruteVisible(ref, k, k)
		if !cur.Equals(wantCur) {
			t.Fatalf("Current(%v): %s", k, diff(cur, wantCur))
		}
	}
	// Reading's has is membership, as Get's ok.
	var top uint32
	for d := range ref {
		top = max(top, d)
	}
	if err := ix.Reading(func(has func(uint32) bool) error {
		for d := range top + 2*pageSize {
			if _, want := ref[d]; has(d) != want {
				t.Fatalf("Reading: has(%d) = %v, want %v", d, !want, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestVisibleMatchesPredicate checks Visible and Current against the DESIGN
// §2 predicate over random versions, through inserts, updates (expiry) and
// deletes, across snapshot rebuilds.
func TestVisibleMatchesPredicate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		docs, grid int
	}{
		{"small", 40, 6},
		{"dense-ties", 3000, 8},
		{"spread", 5000, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.docs)))
			store := kvtest.Map{}
			ix := New([]byte("p/"))
			ref := map[uint32]Interval{}
			qs := queryInstants(tc.grid)
			for round := range 6 {
				for range tc.docs {
					doc := uint32(r.IntN(tc.docs * 2))
					switch op := r.IntN(10); {
					case op < 7:
						iv := randInterval(r, tc.grid)
						if err := ix.Put(store, doc, iv); err != nil {
							t.Fatal(err)
						}
						ref[doc] = iv
					case op < 9:
						// Expire an existing version, as the engine does.
						if iv, ok := ref[doc]; ok {
							iv.ExpiredAt = instant(r, tc.grid)
							if err := ix.Put(store, doc, iv); err != nil {
								t.Fatal(err)
							}
							ref[doc] = iv
						}
					default:
						if err := ix.Delete(store, doc); err != nil {
							t.Fatal(err)
						}
						delete(ref, doc)
					}
				}
				checkAgainstBrute(t, ix, ref, qs, r, 60)
				if round%2 == 1 {
					if err := ix.Check(context.Background(), store); err != nil {
						t.Fatal(err)
					}
					re, err := Load(context.Background(), store, []byte("p/"))
					if err != nil {
						t.Fatal(err)
					}
					checkAgainstBrute(t, re, ref, qs, r, 30)
				}
			}
			if ix.Len() != len(ref) {
				t.Fatalf("Len = %d, want %d", ix.Len(), len(ref))
			}
		})
	}
}

// TestBoundaries pins the inclusive/exclusive ends and open ends.
func TestBoundaries(t *testing.T) {
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	cases := []struct {
		name string
		iv   Interval
		v, k time.Time
		want bool
	}{
		{"valid from is inclusive", Interval{ValidFrom: h(1), RecordedAt: h(0)}, h(1), h(5), true},
		{"valid to is exclusive", Interval{ValidFrom: h(1), ValidTo: h(2), RecordedAt: h(0)}, h(2), h(5), false},
		{"just before valid to", Interval{ValidFrom: h(1), ValidTo: h(2), RecordedAt: h(0)}, h(2).Add(-1), h(5), true},
		{"before valid from", Interval{ValidFrom: h(1), RecordedAt: h(0)}, h(1).Add(-1), h(5), false},
		{"recorded at is inclusive", Interval{ValidFrom: h(0), RecordedAt: h(3)}, h(4), h(3), true},
		{"not yet recorded", Interval{ValidFrom: h(0), RecordedAt: h(3)}, h(4), h(3).Add(-1), false},
		{"expired at is exclusive", Interval{ValidFrom: h(0), RecordedAt: h(1), ExpiredAt: h(3)}, h(4), h(3), false},
		{"open expiry", Interval{ValidFrom: h(0), RecordedAt: h(1)}, h(4), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"open valid to, far future", Interval{ValidFrom: h(0), RecordedAt: h(1)}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), h(2), true},
		{"empty valid interval", Interval{ValidFrom: h(2), ValidTo: h(2), RecordedAt: h(0)}, h(2), h(5), false},
		{"inverted valid interval", Interval{ValidFrom: h(3), ValidTo: h(2), RecordedAt: h(0)}, h(2), h(5), false},
		{"zero valid from is −∞", Interval{RecordedAt: h(0)}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), h(5), true},
		{"zero query instant", Interval{RecordedAt: h(0)}, time.Time{}, h(5), true},
		{"zero query instant, dated start", Interval{ValidFrom: h(0), RecordedAt: h(0)}, time.Time{}, h(5), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.iv.VisibleAt(c.v, c.k); got != c.want {
				t.Fatalf("predicate = %v, want %v", got, c.want)
			}
			// Enough filler docs that the case doc sits in a snapshot
			// structure, and alone in a delta.
			for _, n := range []int{0, 3000} {
				ix := New(nil)
				w := kvtest.Map{}
				for i := range n {
					_ = ix.Put(w, uint32(i+1), Interval{ValidFrom: h(i % 7), RecordedAt: h(i % 5)})
				}
				if err := ix.Put(w, 0, c.iv); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					ix.mu.Lock()
					ix.rebuild()
					ix.mu.Unlock()
				}
				if got := ix.Visible(c.v, c.k).Contains(0); got != c.want {
					t.Fatalf("n=%d: Visible contains = %v, want %v", n, got, c.want)
				}
			}
		})
	}
}

func TestRejectsUnstorableInstant(t *testing.T) {
	ix := New(nil)
	w := kvtest.Map{}
	err := ix.Put(w, 1, Interval{ValidFrom: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)})
	if !errors.Is(err, ErrInvalidInterval) {
		t.Fatalf("err = %v, want ErrInvalidInterval", err)
	}
	if len(w) != 0 || ix.Len() != 0 {
		t.Fatal("a rejected Put wrote something")
	}
	if err := ix.Put(nil, 1, Interval{}); !errors.Is(err, ErrNilWriter) {
		t.Fatalf("nil writer: err = %v", err)
	}
}

func TestPersistRealStore(t *testing.T) {
	ctx := context.Background()
	db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prefix := kv.UserKey("alice", kv.SubTemporal)
	other := kv.UserKey("alice/", kv.SubTemporal)
	ix, ox := New(prefix), New(other)
	b := db.NewBatch()
	iv := Interval{ValidFrom: t0, RecordedAt: t0.Add(time.Second)}
	for d := range uint32(10) {
		if err := ix.Put(b, d, iv); err != nil {
			t.Fatal(err)
		}
		if err := ox.Put(b, d+100, iv); err != nil {
			t.Fatal(err)
		}
	}
	exp := iv
	exp.ExpiredAt = t0.Add(time.Minute)
	if err := ix.Put(b, 3, exp); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(b, 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	re, err := Load(ctx, db, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if re.Len() != 9 {
		t.Fatalf("reloaded %d docs, want 9", re.Len())
	}
	got, ok := re.Get(3)
	if !ok || !got.ExpiredAt.Equal(exp.ExpiredAt) || !got.ValidFrom.Equal(t0) || !got.ValidTo.IsZero() {
		t.Fatalf("Get(3) = %+v, %v", got, ok)
	}
	now := t0.Add(time.Hour)
	if want := []uint32{0, 1, 2, 5, 6, 7, 8, 9}; !slices.Equal(re.Current(now).ToArray(), want) {
		t.Fatalf("Current = %v, want %v", re.Current(now).ToArray(), want)
	}
	if !re.Visible(now, t0.Add(30*time.Second)).Contains(3) {
		t.Fatal("audit query lost the expired version")
	}
	// Check finds a store that disagrees with memory.
	b = db.NewBatch()
	if err := b.Set(append(append([]byte(nil), prefix...), 0, 0, 0, 42), appendValue(nil, quad{vf: 1, vt: openEnd, ra: 1, ea: openEnd})); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(append(append([]byte(nil), prefix...), 0, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(append(append([]byte(nil), prefix...), 0, 0, 0, 2), []byte{9}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	err = re.Check(ctx, db)
	if !errors.Is(err, ErrInconsistent) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check = %v, want inconsistent and corrupt findings", err)
	}
	if _, err := Load(ctx, db, prefix); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of corrupt value: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	ix := New(nil)
	var mu sync.Mutex
	w := kvtest.Map{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 600 {
				if g%2 == 0 {
					mu.Lock()
					_ = ix.Put(w, uint32(r.IntN(800)), randInterval(r, 50))
					mu.Unlock()
				} else {
					_ = ix.Visible(instant(r, 50), instant(r, 50))
					_ = ix.Current(instant(r, 50))
					_, _ = ix.Get(uint32(i))
				}
			}
		})
	}
	wg.Wait()
	if err := ix.Check(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// TestCurrentShared: past every stored instant Current is computed once
// per change to the index and shared between calls; any Put or Delete
// gives a fresh, correct answer; instants inside the data are never served
// the shared set.
func TestCurrentShared(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	store := kvtest.Map{}
	ix := New([]byte("p/"))
	ref := map[uint32]Interval{}
	const grid = 20
	qs := queryInstants(grid)
	late := t0.Add(1000 * time.Hour)
	for step := range 3000 {
		doc := uint32(r.IntN(300))
		switch r.IntN(6) {
		case 0:
			if err := ix.Delete(store, doc); err != nil {
				t.Fatal(err)
			}
			delete(ref, doc)
		case 1, 2:
			// No change: the shared set must still be right.
		default:
			iv := randInterval(r, grid)
			if err := ix.Put(store, doc, iv); err != nil {
				t.Fatal(err)
			}
			ref[doc] = iv
		}
		a := ix.Current(late)
		if want := bruteVisible(ref, late, late); !a.Equals(want) {
			t.Fatalf("step %d: Current(late): %s", step, diff(a, want))
		}
		if b := ix.Current(late.Add(time.Hour)); b != a {
			t.Fatalf("step %d: a later instant past the data did not share the set", step)
		}
		// Current is asked for now, and the engine never expires a
		// version after now: instants past every ExpiredAt.
		var maxExp time.Time
		for _, iv := range ref {
			if iv.ExpiredAt.After(maxExp) {
				maxExp = iv.ExpiredAt
			}
		}
		if k := qs[r.IntN(len(qs))]; !k.Before(maxExp) {
			if got, want := ix.Current(k), bruteVisible(ref, k, k); !got.Equals(want) {
				t.Fatalf("step %d: Current(%v): %s", step, k, diff(got, want))
			}
		}
	}
}
