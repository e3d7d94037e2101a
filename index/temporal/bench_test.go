package temporal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/kv/kvtest"
)

// benchIndex builds an index shaped like an engine's: RecordedAt strictly
// increasing, a third of the versions expired by a later write (superseded,
// with a closed valid interval on the replacement), ValidFrom up to a month
// before RecordedAt.
func benchIndex(b *testing.B, n int) (*Index, time.Time) {
	b.Helper()
	r := rand.New(rand.NewPCG(42, uint64(n)))
	ix := New(nil)
	w := kvtest.Map{}
	clock := t0
	for d := range uint32(n) {
		clock = clock.Add(time.Minute)
		iv := Interval{ValidFrom: clock.Add(-time.Duration(r.IntN(30*24)) * time.Hour), RecordedAt: clock}
		if err := ix.Put(w, d, iv); err != nil {
			b.Fatal(err)
		}
		if d > 0 && r.IntN(3) == 0 {
			old := uint32(r.IntN(int(d)))
			oiv, _ := ix.Get(old)
			if oiv.ExpiredAt.IsZero() {
				oiv.ExpiredAt = clock
				if err := ix.Put(w, old, oiv); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	_ = ix.Visible(clock, clock) // build the snapshot structure
	return ix, clock
}

func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{100_000} {
		if testing.Short() {
			n = 10_000
		}
		ix, now := benchIndex(b, n)
		mid := t0.Add(time.Duration(n/2) * time.Minute)
		queries := []struct {
			name string
			run  func() *roaring.Bitmap
		}{
			{"op=current", func() *roaring.Bitmap { return ix.Current(now) }},
			{"op=visible-now", func() *roaring.Bitmap { return ix.Visible(now, now) }},
			{"op=visible-asof-mid", func() *roaring.Bitmap { return ix.Visible(mid, mid) }},
			{"op=visible-audit-early", func() *roaring.Bitmap { return ix.Visible(now, t0.Add(time.Hour)) }},
			{"op=bruteforce-now", func() *roaring.Bitmap {
				out := roaring.New()
				ix.mu.RLock()
				ix.each(func(d uint32, q quad) bool {
					if q.visible(now.UnixNano(), now.UnixNano()) {
						out.Add(d)
					}
					return true
				})
				ix.mu.RUnlock()
				return out
			}},
		}
		for _, q := range queries {
			b.Run(fmt.Sprintf("n=%d/%s", n, q.name), func(b *testing.B) {
				b.ReportAllocs()
				var card uint64
				for b.Loop() {
					card = q.run().GetCardinality()
				}
				b.ReportMetric(float64(card), "docs")
			})
		}
		b.Run(fmt.Sprintf("n=%d/op=put-expire", n), func(b *testing.B) {
			b.ReportAllocs()
			w := kvtest.Map{}
			r := rand.New(rand.NewPCG(1, 2))
			clock := now
			for b.Loop() {
				clock = clock.Add(time.Second)
				d := uint32(r.IntN(n))
				iv, _ := ix.Get(d)
				iv.ExpiredAt = clock
				if err := ix.Put(w, d, iv); err != nil {
					b.Fatal(err)
				}
				_ = ix.Current(clock) // forces rebuilds as the delta grows
			}
		})
	}
}

// discard is a kv.Writer that drops every write.
type discard struct{}

func (discard) Set(k, v []byte) error { return nil }
func (discard) Delete(k []byte) error { return nil }

// BenchmarkPutBulk is a new user's bulk import: a fresh index and 1000
// open versions recorded at one instant, ValidFrom a minute apart (writes
// discarded: the store's cost is not the index's).
func BenchmarkPutBulk(b *testing.B) {
	const n = 1000
	rec := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	vf := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		ix := New([]byte("user/t/"))
		for i := range n {
			if err := ix.Put(discard{}, uint32(i), Interval{ValidFrom: vf.Add(time.Duration(i) * time.Minute), RecordedAt: rec}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/doc")
}

// BenchmarkLoad is reading an index back (a reopen's first query; 1,000
// docs is the engine's 1,000-fact user) from its records, from a store
// whose scan costs next to nothing, and from its image.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		r := rand.New(rand.NewPCG(42, uint64(n)))
		store := kvtest.Map{}
		clock := t0
		for d := range uint32(n) {
			clock = clock.Add(time.Minute)
			iv := Interval{ValidFrom: clock.Add(-time.Duration(r.IntN(30*24)) * time.Hour), RecordedAt: clock}
			if r.IntN(3) == 0 {
				iv.ExpiredAt = clock.Add(time.Hour)
			}
			if err := WriteInterval(store, []byte("t/"), d, iv); err != nil {
				b.Fatal(err)
			}
		}
		frozen := kvtest.Freeze(store)
		b.Run(fmt.Sprintf("n=%d/from=records", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(context.Background(), frozen, []byte("t/")); err != nil {
					b.Fatal(err)
				}
			}
		})
		ix, err := Load(context.Background(), frozen, []byte("t/"))
		if err != nil {
			b.Fatal(err)
		}
		img := ix.AppendImage(nil)
		b.Run(fmt.Sprintf("n=%d/from=image", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadImage(img, []byte("t/")); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(img)), "image-bytes")
		})
		b.Run(fmt.Sprintf("n=%d/op=append-image", n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = ix.AppendImage(buf[:0])
			}
		})
	}
}
