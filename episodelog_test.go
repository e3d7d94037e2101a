package memor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/enginetest"
)

// memLog is an EpisodeLog in memory, shared by the engines of a test as a
// cluster's nodes share JetStream.
type memLog struct {
	mu     sync.Mutex
	eps    map[string][][]byte
	fail   error
	forgot []string
}

var errLogDown = errors.New("log down")

func newMemLog() *memLog { return &memLog{eps: map[string][][]byte{}} }

func (l *memLog) Append(_ context.Context, user string, seq uint64, record []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if uint64(len(l.eps[user]))+1 != seq {
		return fmt.Errorf("conflict: user has %d episodes, append of %d", len(l.eps[user]), seq)
	}
	l.eps[user] = append(l.eps[user], slices.Clone(record))
	return nil
}

func (l *memLog) Episodes(_ context.Context, user string, from uint64) iter.Seq2[memor.LoggedEpisode, error] {
	l.mu.Lock()
	eps := slices.Clone(l.eps[user])
	l.mu.Unlock()
	return func(yield func(memor.LoggedEpisode, error) bool) {
		for i, r := range eps {
			if seq := uint64(i + 1); seq >= from && !yield(memor.LoggedEpisode{Seq: seq, Record: r}, nil) {
				return
			}
		}
	}
}

func (l *memLog) Forget(_ context.Context, user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.eps, user)
	l.forgot = append(l.forgot, user)
	return nil
}

func (l *memLog) count(user string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.eps[user])
}

func TestEpisodeLogAppendsEveryWrite(t *testing.T) {
	ctx := context.Background()
	l := newMemLog()
	e, _ := openTest(t, memor.Options{Log: l})
	if _, err := e.Add(ctx, "u", "I live in Paris."); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "u", "I play the violin.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "works_at", Object: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.End(ctx, "u", memor.EndInput{Subject: "user", Predicate: "plays_instrument"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	eps, err := e.Episodes(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 4 || l.count("u") != 4 {
		t.Fatalf("store has %d episodes, log %d; want 4 and 4", len(eps), l.count("u"))
	}
	// A second engine fed from the log alone holds the same memory.
	f, _ := openTest(t, memor.Options{Log: l})
	n, err := f.CatchUp(ctx, "u")
	if err != nil || n != 4 {
		t.Fatalf("CatchUp = %d, %v; want 4", n, err)
	}
	if err := f.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, e, f, "u")
	if n, err := f.CatchUp(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("second CatchUp = %d, %v; want 0", n, err)
	}
	// The node that caught up writes on after the other's episodes; the
	// first, behind now, is refused by the log and stores nothing.
	if _, err := f.Add(ctx, "u", "I moved to Lyon.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "u", "I moved to Nice.", memor.Sync()); err == nil {
		t.Fatal("a write behind the log succeeded")
	}
	if fr, err := e.Freshness(ctx, "u"); err != nil || fr.Latest != 4 {
		t.Fatalf("refused write left Freshness %+v, %v; want latest 4", fr, err)
	}
	if n, err := e.CatchUp(ctx, "u"); err != nil || n != 1 {
		t.Fatalf("CatchUp after the other's write = %d, %v; want 1", n, err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, e, f, "u")
}

func TestEpisodeLogFailureStoresNothing(t *testing.T) {
	ctx := context.Background()
	l := newMemLog()
	e, _ := openTest(t, memor.Options{Log: l})
	l.fail = errLogDown
	if _, err := e.Add(ctx, "u", "I live in Paris."); !errors.Is(err, errLogDown) {
		t.Fatalf("Add with the log down: %v; want errLogDown", err)
	}
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "works_at", Object: "Acme"}); !errors.Is(err, errLogDown) {
		t.Fatalf("Assert with the log down: %v; want errLogDown", err)
	}
	if eps, err := e.Episodes(ctx, "u"); err != nil || len(eps) != 0 {
		t.Fatalf("store holds %d episodes, %v; want none", len(eps), err)
	}
	l.fail = nil
	if _, err := e.Add(ctx, "u", "I live in Paris.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if eps, _ := e.Episodes(ctx, "u"); len(eps) != 1 || eps[0].Seq != 1 {
		t.Fatalf("after the log is back: %+v; want episode 1", eps)
	}
}

func TestEpisodeLogForget(t *testing.T) {
	ctx := context.Background()
	l := newMemLog()
	e, _ := openTest(t, memor.Options{Log: l})
	if _, err := e.Add(ctx, "u", "I live in Paris.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	// Forget reaches the log even where the store never held the user.
	if err := e.Forget(ctx, "only-in-log"); err != nil {
		t.Fatal(err)
	}
	if err := e.Forget(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if l.count("u") != 0 || !slices.Equal(l.forgot, []string{"only-in-log", "u"}) {
		t.Fatalf("log after Forget: %d episodes, forgot %v", l.count("u"), l.forgot)
	}
	if n, err := e.CatchUp(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("CatchUp after Forget = %d, %v", n, err)
	}
}

func TestEpisodeLogImportAppends(t *testing.T) {
	ctx := context.Background()
	src, _ := openTest(t, memor.Options{})
	if _, err := src.Add(ctx, "u", "I live in Paris.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf, "u"); err != nil {
		t.Fatal(err)
	}
	l := newMemLog()
	e, _ := openTest(t, memor.Options{Log: l})
	if _, err := e.Import(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if l.count("u") != 1 {
		t.Fatalf("log holds %d episodes after Import; want 1", l.count("u"))
	}
}

// TestEpisodeLogBulkLoad: a new user's first large batch, which the bulk
// loader takes instead of the online transaction, reaches the log too; a
// store fed from the log alone holds the same memory, and with the log
// down the load stores nothing.
func TestEpisodeLogBulkLoad(t *testing.T) {
	ctx := context.Background()
	l := newMemLog()
	e, _ := openTest(t, memor.Options{Log: l, BulkMinFacts: 2})
	batch := make([]memor.FactInput, 40)
	for i := range batch {
		batch[i] = memor.FactInput{Subject: fmt.Sprintf("project %d", i), Predicate: "status", Object: fmt.Sprintf("phase %d", i%3)}
	}
	l.fail = errLogDown
	if _, err := e.AssertBatch(ctx, "u", batch); !errors.Is(err, errLogDown) {
		t.Fatalf("bulk load with the log down: %v; want errLogDown", err)
	}
	if eps, err := e.Episodes(ctx, "u"); err != nil || len(eps) != 0 {
		t.Fatalf("refused bulk load left %d episodes, %v", len(eps), err)
	}
	l.fail = nil
	before := mustStats(t, e).BulkLoads
	if _, err := e.AssertBatch(ctx, "u", batch); err != nil {
		t.Fatal(err)
	}
	if mustStats(t, e).BulkLoads != before+1 {
		t.Fatal("the batch did not go through the bulk loader")
	}
	if l.count("u") != 1 {
		t.Fatalf("log holds %d episodes after the bulk load; want 1", l.count("u"))
	}
	f, _ := openTest(t, memor.Options{Log: l})
	if n, err := f.CatchUp(ctx, "u"); err != nil || n != 1 {
		t.Fatalf("CatchUp = %d, %v; want 1", n, err)
	}
	if err := f.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, e, f, "u")
}

func mustStats(t *testing.T, e *memor.Engine) memor.Stats {
	t.Helper()
	s, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
