package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/eval"
)

var queryShapes = []struct {
	name         string
	users, facts int   // facts per user
	cacheBytes   int64 // Options.IndexCacheBytes (-1: every user stays loaded)
	// reopen: the store is closed and reopened after the load, so the
	// queries start on an empty index cache and Pebble block cache.
	reopen bool
}{
	{"10k-users", 10_000, 100, -1, false},
	// A 1 GiB index cache (the default) holds about half of the users
	// (evictions/op and cached-users report it): most queries load the
	// user's indexes first.
	{"10k-users-1GiB-cache", 10_000, 100, 1 << 30, false},
	// A cold start: a reopened store whose cache holds one user, so
	// every query loads its user's indexes from the store.
	{"10k-users-cold", 10_000, 100, 1, true},
	{"1-tenant", 1, 1_000_000, -1, false},
}

var queryWords = []string{"coffee", "hiking", "jazz", "chess", "sushi", "tennis", "python", "painting", "cycling", "poetry",
	"Berlin", "Lisbon", "Seattle", "Austin", "Kyoto", "Oslo", "Nairobi", "Lima", "Pune", "Denver"}

// loadShape bulk-loads users × facts: per subject, likes of numbered
// hobbies, a lives_in history with moves, and a job. A tenant's facts are
// about 100 subjects each (the user, or for a big tenant the entities of a
// knowledge base), so that slots stay the size real ones have. Fact i is
// valid from 2020 + i minutes: every fact is in the past (an hour apart,
// a 1M-fact tenant reached into 2134 and Query saw only the first 5 %).
func loadShape(b *testing.B, e *memor.Engine, users, facts int) {
	r := rand.New(rand.NewPCG(1, 2))
	for u := range users {
		loadUser(b, e, fmt.Sprintf("user-%d", u), facts, r)
	}
	if err := e.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// loadUser writes one user of loadShape, in batches of 1,000 (the first,
// a new user's, is a bulk import).
func loadUser(b *testing.B, e *memor.Engine, user string, facts int, r *rand.Rand) {
	ctx := context.Background()
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]memor.FactInput, 0, 1000)
	for i := range facts {
		subject := "user"
		if i >= 100 {
			subject = fmt.Sprintf("entity %d", i/100)
		}
		f := memor.FactInput{Subject: subject, ValidFrom: base.Add(time.Duration(i) * time.Minute)}
		switch {
		case i%10 == 0:
			f.Predicate, f.Object = "lives_in", queryWords[10+r.IntN(10)]
		case i%10 == 1:
			f.Predicate, f.Object = "works_at", fmt.Sprintf("Company %d", r.IntN(1000))
		default:
			f.Predicate, f.Object = "likes", fmt.Sprintf("%s %d", queryWords[r.IntN(10)], i)
		}
		batch = append(batch, f)
		if len(batch) == cap(batch) || i == facts-1 {
			if _, err := e.AssertBatch(ctx, user, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkFirstQueryAfterImport is the latency of the first Query of a
// 1,000-fact user just imported (one AssertBatch: a bulk import) in the
// same process, a new user each time. warmup=false: the warm-up is off,
// so the query loads the user from its records; warmup=true: the query
// comes once the warm-up has loaded it (imports idle for 50 ms).
func BenchmarkFirstQueryAfterImport(b *testing.B) {
	ctx := context.Background()
	for _, warmup := range []bool{false, true} {
		b.Run(fmt.Sprintf("warmup=%v", warmup), func(b *testing.B) {
			e, err := memor.Open(filepath.Join(b.TempDir(), "db"), memor.Options{NoSync: true, NoIndexWarmup: !warmup})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			r := rand.New(rand.NewPCG(1, 2))
			var lat []time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				user := fmt.Sprintf("user-%d", i)
				st0, err := e.Stats(ctx)
				if err != nil {
					b.Fatal(err)
				}
				loadUser(b, e, user, 1000, r)
				for warmup {
					st, err := e.Stats(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if st.IndexesWarmed > st0.IndexesWarmed {
						break
					}
					time.Sleep(time.Millisecond)
				}
				runtime.GC()
				b.StartTimer()
				t := time.Now()
				rs, err := e.Query(ctx, user, "where do I live?", memor.QueryOptions{})
				lat = append(lat, time.Since(t))
				if err != nil {
					b.Fatal(err)
				}
				if len(rs) == 0 {
					b.Fatal("nothing served")
				}
			}
			b.ReportMetric(percentile(lat, 0.5), "p50-ns")
			b.ReportMetric(percentile(lat, 0.99), "p99-ns")
		})
	}
}

// BenchmarkQuery is end-to-end Query latency at 1M facts (10k users × 100,
// and one tenant × 1M) with the default embedder; -short uses 10k facts.
// Reports p50-ns and p99-ns.
func BenchmarkQuery(b *testing.B) {
	for _, s := range queryShapes {
		users, facts, cacheBytes := s.users, s.facts, s.cacheBytes
		if testing.Short() {
			users, facts = max(users/100, 1), min(facts, 10_000)
			if cacheBytes > 1 {
				cacheBytes /= 100
			}
		}
		// MEMOR_BENCH_TENANT_FACTS sizes the one-tenant shape (building a
		// 1M-vector graph in one tenant takes many minutes on 2 cores).
		if v, err := strconv.Atoi(os.Getenv("MEMOR_BENCH_TENANT_FACTS")); err == nil && s.users == 1 && v > 0 {
			facts = v
		}
		b.Run("shape="+s.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "db")
			o := memor.Options{NoSync: true, IndexCacheBytes: cacheBytes}
			e, err := memor.Open(dir, o)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			loadShape(b, e, users, facts)
			load := time.Since(start)
			if s.reopen {
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				if e, err = memor.Open(dir, o); err != nil {
					b.Fatal(err)
				}
			}
			defer e.Close()
			ctx := context.Background()
			r := rand.New(rand.NewPCG(3, 4))
			questions := []string{"where do I live?", "where do I work?", "do I like %s?", "%s"}
			var lat []time.Duration
			empty := 0
			st0, err := e.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.ReportAllocs()
			for b.Loop() {
				q := questions[r.IntN(len(questions))]
				if q[0] == '%' || q[len(q)-2] == 's' {
					q = fmt.Sprintf(q, queryWords[r.IntN(len(queryWords))])
				}
				t := time.Now()
				rs, err := e.Query(ctx, fmt.Sprintf("user-%d", r.IntN(users)), q, memor.QueryOptions{})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
				if len(rs) == 0 {
					empty++ // a city the user never lived in: nothing to serve
				}
			}
			if empty == len(lat) {
				b.Fatal("no query returned anything")
			}
			// How often a query found its user evicted (and loaded it),
			// and how many users the cache held at the end: what the
			// shape measures.
			st, err := e.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.IndexEvictions-st0.IndexEvictions)/float64(len(lat)), "evictions/op")
			b.ReportMetric(float64(st.IndexedUsers), "cached-users")
			b.ReportMetric(float64(empty)/float64(len(lat)), "empty-frac")
			b.ReportMetric(percentile(lat, 0.5), "p50-ns")
			b.ReportMetric(percentile(lat, 0.99), "p99-ns")
			b.ReportMetric(float64(users*facts)/load.Seconds(), "load-facts/s")
		})
	}
}

// BenchmarkFirstQuery is the latency of the first Query of a 1,000-fact
// user (one import) after the store is reopened: the user's indexes load
// from the store first. warm: the store's files are in the page cache;
// cold: the page cache is dropped before each query (root only, skipped
// otherwise). images=true: the load reads the user's index image (the
// default); false: its records (Options.NoIndexImages). warmup=false: the
// index cache's warm-up is off (Options.NoIndexWarmup), so the query pays
// for the load; warmup=true: it is on and has finished before the query
// (a restarted server whose first query comes after the warm-up), so the
// query finds the user loaded. Reopening (and the warm-up) is outside the
// timer. Beside p50/p99 it reports the process's CPU time and minor page
// faults during the queries.
func BenchmarkFirstQuery(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	loadShape(b, e, 1, 1000)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	firstQuery(b, dir, "user-0", "where do I live?")
}

// BenchmarkFirstQueryLarge is BenchmarkFirstQuery for a user of 25,000
// facts: past the size at which the vector index builds its graph
// (hnsw.DefaultExactBelow), so a load from the image or the records
// reads the graph too.
func BenchmarkFirstQueryLarge(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	loadShape(b, e, 1, 25000)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	firstQuery(b, dir, "user-0", "where do I live?")
}

// BenchmarkFirstQueryConversation is BenchmarkFirstQuery for a user who
// is a real conversation: the first of BEAM-100K's (MEMOR_BEAM_DIR, else
// beside the repository; skipped when absent), each message added as an
// episode with its time and speaker, asked its first probing question.
// Its few hundred long messages read as much as thousands of short facts.
func BenchmarkFirstQueryConversation(b *testing.B) {
	dir, c := conversationStore(b)
	firstQuery(b, dir, "user-0", c.Questions[0].Text)
}

// BenchmarkFirstQueryAfterWrites is the first Query of a session of the
// BEAM conversation of BenchmarkFirstQueryConversation when, as a user's
// sessions go, the session before wrote after its first query: each cycle
// reopens the store, asks the question (timed), adds two messages and
// closes. Without the warm-up, so that the query loads the user: from an
// image only if the last session's Close wrote one after its writes.
func BenchmarkFirstQueryAfterWrites(b *testing.B) {
	dir, c := conversationStore(b)
	ctx := context.Background()
	o := memor.Options{NoSync: true, NoIndexWarmup: true}
	var lat []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		e, err := memor.Open(dir, o)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		t := time.Now()
		rs, err := e.Query(ctx, "user-0", c.Questions[0].Text, memor.QueryOptions{})
		lat = append(lat, time.Since(t))
		b.StopTimer()
		if err != nil || len(rs) == 0 {
			b.Fatalf("%d results, %v", len(rs), err)
		}
		for _, text := range []string{"I moved the review to Friday %d, and Dana agreed.", "Dana wants the report by Monday %d."} {
			i++
			if _, err := e.Add(ctx, "user-0", fmt.Sprintf(text, i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(percentile(lat, 0.5), "p50-ns")
	b.ReportMetric(percentile(lat, 0.99), "p99-ns")
}

// conversationStore writes BenchmarkFirstQueryConversation's user (skipped
// when the data are absent) into a new store, closed.
func conversationStore(b *testing.B) (string, eval.Conversation) {
	data := os.Getenv("MEMOR_BEAM_DIR")
	if data == "" {
		data = "../../shared/datasets/beam-100k"
	}
	if _, err := os.Stat(data); err != nil {
		b.Skipf("BEAM data absent at %s (set MEMOR_BEAM_DIR): %v", data, err)
	}
	cs, err := eval.LoadBEAM(data)
	if err != nil {
		b.Fatal(err)
	}
	c := cs[0]
	dir := filepath.Join(b.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range c.Messages {
		opts := []memor.AddOption{memor.At(m.At)}
		if m.Role != "" && m.Role != "user" {
			opts = append(opts, memor.Speaker(m.Role))
		}
		if _, err := e.Add(ctx, "user-0", m.Text, opts...); err != nil && !errors.Is(err, memor.ErrTooLarge) && !errors.Is(err, memor.ErrInvalidText) {
			b.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "user-0"); err != nil {
		b.Fatal(err)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, c
}

// firstQuery runs BenchmarkFirstQuery's variants on the store in dir.
func firstQuery(b *testing.B, dir, user, question string) {
	ctx := context.Background()
	for _, mode := range []string{"warm", "cold"} {
		for _, c := range []struct{ images, warmup bool }{{true, false}, {false, false}, {true, true}} {
			images := c.images
			b.Run(fmt.Sprintf("cache=%s/images=%v/warmup=%v", mode, images, c.warmup), func(b *testing.B) {
				if mode == "cold" && os.Geteuid() != 0 {
					b.Skip("dropping the page cache needs root")
				}
				o := memor.Options{NoSync: true, NoIndexImages: !images, NoIndexWarmup: !c.warmup}
				// One reopen first: its load reads the records and, with
				// images, its Close writes the image every timed load reads.
				e, err := memor.Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Query(ctx, user, question, memor.QueryOptions{}); err != nil {
					b.Fatal(err)
				}
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				var lat []time.Duration
				var cpu time.Duration
				var faults int64
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					e, err := memor.Open(dir, o)
					if err != nil {
						b.Fatal(err)
					}
					for c.warmup {
						st, err := e.Stats(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if !st.Warming {
							if st.IndexesWarmed != 1 {
								b.Fatalf("%d users warmed, want 1", st.IndexesWarmed)
							}
							break
						}
						time.Sleep(100 * time.Microsecond)
					}
					if mode == "cold" {
						if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
							b.Fatal(err)
						}
					}
					// The engines closed before are garbage a reopened
					// process would not have: collected first, so that the
					// query pays for its own allocations only (whether the
					// collector ran in the query or in the Close before it
					// was a matter of where the heap's goal happened to
					// fall, and moved the p50 by a tenth).
					runtime.GC()
					b.StartTimer()
					c0, f0 := rusage()
					t := time.Now()
					rs, err := e.Query(ctx, user, question, memor.QueryOptions{})
					lat = append(lat, time.Since(t))
					c1, f1 := rusage()
					cpu, faults = cpu+c1-c0, faults+f1-f0
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if len(rs) == 0 {
						b.Fatal("nothing served")
					}
					if err := e.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(percentile(lat, 0.5), "p50-ns")
				b.ReportMetric(percentile(lat, 0.99), "p99-ns")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lat)), "cpu-ns/op")
				b.ReportMetric(float64(faults)/float64(len(lat)), "faults/op")
			})
		}
	}
}
