package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/nats-io/nats.go/jetstream"
)

func marker() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "Zq" + hex.EncodeToString(b) + "mark"
}

// natsDirs scans every NATS server's store for marker.
func (r *rig) natsHits(t *testing.T, marker []byte) []string {
	t.Helper()
	var hits []string
	for _, s := range r.servers {
		hits = append(hits, scanFor(t, s.StoreDir(), marker)...)
	}
	return hits
}

// holds reports whether e still has anything of user.
func holds(t *testing.T, e *memor.Engine, user string) bool {
	t.Helper()
	ctx := context.Background()
	us, err := e.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(us, user)
}

// snapshotTokens lists the users' tokens in shard s's snapshot.
func snapshotTokens(t *testing.T, r *rig, s int) []string {
	t.Helper()
	ctx := context.Background()
	obs, err := natstest.Connect(t, r.urls).ObjectStore(ctx, DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	// A read that meets the owner replacing the object (its old chunks
	// purged under the read) times out: read it again.
	var b []byte
	for try := 0; ; try++ {
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		b, err = obs.GetBytes(attempt, snapshotName(s))
		stop()
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil
		}
		if err == nil {
			break
		}
		if try == 5 {
			t.Fatal(err)
		}
	}
	sn, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range sn.parts {
		out = append(out, p.token)
	}
	return out
}

// TestForgetDuringReplay: on a 3-server R3 cluster, node a writes many
// users, one of them with a marker in every episode, snapshots its shards
// and dies. Node b takes the shards over: it restores the victim from the
// snapshot and copies the victim's tail, and right then the victim is
// forgotten through another engine of the cluster. Afterwards no node
// holds the victim (b evicts it at its next lease round; a, restarted on
// its old store, evicts its stale copy when it joins), the log has none
// of it, b rewrites the shard's snapshot without it, the marker is in no
// NATS server's files and in no memor store once closed, and every other
// user equals a single-node store fed the same episodes.
func TestForgetDuringReplay(t *testing.T) {
	ctx := context.Background()
	const shards = 2
	users := userNames(8)
	victim := "victim"
	mark := marker()
	r := newRig(t, 3)
	aDir := t.TempDir()
	a := r.node(aDir, Config{Node: "a", Shards: shards, SnapshotEvery: 4})
	waitFor(t, "a serving", 20*time.Second, func() bool { return covered(shards, a) })
	acked := map[string][]string{}
	writeRounds(t, a, users, 0, 3, acked)
	for i := range 3 {
		text := "I live in " + mark + ". Visit " + string(rune('A'+i)) + "."
		if err := a.n.Write(ctx, victim, func(e *memor.Engine) error { _, err := e.Add(ctx, victim, text); return err }); err != nil {
			t.Fatal(err)
		}
	}
	vs := a.n.Shard(victim)
	waitFor(t, "the victim in its shard's snapshot", 20*time.Second, func() bool {
		return slices.Contains(snapshotTokens(t, r, vs), jslog.Token(victim))
	})
	snapshotted(t, a, shards)
	if hits := scanFor(t, aDir, []byte(mark)); len(hits) == 0 {
		t.Fatal("the marker is not in a's store: the scan proves nothing")
	}
	if hits := r.natsHits(t, []byte(mark)); len(hits) > 0 {
		t.Fatalf("the marker is in NATS files before any Forget (snapshots and log are sealed): %v", hits)
	}
	a.kill()

	// Another engine of the cluster (one that owns nothing) forgets.
	js := natstest.Connect(t, r.urls)
	// Right after a node dies the servers' JetStream API can time out a
	// first stream lookup, as it does for a joining node.
	jl := openLogRetrying(t, js, r.kek, r.replicas)
	other, err := memor.Open(t.TempDir(), memor.Options{Log: NewLog(jl)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var once sync.Once
	forgot := make(chan error, 1)
	bDir := t.TempDir()
	b := r.node(bDir, Config{Node: "b", Shards: shards, SnapshotEvery: 4, hooks: &hooks{caughtUp: func(s int, u string) {
		if u == victim {
			once.Do(func() { forgot <- other.Forget(ctx, victim) })
		}
	}}})
	waitFor(t, "b taking every shard", 30*time.Second, func() bool { return covered(shards, b) })
	if err := <-forgot; err != nil {
		t.Fatal(err)
	}
	var restored bool
	for _, tk := range b.n.Takeovers() {
		restored = restored || tk.Shard == vs && tk.RestoredUsers > 0
	}
	if !restored {
		t.Fatal("b did not restore the victim's shard from its snapshot: the scenario did not happen")
	}
	waitFor(t, "b evicting the victim", 20*time.Second, func() bool { return !holds(t, b.e, victim) })
	if st, err := b.e.State(ctx, victim); err != nil || len(st) != 0 {
		t.Fatalf("b's state of the victim: %v, %v", st, err)
	}
	if eps, err := b.e.Episodes(ctx, victim); err != nil || len(eps) != 0 {
		t.Fatalf("b's episodes of the victim: %d, %v", len(eps), err)
	}
	counts, err := jl.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := counts[victim]; ok {
		t.Fatal("the log still has the victim")
	}
	waitFor(t, "the snapshot rewritten without the victim", 20*time.Second, func() bool {
		return !slices.Contains(snapshotTokens(t, r, vs), jslog.Token(victim))
	})
	if raw := rawSnapshotBytes(t, js); bytes.Contains(raw, []byte(mark)) {
		t.Fatal("the snapshot stream holds the marker")
	}
	if hits := r.natsHits(t, []byte(mark)); len(hits) > 0 {
		t.Fatalf("the marker is in NATS files after Forget: %v", hits)
	}
	sameAsReference(t, b, acked, users)

	// a comes back on its old store, which still holds the victim (and
	// shards b owns now): joining, it evicts what it must not hold.
	a2 := r.node(aDir, Config{Node: "a", Shards: shards, SnapshotEvery: -1})
	waitFor(t, "a evicting its stale copy", 20*time.Second, func() bool { return !holds(t, a2.e, victim) })
	waitFor(t, "a and b sharing the shards", 30*time.Second, func() bool {
		return len(a2.n.Owned()) == 1 && len(b.n.Owned()) == 1
	})
	sameAsReference(t, a2, acked, ownedUsers(a2, users))
	sameAsReference(t, b, acked, ownedUsers(b, users))
	a2.kill()
	b.kill()
	for _, dir := range []string{aDir, bDir} {
		if hits := scanFor(t, dir, []byte(mark)); len(hits) > 0 {
			t.Fatalf("the marker is in a closed memor store after Forget: %v", hits)
		}
	}
}

func ownedUsers(tn *testNode, users []string) []string {
	var out []string
	for _, u := range users {
		if slices.Contains(tn.n.Owned(), tn.n.Shard(u)) {
			out = append(out, u)
		}
	}
	return out
}

// TestForgetThroughNonOwner: a Forget on the node that does not own the
// user erases the log; the owner evicts its copy at its next lease round
// and rewrites the shard's snapshot without the user.
func TestForgetThroughNonOwner(t *testing.T) {
	ctx := context.Background()
	const shards = 2
	r := newRig(t, 1)
	a := r.node("", Config{Node: "a", Shards: shards, SnapshotEvery: 2})
	b := r.node("", Config{Node: "b", Shards: shards, SnapshotEvery: 2})
	waitFor(t, "a and b sharing the shards", 20*time.Second, func() bool {
		return len(a.n.Owned()) == 1 && len(b.n.Owned()) == 1
	})
	victim := "victim"
	owner, other := a, b
	if b.n.Route(ctx, victim) == nil {
		owner, other = b, a
	}
	mark := marker()
	for i := range 3 {
		text := "I live in " + mark + ". Visit " + string(rune('A'+i)) + "."
		if err := owner.n.Write(ctx, victim, func(e *memor.Engine) error { _, err := e.Add(ctx, victim, text); return err }); err != nil {
			t.Fatal(err)
		}
	}
	vs := owner.n.Shard(victim)
	waitFor(t, "the victim in its shard's snapshot", 20*time.Second, func() bool {
		return slices.Contains(snapshotTokens(t, r, vs), jslog.Token(victim))
	})
	if err := other.n.Forget(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the owner evicting the victim", 20*time.Second, func() bool { return !holds(t, owner.e, victim) })
	waitFor(t, "the snapshot rewritten without the victim", 20*time.Second, func() bool {
		return !slices.Contains(snapshotTokens(t, r, vs), jslog.Token(victim))
	})
	if hits := r.natsHits(t, []byte(mark)); len(hits) > 0 {
		t.Fatalf("the marker is in NATS files after Forget: %v", hits)
	}
	// The user can start again: a new first episode, a new data key.
	if err := owner.n.Write(ctx, victim, func(e *memor.Engine) error { _, err := e.Add(ctx, victim, "I live in Oslo."); return err }); err != nil {
		t.Fatal(err)
	}
	if eps, err := owner.e.Episodes(ctx, victim); err != nil || len(eps) != 1 {
		t.Fatalf("after Forget and a new write: %d episodes, %v", len(eps), err)
	}
}
