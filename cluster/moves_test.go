package cluster

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/cluster/jslog"
)

// testKEK is the log's key-encryption key of this file's clusters.
var testKEK = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// joinWith starts node cfg.Node on the JetStream at urls, its engine
// opened on engineLog(l) (l itself when engineLog is nil), where l is the
// node's Log; both are stopped and closed when the test ends.
func joinWith(t *testing.T, urls string, engineLog func(*Log) memor.EpisodeLog, cfg Config) (*Node, *memor.Engine) {
	t.Helper()
	ctx := context.Background()
	js := natstest.Connect(t, urls)
	jl, err := jslog.Open(ctx, js, jslog.Config{KEK: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLog(jl)
	var el memor.EpisodeLog = l
	if engineLog != nil {
		el = engineLog(l)
	}
	e, err := memor.Open(t.TempDir(), memor.Options{Log: el})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	n, err := Join(ctx, js, e, l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n, e
}

// TestMovesPerRound: a node owning every one of 16 shards, when a second
// node joins, hands over the 8 above its fair share at most
// MovesPerRound (here 2) a lease round, and reaches its share.
func TestMovesPerRound(t *testing.T) {
	const shards, bound = 16, 2
	s := natstest.Server(t, "")
	var mu sync.Mutex
	var rounds []int // shards handed over, per lease round with any
	cfg := Config{Node: "m1", Shards: shards, LeaseTTL: time.Second, MovesPerRound: bound, SnapshotEvery: -1,
		hooks: &hooks{handedOver: func(n int) {
			if n > 0 {
				mu.Lock()
				rounds = append(rounds, n)
				mu.Unlock()
			}
		}}}
	m1, _ := joinWith(t, s.ClientURL(), nil, cfg)
	waitFor(t, "m1 serving every shard", 10*time.Second, func() bool { return len(m1.Owned()) == shards })
	m2, _ := joinWith(t, s.ClientURL(), nil, Config{Node: "m2", Shards: shards, LeaseTTL: time.Second, SnapshotEvery: -1})
	waitFor(t, "the shards split 8/8", 30*time.Second, func() bool {
		return len(m1.Owned()) == shards/2 && len(m2.Owned()) == shards/2
	})
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range rounds {
		if n > bound {
			t.Errorf("a lease round handed over %d shards, more than MovesPerRound %d (rounds: %v)", n, bound, rounds)
		}
		total += n
	}
	if total != shards/2 || len(rounds) < shards/2/bound {
		t.Fatalf("m1 handed over %d shards in rounds %v; want %d, at most %d a round", total, rounds, shards/2, bound)
	}
}

// TestForgetNoticeEvicts: a user forgotten through a node that does not
// own it leaves the owner's store at once (the forget notice), not a
// lease round later (30 s leases here: a round every 10 s).
func TestForgetNoticeEvicts(t *testing.T) {
	ctx := context.Background()
	s := natstest.Server(t, "")
	cfg := Config{Node: "m1", Shards: 1, LeaseTTL: 30 * time.Second, SnapshotEvery: -1}
	m1, e1 := joinWith(t, s.ClientURL(), nil, cfg)
	waitFor(t, "m1 serving", 10*time.Second, func() bool { return len(m1.Owned()) == 1 })
	cfg.Node = "m2"
	m2, _ := joinWith(t, s.ClientURL(), nil, cfg)
	if err := m1.Write(ctx, "u", func(e *memor.Engine) error {
		_, err := e.Add(ctx, "u", "I live in Oslo.", memor.Sync())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := m1.Write(ctx, "keep", func(e *memor.Engine) error {
		_, err := e.Add(ctx, "keep", "I live in Rome.", memor.Sync())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := m2.Forget(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "m1 to evict u", 3*time.Second, func() bool {
		us, err := e1.Users(ctx)
		return err == nil && len(us) == 1 && us[0] == "keep"
	})
	t.Logf("m1 evicted u %v after m2 forgot it", time.Since(start).Round(time.Millisecond))
}
