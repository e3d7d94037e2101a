package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/cputime"
)

var turns = []string{
	"I live in %s.", "I just moved to %s.", "I work at %s as an engineer.", "My brother Alex lives in %s.",
	"I like %s.", "I play the guitar and I speak Spanish.", "What's the weather like in %s today?",
}

var cities = []string{"Seattle", "Austin", "Pune", "Lisbon", "Oslo", "Denver", "Kyoto", "Lima"}

func turn(i int) string {
	t := turns[i%len(turns)]
	if strings.Contains(t, "%s") {
		return fmt.Sprintf(t, cities[(i/len(turns))%len(cities)])
	}
	return t
}

// BenchmarkIngest is Add with the rule extractor over many users: the
// asynchronous default (durable at return, applied by workers) and Sync
// (applied inline), each with the log synced per write (the default) or
// not (bulk import). episodes/s counts Add returns only (bounded by the
// queue, 1024 episodes, once it fills); applied-episodes/s also waits for
// every user's Flush, and cpu-µs/episode is the process CPU time of both
// (steadier than wall time on a shared machine).
func BenchmarkIngest(b *testing.B) {
	users := 10_000
	if testing.Short() {
		users = 100
	}
	for _, durable := range []bool{false, true} {
		for _, mode := range []string{"async", "sync"} {
			log := "nosync"
			if durable {
				log = "sync"
			}
			b.Run(fmt.Sprintf("mode=%s/log=%s/users=%d", mode, log, users), func(b *testing.B) {
				e := openEngine(b, memor.Options{NoSync: !durable})
				ctx := context.Background()
				var opts []memor.AddOption
				if mode == "sync" {
					opts = append(opts, memor.Sync())
				}
				n := 0
				b.ReportAllocs()
				cpu0 := cputime.Process()
				for b.Loop() {
					if _, err := e.Add(ctx, fmt.Sprintf("user-%d", n%users), turn(n), opts...); err != nil {
						b.Fatal(err)
					}
					n++
				}
				start := time.Now()
				for u := range min(n, users) {
					if err := e.Flush(ctx, fmt.Sprintf("user-%d", u)); err != nil {
						b.Fatal(err)
					}
				}
				drain := time.Since(start)
				cpu := cputime.Process() - cpu0
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "episodes/s")
				b.ReportMetric(float64(n)/(b.Elapsed()+drain).Seconds(), "applied-episodes/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/episode")
				b.ReportMetric(float64(drain.Nanoseconds()), "flush-all-ns")
			})
		}
	}
}

// BenchmarkFlush is the latency of Flush right after one asynchronous Add:
// how long a caller waits for read-your-writes. ns/op is Add and Flush;
// flush-p50-µs and flush-p99-µs are Flush alone.
func BenchmarkFlush(b *testing.B) {
	for _, durable := range []bool{false, true} {
		log := "nosync"
		if durable {
			log = "sync"
		}
		b.Run("log="+log, func(b *testing.B) {
			e := openEngine(b, memor.Options{NoSync: !durable})
			ctx := context.Background()
			i := 0
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				user := fmt.Sprintf("user-%d", i%100)
				if _, err := e.Add(ctx, user, turn(i)); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := e.Flush(ctx, user); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "flush-p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "flush-p99-µs")
		})
	}
}

// BenchmarkGuards is the per-episode cost of the recall fence (stripping
// fenced spans) and the quote check (every op's quote must be a verbatim
// span), beside the extraction they guard.
func BenchmarkGuards(b *testing.B) {
	text := extract.Fence("user lives_in Seattle (since 2026-07-11)\nuser works_at Google") +
		"\nI just moved to Seattle and I work at Google as an engineer. My brother Alex adopted a golden retriever named Buddy last month."
	at := time.Date(2026, 7, 11, 0, 0, 0, 0, time.UTC)
	ops, err := extract.NewRuleExtractor().Extract(context.Background(), extract.StripFenced(text), at)
	if err != nil || len(ops) == 0 {
		b.Fatalf("extract: %v %v", ops, err)
	}
	b.Run("step=fence", func(b *testing.B) {
		for b.Loop() {
			_ = extract.StripFenced(text)
		}
	})
	b.Run("step=fence-no-markers", func(b *testing.B) {
		plain := extract.StripFenced(text)
		for b.Loop() {
			_ = extract.StripFenced(plain)
		}
	})
	b.Run("step=quote-check", func(b *testing.B) {
		stripped := extract.StripFenced(text)
		for b.Loop() {
			for _, op := range ops {
				if !strings.Contains(stripped, op.Quote) {
					b.Fatal("quote")
				}
			}
		}
		b.ReportMetric(float64(len(ops)), "ops/episode")
	})
	b.Run("step=extract", func(b *testing.B) {
		x := extract.NewRuleExtractor()
		stripped := extract.StripFenced(text)
		for b.Loop() {
			if _, err := x.Extract(context.Background(), stripped, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
