package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/internal/enginetest"
	"github.com/memor-db/memor/internal/syncbuf"
	"github.com/nats-io/nats.go/jetstream"
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
	return joinNode(t, urls, kek, replicas, "", Config{Node: id, Shards: shards})
}

// newKEK is a random key-encryption key.
func newKEK() []byte {
	kek := make([]byte, 32)
	rand.Read(kek)
	return kek
}

// openLogRetrying opens the episode log on js, retrying while a new
// cluster elects its meta leader (a moment after the mesh forms).
func openLogRetrying(tb testing.TB, js jetstream.JetStream, kek []byte, replicas int) *jslog.Log {
	tb.Helper()
	for try := 0; ; try++ {
		attempt, stop := context.WithTimeout(context.Background(), 2*time.Second)
		jl, err := jslog.Open(attempt, js, jslog.Config{KEK: kek, Replicas: replicas})
		stop()
		if err == nil {
			return jl
		}
		if try == 30 {
			tb.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// joinNode starts a memor node on the NATS servers at urls, with a log
// stream and buckets of replicas replicas, on the store in dir ("" for a
// new one). cfg's LeaseTTL defaults to 1 s; without cfg.Logger the
// node's log is shown if the test fails.
func joinNode(tb testing.TB, urls string, kek []byte, replicas int, dir string, cfg Config) *testNode {
	tb.Helper()
	js := natstest.Connect(tb, urls)
	l := NewLog(openLogRetrying(tb, js, kek, replicas))
	if dir == "" {
		dir = tb.TempDir()
	}
	e, err := memor.Open(dir, memor.Options{Log: l})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	cfg.Replicas = replicas
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = time.Second
	}
	if cfg.Logger == nil {
		logs := new(syncbuf.Buffer)
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("node %s log:\n%s", cfg.Node, logs.String())
			}
		})
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	n, err := Join(context.Background(), js, e, l, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Stop)
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

// ackedWriter writes as a client of the cluster does (client) and
// records, per user and in order, what was acknowledged.
type ackedWriter struct {
	c     *client
	mu    sync.Mutex
	acked map[string][]string
}

func newAckedWriter(c *client) *ackedWriter {
	return &ackedWriter{c: c, acked: map[string][]string{}}
}

// add writes text as an episode of user. A write still failing after the
// client's retries fails the test (Errorf: add runs on a round's
// goroutines).
func (w *ackedWriter) add(t *testing.T, user, text string) {
	ctx := context.Background()
	err := w.c.write(ctx, user, func(e *memor.Engine) error {
		_, err := e.Add(ctx, user, text)
		return err
	})
	if err != nil {
		t.Errorf("write %s %q: %v", user, text, err)
		return
	}
	w.mu.Lock()
	w.acked[user] = append(w.acked[user], text)
	w.mu.Unlock()
}

// round writes one episode of round r to each of users, all at once.
func (w *ackedWriter) round(t *testing.T, users []string, r int) {
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.add(t, u, fmt.Sprintf("I live in %s. Round %d.", cities[(r+i)%len(cities)], r))
		}()
	}
	wg.Wait()
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
	users, rounds, nNodes := userNames(24), 6, 2
	if *long {
		users, rounds, nNodes = userNames(200), 20, 3
	}
	const shards = 8
	servers := natstest.Cluster(t, 3)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	kek := newKEK()
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

	w := newAckedWriter(c)
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
		var some []string
		for i, u := range users {
			if i%4 == 0 && round >= rounds/3 {
				// A quarter of the users are written before the stall only:
				// nothing but the takeover's catch-up brings them over.
				continue
			}
			some = append(some, u)
		}
		w.round(t, some, round)
	}
	acked := w.acked
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
	for _, u := range users {
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
	kek := newKEK()
	// One server: R1.
	mk := func(id string) *testNode { return startNodeR(t, s.ClientURL(), kek, id, 1, 1) }
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

// TestExpiredLeaseNotServed: a node whose lease rounds stall (a paused
// process, or JetStream unreachable) stops serving the shard once a whole
// TTL has passed since its last renewal, before another node can take
// it: reads and writes are ErrNoOwner, and Owned leaves the shard out.
func TestExpiredLeaseNotServed(t *testing.T) {
	ctx := context.Background()
	s := natstest.Server(t, "")
	a := startNodeR(t, s.ClientURL(), newKEK(), "a", 1, 1)
	waitFor(t, "a serving", 10*time.Second, func() bool { return len(a.n.Owned()) == 1 })
	add := func(e *memor.Engine) error { _, err := e.Add(ctx, "u", "I live in Paris.", memor.Sync()); return err }
	if err := a.n.Write(ctx, "u", add); err != nil {
		t.Fatal(err)
	}
	a.n.cancel() // the rounds stall; the node still holds the shard
	a.n.wg.Wait()
	time.Sleep(a.n.cfg.LeaseTTL + 100*time.Millisecond)
	if err := a.n.Route(ctx, "u"); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("Route after the lease ran out: %v; want ErrNoOwner", err)
	}
	if err := a.n.Write(ctx, "u", add); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("Write after the lease ran out: %v; want ErrNoOwner", err)
	}
	if err := a.n.Read(ctx, "u", func(*memor.Engine) error { return nil }); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("Read after the lease ran out: %v; want ErrNoOwner", err)
	}
	if got := a.n.Owned(); len(got) != 0 {
		t.Fatalf("Owned after the lease ran out: %v; want none", got)
	}
}
