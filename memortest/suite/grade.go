// Package suite is memortest's conformance suite without package testing:
// the cases and their format ([Cases], [Parse]), grading ([Grade],
// [Contains]) and reports ([Report], [Table]). A program that runs the
// suite (memor conformance) imports it instead of memortest, so that it
// does not link testing; memortest re-exports every name here and adds
// the *testing.T entry points.
package suite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/memor-db/memor/memortest/backend"
)

// Backend is the agent memory under test (see [backend.Backend]).
type Backend = backend.Backend

// Triple is one current fact, subject predicate object.
type Triple = backend.Triple

// Stater is implemented by backends that expose the facts they believe are
// true now (see [backend.Stater]).
type Stater = backend.Stater

// Sentinel errors. Every error the package returns wraps one of them.
var (
	// ErrCase reports a malformed case file or case.
	ErrCase = errors.New("memortest: bad case")
	// ErrBroken reports that a backend broke a rule of the suite; the
	// *Finding that wraps it says which one.
	ErrBroken = errors.New("memortest: rule broken")
	// ErrBackend reports that a backend call itself failed.
	ErrBackend = errors.New("memortest: backend error")
	// ErrHTTP reports an HTTP backend that answered outside the contract
	// (backend.ErrHTTP).
	ErrHTTP = backend.ErrHTTP
	// ErrInvalidInput is for backends to wrap when they refuse a request
	// as malformed (backend.ErrInvalidInput).
	ErrInvalidInput = backend.ErrInvalidInput
)

// DefaultK is how many results a case asks for when it does not say.
const DefaultK = 5

// Turn is one thing a user said, at a known instant.
type Turn struct {
	User string
	At   time.Time
	Text string
}

// Case is one conformance case: what was said, what is asked, and what may
// and may not be served. A case passes when some Expect string is contained
// in the served top-K (normalised, see [Contains]) and no Stale string is;
// for an abstention case (Abstain) only the second half applies.
type Case struct {
	// Name is kebab-case and unique: the subtest name.
	Name string
	// Category groups cases in reports and subtest paths (kebab-case).
	Category string
	// Rule says, in one sentence, what a backend must do to pass: it is
	// printed with every failure.
	Rule  string
	Turns []Turn
	// User asks Question.
	User     string
	Question string
	// Expect holds acceptable answers; one of them must be served.
	Expect []string
	// Stale holds strings that must not be served (superseded, ended,
	// contested, another user's, or simply unknown).
	Stale []string
	// Gone holds values that must no longer be current: a backend that is a
	// Stater must not list a triple with one of them as object.
	Gone []string
	// Abstain marks a case whose right answer is "nothing known".
	Abstain bool
	// K is the k passed to Query.
	K int
	// Line is where the case starts in its file, for error messages.
	File string
	Line int
}

// Leakage reports whether the case probes cross-user leakage: its Stale
// strings come from another user's turns.
func (c Case) Leakage() bool { return c.Category == "leakage" }

// TimeTravel reports whether the question asks about a past instant.
func (c Case) TimeTravel() bool { return c.Category == "time-travel" }

// Result is how one backend did on one case.
type Result struct {
	Case   Case
	Served []string
	// Hit is the Expect string found, if any.
	Hit string
	// StaleServed lists the Stale strings found in Served.
	StaleServed []string
	// StillCurrent lists Current triples whose object is a Gone value.
	StillCurrent []Triple
	// Err is a backend failure (not a rule violation).
	Err error
}

// Pass reports whether the case passed.
func (r Result) Pass() bool {
	if r.Err != nil || len(r.StaleServed) > 0 || len(r.StillCurrent) > 0 {
		return false
	}
	return r.Case.Abstain || r.Hit != ""
}

// Finding is the error describing a failed case. It wraps [ErrBroken] (or
// [ErrBackend] when a call failed) and says which rule was broken and what
// was served.
type Finding struct {
	Result
}

func (f *Finding) Error() string {
	c := f.Case
	var b strings.Builder
	fmt.Fprintf(&b, "memortest: %s/%s (%s:%d): ", c.Category, c.Name, c.File, c.Line)
	if f.Err != nil {
		fmt.Fprintf(&b, "backend failed: %v", f.Err)
		return b.String()
	}
	fmt.Fprintf(&b, "rule broken: %s\n", c.Rule)
	fmt.Fprintf(&b, "\tasked %s: %q (k=%d)\n", strconv.Quote(c.User), c.Question, c.K)
	switch {
	case len(f.StaleServed) > 0:
		fmt.Fprintf(&b, "\tserved must-not-appear %q\n", f.StaleServed)
	case len(f.StillCurrent) > 0:
		fmt.Fprintf(&b, "\tCurrent still lists %q\n", f.StillCurrent)
	case !c.Abstain && f.Hit == "":
		fmt.Fprintf(&b, "\tnone of the expected %q was served\n", c.Expect)
	}
	fmt.Fprintf(&b, "\tserved (%d):", len(f.Served))
	if len(f.Served) == 0 {
		b.WriteString(" nothing")
	}
	for i, s := range f.Served {
		fmt.Fprintf(&b, "\n\t  %d. %q", i+1, s)
	}
	return b.String()
}

// Unwrap lets errors.Is find ErrBroken or the backend's own error.
func (f *Finding) Unwrap() []error {
	if f.Err != nil {
		return []error{ErrBackend, f.Err}
	}
	return []error{ErrBroken}
}

// Normalize lowercases s, turns every rune that is not a letter or digit
// into a space and collapses runs of spaces, so that "user lives_in
// São Paulo." and "sao paulo" compare on words. Accents are kept.
func Normalize(s string) string {
	var b strings.Builder
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// Contains reports whether want, normalised, occurs in served, normalised,
// as a whole-word sequence: "cat" is in "user has_pet cat" but not in
// "vacation", "Paris" is not in "Parisian". This is the only grading the
// suite does: deterministic, no model involved.
func Contains(served, want string) bool {
	w := Normalize(want)
	if w == "" {
		return false
	}
	return strings.Contains(" "+Normalize(served)+" ", " "+w+" ")
}

// Grade runs one case against b: it resets the case's users, replays the
// turns, asks the question and grades what was served. A backend failure is
// reported in Result.Err, never as an error return; Grade returns an error
// only when ctx ends.
func Grade(ctx context.Context, b Backend, c Case) (Result, error) {
	r := Result{Case: c}
	users := c.users()
	for _, u := range users {
		if err := b.Reset(ctx, u); err != nil {
			r.Err = fmt.Errorf("reset %q: %w", u, err)
			return r, ctx.Err()
		}
	}
	for i, t := range c.Turns {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if err := b.Add(ctx, t.User, t.Text, t.At); err != nil {
			r.Err = fmt.Errorf("add turn %d: %w", i+1, err)
			return r, ctx.Err()
		}
	}
	k := c.K
	if k <= 0 {
		k = DefaultK
	}
	served, err := b.Query(ctx, c.User, c.Question, k)
	if err != nil {
		r.Err = fmt.Errorf("query: %w", err)
		return r, ctx.Err()
	}
	if len(served) > k {
		r.Err = fmt.Errorf("query returned %d results for k=%d", len(served), k)
	}
	r.Served = served
	for _, s := range served {
		for _, w := range c.Expect {
			if r.Hit == "" && Contains(s, w) {
				r.Hit = w
			}
		}
	}
	for _, w := range c.Stale {
		for _, s := range served {
			if Contains(s, w) {
				r.StaleServed = append(r.StaleServed, w)
				break
			}
		}
	}
	if st, ok := b.(Stater); ok && len(c.Gone) > 0 {
		cur, err := st.Current(ctx, c.User)
		if err != nil {
			r.Err = fmt.Errorf("current: %w", err)
			return r, ctx.Err()
		}
		for _, t := range cur {
			for _, g := range c.Gone {
				if Normalize(t.Object) == Normalize(g) {
					r.StillCurrent = append(r.StillCurrent, t)
				}
			}
		}
	}
	return r, ctx.Err()
}

// users lists the case's users, the asker first, without repeats.
func (c Case) users() []string {
	seen := map[string]bool{c.User: true}
	out := []string{c.User}
	for _, t := range c.Turns {
		if !seen[t.User] {
			seen[t.User] = true
			out = append(out, t.User)
		}
	}
	return out
}

// Check runs every built-in case against b, one after the other on the same
// backend (Reset between cases), and returns every finding joined with
// errors.Join, or nil. Each finding is a *[Finding] or names the Reset rule.
func Check(b Backend) error {
	return CheckContext(context.Background(), b)
}

// CheckContext is [Check] with a context.
func CheckContext(ctx context.Context, b Backend) error {
	cases, err := Cases()
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cases {
		r, err := Grade(ctx, b, c)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if !r.Pass() {
			errs = append(errs, &Finding{r})
		}
	}
	if err := CheckReset(ctx, b); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckReset verifies that Reset forgets one user and only that user.
func CheckReset(ctx context.Context, b Backend) error {
	const rule = "Reset(user) forgets everything about user and nothing about anyone else"
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	a, o := "memortest-reset-a", "memortest-reset-ab"
	for _, u := range []string{a, o} {
		if err := b.Reset(ctx, u); err != nil {
			return fmt.Errorf("%w: reset: %w", ErrBackend, err)
		}
	}
	if err := b.Add(ctx, a, "I live in Reykjavik.", at); err != nil {
		return fmt.Errorf("%w: add: %w", ErrBackend, err)
	}
	if err := b.Add(ctx, o, "I live in Helsinki.", at); err != nil {
		return fmt.Errorf("%w: add: %w", ErrBackend, err)
	}
	if err := b.Reset(ctx, a); err != nil {
		return fmt.Errorf("%w: reset: %w", ErrBackend, err)
	}
	var errs []error
	got, err := b.Query(ctx, a, "Where do I live?", DefaultK)
	if err != nil {
		return fmt.Errorf("%w: query: %w", ErrBackend, err)
	}
	for _, s := range got {
		if Contains(s, "Reykjavik") {
			errs = append(errs, fmt.Errorf("%w: reset/forget: %s; after Reset(%q) served %q", ErrBroken, rule, a, got))
			break
		}
	}
	got, err = b.Query(ctx, o, "Where do I live?", DefaultK)
	if err != nil {
		return fmt.Errorf("%w: query: %w", ErrBackend, err)
	}
	found := false
	for _, s := range got {
		found = found || Contains(s, "Helsinki")
	}
	if !found {
		errs = append(errs, fmt.Errorf("%w: reset/keep-others: %s; after Reset(%q), %q was served %q", ErrBroken, rule, a, o, got))
	}
	for _, u := range []string{a, o} {
		if err := b.Reset(ctx, u); err != nil {
			return fmt.Errorf("%w: reset: %w", ErrBackend, err)
		}
	}
	return errors.Join(errs...)
}
