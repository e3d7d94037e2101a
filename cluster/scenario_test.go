package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/internal/enginetest"
)

var long = flag.Bool("cluster.long", false, "run the long cluster scenario")

type testNode struct {
	n    *Node
	e    *memor.Engine
	l    *Log
	dead bool
}

func startNode(t *testing.T, urls string, kek []byte, id string, shards int) *testNode {
	t.Helper()
	return startNodeR(t, urls, kek, id, shards, 3)
}

// startNodeR starts a node on a stream and buckets of replicas replicas.
func startNodeR(t *testing.T, urls string, kek []byte, id string, shards, replicas int) *testNode {
	t.Helper()
	ctx := context.Background()
	js := natstest.Connect(t, urls)
	var jl *jslog.Log
	var err error
	for try := 0; ; try++ { // the meta leader is elected a moment after the mesh forms
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		jl, err = jslog.Open(attempt, js, jslog.Config{KEK: kek, Replicas: replicas})
		stop()
		if err == nil {
			break
		}
		if try == 30 {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l := NewLog(jl)
	e, err := memor.Open(t.TempDir(), memor.Options{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	n, err := Join(ctx, js, e, l, Config{Node: id, Shards: shards, LeaseTTL: time.Second, Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return &testNode{n: n, e: e, l: l}
}

// client writes as a client of the cluster does: to any node, following
// the owner it is told of, retrying while a shard has no owner.
type client struct {
	mu    sync.Mutex
	nodes map[string]*testNode
	r     *mrand.Rand
}

func (c *client) write(ctx context.Context, user string, fn func(*memor.Engine) error) error {
	var last error
	for range 400 {
		c.mu.Lock()
		var live []*testNode
		for _, tn := range c.nodes {
			if !tn.dead {
				live = append(live, tn)
			}
		}
		tn := live[c.r.IntN(len(live))]
		c.mu.Unlock()
		err := tn.n.Write(ctx, user, fn)
		var no *NotOwnerError
		if errors.As(err, &no) {
			c.mu.Lock()
			owner := c.nodes[no.Node]
			c.mu.Unlock()
			if owner == nil || owner.dead {
				err = ErrNoOwner
			} else {
				err = owner.n.Write(ctx, user, fn)
			}
		}
		if err == nil {
			return nil
		}
		last = err
		time.Sleep(25 * time.Millisecond)
	}
	return last
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func covered(shards int, nodes ...*testNode) bool {
	seen := map[int]bool{}
	for _, tn := range nodes {
		for _, s := range tn.n.Owned() {
			seen[s] = true
		}
	}
	return len(seen) == shards
}

var cities = []string{"Paris", "Lyon", "Nice", "Oslo", "Rome", "Bern"}

// TestClusterFailover: writes over many users on a 3-server R3 JetStream
// cluster and two (long: three) memor nodes; one node stops renewing
// without knowing it (two owners of its shards for a while), then dies.
// Every acknowledged episode is in the surviving owner's store, in order,
// and each user's memory equals a single-node store fed the same
// episodes.
func TestClusterFailover(t *testing.T) {
	ctx := context.Background()
	users, rounds, nNodes := 24, 6, 2
	if *long {
		users, rounds, nNodes = 200, 20, 3
	}
	const shards = 8
	servers := natstest.Cluster(t, 3)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	kek := make([]byte, 32)
	rand.Read(kek)
	c := &client{nodes: map[string]*testNode{}, r: mrand.New(mrand.NewPCG(1, 2))}
	var all []*testNode
	for i := range nNodes {
		tn := startNode(t, strings.Join(urls, ","), kek, fmt.Sprintf("m%d", i+1), shards)
		c.nodes[tn.n.ID()] = tn
		all = append(all, tn)
	}
	waitFor(t, "every shard served and spread", 30*time.Second, func() bool {
		if !covered(shards, all...) {
			return false
		}
		for _, tn := range all {
			if len(tn.n.Owned()) == 0 {
				return false
			}
		}
		return true
	})
	victim := all[0]
	survivors := all[1:]

	acked := map[string][]string{}
	var mu sync.Mutex
	write := func(u string, round int) {
		text := fmt.Sprintf("I live in %s. Round %d.", cities[(round+len(u))%len(cities)], round)
		err := c.write(ctx, u, func(e *memor.Engine) error {
			_, err := e.Add(ctx, u, text)
			return err
		})
		if err != nil {
			t.Errorf("write %s round %d: %v", u, round, err)
			return
		}
		mu.Lock()
		acked[u] = append(acked[u], text)
		mu.Unlock()
	}
	userName := func(i int) string { return fmt.Sprintf("user-%03d", i) }
	for round := range rounds {
		if round == rounds/3 {
			// The victim stops renewing but still believes it owns its
			// shards: the lease round is paused, as a stalled process's.
			victim.n.cancel()
			victim.n.wg.Wait()
		}
		if round == 2*rounds/3 {
			victim.n.Stop()
			victim.e.Close()
			c.mu.Lock()
			victim.dead = true
			c.mu.Unlock()
		}
		var wg sync.WaitGroup
		for i := range users {
			if i%4 == 0 && round >= rounds/3 {
				// A quarter of the users are written before the stall only:
				// nothing but the takeover's catch-up brings them over.
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); write(userName(i), round) }()
		}
		wg.Wait()
	}
	if t.Failed() {
		t.FailNow()
	}
	waitFor(t, "the victim's shards to move", 30*time.Second, func() bool { return covered(shards, survivors...) })

	// Let the survivors' lease rounds copy whatever the stalled node
	// appended before it died, then compare.
	ref, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	owner := func(u string) *testNode {
		for _, tn := range survivors {
			if tn.n.Route(ctx, u) == nil {
				return tn
			}
		}
		t.Fatalf("no survivor serves %s", u)
		return nil
	}
	for i := range users {
		u := userName(i)
		tn := owner(u)
		waitFor(t, "episodes of "+u, 20*time.Second, func() bool {
			f, err := tn.e.Freshness(ctx, u)
			return err == nil && f.Latest == uint64(len(acked[u])) && f.Pending == 0
		})
		eps, err := tn.e.Episodes(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for j, ep := range eps {
			if ep.Text != acked[u][j] && !contains(acked[u], ep.Text) {
				t.Fatalf("%s episode %d is %q, not an acknowledged write", u, j+1, ep.Text)
			}
		}
		var buf bytes.Buffer
		if _, err := tn.e.Export(ctx, &buf, u); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Import(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		enginetest.SameMemory(t, tn.e, ref, u)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestTwoOwnersSecondWriterStopped: a node whose lease expired while it
// stalled still believes it owns the shard; the new owner writes; the
// stalled node's append is refused by the expected-sequence check and
// nothing interleaves.
func TestTwoOwnersSecondWriterStopped(t *testing.T) {
	ctx := context.Background()
	s := natstest.Server(t, "")
	kek := make([]byte, 32)
	rand.Read(kek)
	// One server: R1.
	mk := func(id string) *testNode {
		js := natstest.Connect(t, s.ClientURL())
		jl, err := jslog.Open(ctx, js, jslog.Config{KEK: kek})
		if err != nil {
			t.Fatal(err)
		}
		l := NewLog(jl)
		e, err := memor.Open(t.TempDir(), memor.Options{Log: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		n, err := Join(ctx, js, e, l, Config{Node: id, Shards: 1, LeaseTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Stop)
		return &testNode{n: n, e: e, l: l}
	}
	a := mk("a")
	waitFor(t, "a serving", 10*time.Second, func() bool { return len(a.n.Owned()) == 1 })
	if err := a.n.Write(ctx, "u", func(e *memor.Engine) error { _, err := e.Add(ctx, "u", "I live in Paris.", memor.Sync()); return err }); err != nil {
		t.Fatal(err)
	}
	a.n.cancel() // a stalls: no more renewals, still believes it owns shard 0
	a.n.wg.Wait()
	b := mk("b")
	waitFor(t, "b taking the shard", 20*time.Second, func() bool { return len(b.n.Owned()) == 1 })
	if err := b.n.Write(ctx, "u", func(e *memor.Engine) error { _, err := e.Add(ctx, "u", "I live in Lyon.", memor.Sync()); return err }); err != nil {
		t.Fatal(err)
	}
	// a's engine writes directly (no retry): the log refuses it.
	_, err := a.e.Add(ctx, "u", "I live in Nice.", memor.Sync())
	if !errors.Is(err, jslog.ErrConflict) {
		t.Fatalf("the stalled owner's append: %v; want jslog.ErrConflict", err)
	}
	var texts []string
	for e, err := range a.l.JS().Read(ctx, "u", 0) {
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(e.Record))
	}
	if len(texts) != 2 || !strings.Contains(texts[1], "Lyon") {
		t.Fatalf("log holds %d entries; want Paris then Lyon", len(texts))
	}
	// A client retry of an append that JetStream already stored (the ack
	// was lost) is a no-op: same position, no new entry.
	last, _, err := a.l.JS().Last(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	prev := uint64(0)
	for e, err := range a.l.JS().Read(ctx, "u", 0) {
		if err == nil && e.Seq == last.Seq-1 {
			prev = e.StreamSeq
		}
	}
	again, err := a.l.JS().Append(ctx, "u", last.Seq, last.Record, prev)
	if err != nil || again.StreamSeq != last.StreamSeq {
		t.Fatalf("retried append: %+v, %v; want the stored entry %d", again, err, last.StreamSeq)
	}
	if n := len(texts); n != 2 {
		t.Fatalf("%d entries", n)
	}
	if sz, _ := a.l.JS().Size(ctx); sz.Msgs != 2 {
		t.Fatalf("log holds %d messages after the retry; want 2", sz.Msgs)
	}
}
