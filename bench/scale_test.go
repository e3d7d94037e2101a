package bench

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
	"github.com/memor-db/memor/server"
)

// BenchmarkScale times memor and its baselines on the seeded
// scale workload (1000 users × 20 turns; 50 with -short), one fresh
// store per iteration, and reports accuracy and stale rate beside the
// per-call times:
//
//	cd bench && go test -run '^$' -bench Scale -benchtime 1x
func BenchmarkScale(b *testing.B) {
	users := 1000
	if testing.Short() {
		users = 50
	}
	s, err := memortest.GenerateScale(memortest.ScaleOptions{Users: users, TurnsPerUser: 20, Changes: 3, Seed: 1, AsOf: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, arm := range []struct {
		name string
		opts *memor.Options
	}{{"memor", &memor.Options{NoSync: true}}, {"ungoverned", &memor.Options{NoSync: true, Ungoverned: true}}, {"naive", nil}} {
		b.Run(fmt.Sprintf("engine=%s/users=%d", arm.name, users), func(b *testing.B) {
			b.ReportAllocs()
			var r memortest.ScaleResult
			for b.Loop() {
				var backend memortest.Backend = naive.New()
				var e *memor.Engine
				if arm.opts != nil {
					e, err = memor.Open(filepath.Join(b.TempDir(), "db"), *arm.opts)
					if err != nil {
						b.Fatal(err)
					}
					backend = server.Backend(e)
				}
				r, err = s.Run(b.Context(), backend, memortest.DefaultK)
				if err != nil {
					b.Fatal(err)
				}
				if e != nil {
					e.Close()
				}
			}
			b.ReportMetric(r.Accuracy(), "accuracy")
			b.ReportMetric(r.StaleRate(), "stale-rate")
			b.ReportMetric(float64(r.AddTime.Nanoseconds())/float64(r.Turns), "ns/add")
			b.ReportMetric(float64(r.QueryTime.Nanoseconds())/float64(r.Probes), "ns/query")
		})
	}
}
