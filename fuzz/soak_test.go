package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/corpus"
)

// soakDuration is how long TestSoak runs: a few seconds by default,
// MEMOR_SOAK (a Go duration) for a long run.
func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv("MEMOR_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("MEMOR_SOAK=%q: %v", s, err)
		}
		return d
	}
	if testing.Short() {
		return time.Second
	}
	return 4 * time.Second
}

// TestSoak: goroutines mix Add, Assert, Query, State, AsOf, Correct and
// Forget over 100 users for a fixed time (run it under -race); afterwards
// Check is clean, and Close leaves no goroutine behind.
func TestSoak(t *testing.T) {
	baseline := runtime.NumGoroutine()
	dir := t.TempDir()
	// A small index cache budget: users' indexes are evicted and reloaded
	// while writes race with them.
	e, err := memor.Open(dir, memor.Options{NoSync: true, Workers: 2, QueueSize: 64, IndexCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), soakDuration(t))
	defer cancel()
	cities := []string{"Paris", "Berlin", "Oslo", "Lima", "Pune"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var ops atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for n := 0; ctx.Err() == nil; n++ {
				u := fmt.Sprintf("user-%d", rng.IntN(100))
				city := cities[rng.IntN(len(cities))]
				k := rng.IntN(20)
				var err error
				switch {
				case k < 3:
					_, err = e.Add(ctx, u, fmt.Sprintf("I live in %s. I like tea number %d.", city, rng.IntN(9)))
				case k < 5:
					// What users write: a corpus text or 1–500 random words.
					_, text := corpus.Pick(rng)
					_, err = e.Add(ctx, u, text)
				case k < 9:
					_, err = e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: city,
						ValidFrom: time.Date(2026, 1, 1+rng.IntN(30), 0, 0, 0, 0, time.UTC), Confidence: []float64{1, 0.85, 0.5}[rng.IntN(3)]})
				case k < 10:
					_, err = e.Query(ctx, u, "where do I live", memor.QueryOptions{})
				case k < 11:
					_, q := corpus.Pick(rng)
					_, err = e.Query(ctx, u, q, memor.QueryOptions{})
				case k < 13:
					// Invariant: the current state holds at most one value
					// of a One slot, and only active facts in force now.
					var fs []memor.Fact
					if fs, err = e.State(ctx, u); err == nil {
						err = stateInvariant(fs, time.Now())
					}
				case k < 15:
					_, err = e.AsOf(ctx, u, time.Date(2026, 1, 1+rng.IntN(30), 0, 0, 0, 0, time.UTC), time.Now())
				case k < 18:
					var fs []memor.Fact
					if fs, err = e.History(ctx, u, "user", "lives_in"); err == nil && len(fs) > 0 {
						err = e.Correct(ctx, u, fs[rng.IntN(len(fs))].ID)
					}
				case k < 19:
					err = e.Forget(ctx, u)
				default:
					err = e.Flush(ctx, u)
				}
				ops.Add(1)
				if errors.Is(err, memor.ErrNotFound) {
					err = nil // forgotten by another goroutine meanwhile
				}
				if err != nil && ctx.Err() != nil {
					return // the deadline cut an operation short
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d op %d (kind %d, %s): %w", g, n, k, u, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := ops.Load()
	t.Logf("%d operations in %v", total, soakDuration(t))
	if total < 20 {
		t.Errorf("only %d operations: the soak exercised nothing", total)
	}
	cctx := context.Background()
	users, err := e.Users(cctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if err := e.Flush(cctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Check(cctx); err != nil {
		t.Fatal(err)
	}
	// Whatever the interleaving, each user's state is what replaying
	// their episode log gives (Rebuild), for a sample of users.
	for i, u := range users {
		if i%10 != 0 {
			continue
		}
		before, err := e.State(cctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if err := stateInvariant(before, time.Now()); err != nil {
			t.Error(err)
		}
		if err := e.Rebuild(cctx, u); err != nil {
			t.Fatal(err)
		}
		after, err := e.State(cctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := renderEngine(before, view{reinforced: true}), renderEngine(after, view{reinforced: true}); a != b {
			t.Errorf("user %s: state after the soak differs from its replay:\n%s", u, diffLines(a, b))
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Background goroutines (ingestion workers, Pebble's) take a moment to
	// return after Close.
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > baseline && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before Open:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// stateInvariant checks a current state: only active facts valid now, and
// at most one value per (subject, lives_in, context) — a One slot.
func stateInvariant(fs []memor.Fact, now time.Time) error {
	one := map[string]string{}
	for _, f := range fs {
		if f.Status != memor.Active || f.ValidFrom.After(now) || (!f.ValidTo.IsZero() && !now.Before(f.ValidTo)) || !f.ExpiredAt.IsZero() {
			return fmt.Errorf("state holds %v (%s, valid [%v, %v), expired %v)", f.Object, f.Status, f.ValidFrom, f.ValidTo, f.ExpiredAt)
		}
		if f.Predicate != "lives_in" {
			continue
		}
		k := NormKey(f.Subject) + "\x00" + NormKey(f.Context)
		if o, ok := one[k]; ok {
			return fmt.Errorf("state holds two values of the One slot %s lives_in: %q and %q", f.Subject, o, f.Object)
		}
		one[k] = f.Object
	}
	return nil
}
