package memor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memor-db/memor/internal/diskscan"
)

// filesHolding lists the files under dir that contain any of needles.
func filesHolding(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var bs [][]byte
	for _, n := range needles {
		bs = append(bs, []byte(n))
	}
	hits, err := diskscan.FilesContaining(dir, bs...)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// openWithForgetHook opens dir with hook run between every Forget's
// deletion and its compaction.
func openWithForgetHook(dir string, o Options, hook func() error) (*Engine, error) {
	e, err := Open(dir, o)
	if err != nil {
		return nil, err
	}
	e.hookForgetCommitted = hook
	return e, nil
}

// TestForgetInterruptedFinishesAtOpen: a Forget cut short between its
// deletion and its compaction (a crash there) leaves the user's bytes on
// disk; the marker it committed with the deletion makes the next Open
// compact and scrub them, and user B is untouched.
func TestForgetInterruptedFinishesAtOpen(t *testing.T) {
	if encryptAllBuild {
		t.Skip("plain files only: it finds the user in plain files")
	}
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	const canary = "Zanzibarcanary"
	needles := []string{canary, strings.ToLower(canary)}
	crash := errors.New("crash")
	e, err := openWithForgetHook(dir, Options{}, func() error { return crash })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "A", "I live in "+canary+".", Sync()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(ctx, "B", FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo"}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	err = e.Forget(ctx, "A")
	if !errors.Is(err, crash) {
		t.Fatalf("Forget = %v, want the injected crash", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, dir, needles...); len(hits) == 0 {
		t.Fatal("the interrupted Forget left no bytes to scrub: the test proves nothing")
	}

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := pendingForgets(ctx, e.db); err != nil || len(pending) != 0 {
		t.Fatalf("after Open: %d forgets pending (%v)", len(pending), err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, dir, needles...); len(hits) > 0 {
		t.Fatalf("files still holding A's canary after the Forget was finished: %v", hits)
	}
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if fs, err := e.State(ctx, "A"); err != nil || len(fs) != 0 {
		t.Errorf("A after Forget: %v %v", fs, err)
	}
	if fs, err := e.State(ctx, "B"); err != nil || len(fs) != 1 || fs[0].Object != "Oslo" {
		t.Errorf("B after A's Forget: %v %v", fs, err)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestForgetUnknownUserIsFree: forgetting a user with nothing stored
// writes nothing and syncs nothing (it used to compact and rotate the
// log six times, about 0.25 s); forgetting a stored user still does.
func TestForgetUnknownUserIsFree(t *testing.T) {
	t.Parallel()
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Assert(ctx, "A", FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo"}); err != nil {
		t.Fatal(err)
	}
	syncs := func() uint64 { s, _ := e.Stats(ctx); return s.WALSyncs + s.FileSyncs }
	before := syncs()
	for _, u := range []string{"nobody", "a", "AB"} {
		if err := e.Forget(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if got := syncs(); got != before {
		t.Errorf("forgetting users with nothing stored cost %d syncs", got-before)
	}
	if err := e.Forget(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if syncs() == before {
		t.Error("forgetting a stored user synced nothing: the measure cannot tell")
	}
	if fs, err := e.State(ctx, "A"); err != nil || len(fs) != 0 {
		t.Errorf("A after Forget: %v %v", fs, err)
	}
}
