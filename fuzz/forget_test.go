package fuzz

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// filesContaining lists the files under dir whose bytes contain needle.
func filesContaining(t testing.TB, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestForgetCanary: user A writes a unique canary into episodes and facts;
// after Forget(A) no file under the store's folder holds it, and user B's
// data is intact (DESIGN §4, GDPR hard delete).
func TestForgetCanary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A canary no other byte sequence in the store can contain by chance.
	canary := fmt.Sprintf("CANARY-%x-zebra", time.Now().UnixNano())
	clock := newTestClock()
	e, err := memor.Open(dir, memor.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	// A's first write is a bulk import: large enough to commit as a table
	// ingested straight into the bottom level, which Forget must rewrite.
	var bulk []memor.FactInput
	for i := range 400 {
		bulk = append(bulk, memor.FactInput{Subject: "user", Predicate: "visited",
			Object: fmt.Sprintf("%s place %d", canary, i), ValidFrom: clock.Now().Add(-time.Duration(i) * time.Hour)})
	}
	if _, err := e.AssertBatch(ctx, "A", bulk); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Stats(ctx); err != nil || st.IngestedTables != 1 {
		t.Fatalf("the bulk import was not ingested as a table: %+v, %v", st, err)
	}
	const n = 40
	for i := range n {
		clock.Advance(time.Minute)
		if _, err := e.Add(ctx, "A", fmt.Sprintf("Note %d: my secret is %s.", i, canary), memor.Sync()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Assert(ctx, "A", memor.FactInput{Subject: "user", Predicate: "likes",
			Object: fmt.Sprintf("%s %d", canary, i), Quote: "I like " + canary}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Assert(ctx, "A", memor.FactInput{Subject: canary + " friend", Predicate: "lives_in",
			Object: "Oslo", Context: "ctx " + canary, ValidFrom: clock.Now().Add(-time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Add(ctx, "B", fmt.Sprintf("B note %d", i), memor.Sync()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Assert(ctx, "B", memor.FactInput{Subject: "user", Predicate: "likes",
			Object: fmt.Sprintf("tea %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	// The test can fail: before Forget the canary is on disk.
	if hits := filesContaining(t, dir, []byte(canary)); len(hits) == 0 {
		t.Fatal("canary not found on disk before Forget: the test would prove nothing")
	}
	wantB, err := e.History(ctx, "B", "user", "likes")
	if err != nil {
		t.Fatal(err)
	}
	epsB, err := e.Episodes(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Forget(ctx, "A"); err != nil {
		t.Fatal(err)
	}

	// Pebble deletes obsolete files in the background: give it a moment.
	hits := filesContaining(t, dir, []byte(canary))
	for deadline := time.Now().Add(2 * time.Second); len(hits) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		hits = filesContaining(t, dir, []byte(canary))
	}
	leaked := len(hits) > 0
	if fs, err := e.State(ctx, "A"); err != nil || len(fs) != 0 {
		t.Errorf("State(A) after Forget: %d facts, %v", len(fs), err)
	}
	gotB, err := e.History(ctx, "B", "user", "likes")
	if err != nil {
		t.Fatal(err)
	}
	if len(gotB) != len(wantB) || len(wantB) != n {
		t.Errorf("B has %d versions, had %d (want %d)", len(gotB), len(wantB), n)
	}
	for i := range min(len(gotB), len(wantB)) {
		if gotB[i].ID != wantB[i].ID || !gotB[i].RecordedAt.Equal(wantB[i].RecordedAt) {
			t.Errorf("B version %d changed: %v → %v", i, wantB[i], gotB[i])
		}
	}
	if eps, err := e.Episodes(ctx, "B"); err != nil || len(eps) != len(epsB) {
		t.Errorf("B has %d episodes, had %d (%v)", len(eps), len(epsB), err)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
	// Closing must not bring it back either (Close flushes nothing of A's).
	if leaked {
		t.Errorf("after Forget the canary is still in %s (regression: Pebble recycled write-ahead logs keep old bytes)", strings.Join(hits, ", "))
	}
}
