package fuzz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// stallExtractor never finishes: episodes stay pending until Close.
type stallExtractor struct{}

func (stallExtractor) Extract(ctx context.Context, _ string, _ time.Time) ([]extract.Op, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRecoveryUsesRegisteredPredicates: an episode still pending at Close
// is applied by the next Open's ingestion workers, which start inside Open.
// It must be resolved with the store's predicates ("standing" is the alias
// of the One predicate "rank"), so that Rebuild gives the same state.
// Regression: FuzzOps found the workers resolving it before a
// RegisterPredicate call right after Open could run; Options.Predicates is
// the fix.
func TestRecoveryUsesRegisteredPredicates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newTestClock()
	e, err := memor.Open(dir, memor.Options{Clock: clock.Now, Extractor: stallExtractor{}, Predicates: predicates})
	if err != nil {
		t.Fatal(err)
	}
	line := opLine("A", Op{Subject: "user", Predicate: "standing", Object: "gold", ValidFrom: validBase})
	if _, err := e.Add(ctx, "u", line); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil && !errors.Is(err, memor.ErrClosed) {
		t.Fatal(err)
	}
	// Reopen; Flush first, as if the workers won any race with the caller.
	e, err = memor.Open(dir, memor.Options{Clock: clock.Now, Extractor: lineExtractor{}, Predicates: predicates})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	render := func() string {
		fs, err := e.State(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(renderEngine(fs, view{}))
	}
	before := render()
	if !strings.Contains(before, " rank gold") {
		t.Fatalf("state %q: want the alias resolved to rank", before)
	}
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if after := render(); before != after {
		t.Fatalf("recovered episode resolved without the store's predicates: state %q, after Rebuild %q", before, after)
	}
}
