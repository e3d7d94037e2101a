package memor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// seqDay is day d of 2026.
func seqDay(d int) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d) }

// seqStore opens an engine whose user "u" has a history of lives_in (One)
// and of likes (Many, so the object sits before the valid time in the
// key) in several contexts, with CJK, emoji and RTL names, superseded
// versions in the history keyspace and pruned ones in the archive, and
// text episodes from the corpus.
func seqStore(t *testing.T) *Engine {
	t.Helper()
	ctx := context.Background()
	// The clock advances a minute a read, so that versions expire at
	// distinct instants Prune can archive.
	var tick atomic.Int64
	clock := func() time.Time { return seqDay(100).Add(time.Duration(tick.Add(1)) * time.Minute) }
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	contexts := []string{"", "work", "東京", "🎸 band", "עבודה", "a\x00b"}
	cities := []string{"Paris", "東京", "Tel Aviv 🌴", "Zürich", "Boston"}
	for i := range 40 {
		in := []FactInput{
			{Subject: "user", Predicate: "lives_in", Object: cities[i%len(cities)], Context: contexts[i%len(contexts)], ValidFrom: seqDay(i)},
			{Subject: "user", Predicate: "likes", Object: cities[(i*3)%len(cities)], Context: contexts[(i*5)%len(contexts)], ValidFrom: seqDay(i)},
		}
		if _, err := e.AssertBatch(ctx, "u", in); err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			if _, err := e.Prune(ctx, seqDay(1000)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"cjk-zh.txt", "chat-long-turn.txt", "code-go.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "texts", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Add(ctx, "u", string(b), Sync()); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// historyOracle is History as it was before the iterators: every version
// of the three keyspaces, then one stable sort.
func historyOracle(t *testing.T, e *Engine, user, subject, predicate string) []Fact {
	t.Helper()
	prefix := kv.AppendString(kv.AppendString(nil, norm.Key(subject)), e.preds.canonical(predicate))
	var out []Fact
	for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		err := e.db.Scan(context.Background(), userKey(user, sub, prefix), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			out = append(out, f)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sortFacts(out)
	return out
}

func TestSeqEqualsSlices(t *testing.T) {
	ctx := context.Background()
	e := seqStore(t)
	for _, pred := range []string{"lives_in", "likes", "unknown"} {
		want := historyOracle(t, e, "u", "user", pred)
		got, err := e.History(ctx, "u", "user", pred)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("History(%s): %d versions, want %d (or in another order)", pred, len(got), len(want))
		}
		if pred != "unknown" && len(want) < 20 {
			t.Fatalf("History(%s): %d versions: the store is too small to test", pred, len(want))
		}
	}
	var archived int
	_ = e.db.Scan(ctx, kv.UserKey("u", kv.SubArchive), func(_, _ []byte) error { archived++; return nil })
	if archived == 0 {
		t.Fatal("no archived version: the merge of three keyspaces is not tested")
	}

	wantEps, err := e.episodes(ctx, e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	gotEps, err := e.Episodes(ctx, "u")
	if err != nil || !reflect.DeepEqual(gotEps, wantEps) {
		t.Errorf("Episodes: %d, %v; want %d", len(gotEps), err, len(wantEps))
	}
	var wantLog []Decision
	_ = e.db.Scan(ctx, kv.UserKey("u", kv.SubLog), func(_, v []byte) error {
		d, err := decodeDecision(v)
		wantLog = append(wantLog, d)
		return err
	})
	gotLog, err := e.Log(ctx, "u")
	if err != nil || !reflect.DeepEqual(gotLog, wantLog) || len(wantLog) < 80 {
		t.Errorf("Log: %d, %v; want %d (at least 80)", len(gotLog), err, len(wantLog))
	}
}

// TestSeqEarlyBreak: breaking out of the loop ends the scan and releases
// the snapshot and the read gate: Close, which waits for the gate and
// which Pebble refuses with a snapshot open, then succeeds at once.
func TestSeqEarlyBreak(t *testing.T) {
	ctx := context.Background()
	e := seqStore(t)
	n := 0
	for f, err := range e.HistorySeq(ctx, "u", "user", "lives_in") {
		if err != nil {
			t.Fatal(err)
		}
		if f.Predicate != "lives_in" {
			t.Fatalf("version of %q", f.Predicate)
		}
		if n++; n == 3 {
			break
		}
	}
	for range e.EpisodesSeq(ctx, "u") {
		n++
		break
	}
	for range e.LogSeq(ctx, "u") {
		n++
		break
	}
	if n != 5 {
		t.Fatalf("%d iterations, want 5", n)
	}
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close after breaking: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked: a broken loop kept the read gate")
	}
}

// TestSeqErrorMidway: a damaged record in the middle of a scan yields
// the records before it, then the error once, then nothing.
func TestSeqErrorMidway(t *testing.T) {
	ctx := context.Background()
	e := seqStore(t)
	eps, err := e.Episodes(ctx, "u")
	if err != nil || len(eps) < 10 {
		t.Fatal(len(eps), err)
	}
	mid := eps[len(eps)/2].Seq
	b := e.db.NewBatch()
	if err := b.Set(seqKey("u", kv.SubEpisode, mid), []byte{0xFF, 1, 2}); err != nil {
		t.Fatal(err)
	}
	var logKeys [][]byte
	_ = e.db.Scan(ctx, kv.UserKey("u", kv.SubLog), func(k, _ []byte) error {
		logKeys = append(logKeys, append([]byte(nil), k...))
		return nil
	})
	if err := b.Set(logKeys[len(logKeys)/2], []byte{0xFF}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	var before, errs, after int
	for ep, err := range e.EpisodesSeq(ctx, "u") {
		switch {
		case err != nil:
			errs++
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %v is not ErrCorrupt", err)
			}
		case errs > 0:
			after++
		case ep.Seq < mid:
			before++
		}
	}
	if errs != 1 || after != 0 || before != int(mid-eps[0].Seq) {
		t.Errorf("episodes: %d before, %d errors, %d after; want %d, 1, 0", before, errs, after, mid-eps[0].Seq)
	}
	errs, after = 0, 0
	n := 0
	for _, err := range e.LogSeq(ctx, "u") {
		switch {
		case err != nil:
			errs++
		case errs > 0:
			after++
		default:
			n++
		}
	}
	if errs != 1 || after != 0 || n != len(logKeys)/2 {
		t.Errorf("log: %d before, %d errors, %d after; want %d, 1, 0", n, errs, after, len(logKeys)/2)
	}
	if _, err := e.Log(ctx, "u"); err == nil {
		t.Error("Log over a damaged record: no error")
	}
}

// TestSeqCorruptHistory: a damaged version in the archive, walked beside
// the live and history keyspaces, fails the iteration once.
func TestSeqCorruptHistory(t *testing.T) {
	ctx := context.Background()
	e := seqStore(t)
	prefix := userKey("u", kv.SubArchive, kv.AppendString(kv.AppendString(nil, "user"), "lives_in"))
	var keys [][]byte
	_ = e.db.Scan(ctx, prefix, func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	})
	if len(keys) == 0 {
		t.Fatal("no archived lives_in version")
	}
	b := e.db.NewBatch()
	if err := b.Set(keys[len(keys)-1], []byte{0xFF}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	errs, after := 0, 0
	for _, err := range e.HistorySeq(ctx, "u", "user", "lives_in") {
		if err != nil {
			errs++
		} else if errs > 0 {
			after++
		}
	}
	if errs != 1 || after != 0 {
		t.Errorf("%d errors, %d versions after; want 1, 0", errs, after)
	}
	if fs, err := e.History(ctx, "u", "user", "lives_in"); err == nil || fs != nil {
		t.Errorf("History over a damaged version: %d versions, %v", len(fs), err)
	}
}

// TestSeqManyRecordsStreams: for a user with thousands of episodes, the
// iterator yields them all in log order, equal to the slice form, and a
// loop that stops after the first allocates a small fraction of what
// reading the whole log does: the log is streamed, not materialised.
func TestSeqManyRecordsStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 3000 episodes")
	}
	ctx := context.Background()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{Clock: func() time.Time { return seqDay(400) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = 3000
	in := make([]FactInput, 0, n)
	for i := range n {
		in = append(in, FactInput{Subject: "user", Predicate: "visited", Object: "place " + string(rune('a'+i%26)) + time.Duration(i).String(), ValidFrom: seqDay(i % 365)})
	}
	for i := 0; i < n; i += 100 {
		for _, f := range in[i : i+100] {
			if _, err := e.Assert(ctx, "u", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := e.Episodes(ctx, "u")
	if err != nil || len(all) != n {
		t.Fatalf("%d episodes, %v", len(all), err)
	}
	i := 0
	for ep, err := range e.EpisodesSeq(ctx, "u") {
		if err != nil || !reflect.DeepEqual(ep, all[i]) {
			t.Fatalf("episode %d differs (%v)", i, err)
		}
		i++
	}
	if !sort.SliceIsSorted(all, func(a, b int) bool { return all[a].Seq < all[b].Seq }) {
		t.Error("episodes out of log order")
	}
	whole := testing.AllocsPerRun(3, func() { _, _ = e.Episodes(ctx, "u") })
	first := testing.AllocsPerRun(3, func() {
		for range e.EpisodesSeq(ctx, "u") {
			break
		}
	})
	if first*20 > whole {
		t.Errorf("a loop stopped at the first episode allocates %.0f, the whole log %.0f: not streamed", first, whole)
	}
	hist := historyOracle(t, e, "u", "user", "visited")
	got, err := e.History(ctx, "u", "user", "visited")
	if err != nil || len(got) != n || !reflect.DeepEqual(got, hist) {
		t.Errorf("History: %d versions, %v; want %d equal to the oracle", len(got), err, n)
	}
}
