package memor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// timed runs f and fails the test if it panics or outlasts d.
func timed(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	type res struct {
		err   error
		panic any
	}
	done := make(chan res, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- res{panic: r}
			}
		}()
		done <- res{err: f()}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s panicked: %v", what, r.panic)
		}
		return r.err
	case <-time.After(d):
		t.Fatalf("%s still running after %v", what, d)
		return nil
	}
}

// faultPoint names where the file system fails and what makes the store
// reach it.
type faultPoint struct {
	name string
	// fails reports whether op fails once the fault is on.
	fails func(op errorfs.Op) bool
	// trigger makes writes (after the fault is on) until one fails, and
	// returns how many of them were acknowledged.
	trigger func(t *testing.T, e *Engine) (acked int, err error)
	// latched: after the failure every write is refused until reopened
	// (otherwise the store recovers when the fault is gone).
	latched bool
	// maybeStored: the failed write may be in the store after reopen
	// (its bytes reached the file before the failure).
	maybeStored bool
}

func base(op errorfs.Op) string { return filepath.Base(op.Path) }

func isSync(k errorfs.OpKind) bool {
	return k == errorfs.OpFileSync || k == errorfs.OpFileSyncData || k == errorfs.OpFileSyncTo
}

func isWrite(k errorfs.OpKind) bool { return k == errorfs.OpFileWrite || k == errorfs.OpFileWriteAt }

var diskText = strings.Repeat("I live in Paris and my sister Ana works at the museum. ", 1100)

// addUntilFailure adds episodes (inline, so that each is acknowledged
// only once applied and durable) until one fails, at most n.
func addUntilFailure(t *testing.T, e *Engine, n int) (int, error) {
	t.Helper()
	for i := range n {
		err := timed(t, 10*time.Second, "Add", func() error {
			_, err := e.Add(context.Background(), "u", fmt.Sprintf("%d %s", i, diskText), Sync())
			return err
		})
		if err != nil {
			return i, err
		}
	}
	t.Fatalf("%d writes succeeded: the fault was never reached", n)
	return n, nil
}

// bulk is an AssertBatch of n facts: past the import threshold on a new
// user it commits as an ingested table.
func bulk(n int, tag string) []FactInput {
	fs := make([]FactInput, n)
	for i := range fs {
		fs[i] = FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("%s thing %d", tag, i)}
	}
	return fs
}

func assertBatchOnce(t *testing.T, e *Engine, user string) (int, error) {
	t.Helper()
	err := timed(t, 10*time.Second, "AssertBatch", func() error {
		_, err := e.AssertBatch(context.Background(), user, bulk(300, user))
		return err
	})
	if err == nil {
		t.Fatal("AssertBatch succeeded: the fault was never reached")
	}
	return 0, err
}

// faultPoints are made afresh for each run (some count operations).
func faultPoints() []faultPoint {
	return []faultPoint{{
		name:    "WAL write",
		fails:   func(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") && isWrite(op.Kind) },
		trigger: func(t *testing.T, e *Engine) (int, error) { return addUntilFailure(t, e, 5) },
		latched: true,
	}, {
		// The second write of the log after the fault is on: the one applying
		// a queued episode (acknowledged: its own commit was the first).
		name: "WAL write applying a queued episode",
		fails: func() func(op errorfs.Op) bool {
			var n atomic.Int32
			return func(op errorfs.Op) bool {
				return strings.HasSuffix(op.Path, ".log") && isWrite(op.Kind) && n.Add(1) >= 2
			}
		}(),
		trigger: func(t *testing.T, e *Engine) (int, error) {
			ctx := context.Background()
			if _, err := e.Add(ctx, "u", "I work at the library."); err != nil {
				t.Fatalf("the queued Add (its commit is before the fault): %v", err)
			}
			// The worker's commit fails: Flush returns, with the failure or
			// (if it read the store first) nil.
			if err := timed(t, 5*time.Second, "Flush", func() error { return e.Flush(ctx, "u") }); err != nil && !errors.Is(err, ErrStorage) {
				t.Fatalf("Flush: %v", err)
			}
			_, err := addUntilFailure(t, e, 5)
			return 1, err
		},
		latched:     true,
		maybeStored: true,
	}, {
		name:        "WAL sync",
		fails:       func(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") && isSync(op.Kind) },
		trigger:     func(t *testing.T, e *Engine) (int, error) { return addUntilFailure(t, e, 5) },
		latched:     true,
		maybeStored: true,
	}, {
		// Enough writes fill the memtable; its flush fails writing the table.
		name: "table write during flush",
		fails: func(op errorfs.Op) bool {
			return strings.HasSuffix(op.Path, ".sst") && !strings.HasPrefix(base(op), ".memor-ingest") && isWrite(op.Kind)
		},
		trigger: func(t *testing.T, e *Engine) (int, error) { return addUntilFailure(t, e, 2000) },
		latched: true,
		// The write that saw the failure may have been durable already.
		maybeStored: true,
	}, {
		// A new user's bulk write is ingested: Pebble records the table in
		// the MANIFEST, and that write fails.
		name: "MANIFEST write",
		fails: func(op errorfs.Op) bool {
			return strings.HasPrefix(base(op), "MANIFEST") && (isWrite(op.Kind) || isSync(op.Kind))
		},
		trigger:     func(t *testing.T, e *Engine) (int, error) { return assertBatchOnce(t, e, "bulk") },
		latched:     true,
		maybeStored: true,
	}, {
		// The table memor writes for an ingestion fails: nothing changed.
		name: "ingested table write",
		fails: func(op errorfs.Op) bool {
			return strings.HasPrefix(base(op), ".memor-ingest") && (isWrite(op.Kind) || isSync(op.Kind))
		},
		trigger: func(t *testing.T, e *Engine) (int, error) { return assertBatchOnce(t, e, "bulk") },
	}}
}

// TestStorageFaults fails the file system at chosen points (errorfs):
// each gives ErrStorage, never a panic or a hang; after a failure inside
// Pebble every later write, inline or queued, is refused promptly with it
// and reads never show an unacknowledged episode; Close returns; and the
// store reopened on a healthy file system passes Check and holds exactly
// the acknowledged writes (plus, where its bytes reached the file before
// the failure, the write that failed, whole).
func TestStorageFaults(t *testing.T) {
	t.Parallel()
	for _, fp := range faultPoints() {
		t.Run(fp.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
				if fp.fails(op) {
					return fmt.Errorf("%s: %w", op.Path, errorfs.ErrInjected)
				}
				return nil
			})}
			e, err := Open(dir, Options{fs: errorfs.Wrap(vfs.Default, toggle)})
			if err != nil {
				t.Fatal(err)
			}
			// Acknowledged before the fault: an inline episode, a fact
			// and an applied queued episode.
			if _, err := e.Add(ctx, "u", "I live in Lisbon.", Sync()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "works_at", Object: "the museum"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Add(ctx, "u", "My sister is Ana."); err != nil {
				t.Fatal(err)
			}
			if err := e.Flush(ctx, "u"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Add(ctx, "w", "I live in Porto.", Sync()); err != nil {
				t.Fatal(err)
			}
			before := 3
			toggle.On()
			acked, err := fp.trigger(t, e)
			if !errors.Is(err, ErrStorage) || !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("the failed write: %v, want ErrStorage wrapping the cause", err)
			}
			t.Logf("%d acknowledged, then: %v", acked, err)
			toggle.Off() // space is back
			later := []struct {
				name string
				f    func() error
			}{
				{"Add", func() error { _, err := e.Add(ctx, "u", "I moved to Rome.", Sync()); return err }},
				{"queued Add", func() error { _, err := e.Add(ctx, "u", "I moved to Oslo."); return err }},
				{"Assert", func() error {
					_, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "owns", Object: "a bike"})
					return err
				}},
				{"new user's bulk write", func() error { _, err := e.AssertBatch(ctx, "v", bulk(300, "v")); return err }},
				{"Forget", func() error { return e.Forget(ctx, "w") }},
			}
			later2 := 0
			for _, w := range later {
				t0 := time.Now()
				err := timed(t, 5*time.Second, w.name+" after the failure", w.f)
				if fp.latched && !errors.Is(err, ErrStorage) {
					t.Errorf("%s after the failure: %v, want ErrStorage", w.name, err)
				}
				if !fp.latched && err != nil {
					t.Errorf("%s once the fault is gone: %v", w.name, err)
				}
				if err == nil && w.name != "Forget" && w.name != "new user's bulk write" {
					later2++
				}
				if d := time.Since(t0); d > 2*time.Second {
					t.Errorf("%s after the failure took %v", w.name, d)
				}
			}
			// Freshness never counts an episode that was not acknowledged.
			err = timed(t, 5*time.Second, "Freshness", func() error {
				f, err := e.Freshness(ctx, "u")
				if err == nil && f.Latest > uint64(before+acked+later2) {
					return fmt.Errorf("freshness counts %d episodes, %d were acknowledged", f.Latest, before+acked+later2)
				}
				return err
			})
			if err != nil && !errors.Is(err, ErrStorage) {
				t.Error(err)
			}
			if err := timed(t, 10*time.Second, "Close", e.Close); fp.latched && !errors.Is(err, ErrStorage) {
				t.Errorf("Close after the failure: %v, want ErrStorage", err)
			} else if !fp.latched && err != nil {
				t.Errorf("Close: %v", err)
			}

			e, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("reopen on a healthy file system: %v", err)
			}
			defer e.Close()
			if err := e.Check(ctx); err != nil {
				t.Errorf("Check: %v", err)
			}
			eps, err := e.Episodes(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			want := before + acked + later2
			if fp.maybeStored && fp.name != "MANIFEST write" && len(eps) == want+1 {
				want++ // the failed write reached the file, whole
			}
			if len(eps) != want {
				t.Errorf("%d episodes of u after reopen, want %d", len(eps), want)
			}
			// The failed bulk write is all there or not at all.
			facts, err := e.State(ctx, "bulk")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(facts); n != 0 && !(fp.maybeStored && n == 300) {
				t.Errorf("the failed bulk write left %d of its 300 facts", n)
			}
			if err := e.Flush(ctx, "u"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Add(ctx, "u", "I moved to Rome.", Sync()); err != nil {
				t.Errorf("write after reopen: %v", err)
			}
		})
	}
}
