package jslog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkAppend measures acknowledged appends of a 1 KB episode record,
// one writer, 64 users, on one in-process server (R1), on one that
// fsyncs every message (R1-sync, what memor's own Pebble log does per
// write by default) and on three (R3), reporting episodes/s and the
// p50/p99 latency of Append. JetStream acknowledges R1 and R3 appends
// before an fsync (it syncs every 2 minutes by default): R3's durability
// is the quorum's memory on three hosts. All servers share this
// machine's cores, so R3's figure is a floor for three real hosts.
func BenchmarkAppend(b *testing.B) {
	for _, run := range []struct {
		name     string
		replicas int
		sync     bool
	}{{"R1", 1, false}, {"R1-sync", 1, true}, {"R3", 3, false}} {
		replicas := run.replicas
		b.Run(run.name, func(b *testing.B) {
			var js jetstream.JetStream
			if replicas == 1 {
				js = natstest.Connect(b, natstest.Server(b, "", func(o *server.Options) { o.SyncAlways = run.sync }).ClientURL())
			} else {
				var urls []string
				for _, s := range natstest.Cluster(b, 3) {
					urls = append(urls, s.ClientURL())
				}
				js = natstest.Connect(b, strings.Join(urls, ","))
			}
			ctx := context.Background()
			var l *Log
			kek := make([]byte, 32)
			for deadline := time.Now().Add(30 * time.Second); ; {
				attempt, stop := context.WithTimeout(ctx, 2*time.Second)
				var err error
				l, err = Open(attempt, js, Config{KEK: kek, Replicas: replicas})
				stop()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			rec := []byte(strings.Repeat("I moved to Seattle in July and started at the hospital. ", 18))[:1024]
			last := map[string]Entry{}
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				u := fmt.Sprintf("user-%d", i%64)
				t0 := time.Now()
				e, err := l.Append(ctx, u, last[u].Seq+1, rec, last[u].StreamSeq)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				last[u] = e
			}
			elapsed := time.Since(start)
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "episodes/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
