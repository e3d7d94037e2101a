package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/internal/enginetest"
)

// TestNATSServerKilledAndRestarted: writes spread over many users on a
// 3-server R3 cluster and two memor nodes; one NATS server (the stream's
// leader, or a follower) is killed while writes go on and restarted from
// its store. Writes that fail meanwhile are retried as a client would;
// every acknowledged episode is in the log and in its owner's store,
// exactly once, and each user's memory equals a single-node store fed the
// same episodes.
func TestNATSServerKilledAndRestarted(t *testing.T) {
	for _, victim := range []string{"leader", "follower"} {
		t.Run(victim, func(t *testing.T) { natsServerKilled(t, victim == "leader") })
	}
}

func natsServerKilled(t *testing.T, leader bool) {
	users, rounds := userNames(16), 6
	if *long {
		users, rounds = userNames(120), 20
	}
	const shards = 4
	rc := natstest.RestartableCluster(t, 3)
	kek := newKEK()
	c := &client{nodes: map[string]*testNode{}, r: mrand.New(mrand.NewPCG(3, 4))}
	var all []*testNode
	for i := range 2 {
		tn := startNode(t, rc.URLs(), kek, fmt.Sprintf("m%d", i+1), shards)
		c.nodes[tn.n.ID()] = tn
		all = append(all, tn)
	}
	waitFor(t, "every shard served", 30*time.Second, func() bool { return covered(shards, all...) })

	w := newAckedWriter(c)
	restarted := make(chan struct{})
	for round := range rounds {
		if round == rounds/3 {
			victim := -1
			for i, s := range rc.Servers {
				if s.JetStreamIsStreamLeader("$G", jslog.DefaultStream) == leader {
					victim = i
					break
				}
			}
			t.Logf("killing %s", rc.Servers[victim].Name())
			rc.Kill(victim)
			go func(i int) { // the supervisor restarts it from its store
				defer close(restarted)
				time.Sleep(1500 * time.Millisecond)
				rc.Start(i)
			}(victim)
		}
		w.round(t, users, round)
	}
	<-restarted
	acked := w.acked
	if t.Failed() {
		t.FailNow()
	}
	waitFor(t, "every shard served", 30*time.Second, func() bool { return covered(shards, all...) })
	ref, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, u := range users {
		// The log holds exactly the acknowledged episodes.
		logged := readLog(t, all[0].l.JS(), u)
		if len(logged) != len(acked[u]) {
			t.Fatalf("%s: the log holds %d episodes, %d were acknowledged", u, len(logged), len(acked[u]))
		}
		readServed(t, u, len(logged), all, func(e *memor.Engine) {
			episodesOnce(t, e, u, acked[u])
			sameAsImported(t, e, ref, u)
		})
	}
}

// readServed runs fn on a node of nodes that serves user and has applied
// its episodes up to want, holding the user's shard there meanwhile
// (Node.Read), so that a hand-over of the shard (the nodes rebalancing)
// cannot evict the user under fn. It waits while the shard moves.
func readServed(t *testing.T, user string, want int, nodes []*testNode, fn func(e *memor.Engine)) {
	t.Helper()
	errNotYet := errors.New("not caught up")
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, tn := range nodes {
			attempt, stop := context.WithTimeout(context.Background(), 5*time.Second)
			err := tn.n.Read(attempt, user, func(e *memor.Engine) error {
				f, err := e.Freshness(attempt, user)
				if err != nil || f.Latest != uint64(want) || f.Pending != 0 {
					return errNotYet
				}
				fn(e)
				return nil
			})
			stop()
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for a node serving %d episodes of %s", want, user)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// episodesOnce reads user's episodes on e, fails the test on one that is
// in none of written or is there twice, and returns the texts seen.
func episodesOnce(t *testing.T, e *memor.Engine, user string, written ...[]string) map[string]bool {
	t.Helper()
	eps, err := e.Episodes(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ep := range eps {
		if seen[ep.Text] || !slices.ContainsFunc(written, func(ts []string) bool { return slices.Contains(ts, ep.Text) }) {
			t.Fatalf("%s episode %d %q: not written, or twice", user, ep.Seq, ep.Text)
		}
		seen[ep.Text] = true
	}
	return seen
}

// sameAsImported imports user's export from e into ref and compares the
// two memories.
func sameAsImported(t *testing.T, e, ref *memor.Engine, user string) {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	if _, err := e.Export(ctx, &buf, user); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Import(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, e, ref, user)
}

// TestLostAckRetriedOnce: the connection to JetStream is cut right after
// an append is published, so its acknowledgement never arrives; the
// write retried (by the log under Add, or by the client after an error)
// leaves exactly one episode in the log and in the store.
func TestLostAckRetriedOnce(t *testing.T) {
	ctx := context.Background()
	s := natstest.Server(t, "")
	p := natstest.NewProxy(t, s.Addr().String())
	tn := startNodeR(t, "nats://"+p.Addr(), newKEK(), "m1", 1, 1)
	waitFor(t, "m1 serving", 10*time.Second, func() bool { return len(tn.n.Owned()) == 1 })
	c := &client{nodes: map[string]*testNode{"m1": tn}, r: mrand.New(mrand.NewPCG(5, 6))}
	add := func(text string) {
		t.Helper()
		if err := c.write(ctx, "u", func(e *memor.Engine) error {
			_, err := e.Add(ctx, "u", text, memor.Sync())
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	add("I live in Paris.")
	p.CutAfter([]byte("PUB " + tn.l.JS().Subject("u")))
	add("I moved to Lyon.")
	if p.Cuts() != 1 {
		t.Fatalf("the connection was cut %d times; want once", p.Cuts())
	}
	add("I work at the hospital.")
	if n := len(readLog(t, tn.l.JS(), "u")); n != 3 {
		t.Fatalf("the log holds %d episodes; want 3 (one per write)", n)
	}
	// A served read: through the node, which holds the shard meanwhile.
	var got []string
	if err := tn.n.Read(ctx, "u", func(e *memor.Engine) error {
		eps, err := e.Episodes(ctx, "u")
		for _, ep := range eps {
			got = append(got, ep.Text)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != "I moved to Lyon." {
		t.Fatalf("the store holds %q; want each write once", got)
	}
	// The write held up by the lost acknowledgement (its append retried
	// for seconds, holding the user) must not have kept the lease from
	// being renewed: the shard was taken once, never lost and taken again.
	if tks := tn.n.Takeovers(); len(tks) != 1 {
		t.Fatalf("the shard was taken %d times; want once (a lease lost during the retried append)", len(tks))
	}
}

// readLog reads user's entries, retrying while the stream meets a leader
// change (a read, like an append, may fail then).
func readLog(t *testing.T, jl *jslog.Log, user string) []jslog.Entry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []jslog.Entry
		var err error
		attempt, stop := context.WithTimeout(context.Background(), 5*time.Second)
		for e, rerr := range jl.Read(attempt, user, 0) {
			if err = rerr; err != nil {
				break
			}
			got = append(got, e)
		}
		stop()
		if err == nil {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %s: %v", user, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPartitionedServer: one of three NATS servers is cut off from the
// other two (its route connections severed through proxies). A memor
// node connected only to it stops acknowledging writes (a typed error)
// and its leases lapse; the node on the majority takes its shards and
// goes on. After healing both nodes serve again, every acknowledged
// episode is in the log once, and every user equals a single-node
// reference.
func TestPartitionedServer(t *testing.T) {
	ctx := context.Background()
	users := userNames(12)
	if *long {
		users = userNames(80)
	}
	const shards = 4
	pc := natstest.PartitionableCluster(t, 3)
	kek := newKEK()
	minority := startNode(t, pc.Servers[2].ClientURL(), kek, "m1", shards)
	majority := startNode(t, pc.Servers[0].ClientURL()+","+pc.Servers[1].ClientURL(), kek, "m2", shards)
	c := &client{nodes: map[string]*testNode{"m1": minority, "m2": majority}, r: mrand.New(mrand.NewPCG(7, 8))}
	both := []*testNode{minority, majority}
	waitFor(t, "every shard served by both", 30*time.Second, func() bool {
		return covered(shards, both...) && len(minority.n.Owned()) > 0 && len(majority.n.Owned()) > 0
	})
	w := newAckedWriter(c)
	unknown := map[string][]string{}
	w.round(t, users, 0)
	pc.Isolate(2)
	// The minority node's own users: its appends get no quorum.
	var probe string
	for _, u := range users {
		if minority.n.Route(ctx, u) == nil {
			probe = u
			break
		}
	}
	if probe == "" {
		t.Fatal("the minority node serves no user")
	}
	attempt, stop := context.WithTimeout(ctx, 3*time.Second)
	_, err := minority.e.Add(attempt, probe, "I live in Minority.")
	stop()
	if !errors.Is(err, ErrLogUnavailable) {
		t.Fatalf("an append on the minority side: %v; want ErrLogUnavailable", err)
	}
	unknown[probe] = append(unknown[probe], "I live in Minority.")
	waitFor(t, "the majority node serving every shard", 30*time.Second, func() bool { return covered(shards, majority) })
	c.mu.Lock()
	minority.dead = true // clients reach only the majority's node
	c.mu.Unlock()
	w.round(t, users, 1)
	pc.Heal()
	waitFor(t, "both nodes serving again", 60*time.Second, func() bool {
		return covered(shards, both...) && len(minority.n.Owned()) > 0
	})
	c.mu.Lock()
	minority.dead = false
	c.mu.Unlock()
	w.round(t, users, 2)
	acked := w.acked
	if t.Failed() {
		t.FailNow()
	}
	ref, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, u := range users {
		logged := readLog(t, majority.l.JS(), u)
		readServed(t, u, len(logged), both, func(e *memor.Engine) {
			seen := episodesOnce(t, e, u, acked[u], unknown[u])
			for _, text := range acked[u] {
				if !seen[text] {
					t.Fatalf("%s: acknowledged %q is lost", u, text)
				}
			}
			sameAsImported(t, e, ref, u)
		})
	}
}
