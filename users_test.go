package memor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// badUserIDs are refused by ValidUser and by every user-scoped call.
var badUserIDs = map[string]string{
	"empty":                   "",
	"one space":               " ",
	"white space":             " \t\n\r\v\f",
	"no-break space":          "\u00a0",
	"ideographic space":       "\u3000",
	"zero-width space":        "\u200b",
	"space and zero-width":    " \u200b\u2060 ",
	"NUL":                     "\x00",
	"inner NUL":               "a\x00b",
	"trailing NUL":            "alice\x00",
	"SOH":                     "a\x01",
	"tab inside":              "a\tb",
	"newline inside":          "alice\nbob",
	"carriage return":         "alice\r",
	"escape sequence":         "a\x1b[31m",
	"DEL":                     "a\x7f",
	"C1 next line":            "a\u0085b",
	"C1 control sequence":     "a\u009bb",
	"invalid UTF-8":           "\xff",
	"other invalid UTF-8":     "\xfe",
	"truncated UTF-8":         "caf\xc3",
	"surrogate half as UTF-8": "\xed\xa0\x80",
	"too long":                strings.Repeat("x", memor.MaxUserBytes+1),
}

// goodUserIDs are distinct users.
var goodUserIDs = []string{"a", "A", "a b", " a", "a ", "a/b", "/", "é日本", "ユーザー", "🙂", "👨\u200d👩\u200d👧",
	"\u200ba", "\ufffd", "ab", strings.Repeat("x", memor.MaxUserBytes)}

func TestValidUser(t *testing.T) {
	t.Parallel()
	for name, id := range badUserIDs {
		if err := memor.ValidUser(id); !errors.Is(err, memor.ErrInvalidUser) {
			t.Errorf("%s %q: ValidUser = %v, want ErrInvalidUser", name, id, err)
		}
	}
	for _, id := range goodUserIDs {
		if err := memor.ValidUser(id); err != nil {
			t.Errorf("%q: ValidUser = %v", id, err)
		}
	}
}

// TestUserIDEveryEntryPoint: every user-scoped method of the engine
// refuses each bad ID with ErrInvalidUser and stores nothing (Episodes
// and Forget: see below), and the good
// IDs are distinct users.
func TestUserIDEveryEntryPoint(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	fact := memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Paris", ValidFrom: day(1)}
	id := strings.Repeat("ab", 16)
	calls := map[string]func(user string) error{
		"Add":         func(u string) error { _, err := e.Add(ctx, u, "I live in Paris."); return err },
		"Add Sync":    func(u string) error { _, err := e.Add(ctx, u, "I live in Paris.", memor.Sync()); return err },
		"Assert":      func(u string) error { _, err := e.Assert(ctx, u, fact); return err },
		"AssertBatch": func(u string) error { _, err := e.AssertBatch(ctx, u, []memor.FactInput{fact, fact}); return err },
		"End": func(u string) error {
			_, err := e.End(ctx, u, memor.EndInput{Subject: "user", Predicate: "lives_in", At: day(2)})
			return err
		},
		"Correct":   func(u string) error { return e.Correct(ctx, u, id) },
		"State":     func(u string) error { _, err := e.State(ctx, u); return err },
		"AsOf":      func(u string) error { _, err := e.AsOf(ctx, u, day(1), time.Now()); return err },
		"History":   func(u string) error { _, err := e.History(ctx, u, "user", "lives_in"); return err },
		"Conflicts": func(u string) error { _, err := e.Conflicts(ctx, u); return err },
		"Log":       func(u string) error { _, err := e.Log(ctx, u); return err },
		"Query":     func(u string) error { _, err := e.Query(ctx, u, "Paris", memor.QueryOptions{}); return err },
		"Context":   func(u string) error { _, err := e.Context(ctx, u, "Paris"); return err },
		"Freshness": func(u string) error { _, err := e.Freshness(ctx, u); return err },
		"WaitFor":   func(u string) error { return e.WaitFor(ctx, u, 1) },
		"Flush":     func(u string) error { return e.Flush(ctx, u) },
		"Failed":    func(u string) error { _, err := e.Failed(ctx, u); return err },
		"Retry":     func(u string) error { _, err := e.Retry(ctx, u); return err },
		"Rebuild":   func(u string) error { return e.Rebuild(ctx, u) },
	}
	for name, u := range badUserIDs {
		for call, f := range calls {
			if err := f(u); !errors.Is(err, memor.ErrInvalidUser) {
				t.Errorf("%s(%s %q) = %v, want ErrInvalidUser", call, name, u, err)
			}
		}
	}
	// Episodes and Forget still reach a user an earlier version stored
	// under an ID ValidUser now refuses (users_internal_test.go); they
	// refuse what no version stored.
	for _, u := range []string{"", "\xff", "\xfe", "caf\xc3", "\xed\xa0\x80", strings.Repeat("x", memor.MaxUserBytes+1)} {
		if _, err := e.Episodes(ctx, u); !errors.Is(err, memor.ErrInvalidUser) {
			t.Errorf("Episodes(%q) = %v, want ErrInvalidUser", u, err)
		}
		if err := e.Forget(ctx, u); !errors.Is(err, memor.ErrInvalidUser) {
			t.Errorf("Forget(%q) = %v, want ErrInvalidUser", u, err)
		}
	}
	if us, err := e.Users(ctx); err != nil || len(us) != 0 {
		t.Fatalf("after refused calls, Users = %q, %v", us, err)
	}
	for i, u := range goodUserIDs {
		if _, err := e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "city" + strings.Repeat("x", i), ValidFrom: day(1)}); err != nil {
			t.Fatalf("Assert(%q): %v", u, err)
		}
	}
	for i, u := range goodUserIDs {
		fs, err := e.State(ctx, u)
		if err != nil || len(fs) != 1 || fs[0].Object != "city"+strings.Repeat("x", i) {
			t.Fatalf("State(%q) = %v, %v", u, fs, err)
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
