package temporal

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/memsize/heaptest"
	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

// user writes the bitemporal history of one user's facts, as the engine
// does, with doc IDs from a per-user counter. It holds nothing that
// grows, so that what a test measures of the heap is the index's.
type user struct {
	r     *rand.Rand
	clock time.Time
	next  uint32 // the next doc ID
}

func newUser(seed uint64) *user {
	return &user{r: rand.New(rand.NewPCG(seed, 3)), clock: t0}
}

// write adds n facts: recorded a minute apart, in bursts at one instant
// (an extraction's), valid from up to a month before (a tenth always
// true). Along the way a quarter of the facts supersede an earlier one
// still believed (expired, and its replacement valid until now: the old
// belief, closed), a twentieth retract one (expired, no successor), and
// one in fifty deletes a doc.
func (u *user) write(t testing.TB, ix *Index, w kv.Writer, n int) {
	t.Helper()
	put := func(doc uint32, iv Interval) {
		if err := ix.Put(w, doc, iv); err != nil {
			t.Fatal(err)
		}
	}
	r := u.r
	for range n {
		if r.IntN(4) != 0 {
			u.clock = u.clock.Add(time.Minute)
		}
		iv := Interval{RecordedAt: u.clock}
		if r.IntN(10) != 0 {
			iv.ValidFrom = u.clock.Add(-time.Duration(r.IntN(30*24)) * time.Hour)
		}
		put(u.next, iv)
		u.next++
		if r.IntN(4) == 0 || r.IntN(20) == 0 {
			old := uint32(r.IntN(int(u.next)))
			if was, ok := ix.Get(old); ok && was.ExpiredAt.IsZero() {
				iv := was
				iv.ExpiredAt = u.clock
				put(old, iv)
				if r.IntN(5) != 0 { // superseded, not retracted
					was.ValidTo, was.RecordedAt = u.clock, u.clock
					put(u.next, was)
					u.next++
				}
			}
		}
		if r.IntN(50) == 0 {
			if err := ix.Delete(w, uint32(r.IntN(int(u.next)))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// query asks what the engine asks of a user whose history ends at now:
// current state (which caches its answer), as of the middle of the
// history, and an audit of its start. The first query after a bulk of
// writes rebuilds the snapshot structure.
func query(ix *Index, now time.Time) {
	_ = ix.Current(now)
	mid := t0.Add(now.Sub(t0) / 2)
	_ = ix.Visible(mid, mid)
	_ = ix.Visible(now, t0.Add(time.Hour))
}

// TestBytesMatchesHeap: Bytes is the heap an index adds, within
// [0.8, 1.25] of it, in every form the engine holds an index in: built
// by writes (all in the delta), queried (rebuilt, current set cached),
// loaded from its records, loaded from its image (whose snapshots keep
// the image alive), written to after an image load, and rebuilt after
// that (the image let go).
func TestBytesMatchesHeap(t *testing.T) {
	prefix := []byte("user/t/")
	ctx := context.Background()
	for _, n := range []int{2_000, 25_000} {
		store, stored := kvtest.Map{}, newUser(1)
		stored.write(t, New(prefix), store, n)
		shapes := []struct {
			name  string
			build func() *Index
		}{
			{"written", func() *Index {
				ix := New(prefix)
				newUser(1).write(t, ix, discard{}, n)
				return ix
			}},
			{"queried", func() *Index {
				ix, u := New(prefix), newUser(1)
				u.write(t, ix, discard{}, n)
				query(ix, u.clock)
				return ix
			}},
			{"loaded", func() *Index {
				ix, err := Load(ctx, store, prefix)
				if err != nil {
					t.Fatal(err)
				}
				return ix
			}},
			{"loaded-queried", func() *Index {
				ix, err := Load(ctx, store, prefix)
				if err != nil {
					t.Fatal(err)
				}
				query(ix, stored.clock)
				return ix
			}},
			{"image", func() *Index {
				ix, _ := fromImage(t, prefix, n)
				return ix
			}},
			{"image-queried", func() *Index {
				ix, u := fromImage(t, prefix, n)
				query(ix, u.clock)
				return ix
			}},
			{"image-written", func() *Index {
				ix, u := fromImage(t, prefix, n)
				u.write(t, ix, discard{}, n/5)
				return ix
			}},
			{"image-written-rebuilt", func() *Index {
				ix, u := fromImage(t, prefix, n)
				u.write(t, ix, discard{}, n/5)
				query(ix, u.clock)
				return ix
			}},
		}
		for _, s := range shapes {
			t.Run(fmt.Sprintf("n=%d/%s", n, s.name), func(t *testing.T) {
				ix, heap := heaptest.Added(3, s.build)
				got := ix.Bytes()
				ratio := float64(got) / float64(heap)
				t.Logf("Bytes %d, heap added %d (%.1f a doc): %.3f", got, heap, float64(heap)/float64(ix.Len()), ratio)
				if ratio < 0.8 || ratio > 1.25 {
					t.Errorf("Bytes %d, heap added %d: ratio %.3f outside [0.8, 1.25]", got, heap, ratio)
				}
			})
		}
	}
}

// fromImage returns the index loaded from the image of a user's n facts
// (the index that wrote them gone, as in the engine), and the user, to
// write on.
func fromImage(t testing.TB, prefix []byte, n int) (*Index, *user) {
	t.Helper()
	src, u := New(prefix), newUser(1)
	u.write(t, src, discard{}, n)
	ix, err := LoadImage(src.AppendImage(nil), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ix, u
}

// TestBytesTracksWrites: across a long run of writes (bulk imports,
// expiries, deletes, queries now and then) Bytes stays within a fifth of
// a fresh walk of the index after every one: the exact increments and
// the re-walk that bounds the estimated ones keep it so (that the walk is
// the truth, TestBytesMatchesHeap shows).
func TestBytesTracksWrites(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 150
	}
	prefix := []byte("user/t/")
	check := func(t *testing.T, ix *Index, step int) {
		t.Helper()
		ix.mu.RLock()
		walk := ix.measure()
		ix.mu.RUnlock()
		if c := ix.current.Load(); c != nil {
			walk += c.bytes
		}
		if got := ix.Bytes(); math.Abs(float64(got-walk)) > float64(walk)/5 {
			t.Fatalf("step %d: Bytes %d, a walk %d", step, got, walk)
		}
		// The estimates alone stay far inside the bound (two bytes a
		// change of a set, against some eighty a doc): this is what
		// keeps them bounded on any run.
		ix.mu.RLock()
		drift, walked := ix.acct.Drift(), ix.acct.LastWalk()
		ix.mu.RUnlock()
		if drift > walked/4 {
			t.Fatalf("step %d: estimates of %d bytes since a walk of %d", step, drift, walked)
		}
	}
	for _, start := range []string{"new", "image"} {
		t.Run("from="+start, func(t *testing.T) {
			var ix *Index
			u := newUser(2)
			if start == "new" {
				ix = New(prefix)
			} else {
				ix, u = fromImage(t, prefix, 5_000)
			}
			r := rand.New(rand.NewPCG(5, 5))
			for step := range steps {
				switch k := r.IntN(20); {
				case k == 0:
					query(ix, u.clock) // may rebuild
				case k < 4:
					// Expire and restore a run of docs: only the open
					// set changes, by estimate.
					lo := uint32(r.IntN(int(u.next)))
					for d := lo; d < min(lo+200, u.next); d++ {
						if iv, ok := ix.Get(d); ok {
							iv.ExpiredAt = u.clock
							if err := ix.Put(discard{}, d, iv); err != nil {
								t.Fatal(err)
							}
							check(t, ix, step)
							iv.ExpiredAt = time.Time{}
							if err := ix.Put(discard{}, d, iv); err != nil {
								t.Fatal(err)
							}
						}
						check(t, ix, step)
					}
				default:
					for range 1 + r.IntN(100) {
						u.write(t, ix, discard{}, 1)
						check(t, ix, step)
					}
				}
			}
		})
	}
}

// TestBytesConcurrent: Bytes is safe beside writes, queries (which cache
// the current set) and rebuilds: run with -race.
func TestBytesConcurrent(t *testing.T) {
	ix, u := fromImage(t, nil, 3_000)
	stop := heaptest.ReadBeside(t, ix.Bytes)
	end := u.clock
	var queriers sync.WaitGroup
	for g := range 2 {
		queriers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				at := t0.Add(time.Duration(r.Int64N(int64(end.Sub(t0)))))
				_ = ix.Visible(at, at)
				_ = ix.Current(end.Add(time.Hour))
				_ = ix.AppendImage(nil)
			}
		})
	}
	for range 300 { // on the test's goroutine: write may fail the test
		u.write(t, ix, discard{}, 5)
	}
	queriers.Wait()
	stop()
}
