package cluster

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestJoinMidLoad: on a 3-server R3 cluster, writes spread over many
// users keep going through two memor nodes while a third joins. The
// third takes shards from the others toward a fair share, at most
// MovesPerRound a lease round per giver, each handed over drained (writes
// finished, snapshotted, lease released, users evicted). No acknowledged
// episode is lost, the shard counts end within one of each other, and
// every user equals a single-node store fed the same episodes.
func TestJoinMidLoad(t *testing.T) {
	ctx := context.Background()
	const shards = 8
	users, rounds := userNames(24), 6
	if *long {
		users, rounds = userNames(150), 20
	}
	r := newRig(t, 3)
	cfg := func(id string) Config {
		return Config{Node: id, Shards: shards, SnapshotEvery: 16, MovesPerRound: 1}
	}
	a, b := r.node("", cfg("a")), r.node("", cfg("b"))
	waitFor(t, "a and b serving every shard", 30*time.Second, func() bool {
		return covered(shards, a, b) && len(a.n.Owned()) > 0 && len(b.n.Owned()) > 0
	})
	cl := &client{nodes: map[string]*testNode{"a": a, "b": b}, r: mrand.New(mrand.NewPCG(3, 4))}
	var mu sync.Mutex
	acked := map[string][]string{}
	var wg sync.WaitGroup
	var joined sync.WaitGroup
	joined.Add(1)
	// The writers go on until the shards are balanced, and at least
	// rounds rounds: every move happens under load.
	var settled atomic.Bool
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 40*rounds; round++ {
				if round == rounds/2 {
					joined.Wait() // half the writes after the join began
				}
				if round >= rounds && settled.Load() {
					return
				}
				if round > 0 {
					// Paced, so that the moves (a few lease rounds) see a
					// bounded number of episodes a user.
					time.Sleep(150 * time.Millisecond)
				}
				text := fmt.Sprintf("I live in %s. Round %d.", cities[(round+len(u))%len(cities)], round)
				err := cl.write(ctx, u, func(e *memor.Engine) error { _, err := e.Add(ctx, u, text); return err })
				if err != nil {
					t.Errorf("write %s round %d: %v", u, round, err)
					return
				}
				mu.Lock()
				acked[u] = append(acked[u], text)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	c := r.node("", cfg("c"))
	cl.mu.Lock()
	cl.nodes["c"] = c
	cl.mu.Unlock()
	joined.Done()
	nodes := []*testNode{a, b, c}
	balanced := func() bool {
		lo, hi := shards, 0
		for _, tn := range nodes {
			lo, hi = min(lo, len(tn.n.Owned())), max(hi, len(tn.n.Owned()))
		}
		return covered(shards, nodes...) && hi-lo <= 1 && len(c.n.Owned()) > 0
	}
	waitFor(t, "the shards balanced", 30*time.Second, balanced)
	settled.Store(true)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if !balanced() {
		t.Fatal("the shards moved again after balancing")
	}
	n := totalEpisodes(acked)
	t.Logf("%d episodes acknowledged over %d users", n, len(users))
	moved := c.n.Takeovers()
	replayed := 0
	for _, tk := range moved {
		replayed += tk.Replayed
	}
	t.Logf("owned a %v, b %v, c %v; c took %d shards, replaying %d episodes past their snapshots",
		a.n.Owned(), b.n.Owned(), c.n.Owned(), len(moved), replayed)
	if len(moved) != len(c.n.Owned()) {
		t.Errorf("c took %d shards and owns %d: shards moved more than once", len(moved), len(c.n.Owned()))
	}
	for _, tn := range nodes {
		sameAsReference(t, tn, acked, ownedUsers(tn, users))
		// A giver holds nothing of the shards it gave.
		us, err := tn.e.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if tn.n.Route(ctx, u) != nil {
				t.Errorf("%s still holds %s of shard %d, which it does not serve", tn.n.ID(), u, tn.n.Shard(u))
			}
		}
	}
}

// TestDrainHandsOverSnapshotted: a draining node snapshots each shard as
// it hands it over, so the node taking them restores everything and
// replays nothing, and the drained store holds no user.
func TestDrainHandsOverSnapshotted(t *testing.T) {
	ctx := context.Background()
	const shards = 4
	users := userNames(12)
	r := newRig(t, 1)
	a := r.node("", Config{Node: "a", Shards: shards, SnapshotEvery: -1, SnapshotInterval: time.Hour})
	b := r.node("", Config{Node: "b", Shards: shards, SnapshotEvery: -1, SnapshotInterval: time.Hour})
	waitFor(t, "a and b sharing the shards", 20*time.Second, func() bool {
		return covered(shards, a, b) && len(a.n.Owned()) == 2 && len(b.n.Owned()) == 2
	})
	cl := &client{nodes: map[string]*testNode{"a": a, "b": b}, r: mrand.New(mrand.NewPCG(5, 6))}
	acked := map[string][]string{}
	for round := range 3 {
		for _, u := range users {
			text := fmt.Sprintf("I live in %s. Round %d.", cities[(round+len(u))%len(cities)], round)
			if err := cl.write(ctx, u, func(e *memor.Engine) error { _, err := e.Add(ctx, u, text); return err }); err != nil {
				t.Fatal(err)
			}
			acked[u] = append(acked[u], text)
		}
	}
	gave := a.n.Owned()
	if err := a.n.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if us, err := a.e.Users(ctx); err != nil || len(us) != 0 {
		t.Fatalf("the drained store holds %v (%v)", us, err)
	}
	waitFor(t, "b taking every shard", 20*time.Second, func() bool { return covered(shards, b) })
	for _, tk := range b.n.Takeovers() {
		if slices.Contains(gave, tk.Shard) && (tk.Replayed != 0 || tk.RestoredUsers == 0) {
			t.Errorf("shard %d handed over by the drain: %+v; want all restored, none replayed", tk.Shard, tk)
		}
	}
	sameAsReference(t, b, acked, users)
}
