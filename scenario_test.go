package memor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/memor-db/memor"
)

// fakeClock is a settable engine clock for tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// parseWhen reads "2026-01-10", "2026-01-10T08:00:00Z" or "now".
func parseWhen(t testing.TB, s string, clock *fakeClock) time.Time {
	t.Helper()
	if s == "now" {
		return clock.Now()
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339Nano} {
		if v, err := time.Parse(layout, s); err == nil {
			return v.UTC()
		}
	}
	t.Fatalf("bad time %q", s)
	return time.Time{}
}

func fmtTime(t time.Time) string {
	switch {
	case t.IsZero():
		return "∞"
	case t.Equal(t.Truncate(24 * time.Hour)):
		return t.UTC().Format("2006-01-02")
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func fmtFact(f memor.Fact, tx bool) string {
	s := fmt.Sprintf("%s [%s, %s) %s %s", f, fmtTime(f.ValidFrom), fmtTime(f.ValidTo), f.Status, f.Rule)
	if f.Reinforced > 1 {
		s += fmt.Sprintf(" ×%d", f.Reinforced)
	}
	if f.Confidence != 1 {
		s += fmt.Sprintf(" conf=%.2f", f.Confidence)
	}
	if tx {
		s += fmt.Sprintf(" tx=[%s, %s)", fmtTime(f.RecordedAt), fmtTime(f.ExpiredAt))
	}
	return s
}

func fmtFacts(fs []memor.Fact, tx bool) string {
	if len(fs) == 0 {
		return "(none)\n"
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(fmtFact(f, tx) + "\n")
	}
	return b.String()
}

func fmtDecisions(ds []memor.Decision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s: %s %s %s", d.Rule, d.Subject, d.Predicate, d.Object)
		if d.Context != "" {
			fmt.Fprintf(&b, " (%s)", d.Context)
		}
		if d.Detail != "" && !strings.HasPrefix(d.Detail, "reinforces ") && !strings.HasPrefix(d.Detail, "folded into ") {
			fmt.Fprintf(&b, " — %s", d.Detail)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "(no decisions)\n"
	}
	return b.String()
}

// splitTriple reads "subject | predicate | object".
func splitTriple(t testing.TB, line string) []string {
	parts := strings.Split(line, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if len(parts) < 2 {
		t.Fatalf("want 'subject | predicate | object', got %q", line)
	}
	return parts
}

// scenario runs one testdata file against a fresh engine.
type scenario struct {
	t     *testing.T
	dir   string
	clock *fakeClock
	e     *memor.Engine
	reg   [][]string
}

func (s *scenario) open() {
	e, err := memor.Open(s.dir, memor.Options{Clock: s.clock.Now})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range s.reg {
		c := memor.Many
		if r[1] == "one" {
			c = memor.One
		}
		if err := e.RegisterPredicate(r[0], c, r[2:]...); err != nil {
			s.t.Fatal(err)
		}
	}
	s.e = e
}

func (s *scenario) user(d *datadriven.TestData) string {
	u := "u1"
	if d.HasArg("user") {
		d.ScanArgs(s.t, "user", &u)
	}
	return u
}

func (s *scenario) when(d *datadriven.TestData, key string, def time.Time) time.Time {
	if !d.HasArg(key) {
		return def
	}
	var v string
	d.ScanArgs(s.t, key, &v)
	return parseWhen(s.t, v, s.clock)
}

func (s *scenario) run(d *datadriven.TestData) string {
	ctx := context.Background()
	t := s.t
	user := s.user(d)
	// Every command happens a minute after the previous one unless the
	// file sets the clock: transaction times stay distinct and readable.
	s.clock.Advance(time.Minute)
	switch d.Cmd {
	case "clock":
		var v string
		d.ScanArgs(t, "t", &v)
		s.clock.Set(parseWhen(t, v, s.clock))
		return ""
	case "register":
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			r := strings.Fields(line)
			s.reg = append(s.reg, r)
			c := memor.Many
			if r[1] == "one" {
				c = memor.One
			}
			if err := s.e.RegisterPredicate(r[0], c, r[2:]...); err != nil {
				t.Fatal(err)
			}
		}
		return ""
	case "assert":
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			p := splitTriple(t, line)
			in := memor.FactInput{Subject: p[0], Predicate: p[1], Object: p[2],
				ValidFrom: s.when(d, "valid", time.Time{})}
			if d.HasArg("ctx") {
				d.ScanArgs(t, "ctx", &in.Context)
			}
			if d.HasArg("conf") {
				d.ScanArgs(t, "conf", &in.Confidence)
			}
			ds, err := s.e.Assert(ctx, user, in)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			out.WriteString(fmtDecisions(ds))
		}
		return out.String()
	case "end":
		p := splitTriple(t, strings.TrimSpace(d.Input))
		in := memor.EndInput{Subject: p[0], Predicate: p[1], At: s.when(d, "valid", time.Time{})}
		if len(p) > 2 {
			in.Object = p[2]
		}
		if d.HasArg("ctx") {
			d.ScanArgs(t, "ctx", &in.Context)
		}
		ds, err := s.e.End(ctx, user, in)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtDecisions(ds)
	case "add":
		// Said now: the clock moves to the episode's time.
		at := s.when(d, "at", s.clock.Now())
		if at.After(s.clock.Now()) {
			s.clock.Set(at)
		}
		ep, err := s.e.Add(ctx, user, strings.TrimSpace(d.Input), memor.At(at))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		if err := s.e.Flush(ctx, user); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("episode %d\n", ep.Seq)
	case "state":
		fs, err := s.e.State(ctx, user)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtFacts(fs, false)
	case "asof":
		now := s.clock.Now()
		fs, err := s.e.AsOf(ctx, user, s.when(d, "valid", now), s.when(d, "known", now))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtFacts(fs, false)
	case "history":
		p := splitTriple(t, strings.TrimSpace(d.Input))
		fs, err := s.e.History(ctx, user, p[0], p[1])
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtFacts(fs, true)
	case "conflicts":
		fs, err := s.e.Conflicts(ctx, user)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtFacts(fs, false)
	case "log":
		ds, err := s.e.Log(ctx, user)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmtDecisions(ds)
	case "correct":
		// Input: subject | predicate | object | validFrom
		p := splitTriple(t, strings.TrimSpace(d.Input))
		fs, err := s.e.History(ctx, user, p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		vf := parseWhen(t, p[3], s.clock)
		for _, f := range fs {
			if strings.EqualFold(f.Object, p[2]) && f.ValidFrom.Equal(vf) {
				if err := s.e.Correct(ctx, user, f.ID); err != nil {
					return "error: " + err.Error() + "\n"
				}
				return "ok\n"
			}
		}
		return "no such fact\n"
	case "rebuild":
		if err := s.e.Rebuild(ctx, user); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "ok\n"
	case "reopen":
		if err := s.e.Close(); err != nil {
			t.Fatal(err)
		}
		s.open()
		return ""
	case "check":
		if err := s.e.Check(ctx); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "ok\n"
	case "forget":
		if err := s.e.Forget(ctx, user); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "ok\n"
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// TestScenarios runs the timelines in testdata/scenarios: each file is a
// story (San Francisco → Seattle, late history, contexts …) with the state,
// time-travel and audit answers memor must give. Rewrite expectations with
// go test -run TestScenarios -rewrite after checking the diff by hand.
func TestScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := &scenario{t: t, dir: filepath.Join(t.TempDir(), "db"), clock: newClock()}
		s.open()
		defer func() {
			if err := s.e.Check(context.Background()); err != nil {
				t.Errorf("Check after scenario: %v", err)
			}
			s.e.Close()
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return s.run(d) })
	})
}
