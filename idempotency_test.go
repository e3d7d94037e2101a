package memor_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/memor-db/memor"
)

// episodeCount is how many episodes user has.
func episodeCount(t *testing.T, e *memor.Engine, user string) int {
	t.Helper()
	eps, err := e.Episodes(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return len(eps)
}

// TestIdempotentAdd: an Add repeated under its key, queued or synced,
// stores nothing and returns the first episode (Repeated says so); the
// same key with another text or speaker is ErrIdempotencyConflict; the
// key is per user; a bad key is refused.
func TestIdempotentAdd(t *testing.T) {
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	var rep bool
	first, err := e.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Repeated(&rep))
	if err != nil || rep {
		t.Fatalf("first Add: %v, repeated %v", err, rep)
	}
	for _, sync := range []bool{false, true} {
		opts := []memor.AddOption{memor.IdempotencyKey("k1"), memor.Repeated(&rep)}
		var ds []memor.Decision
		if sync {
			opts = append(opts, memor.Decisions(&ds))
		}
		again, err := e.Add(ctx, "u", "I live in Oslo.", opts...)
		if err != nil || !rep || again.Seq != first.Seq || !again.RecordedAt.Equal(first.RecordedAt) || again.Key != "k1" || len(ds) != 0 {
			t.Fatalf("repeat (sync %v): %+v, %v, repeated %v, %d decisions; want episode %d again", sync, again, err, rep, len(ds), first.Seq)
		}
	}
	if n := episodeCount(t, e, "u"); n != 1 {
		t.Fatalf("u holds %d episodes after the repeats, want 1", n)
	}
	if _, err := e.Add(ctx, "u", "I live in Rome.", memor.IdempotencyKey("k1")); !errors.Is(err, memor.ErrIdempotencyConflict) {
		t.Fatalf("same key, other text: %v, want ErrIdempotencyConflict", err)
	}
	if _, err := e.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Speaker("Maya")); !errors.Is(err, memor.ErrIdempotencyConflict) {
		t.Fatalf("same key, other speaker: %v, want ErrIdempotencyConflict", err)
	}
	if ep, err := e.Add(ctx, "v", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Sync()); err != nil || ep.Seq != 1 {
		t.Fatalf("another user's Add under the same key: %+v, %v", ep, err)
	}
	for _, k := range []string{"", strings.Repeat("k", memor.MaxIdempotencyKeyBytes+1), "a\nb", "\xff"} {
		if _, err := e.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey(k)); !errors.Is(err, memor.ErrInvalidIdempotencyKey) {
			t.Errorf("key %q: %v, want ErrInvalidIdempotencyKey", k, err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if n := episodeCount(t, e, "u"); n != 1 {
		t.Fatalf("u holds %d episodes, want 1", n)
	}
}

// TestIdempotentAddConcurrent: many Adds of one key at once store one
// episode, and every one of them returns it.
func TestIdempotentAddConcurrent(t *testing.T) {
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	var wg sync.WaitGroup
	seqs := make([]uint64, 16)
	errs := make([]error, len(seqs))
	for i := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var opts []memor.AddOption
			if i%2 == 0 {
				opts = append(opts, memor.Sync())
			}
			ep, err := e.Add(ctx, "u", "I play the cello.", append(opts, memor.IdempotencyKey("once"))...)
			seqs[i], errs[i] = ep.Seq, err
		}()
	}
	wg.Wait()
	for i := range seqs {
		if errs[i] != nil || seqs[i] != 1 {
			t.Fatalf("Add %d: episode %d, %v; want episode 1", i, seqs[i], errs[i])
		}
	}
	if n := episodeCount(t, e, "u"); n != 1 {
		t.Fatalf("u holds %d episodes, want 1", n)
	}
}

// TestIdempotencyKeyKept: the key goes with the episode through Rebuild,
// an export and an import into another store (where a repeat finds the
// imported episode), and is erased by Forget (after which the key stores
// a new episode).
func TestIdempotencyKeyKept(t *testing.T) {
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	first, err := e.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Sync())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "u", "I work at Acme.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	var rep bool
	if ep, err := e.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Repeated(&rep)); err != nil || !rep || ep.Seq != first.Seq {
		t.Fatalf("repeat after Rebuild: %+v, %v, repeated %v", ep, err, rep)
	}
	var buf bytes.Buffer
	if _, err := e.Export(ctx, &buf, "u"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"key":"k1"`) {
		t.Fatalf("the export lacks the key:\n%s", buf.String())
	}
	f, _ := openTest(t, memor.Options{})
	if _, err := f.Import(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if ep, err := f.Add(ctx, "u", "I live in Oslo.", memor.IdempotencyKey("k1"), memor.Repeated(&rep)); err != nil || !rep || ep.Seq != first.Seq {
		t.Fatalf("repeat on the imported store: %+v, %v, repeated %v", ep, err, rep)
	}
	if n := episodeCount(t, f, "u"); n != 2 {
		t.Fatalf("imported store holds %d episodes of u, want 2", n)
	}
	// A second file giving the key to another episode is refused whole.
	other := strings.Replace(buf.String(), `"text":"I work at Acme."`, `"text":"I work at Acme.","key":"k1"`, 1)
	other = strings.Replace(other, `"text":"I live in Oslo.","key":"k1"`, `"text":"I live in Oslo."`, 1)
	g, _ := openTest(t, memor.Options{})
	if _, err := g.Import(ctx, strings.NewReader(other)); err != nil {
		t.Fatalf("the key on the other episode alone: %v", err)
	}
	twice := strings.Replace(buf.String(), `"text":"I work at Acme."`, `"text":"I work at Acme.","key":"k1"`, 1)
	h, _ := openTest(t, memor.Options{})
	if _, err := h.Import(ctx, strings.NewReader(twice)); !errors.Is(err, memor.ErrHistoryConflict) {
		t.Fatalf("one key on two episodes of a file: %v, want ErrHistoryConflict", err)
	}
	if err := e.Forget(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if ep, err := e.Add(ctx, "u", "I live in Rome.", memor.IdempotencyKey("k1"), memor.Repeated(&rep), memor.Sync()); err != nil || rep || ep.Seq != 1 {
		t.Fatalf("Add under the key after Forget: %+v, %v, repeated %v; want a new episode 1", ep, err, rep)
	}
}
