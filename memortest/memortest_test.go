package memortest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
	"github.com/memor-db/memor/memortest/reference"
)

func ref() memortest.Backend   { return reference.New(reference.Options{}) }
func stale() memortest.Backend { return reference.New(reference.Options{KeepStale: true}) }
func leaky() memortest.Backend { return reference.New(reference.Options{SharedUsers: true}) }

func TestCases(t *testing.T) {
	cases, err := memortest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 60 {
		t.Errorf("%d cases, want at least 60", len(cases))
	}
	count := map[string]int{}
	for _, c := range cases {
		count[c.Category]++
		if len(c.Turns) == 0 {
			t.Errorf("%s: no turns", c.Name)
		}
		for _, tr := range c.Turns {
			if tr.At.IsZero() {
				t.Errorf("%s: undated turn", c.Name)
			}
		}
	}
	for _, cat := range []string{"update", "additive", "duplicate", "multi-hop", "late-history", "same-time",
		"low-confidence", "coexist", "end", "time-travel", "outdated-phrasing", "nothing-known", "leakage"} {
		if count[cat] < 2 {
			t.Errorf("category %s has %d cases, want at least 2", cat, count[cat])
		}
	}
	t.Logf("%d cases: %v", len(cases), count)
}

func TestParseErrors(t *testing.T) {
	for name, src := range map[string]string{
		"before case":   "rule x\n",
		"bad name":      "case Bad_Name\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nexpect y\n",
		"no rule":       "case a\ncategory a\nturn 2025-01-01: x\nask: q\nexpect y\n",
		"no expect":     "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\n",
		"abstain+exp":   "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nexpect y\nabstain\n",
		"abstain bare":  "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nabstain\n",
		"bad time":      "case a\ncategory a\nrule r\nturn yesterday: x\nask: q\nexpect y\n",
		"bad quote":     "case a\ncategory a\nrule r\nturn 2025-01-01 \"a: x\nask: q\nexpect y\n",
		"unknown key":   "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nexpect y\nfoo bar\n",
		"overlap":       "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nexpect New York\nstale York\n",
		"bad k":         "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nexpect y\nk 0\n",
		"spaced user":   "case a\ncategory a\nrule r\nturn 2025-01-01 a b: x\nask: q\nexpect y\n",
		"two questions": "case a\ncategory a\nrule r\nturn 2025-01-01: x\nask: q\nask: q2\nexpect y\n",
	} {
		if _, err := memortest.Parse("t.case", []byte(src)); !errors.Is(err, memortest.ErrCase) {
			t.Errorf("%s: err = %v, want ErrCase", name, err)
		}
	}
	cs, err := memortest.Parse("t.case", []byte("# c\ncase a-b\ncategory x\nrule r\nturn 2025-01-01T10:00:00+02:00 \"a\\x00b\": I live in Oslo.\nask bob: Where?\nexpect Oslo\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if c.Turns[0].User != "a\x00b" || c.User != "bob" || c.K != memortest.DefaultK || !c.Turns[0].At.Equal(time.Date(2025, 1, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("parsed %+v", c)
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		served, want string
		ok           bool
	}{
		{"user lives_in Denver", "denver", true},
		{"2025-06-02: I moved to Denver.", "Denver", true},
		{"user uses_device iPhone 13", "iPhone 13", true},
		{"user uses_device iPhone 13", "iPhone 1", false},
		{"I went on vacation", "cat", false},
		{"Parisian cafés", "Paris", false},
		{"São Paulo!", "são paulo", true},
		{"anything", "", false},
		{"user marital_status divorced", "married", false},
	} {
		if got := memortest.Contains(tc.served, tc.want); got != tc.ok {
			t.Errorf("Contains(%q, %q) = %v", tc.served, tc.want, got)
		}
	}
}

// results grades every case on a fresh backend from newB.
func results(t *testing.T, newB func() memortest.Backend) map[string]memortest.Result {
	t.Helper()
	cases, err := memortest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]memortest.Result{}
	for _, c := range cases {
		r, err := memortest.Grade(t.Context(), newB(), c)
		if err != nil {
			t.Fatal(err)
		}
		out[c.Name] = r
	}
	return out
}

// supersession lists the categories whose stale strings are values the
// asking subject once held in the same slot (superseded, ended, contested,
// hedged, or true at another time), so that a memory which keeps every
// value serves them.
var supersession = []string{"update", "end", "late-history", "same-time", "low-confidence", "outdated-phrasing", "time-travel"}

// The backend that keeps every value must fail exactly the cases about a
// value that no longer holds (and for serving it, or still listing it as
// current), and pass every other case: additive facts, duplicates without
// a change, relatives' unchanged facts, coexisting contexts, abstentions
// and leakage probes.
func TestStaleBackendFailsTheRightCases(t *testing.T) {
	res := results(t, stale)
	failed := 0
	for name, r := range res {
		c := r.Case
		mustFail := len(c.Stale) > 0 && (len(c.Gone) > 0 || slices.Contains(supersession, c.Category))
		switch {
		case mustFail && r.Pass():
			t.Errorf("%s: stale backend passed a case about a value that no longer holds", name)
		case mustFail && len(r.StaleServed) == 0 && len(r.StillCurrent) == 0:
			t.Errorf("%s: stale backend failed, but not for serving the stale value: %v", name, &memortest.Finding{Result: r})
		case mustFail && len(c.Gone) > 0 && len(r.StillCurrent) == 0:
			t.Errorf("%s: stale backend's Current does not list the gone value %q", name, c.Gone)
		case !mustFail && !r.Pass():
			t.Errorf("%s: stale backend failed a case that needs no supersession: %v", name, &memortest.Finding{Result: r})
		}
		if !r.Pass() {
			failed++
		}
	}
	// Every category that is about change must be caught, each in full.
	for _, cat := range supersession {
		n := 0
		for _, r := range res {
			if r.Case.Category == cat && !r.Pass() {
				n++
			}
		}
		if n == 0 {
			t.Errorf("category %s: the stale backend fails no case", cat)
		}
	}
	t.Logf("stale backend fails %d of %d cases", failed, len(res))
}

// The backend that shares one memory between users must fail every
// leakage probe and nothing else.
func TestLeakyBackendFailsLeakage(t *testing.T) {
	for name, r := range results(t, leaky) {
		if r.Case.Leakage() == r.Pass() {
			t.Errorf("%s: leaky backend pass = %v", name, r.Pass())
		}
	}
}

func TestCheck(t *testing.T) {
	if err := memortest.Check(ref()); err != nil {
		t.Fatalf("reference: %v", err)
	}
	err := memortest.Check(stale())
	if !errors.Is(err, memortest.ErrBroken) {
		t.Fatalf("stale backend: err = %v, want ErrBroken", err)
	}
	var f *memortest.Finding
	if !errors.As(err, &f) {
		t.Fatal("no *Finding in the joined error")
	}
	msg := err.Error()
	for _, want := range []string{"update/update-location-moved", "rule broken: A newer value", `served must-not-appear ["Seattle"]`, `"user lives_in Seattle"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("finding does not say %q:\n%s", want, msg)
		}
	}
}

// A backend whose Reset forgets nothing, or too much, is reported.
type badReset struct {
	memortest.Backend
	all bool
}

func (b badReset) Reset(ctx context.Context, user string) error {
	if b.all {
		return b.Backend.Reset(ctx, "")
	}
	return nil
}

func TestResetRule(t *testing.T) {
	err := memortest.Check(badReset{Backend: ref()})
	if err == nil || !strings.Contains(err.Error(), "reset/forget") {
		t.Errorf("Reset that forgets nothing: %v", err)
	}
	err = memortest.Check(badReset{Backend: leaky(), all: true})
	if err == nil || !strings.Contains(err.Error(), "leakage") {
		t.Errorf("leaky backend: %v", err)
	}
}

type failing struct{ memortest.Backend }

var errDown = errors.New("down")

func (failing) Query(context.Context, string, string, int) ([]string, error) { return nil, errDown }

func TestBackendErrors(t *testing.T) {
	err := memortest.Check(failing{ref()})
	if !errors.Is(err, memortest.ErrBackend) || !errors.Is(err, errDown) {
		t.Errorf("err = %v", err)
	}
}

// A Stater that still lists a gone value fails even when Query is right.
type lyingStater struct{ memortest.Backend }

func (lyingStater) Current(context.Context, string) ([]memortest.Triple, error) {
	return []memortest.Triple{{Subject: "user", Predicate: "lives_in", Object: "Seattle"}}, nil
}

func TestStater(t *testing.T) {
	cs, _ := memortest.Cases()
	i := slices.IndexFunc(cs, func(c memortest.Case) bool { return c.Name == "update-location-moved" })
	r, err := memortest.Grade(t.Context(), lyingStater{ref()}, cs[i])
	if err != nil {
		t.Fatal(err)
	}
	if r.Pass() || len(r.StillCurrent) != 1 {
		t.Errorf("lying Stater passed: %+v", r)
	}
	if !strings.Contains((&memortest.Finding{Result: r}).Error(), "Current still lists") {
		t.Error("finding does not mention Current")
	}
}

func TestHTTPBackend(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/mem", memortest.HTTPHandler(ref())))
	defer srv.Close()
	memortest.Run(t, func(*testing.T) memortest.Backend { return memortest.HTTPBackend(srv.URL+"/mem/", srv.Client()) })
}

func TestHTTPBackendErrors(t *testing.T) {
	ctx := t.Context()
	for name, h := range map[string]http.HandlerFunc{
		"status":     func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
		"no results": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) },
		"not json":   func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`<html>`)) },
	} {
		srv := httptest.NewServer(h)
		b := memortest.HTTPBackend(srv.URL, srv.Client())
		if _, err := b.Query(ctx, "u", "q", 3); !errors.Is(err, memortest.ErrHTTP) {
			t.Errorf("%s: err = %v, want ErrHTTP", name, err)
		}
		srv.Close()
	}
	srv := httptest.NewServer(memortest.HTTPHandler(ref()))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/add", "application/json", strings.NewReader(`{"user":"u","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("add without at: status %d", resp.StatusCode)
	}
	for _, body := range []string{`{"user":"u","q":"hi","k":1}]`, `{"user":"u","q":"hi","k":1} {"user":"v"}`} {
		resp, err := srv.Client().Post(srv.URL+"/query", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("query body %s: status %d, want 400", body, resp.StatusCode)
		}
	}
	b := memortest.HTTPBackend(srv.URL, nil)
	if got, err := b.Query(ctx, "nobody", "Where do I live?", 3); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty query = %#v, %v; want an empty, non-nil list", got, err)
	}
}

func arms() map[string]memortest.Backend {
	return map[string]memortest.Backend{
		"reference":    ref(),
		"naive":        naive.New(),
		"broken-stale": stale(),
		"broken-leaky": leaky(),
	}
}

func TestReport(t *testing.T) {
	tab, err := memortest.Report(t.Context(), arms())
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]memortest.Row{}
	for _, r := range tab.Rows {
		rows[r.Arm] = r
	}
	if r := rows["reference"]; r.Passed != r.Cases || r.Stale != 0 || r.Leaks != 0 {
		t.Errorf("reference: %+v", r)
	}
	if n, r := rows["naive"], rows["reference"]; n.Stale <= r.Stale || n.Passed >= r.Passed {
		t.Errorf("naive is not measurably worse: stale %d vs %d, passed %d vs %d", n.Stale, r.Stale, n.Passed, r.Passed)
	}
	if r := rows["broken-stale"]; r.Stale == 0 {
		t.Errorf("broken-stale served no stale answer: %+v", r)
	}
	if r := rows["broken-leaky"]; r.Leaks != r.LeakProbes {
		t.Errorf("broken-leaky leaked %d of %d", r.Leaks, r.LeakProbes)
	}
	md := tab.Markdown()
	if !strings.Contains(md, "| reference | ") || !strings.Contains(md, "| time-travel |") {
		t.Errorf("markdown:\n%s", md)
	}
	t.Logf("\n%s", md)
	if path := os.Getenv("MEMORTEST_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHTTPUserPrefix: over HTTP the suite's users live under UserPrefix,
// so that a memory serving real users keeps them apart; HTTPHandler
// refuses every other user (and text that is not UTF-8, which JSON would
// turn into U+FFFD), and touches nothing for them.
func TestHTTPUserPrefix(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	seen := map[string]bool{}
	inner := ref()
	rec := recorder{Backend: inner, seen: func(u string) { mu.Lock(); seen[u] = true; mu.Unlock() }}
	srv := httptest.NewServer(memortest.HTTPHandler(rec))
	defer srv.Close()
	b := memortest.HTTPBackend(srv.URL, srv.Client())
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := b.Add(ctx, "me", "I live in Oslo.", at); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Query(ctx, "me", "Where do I live?", 3); err != nil || len(got) == 0 {
		t.Fatalf("query through the prefix: %q %v", got, err)
	}
	if err := b.Reset(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	if !seen[memortest.UserPrefix+"me"] || seen["me"] || len(seen) != 1 {
		t.Errorf("the backend saw users %v, want only %q", seen, memortest.UserPrefix+"me")
	}
	// The real user "me" of the memory behind the handler.
	if err := inner.Add(ctx, "me", "I live in Lima.", at); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body string }{
		{"/reset", `{"user":"me"}`},
		{"/reset", `{"user":""}`},
		{"/reset", `{"user":"memortest"}`},
		{"/reset", `{"user":"Memortest/me"}`},
		{"/add", `{"user":"me","text":"I live in Mordor.","at":"2025-02-01T00:00:00Z"}`},
		{"/query", `{"user":"me","q":"Where do I live?","k":3}`},
		{"/add", "{\"user\":\"" + memortest.UserPrefix + "\xff\",\"text\":\"I live in Oslo.\",\"at\":\"2025-02-01T00:00:00Z\"}"},
		{"/add", `{"user":"` + memortest.UserPrefix + `x","text":"I live in Oslo.\ud800","at":"2025-02-01T00:00:00Z"}`},
	} {
		resp, err := srv.Client().Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %q: status %d, want 400", c.path, c.body, resp.StatusCode)
		}
		if strings.Contains(c.body, `"me"`) && !strings.Contains(string(msg), memortest.UserPrefix) {
			t.Errorf("%s %q: the refusal %q does not name the prefix", c.path, c.body, msg)
		}
	}
	if got, _ := inner.Query(ctx, "me", "Where do I live?", 3); len(got) == 0 || !memortest.Contains(got[0], "Lima") {
		t.Errorf("the real user me after the refused calls: %q, want Lima", got)
	}
	// The client refuses to send what JSON cannot carry.
	if err := b.Add(ctx, "a\xffb", "I live in Oslo.", at); !errors.Is(err, memortest.ErrHTTP) {
		t.Errorf("Add with a user that is not UTF-8: %v, want ErrHTTP", err)
	}
	if err := b.Add(ctx, "a", "I live in Oslo.\xfe", at); !errors.Is(err, memortest.ErrHTTP) {
		t.Errorf("Add with text that is not UTF-8: %v, want ErrHTTP", err)
	}
}

type recorder struct {
	memortest.Backend
	seen func(string)
}

func (r recorder) Add(ctx context.Context, user, text string, at time.Time) error {
	r.seen(user)
	return r.Backend.Add(ctx, user, text, at)
}

func (r recorder) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	r.seen(user)
	return r.Backend.Query(ctx, user, q, k)
}

func (r recorder) Reset(ctx context.Context, user string) error {
	r.seen(user)
	return r.Backend.Reset(ctx, user)
}
