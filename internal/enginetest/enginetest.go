// Package enginetest opens engines for tests (bbolt's internal/btesting is
// the model): a new store in a temporary folder, closed at cleanup after
// [memor.Engine.Check] has verified it, so that every test that writes
// through it also tests that its writes left a consistent store.
package enginetest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

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
