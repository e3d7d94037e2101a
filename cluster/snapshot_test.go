package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/memor-db/memor/internal/enginetest"
	"github.com/memor-db/memor/internal/syncbuf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// rig is a set of NATS servers and the memor nodes of a test.
type rig struct {
	t        *testing.T
	servers  []*server.Server
	urls     string
	kek      []byte
	replicas int
}

func newRig(t *testing.T, servers int) *rig {
	r := &rig{t: t, kek: newKEK(), replicas: 1}
	if servers == 1 {
		r.servers = []*server.Server{natstest.Server(t, "")}
	} else {
		r.servers = natstest.Cluster(t, servers)
		r.replicas = 3
	}
	var urls []string
	for _, s := range r.servers {
		urls = append(urls, s.ClientURL())
	}
	r.urls = strings.Join(urls, ",")
	return r
}

// node starts a memor node on the store in dir ("" for a new one).
func (r *rig) node(dir string, cfg Config) *testNode {
	r.t.Helper()
	return joinNode(r.t, r.urls, r.kek, r.replicas, dir, cfg)
}

// kill stops tn as a crash does and closes its store.
func (tn *testNode) kill() {
	tn.n.Stop()
	tn.e.Close()
	tn.dead = true
}

// writeRounds writes rounds [from, to) of every user through tn, one
// episode a user a round, and records what was acknowledged.
func writeRounds(t *testing.T, tn *testNode, users []string, from, to int, acked map[string][]string) {
	t.Helper()
	ctx := context.Background()
	for round := from; round < to; round++ {
		for _, u := range users {
			text := fmt.Sprintf("I live in %s. Round %d.", cities[(round+len(u))%len(cities)], round)
			if round%3 == 2 {
				text = fmt.Sprintf("I play the %s. Round %d.", []string{"violin", "cello", "drums"}[round%len(u)%3], round)
			}
			if err := tn.n.Write(ctx, u, func(e *memor.Engine) error { _, err := e.Add(ctx, u, text); return err }); err != nil {
				t.Fatalf("write %s round %d: %v", u, round, err)
			}
			acked[u] = append(acked[u], text)
		}
	}
}

// sameAsReference waits until tn has applied every acknowledged episode
// of each user, checks they are the acknowledged ones in order, and
// compares the user's memory with a single-node store fed them.
func sameAsReference(t *testing.T, tn *testNode, acked map[string][]string, users []string) {
	t.Helper()
	ctx := context.Background()
	ref, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, u := range users {
		waitFor(t, "episodes of "+u, 20*time.Second, func() bool {
			f, err := tn.e.Freshness(ctx, u)
			return err == nil && f.Latest == uint64(len(acked[u])) && f.Pending == 0
		})
		eps, err := tn.e.Episodes(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for j, ep := range eps {
			if ep.Text != acked[u][j] {
				t.Fatalf("%s episode %d is %q, want %q", u, j+1, ep.Text, acked[u][j])
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

func userNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("user-%03d", i))
	}
	return out
}

// snapshotted waits until tn has snapshotted (or restored) every shard.
func snapshotted(t *testing.T, tn *testNode, shards int) {
	t.Helper()
	waitFor(t, "a snapshot of every shard", 30*time.Second, func() bool {
		tn.n.snapMu.Lock()
		defer tn.n.snapMu.Unlock()
		for s := range shards {
			if tn.n.snapMark[s] == 0 {
				return false
			}
		}
		return true
	})
}

func totalEpisodes(acked map[string][]string) int {
	n := 0
	for _, eps := range acked {
		n += len(eps)
	}
	return n
}

// TestSnapshotFailover: on a 3-server R3 cluster, a node writes many
// users and snapshots its shards every few episodes, writes a tail past
// the snapshots, and dies. The node that takes its shards restores the
// snapshots and replays only the tail (counted), and every user equals a
// single-node store fed the same episodes.
func TestSnapshotFailover(t *testing.T) {
	users, rounds := userNames(12), 6
	if *long {
		users, rounds = userNames(100), 12
	}
	const shards = 4
	r := newRig(t, 3)
	a := r.node("", Config{Node: "a", Shards: shards, SnapshotEvery: 8})
	waitFor(t, "a serving", 20*time.Second, func() bool { return covered(shards, a) })
	acked := map[string][]string{}
	writeRounds(t, a, users, 0, rounds-2, acked)
	snapshotted(t, a, shards)
	// a's loops stall (no more snapshots or renewals) while it still
	// serves writes: the last two rounds are the tail.
	a.n.cancel()
	a.n.wg.Wait()
	writeRounds(t, a, users, rounds-2, rounds, acked)
	a.kill()

	b := r.node("", Config{Node: "b", Shards: shards, SnapshotEvery: 8})
	waitFor(t, "b taking every shard", 30*time.Second, func() bool { return covered(shards, b) })
	var restored uint64
	replayed := 0
	for _, tk := range b.n.Takeovers() {
		restored += tk.RestoredEpisodes
		replayed += tk.Replayed
	}
	total := totalEpisodes(acked)
	t.Logf("%d episodes: %d restored from snapshots, %d replayed from the log", total, restored, replayed)
	if restored == 0 || replayed >= total || int(restored)+replayed != total {
		t.Fatalf("restored %d + replayed %d of %d: want a snapshot restore and a tail replay that add up", restored, replayed, total)
	}
	sameAsReference(t, b, acked, users)
}

// damage replaces, removes or corrupts the snapshots of shards 0–2.
func damage(t *testing.T, r *rig) {
	t.Helper()
	ctx := context.Background()
	js := natstest.Connect(t, r.urls)
	obs, err := js.ObjectStore(ctx, DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Shard 0: not a snapshot at all.
	if _, err := obs.PutBytes(ctx, snapshotName(0), []byte("memor-snapshot 1\n\xff\xff")); err != nil {
		t.Fatal(err)
	}
	// Shard 1: gone.
	if err := obs.Delete(ctx, snapshotName(1)); err != nil {
		t.Fatal(err)
	}
	// Shard 2: well framed, one user's part flipped in its ciphertext.
	b, err := obs.GetBytes(ctx, snapshotName(2))
	if err != nil {
		t.Fatal(err)
	}
	sn, err := decodeSnapshot(b)
	if err != nil || len(sn.parts) == 0 {
		t.Fatalf("shard 2's snapshot: %v, %d parts", err, len(sn.parts))
	}
	sn.parts[0].sealed[len(sn.parts[0].sealed)/2] ^= 0x40
	if _, err := obs.PutBytes(ctx, snapshotName(2), sn.encode()); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotDamagedFallsBack: a snapshot that does not parse, one that
// is missing and one whose user's part does not authenticate each fall
// back to replaying the log (with a warning), and the state is right.
func TestSnapshotDamagedFallsBack(t *testing.T) {
	users := userNames(16)
	const shards = 4
	r := newRig(t, 1)
	a := r.node("", Config{Node: "a", Shards: shards, SnapshotEvery: 4})
	waitFor(t, "a serving", 20*time.Second, func() bool { return covered(shards, a) })
	acked := map[string][]string{}
	writeRounds(t, a, users, 0, 4, acked)
	snapshotted(t, a, shards)
	a.kill()
	damage(t, r)

	var logs syncbuf.Buffer
	b := r.node("", Config{Node: "b", Shards: shards, SnapshotEvery: 4,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	waitFor(t, "b taking every shard", 30*time.Second, func() bool { return covered(shards, b) })
	for _, want := range []string{"level=WARN msg=\"cluster: snapshot damaged", "level=WARN msg=\"cluster: no snapshot of shard",
		"level=WARN msg=\"cluster: snapshot part does not open"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, logs.String())
		}
	}
	perShard := map[int]int{}
	for u, eps := range acked {
		perShard[b.n.Shard(u)] += len(eps)
	}
	for _, tk := range b.n.Takeovers() {
		switch tk.Shard {
		case 0, 1:
			if tk.RestoredUsers != 0 || tk.Replayed != perShard[tk.Shard] {
				t.Errorf("shard %d: %+v; want the whole log (%d) replayed", tk.Shard, tk, perShard[tk.Shard])
			}
		case 2, 3:
			if tk.RestoredUsers == 0 || int(tk.RestoredEpisodes)+tk.Replayed != perShard[tk.Shard] {
				t.Errorf("shard %d: %+v; want restored + replayed = %d", tk.Shard, tk, perShard[tk.Shard])
			}
		}
	}
	sameAsReference(t, b, acked, users)
}

// scanFor reports the files under dir holding marker.
func scanFor(t *testing.T, dir string, marker []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while walking
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, marker) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// rawSnapshotBytes concatenates every message the snapshot bucket's
// stream stores (chunks and metadata).
func rawSnapshotBytes(t *testing.T, js jetstream.JetStream) []byte {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, "OBJ_"+DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m.Data...)
	}
	return all
}

// TestSnapshotFormat: a snapshot round-trips, and one written by a store
// of another format, truncated, or with trailing bytes is ErrBadSnapshot.
func TestSnapshotFormat(t *testing.T) {
	sn := &snapshot{shard: 3, shards: 8, parts: []snapshotPart{{token: "abc", seq: 7, stream: 42, sealed: []byte("sealed")}}}
	b := sn.encode()
	got, err := decodeSnapshot(b)
	if err != nil || got.shard != 3 || got.shards != 8 || len(got.parts) != 1 || got.parts[0].token != "abc" ||
		got.parts[0].seq != 7 || got.parts[0].stream != 42 || string(got.parts[0].sealed) != "sealed" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	other := append([]byte(snapshotMagic), 0x7f) // format 127
	other = append(other, b[len(snapshotMagic)+1:]...)
	for name, bad := range map[string][]byte{"other format": other, "truncated": b[:len(b)-2], "trailing": append(slices.Clone(b), 0)} {
		if _, err := decodeSnapshot(bad); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v, want ErrBadSnapshot", name, err)
		}
	}
}
