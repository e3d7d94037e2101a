package naive_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
)

var day = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

func TestTokenize(t *testing.T) {
	got := naive.Tokenize("Where does my brother's friend live? She lives in Austin, studies languages.")
	want := []string{"brother", "friend", "live", "she", "live", "austin", "study", "language"}
	if !slices.Equal(got, want) {
		t.Errorf("Tokenize = %q, want %q", got, want)
	}
}

func TestQuery(t *testing.T) {
	ctx := context.Background()
	m := naive.New()
	for i, s := range []string{"I live in Seattle.", "I like sushi.", "I live in Denver.", "Nothing to see here."} {
		if err := m.Add(ctx, "u", s, day.AddDate(0, 0, i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Query(ctx, "u", "Where do I live?", 5)
	if err != nil {
		t.Fatal(err)
	}
	// Equal BM25 scores: the latest turn wins the tie; turns without a
	// query term are not served.
	want := []string{"2025-01-03: I live in Denver.", "2025-01-01: I live in Seattle."}
	if !slices.Equal(got, want) {
		t.Errorf("Query = %q, want %q", got, want)
	}
	if got, _ := m.Query(ctx, "u", "Where do I live?", 1); len(got) != 1 || !strings.Contains(got[0], "Denver") {
		t.Errorf("k=1: %q", got)
	}
	// A rarer term outweighs a common one.
	if got, _ := m.Query(ctx, "u", "sushi live", 1); len(got) != 1 || !strings.Contains(got[0], "sushi") {
		t.Errorf("idf: %q", got)
	}
	if got, err := m.Query(ctx, "other", "Where do I live?", 5); err != nil || len(got) != 0 {
		t.Errorf("other user sees %q (%v)", got, err)
	}
	if err := m.Reset(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Query(ctx, "u", "Where do I live?", 5); err != nil || len(got) != 0 {
		t.Errorf("after Reset: %q (%v)", got, err)
	}
	if err := m.Add(ctx, "u", "  ", day); !errors.Is(err, naive.ErrEmpty) {
		t.Errorf("empty Add: %v", err)
	}
}

// The naive arm passes what a chunk memory can (additive facts, leakage)
// and fails on stale answers: that is the point of running it.
func TestAgainstSuite(t *testing.T) {
	tab, err := memortest.Report(context.Background(), map[string]memortest.Backend{"naive": naive.New()})
	if err != nil {
		t.Fatal(err)
	}
	r := tab.Rows[0]
	if r.Leaks != 0 || r.Errors != 0 {
		t.Errorf("naive leaked %d, errors %d", r.Leaks, r.Errors)
	}
	if r.Stale == 0 || r.Passed == r.Cases {
		t.Errorf("naive served no stale answer: %+v", r)
	}
	t.Logf("naive: %d/%d passed, %d stale", r.Passed, r.Cases, r.Stale)
}
