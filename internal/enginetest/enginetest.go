// Package enginetest opens engines for tests (bbolt's internal/btesting is
// the model): a new store in a temporary folder, closed at cleanup after
// [memor.Engine.Check] has verified it, so that every test that writes
// through it also tests that its writes left a consistent store.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// Option changes what Open does.
type Option func(*config)

type config struct{ noCheck bool }

// NoCheck skips the cleanup's Check: for a test that damages the store on
// purpose and checks it itself.
func NoCheck() Option { return func(c *config) { c.noCheck = true } }

// Open opens an engine with o on a new folder under t.TempDir (the
// folder is returned, for reopening) and registers a cleanup that runs
// Check, failing t on any finding, then closes the engine. An engine the
// test closed itself is not checked.
func Open(t testing.TB, o memor.Options, opts ...Option) (*memor.Engine, string) {
	t.Helper()
	var c config
	for _, opt := range opts {
		opt(&c)
	}
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.noCheck {
			if err := e.Check(context.Background()); err != nil && !errors.Is(err, memor.ErrClosed) {
				t.Errorf("Check at cleanup: %v", err)
			}
		}
		if err := e.Close(); err != nil && !errors.Is(err, memor.ErrClosed) {
			t.Errorf("Close at cleanup: %v", err)
		}
	})
	return e, dir
}

// SameMemory fails t unless a and b hold the same memory of user: State,
// AsOf at every valid and known instant a mentions (and just before each),
// History of every slot, the episodes; then Check passes on both.
func SameMemory(t testing.TB, a, b *memor.Engine, user string) {
	t.Helper()
	ctx := context.Background()
	js := func(v any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if x, y := js(a.State(ctx, user)), js(b.State(ctx, user)); x != y {
		t.Fatalf("State of %s differs:\n%s\n%s", user, x, y)
	}
	if x, y := js(a.Episodes(ctx, user)), js(b.Episodes(ctx, user)); x != y {
		t.Fatalf("Episodes of %s differ:\n%s\n%s", user, x, y)
	}
	vs, err := a.Versions(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	instants := map[time.Time]bool{}
	slots := map[[2]string]bool{}
	for _, f := range vs {
		for _, at := range []time.Time{f.ValidFrom, f.ValidTo, f.RecordedAt, f.ExpiredAt} {
			if !at.IsZero() {
				instants[at] = true
				instants[at.Add(-time.Nanosecond)] = true
			}
		}
		slots[[2]string{f.Subject, f.Predicate}] = true
	}
	for v := range instants {
		for k := range instants {
			if x, y := js(a.AsOf(ctx, user, v, k)), js(b.AsOf(ctx, user, v, k)); x != y {
				t.Fatalf("AsOf(%v, %v) of %s differs:\n%s\n%s", v, k, user, x, y)
			}
		}
	}
	for s := range slots {
		if x, y := js(a.History(ctx, user, s[0], s[1])), js(b.History(ctx, user, s[0], s[1])); x != y {
			t.Fatalf("History(%v) of %s differs:\n%s\n%s", s, user, x, y)
		}
	}
	for _, e := range []*memor.Engine{a, b} {
		if err := e.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
