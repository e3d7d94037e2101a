package memor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
)

// memorArm adapts an engine to memortest.Backend: Add waits for its
// episode; Query serves result texts, taking time travel from the question
// ("where did I live in March 2025?"); Reset is Forget.
type memorArm struct{ e *memor.Engine }

func (a memorArm) Add(ctx context.Context, user, text string, at time.Time) error {
	_, err := a.e.Add(ctx, user, text, memor.At(at), memor.Sync())
	return err
}

func (a memorArm) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	rs, err := a.e.Query(ctx, user, q, memor.QueryOptions{K: k, TimeFromText: true})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text()
	}
	return out, nil
}

func (a memorArm) Reset(ctx context.Context, user string) error { return a.e.Forget(ctx, user) }

func (a memorArm) Current(ctx context.Context, user string) ([]memortest.Triple, error) {
	fs, err := a.e.State(ctx, user)
	out := make([]memortest.Triple, len(fs))
	for i, f := range fs {
		out[i] = memortest.Triple{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object}
	}
	return out, err
}

func openArm(t *testing.T, o memor.Options) memorArm {
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return memorArm{e}
}

// TestConformanceReport runs memortest's cases against memor, the naive
// chunk memory and memor with resolution turned off, and holds memor to
// serving no stale answer and leaking nothing. MEMORTEST_REPORT=file
// writes the Markdown table.
func TestConformanceReport(t *testing.T) {
	ctx := context.Background()
	arms := map[string]memortest.Backend{
		"memor":      openArm(t, memor.Options{NoSync: true}),
		"ungoverned": openArm(t, memor.Options{NoSync: true, Ungoverned: true}),
		"naive":      naive.New(),
	}
	table, err := memortest.Report(ctx, arms)
	if err != nil {
		t.Fatal(err)
	}
	md := table.Markdown()
	t.Log("\n" + md)
	if p := os.Getenv("MEMORTEST_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, row := range table.Rows {
		if row.Arm != "memor" {
			continue
		}
		if row.Leaks != 0 || row.Errors != 0 {
			t.Errorf("memor: %d leaks, %d errors", row.Leaks, row.Errors)
		}
		// Measured 2026-11-29: 98/98 correct, 0 stale.
		if row.Passed != row.Cases || row.Stale != 0 {
			t.Errorf("memor regressed: %d/%d correct, %d stale", row.Passed, row.Cases, row.Stale)
		}
		for _, r := range row.Results {
			if !r.Pass() {
				t.Logf("memor fails %s (%s): served %q stale %v current %v", r.Case.Name, r.Case.Category,
					strings.Join(r.Served, " | "), r.StaleServed, r.StillCurrent)
			}
		}
	}
}
