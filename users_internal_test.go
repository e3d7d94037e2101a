package memor

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
)

// TestStoredUserStillErasable: a user an earlier version stored under an
// ID that ValidUser now refuses (only white space, or a control character)
// is listed by Users, exported by Episodes and erased by Forget, while the
// other calls refuse the ID. The legacy users are written past the
// validation, as the earlier version did.
func TestStoredUserStillErasable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	legacy := []string{" ", "a\x00b", "me\n"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, u := range legacy {
		op := extract.Op{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Cairo", ValidFrom: at, Confidence: 1}
		ep := Episode{Kind: EpisodeFacts, At: at, Ops: []extract.Op{op}, Text: renderOp(op)}
		if _, err := e.write(ctx, u, &ep, nil, true); err != nil {
			t.Fatalf("legacy write %q: %v", u, err)
		}
	}
	if _, err := e.Assert(ctx, "bob", FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo"}); err != nil {
		t.Fatal(err)
	}
	users, err := e.Users(ctx)
	if err != nil || len(users) != len(legacy)+1 {
		t.Fatalf("Users = %q, %v", users, err)
	}
	for _, u := range legacy {
		if _, err := e.State(ctx, u); !errors.Is(err, ErrInvalidUser) {
			t.Errorf("State(%q) = %v, want ErrInvalidUser", u, err)
		}
		if _, err := e.Add(ctx, u, "I moved to Rome."); !errors.Is(err, ErrInvalidUser) {
			t.Errorf("Add(%q) = %v, want ErrInvalidUser", u, err)
		}
		eps, err := e.Episodes(ctx, u)
		if err != nil || len(eps) != 1 || eps[0].User != u {
			t.Errorf("Episodes(%q) = %v, %v", u, eps, err)
		}
		if err := e.Forget(ctx, u); err != nil {
			t.Errorf("Forget(%q) = %v", u, err)
		}
	}
	if users, err := e.Users(ctx); err != nil || !slices.Equal(users, []string{"bob"}) {
		t.Fatalf("after Forget, Users = %q, %v", users, err)
	}
	for _, u := range []string{"", "\xff", string(make([]byte, MaxUserBytes+1))} {
		if _, err := e.Episodes(ctx, u); !errors.Is(err, ErrInvalidUser) {
			t.Errorf("Episodes(%q) = %v, want ErrInvalidUser", u, err)
		}
		if err := e.Forget(ctx, u); !errors.Is(err, ErrInvalidUser) {
			t.Errorf("Forget(%q) = %v, want ErrInvalidUser", u, err)
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
