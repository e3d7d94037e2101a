package jslog

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

func newKEK(t *testing.T) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func openLog(t *testing.T, js jetstream.JetStream, kek []byte) *Log {
	t.Helper()
	l, err := Open(context.Background(), js, Config{KEK: kek})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// corpus is the repository's realistic-text corpus (long turns, a 60 KB
// document, code, emoji, CJK, RTL, control bytes), one record per file.
func corpus(t *testing.T) [][]byte {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/texts/*")
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) < 10 {
		t.Fatalf("%d texts under testdata/texts", len(out))
	}
	return out
}

func readAll(t *testing.T, l *Log, user string, after uint64) []Entry {
	t.Helper()
	var out []Entry
	for e, err := range l.Read(context.Background(), user, after) {
		if err != nil {
			t.Fatalf("read %q: %v", user, err)
		}
		out = append(out, e)
	}
	return out
}

func appendAll(t *testing.T, l *Log, user string, records [][]byte) []Entry {
	t.Helper()
	var last uint64
	var out []Entry
	for i, r := range records {
		e, err := l.Append(context.Background(), user, uint64(i+1), r, last)
		if err != nil {
			t.Fatalf("append %q #%d: %v", user, i+1, err)
		}
		last = e.StreamSeq
		out = append(out, e)
	}
	return out
}

// User IDs are arbitrary bytes: ones that would be subject wildcards or
// separators get subjects of their own and see only their own entries.
func TestUsersAreIsolatedWhateverTheirIDs(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	users := []string{"alice", "a.b", "a.*", "a.>", ">", "*", "a b", "ünï cødé 用户", "\x00\xff", strings.Repeat("x", 200)}
	recs := corpus(t)
	want := map[string][][]byte{}
	for i, u := range users {
		rs := recs[i%len(recs):][:min(5, len(recs)-i%len(recs))]
		want[u] = rs
		appendAll(t, l, u, rs)
	}
	subjects := map[string]string{}
	for _, u := range users {
		s := l.Subject(u)
		if strings.ContainsAny(strings.TrimPrefix(s, DefaultSubjectPrefix+"."), ".*> \x00") {
			t.Errorf("subject %q of %q holds a token character", s, u)
		}
		if other, ok := subjects[s]; ok {
			t.Errorf("%q and %q share subject %q", u, other, s)
		}
		subjects[s] = u
		got := readAll(t, l, u, 0)
		if len(got) != len(want[u]) {
			t.Fatalf("%q: %d entries, want %d", u, len(got), len(want[u]))
		}
		for i, e := range got {
			if !bytes.Equal(e.Record, want[u][i]) || e.Seq != uint64(i+1) {
				t.Errorf("%q entry %d: seq %d, record %.40q", u, i, e.Seq, e.Record)
			}
		}
	}
	if _, err := l.Append(context.Background(), "", 1, []byte("x"), 0); !errors.Is(err, ErrInvalidUser) {
		t.Errorf("empty user: %v", err)
	}
}

// The log holds ciphertext: no record's bytes appear in the stream.
func TestRecordsAreEncrypted(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	rec := []byte("I live in San Francisco and my passport number is X1234567.")
	e := appendAll(t, l, "alice", [][]byte{rec})[0]
	raw, err := l.stream.GetMsg(context.Background(), e.StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw.Data, []byte("San Francisco")) || bytes.Contains(raw.Data, []byte("X1234567")) {
		t.Fatal("plain text in the stream")
	}
	// Tampering, or moving a ciphertext to another position, fails to open.
	if _, err := open(mustKey(t, l, "alice"), Token("alice"), e.StreamSeq, "2", raw.Data, raw.Time); !errors.Is(err, ErrCorrupt) {
		t.Errorf("moved to seq 2: %v", err)
	}
	bad := bytes.Clone(raw.Data)
	bad[len(bad)-1] ^= 1
	if _, err := open(mustKey(t, l, "alice"), Token("alice"), e.StreamSeq, "1", bad, raw.Time); !errors.Is(err, ErrCorrupt) {
		t.Errorf("flipped bit: %v", err)
	}
	if _, err := open(mustKey(t, l, "alice"), Token("bob"), e.StreamSeq, "1", raw.Data, raw.Time); !errors.Is(err, ErrCorrupt) {
		t.Errorf("moved to another user: %v", err)
	}
}

func mustKey(t *testing.T, l *Log, user string) []byte {
	t.Helper()
	k, err := l.dataKey(context.Background(), user, false)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A retried append (the acknowledgement was lost) is stored once; a
// different record appended from the same stale position is a conflict:
// two writers of one user cannot interleave.
func TestRetryIsIdempotentAndSecondWriterConflicts(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	ctx := context.Background()
	first := appendAll(t, l, "alice", [][]byte{[]byte("one")})[0]
	a, err := l.Append(ctx, "alice", 2, []byte("two"), first.StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Append(ctx, "alice", 2, []byte("two"), first.StreamSeq)
	if err != nil || again.StreamSeq != a.StreamSeq {
		t.Fatalf("retry: %+v %v, first stored at %d", again, err, a.StreamSeq)
	}
	if _, err := l.Append(ctx, "alice", 2, []byte("another two"), first.StreamSeq); !errors.Is(err, ErrConflict) {
		t.Fatalf("second writer from a stale position: %v", err)
	}
	if _, err := l.Append(ctx, "alice", 3, []byte("three"), 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("a writer that knows of nothing: %v", err)
	}
	got := readAll(t, l, "alice", 0)
	if len(got) != 2 || string(got[1].Record) != "two" {
		t.Fatalf("log %+v", got)
	}
	// Another user's appends do not move alice's expected sequence.
	appendAll(t, l, "bob", [][]byte{[]byte("b1")})
	if _, err := l.Append(ctx, "alice", 3, []byte("three"), a.StreamSeq); err != nil {
		t.Fatalf("after bob's append: %v", err)
	}
}

// Outside the duplicate window, a retry meets its own append as the
// user's last entry and is still acknowledged.
func TestRetryAfterTheDuplicateWindow(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l, err := Open(context.Background(), js, Config{KEK: newKEK(t), Duplicates: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := appendAll(t, l, "alice", [][]byte{[]byte("one")})[0]
	time.Sleep(300 * time.Millisecond)
	again, err := l.Append(context.Background(), "alice", 1, []byte("one"), 0)
	if err != nil || again.StreamSeq != e.StreamSeq {
		t.Fatalf("late retry: %+v %v", again, err)
	}
	if n := len(readAll(t, l, "alice", 0)); n != 1 {
		t.Fatalf("%d entries", n)
	}
}

// Two writers race on one user: exactly one append per position wins and
// the log is a gap-free sequence.
func TestConcurrentWritersNeverInterleave(t *testing.T) {
	srv := natstest.Server(t, "")
	kek := newKEK(t)
	logs := []*Log{openLog(t, natstest.Connect(t, srv.ClientURL()), kek), openLog(t, natstest.Connect(t, srv.ClientURL()), kek)}
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[uint64]string{}
	for w, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				last, _, err := l.Last(ctx, "alice")
				if err != nil && !errors.Is(err, ErrForgotten) {
					t.Error(err)
					return
				}
				rec := fmt.Sprintf("writer %d after %d", w, last.Seq)
				e, err := l.Append(ctx, "alice", last.Seq+1, []byte(rec), last.StreamSeq)
				if errors.Is(err, ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, ok := wins[e.Seq]; ok {
					t.Errorf("seq %d won twice: %q and %q", e.Seq, prev, rec)
				}
				wins[e.Seq] = rec
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got := readAll(t, logs[0], "alice", 0)
	for i, e := range got {
		if e.Seq != uint64(i+1) || wins[e.Seq] != string(e.Record) {
			t.Fatalf("entry %d: seq %d %q, acknowledged %q", i, e.Seq, e.Record, wins[e.Seq])
		}
	}
	if len(got) != len(wins) || len(got) < 40 {
		t.Fatalf("%d entries, %d acknowledged", len(got), len(wins))
	}
}

// Read from a stream sequence returns the tail only.
func TestReadFrom(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	var recs [][]byte
	for i := range 600 { // more than one fetch batch
		recs = append(recs, fmt.Appendf(nil, "episode %d", i+1))
	}
	es := appendAll(t, l, "alice", recs)
	tail := readAll(t, l, "alice", es[449].StreamSeq)
	if len(tail) != 150 || tail[0].Seq != 451 || tail[149].Seq != 600 {
		t.Fatalf("tail: %d entries from %d", len(tail), tail[0].Seq)
	}
	if n := len(readAll(t, l, "alice", es[599].StreamSeq)); n != 0 {
		t.Fatalf("after the last: %d", n)
	}
	if n := len(readAll(t, l, "nobody", 0)); n != 0 {
		t.Fatalf("unknown user: %d", n)
	}
	// Breaking out early is fine.
	for range l.Read(context.Background(), "alice", 0) {
		break
	}
}

// Forget purges the subject and destroys the key: nothing reads back, an
// old copy of a ciphertext opens for no one, and the user starts afresh.
func TestForget(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	ctx := context.Background()
	es := appendAll(t, l, "alice", [][]byte{[]byte("secret one"), []byte("secret two")})
	appendAll(t, l, "bob", [][]byte{[]byte("bob's")})
	copyOf, err := l.stream.GetMsg(ctx, es[0].StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := l.keys.Get(ctx, Token("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Forget(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, l, "alice", 0)); n != 0 {
		t.Fatalf("%d entries after Forget", n)
	}
	if _, ok, err := l.Last(ctx, "alice"); ok || err != nil {
		t.Fatalf("Last after Forget: %v %v", ok, err)
	}
	if _, err := l.dataKey(ctx, "alice", false); !errors.Is(err, ErrForgotten) {
		t.Fatalf("data key after Forget: %v", err)
	}
	if got := readAll(t, l, "bob", 0); len(got) != 1 {
		t.Fatalf("bob lost his log: %d", len(got))
	}
	if err := l.Forget(ctx, "alice"); err != nil {
		t.Fatalf("Forget again: %v", err)
	}
	// A new alice has a new key: the old ciphertext does not open with it.
	appendAll(t, l, "alice", [][]byte{[]byte("new")})
	if _, err := open(mustKey(t, l, "alice"), Token("alice"), copyOf.Sequence, "1", copyOf.Data, copyOf.Time); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("old ciphertext under the new key: %v", err)
	}
	// Whoever kept the wrapped old key can open it only with the KEK;
	// after rotation and the old KEK's destruction, not at all.
	nl, err := l.RotateKEK(ctx, newKEK(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nl.unwrap(Token("alice"), wrapped.Value()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("an erased user's wrapped key under the new KEK: %v", err)
	}
}

// RotateKEK re-wraps every key: the new log reads everything, the old KEK
// opens nothing, and a second run is a no-op.
func TestRotateKEK(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	old := newKEK(t)
	l := openLog(t, js, old)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "carol"} {
		appendAll(t, l, u, [][]byte{[]byte(u + " 1"), []byte(u + " 2")})
	}
	next := newKEK(t)
	nl, err := l.RotateKEK(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nl.RotateKEK(ctx, next); err != nil {
		t.Fatalf("rotating again: %v", err)
	}
	fresh := openLog(t, js, next)
	for _, u := range []string{"alice", "bob", "carol"} {
		if got := readAll(t, fresh, u, 0); len(got) != 2 || string(got[1].Record) != u+" 2" {
			t.Fatalf("%s after rotation: %+v", u, got)
		}
		if _, err := l.dataKey(ctx, u, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s's key under the old KEK: %v", u, err)
		}
	}
	if _, err := Open(ctx, js, Config{KEK: []byte("short")}); !errors.Is(err, ErrConfig) {
		t.Errorf("short KEK: %v", err)
	}
}

// The same records come back from a restarted server: the log is durable
// on JetStream's file store.
func TestSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := natstest.Server(t, dir)
	kek := newKEK(t)
	recs := corpus(t)[:10]
	l := openLog(t, natstest.Connect(t, s.ClientURL()), kek)
	appendAll(t, l, "alice", recs)
	s.Shutdown()
	s.WaitForShutdown()
	s2 := natstest.Server(t, dir)
	got := readAll(t, openLog(t, natstest.Connect(t, s2.ClientURL()), kek), "alice", 0)
	if len(got) != len(recs) {
		t.Fatalf("%d entries after restart, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !slices.Equal(got[i].Record, recs[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
}

// On a three-server cluster with an R3 stream, killing any one server
// loses no acknowledged append and the log goes on.
func TestR3ClusterSurvivesAServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server cluster: not in -short")
	}
	servers := natstest.Cluster(t, 3)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	js := natstest.Connect(t, strings.Join(urls, ","))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var l *Log
	var err error
	kek := newKEK(t)
	for { // the meta leader is elected a moment after the mesh forms
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		l, err = Open(attempt, js, Config{KEK: kek, Replicas: 3})
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	acked := map[string][]string{}
	last := map[string]Entry{}
	write := func(n int) {
		for i := range n {
			u := fmt.Sprintf("user-%d", i%5)
			rec := fmt.Sprintf("%s episode %d", u, last[u].Seq+1)
			for {
				attempt, stop := context.WithTimeout(ctx, 2*time.Second)
				e, err := l.Append(attempt, u, last[u].Seq+1, []byte(rec), last[u].StreamSeq)
				stop()
				if err == nil {
					last[u] = e
					acked[u] = append(acked[u], rec)
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("append: %v", err)
				}
				// During a leader change appends fail or time out: retry
				// the same append, as a client would.
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	write(50)
	// Kill the stream's leader: the hardest one to lose.
	info, err := l.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
		}
	}
	write(50)
	for u, want := range acked {
		var got []string
		for { // a read, like an append, may meet the leader change: retry it
			got = got[:0]
			var err error
			attempt, stop := context.WithTimeout(ctx, 5*time.Second)
			for e, rerr := range l.Read(attempt, u, 0) {
				if err = rerr; err != nil {
					break
				}
				got = append(got, string(e.Record))
			}
			stop()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("read %s: %v", u, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: read %d entries, acknowledged %d:\n%q\n%q", u, len(got), len(want), got, want)
		}
	}
}

func TestUsersAndSize(t *testing.T) {
	ctx := context.Background()
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	l := openLog(t, js, newKEK(t))
	want := []string{"alice", "bob.*>", "", "\x00\xff"}[:2]
	want = append(want, "\x00\xffé")
	for _, u := range want {
		appendAll(t, l, u, [][]byte{[]byte("a"), []byte("b")})
	}
	counts, err := l.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for u, n := range counts {
		if n != 2 {
			t.Fatalf("user %q has %d entries; want 2", u, n)
		}
		got = append(got, u)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Users = %q; want %q", got, want)
	}
	sz, err := l.Size(ctx)
	if err != nil || sz.Msgs != 6 || sz.LastSeq != 6 || sz.Bytes == 0 {
		t.Fatalf("Size = %+v, %v; want 6 messages", sz, err)
	}
	if err := l.Forget(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Users(ctx); got["alice"] != 0 || len(got) != 2 {
		t.Fatalf("Users after Forget = %v", got)
	}
}
