package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/cputime"
)

func openEngine(b *testing.B, o memor.Options) *memor.Engine {
	b.Helper()
	e, err := memor.Open(filepath.Join(b.TempDir(), "db"), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

func fact(i int) memor.FactInput {
	preds := []string{"lives_in", "likes", "works_at", "plays_instrument", "speaks_language"}
	return memor.FactInput{Subject: "user", Predicate: preds[i%len(preds)], Object: fmt.Sprintf("object-%d", i),
		ValidFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)}
}

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[int(float64(len(ds)-1)*p)].Nanoseconds())
}

// BenchmarkAssert is the latency of one durable (fsynced) Assert: a user
// fact through the resolver into Pebble with a WAL sync. The aim is in
// fsyncs (p50 <= 2), and this machine's fsync latency drifts by 2x over
// minutes, so the durable run interleaves, between Asserts and outside
// the timer, a raw fsync of a 2 KB append in the same file system
// (fsync-p50-ns) and a synced 3 KB Set on a bare Pebble store
// (pebble-p50-ns, the floor of any durable Pebble write), and reports p50
// in fsyncs (p50-fsyncs) beside the log syncs the engine caused
// (syncs/op). Facts rotate over users and predicates, so a slot's history
// grows by one version per 500 operations.
func BenchmarkAssert(b *testing.B) {
	for _, mode := range []string{"durable", "nosync"} {
		b.Run("mode="+mode, func(b *testing.B) {
			e := openEngine(b, memor.Options{NoSync: mode == "nosync"})
			ctx := context.Background()
			var probe *syncProbe
			if mode == "durable" {
				probe = newSyncProbe(b)
			}
			var lat []time.Duration
			i := 0
			s0, err := e.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if _, err := e.Assert(ctx, fmt.Sprintf("user-%d", i%100), rotatingFact(i)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
				if probe != nil {
					b.StopTimer()
					probe.sample(b, i)
					b.StartTimer()
				}
			}
			s1, err := e.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p50 := percentile(lat, 0.5)
			b.ReportMetric(p50, "p50-ns")
			b.ReportMetric(percentile(lat, 0.99), "p99-ns")
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "facts/s")
			b.ReportMetric(float64(s1.WALSyncs-s0.WALSyncs)/float64(i), "syncs/op")
			if probe != nil {
				fs := percentile(probe.fsync, 0.5)
				b.ReportMetric(fs, "fsync-p50-ns")
				b.ReportMetric(percentile(probe.pebble, 0.5), "pebble-p50-ns")
				b.ReportMetric(p50/fs, "p50-fsyncs")
			}
		})
	}
}

// syncProbe times what one durable write costs on this machine: a raw
// fsync and a synced Set on a bare Pebble store.
type syncProbe struct {
	f             *os.File
	db            *pebble.DB
	buf, val      []byte
	fsync, pebble []time.Duration
}

func newSyncProbe(b *testing.B) *syncProbe {
	b.Helper()
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := pebble.Open(filepath.Join(dir, "pebble-probe"), &pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	p := &syncProbe{f: f, db: db, buf: make([]byte, 2048), val: make([]byte, 3072)}
	b.Cleanup(func() {
		f.Close()
		db.Close()
	})
	return p
}

func (p *syncProbe) sample(b *testing.B, i int) {
	start := time.Now()
	if _, err := p.f.Write(p.buf); err != nil {
		b.Fatal(err)
	}
	if err := p.f.Sync(); err != nil {
		b.Fatal(err)
	}
	p.fsync = append(p.fsync, time.Since(start))
	start = time.Now()
	if err := p.db.Set(fmt.Appendf(nil, "k%d", i), p.val, pebble.Sync); err != nil {
		b.Fatal(err)
	}
	p.pebble = append(p.pebble, time.Since(start))
}

// rotatingFact gives user i%100 its (i/100)th fact, cycling through five
// predicates, valid one minute after the user's previous fact.
func rotatingFact(i int) memor.FactInput {
	f := fact(i / 100)
	f.Object = fmt.Sprintf("object-%d", i)
	return f
}

// BenchmarkAssertHistory is the latency of a new value of a One slot
// whose history already holds n versions (a location or a current task
// that changes daily), and of a like restated for the (n+1)th time: the
// new claim resolves from the fact in force, so the cost must not grow
// with n.
func BenchmarkAssertHistory(b *testing.B) {
	for _, slot := range []string{"one", "many"} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("slot=%s/versions=%d", slot, n), func(b *testing.B) {
				benchmarkAssertHistory(b, slot == "many", n)
			})
		}
	}
}

// benchmarkAssertHistory: the history is n values of lives_in (a One
// slot) or, with many, one like restated n times (a Many slot).
func benchmarkAssertHistory(b *testing.B, many bool, n int) {
	e := openEngine(b, memor.Options{NoSync: true})
	ctx := context.Background()
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	value := func(i int) memor.FactInput {
		f := memor.FactInput{Subject: "user", Predicate: "lives_in", Object: fmt.Sprintf("city %d", i),
			ValidFrom: t0.Add(time.Duration(i) * time.Hour)}
		if many {
			f.Predicate, f.Object = "likes", "green tea"
		}
		return f
	}
	history := make([]memor.FactInput, n)
	for i := range history {
		history[i] = value(i)
	}
	if _, err := e.AssertBatch(ctx, "user", history); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := n
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := e.Assert(ctx, "user", value(i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	b.ReportMetric(percentile(lat, 0.5), "p50-ns")
}

// BenchmarkAssertConcurrent: durable asserts from several goroutines (one
// user each). Pebble's commit pipeline shares fsyncs between concurrent
// commits, so facts/s should grow with writers.
func BenchmarkAssertConcurrent(b *testing.B) {
	for _, writers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			e := openEngine(b, memor.Options{})
			ctx := context.Background()
			var n atomic.Int64
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						i := int(n.Add(1))
						if _, err := e.Assert(ctx, fmt.Sprintf("writer-%d", w), fact(i)); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "facts/s")
		})
	}
}

// storeBytes is the size of the files of the closed store in dir.
func storeBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkBulk is the import path: AssertBatch of 1,000 facts per user
// with NoSync and one Sync at the end, from one writer or from two
// (different users import in parallel). n=1000000 is skipped under -short.
// disk-B/fact is the size of the closed store per fact.
//
// The stores are removed when the whole benchmark ends, not after each
// sub-benchmark: this machine's ext4 has no journal, and such an ext4
// skips recently deleted inodes one by one on every file creation (Linux
// fs/ext4/ialloc.c, recently_deleted), so a sub-benchmark that creates
// its tables right after the previous one deleted a thousand table files
// paid about a millisecond of kernel time per table for that deletion.
func BenchmarkBulk(b *testing.B) {
	root := b.TempDir()
	sizes := []int{10_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	const perUser = 1000
	for _, n := range sizes {
		for _, writers := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/writers=%d", n, writers), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				// CPU time of the whole process (writers, flushes and
				// compactions) while timed: on a shared machine it moves
				// far less than wall time.
				var cpu time.Duration
				var disk int64
				for b.Loop() {
					b.StopTimer()
					dir, err := os.MkdirTemp(root, "db")
					if err != nil {
						b.Fatal(err)
					}
					e, err := memor.Open(dir, memor.Options{NoSync: true})
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := cputime.Process()
					b.StartTimer()
					var wg sync.WaitGroup
					for w := range writers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							batch := make([]memor.FactInput, 0, perUser)
							for u := w; u*perUser < n; u += writers {
								batch = batch[:0]
								for i := u * perUser; i < min(n, (u+1)*perUser); i++ {
									batch = append(batch, fact(i))
								}
								if _, err := e.AssertBatch(ctx, fmt.Sprintf("user-%d", u), batch); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
					if err := e.Sync(ctx); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += cputime.Process() - cpu0
					e.Close()
					disk += storeBytes(b, dir)
					b.StartTimer()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "facts/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/fact")
				b.ReportMetric(float64(disk)/float64(n*b.N), "disk-B/fact")
			})
		}
	}
}
