package memortest_test

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memor-db/memor/memortest"
)

// A backend author must be able to use memortest without compiling memor's
// engine (Pebble and the rest): the suite, the naive baseline and the
// reference memory import only the standard library and each other.
func TestStandardLibraryOnly(t *testing.T) {
	goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-test",
		"-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".", "./naive", "./reference").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const own = "github.com/memor-db/memor/memortest"
	n := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "[") { // "pkg [pkg.test]": the bracket half of a test variant
			continue
		}
		n++
		if p != own && !strings.HasPrefix(p, own+"/") && !strings.HasPrefix(p, own+".") && !strings.HasPrefix(p, own+"_test") {
			t.Errorf("memortest depends on %s, outside the standard library", p)
		}
	}
	if n == 0 {
		t.Fatal("go list listed nothing: the check checked nothing")
	}
}

// The categories are the ones the package documents, and the topics the
// suite promises (updates of location, job, role …; additive instruments,
// pets …; a change two hops away) each have cases, found by case name.
func TestCasesCoverTopics(t *testing.T) {
	cases, err := memortest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []struct{ category, name string }{
		{"update", `location`}, {"update", `employer`}, {"update", `job-title`}, {"update", `role`},
		{"update", `school`}, {"update", `diet`}, {"update", `marital`}, {"update", `phone`}, {"update", `favou?r`},
		{"additive", `instruments`}, {"additive", `pets`}, {"additive", `languages`}, {"additive", `foods`}, {"additive", `allergies`},
		{"duplicate", ``},
		{"multi-hop", `brother|sister|mother|father`}, {"multi-hop", `friend`},
		{"multi-hop", `(brother|sister|mother|father).*(moved|changed)`}, // a change two hops away
		{"late-history", ``}, {"same-time", ``}, {"low-confidence", ``}, {"coexist", ``}, {"end", ``},
		{"time-travel", ``}, {"outdated-phrasing", ``}, {"nothing-known", ``}, {"leakage", ``},
	} {
		re := regexp.MustCompile(topic.name)
		n := 0
		for _, c := range cases {
			if c.Category == topic.category && re.MatchString(c.Name) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no %s case about %q", topic.category, topic.name)
		}
	}
	// Multi-hop changes are really two hops: the question names the
	// relation, not the relative.
	i := slices.IndexFunc(cases, func(c memortest.Case) bool { return c.Name == "multi-hop-brother-moved" })
	if i < 0 || strings.Contains(cases[i].Question, "Alex") || len(cases[i].Stale) == 0 {
		t.Errorf("multi-hop-brother-moved is not a two-hop change: %+v", cases[i])
	}
	// Abstentions must list what would be wrong to serve; leakage probes
	// must involve a second user.
	for _, c := range cases {
		if c.Leakage() {
			other := false
			for _, tr := range c.Turns {
				other = other || tr.User != c.User
			}
			if !other {
				t.Errorf("%s: a leakage probe with one user", c.Name)
			}
		}
	}
}

// Run names each subtest category/name, so that -run and -skip select
// cases by their testdata names, and gives each case a fresh backend.
func TestRunSubtestNames(t *testing.T) {
	cases, err := memortest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	t.Run("suite", func(t *testing.T) {
		memortest.Run(t, func(t *testing.T) memortest.Backend {
			names = append(names, t.Name())
			return ref()
		})
	})
	if len(names) != len(cases)+1 {
		t.Fatalf("%d backends made for %d cases and the reset check", len(names), len(cases))
	}
	for i, c := range cases {
		if want := t.Name() + "/suite/" + c.Category + "/" + c.Name; !slices.Contains(names, want) {
			t.Errorf("case %d: no subtest %s", i, want)
		}
	}
	if want := t.Name() + "/suite/reset"; !slices.Contains(names, want) {
		t.Errorf("no subtest %s", want)
	}
}

// Check returns one *Finding per failed case, each naming its case and
// rule and showing what was served.
func TestCheckJoinsEveryFinding(t *testing.T) {
	res := results(t, stale)
	failed := map[string]bool{}
	for name, r := range res {
		if !r.Pass() {
			failed[name] = true
		}
	}
	err := memortest.Check(stale())
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Check error %T is not a joined error", err)
	}
	got := map[string]bool{}
	for _, e := range joined.Unwrap() {
		var f *memortest.Finding
		if !errors.As(e, &f) {
			t.Errorf("not a *Finding: %v", e)
			continue
		}
		got[f.Case.Name] = true
		msg := f.Error()
		for _, want := range []string{f.Case.Category + "/" + f.Case.Name, "rule broken: " + f.Case.Rule, "served ("} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: finding does not say %q:\n%s", f.Case.Name, want, msg)
			}
		}
		for _, s := range f.Served {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: finding does not show served %q", f.Case.Name, s)
			}
		}
	}
	if len(got) != len(failed) {
		t.Errorf("Check reported %d findings, Grade fails %d cases", len(got), len(failed))
	}
	for name := range failed {
		if !got[name] {
			t.Errorf("%s: failed but not reported by Check", name)
		}
	}
}

// scripted serves fixed results, to check how Grade reads them.
type scripted struct {
	memortest.Backend
	served []string
}

func (s scripted) Query(context.Context, string, string, int) ([]string, error) { return s.served, nil }

func TestFindingMessages(t *testing.T) {
	c := memortest.Case{Name: "x", Category: "update", Rule: "the newer city wins", User: "u", Question: "Where do I live?",
		Turns: []memortest.Turn{{User: "u", Text: "I live in Oslo."}}, Expect: []string{"Denver"}, Stale: []string{"Seattle"}, K: 2}
	for _, tc := range []struct {
		served []string
		want   string
		pass   bool
	}{
		{[]string{"user lives_in Denver"}, "", true},
		{[]string{"user lives_in Denver", "user lives_in Seattle"}, `served must-not-appear ["Seattle"]`, false},
		{[]string{"user lives_in Oslo"}, `none of the expected ["Denver"] was served`, false},
		{nil, "served (0): nothing", false},
		// More than k results is a contract breach, even if right.
		{[]string{"Denver", "Denver", "Denver"}, "3 results for k=2", false},
	} {
		r, err := memortest.Grade(t.Context(), scripted{ref(), tc.served}, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Pass() != tc.pass {
			t.Errorf("served %q: pass = %v", tc.served, r.Pass())
		}
		if tc.pass {
			continue
		}
		msg := (&memortest.Finding{Result: r}).Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("served %q: finding lacks %q:\n%s", tc.served, tc.want, msg)
		}
		if r.Err == nil && !strings.Contains(msg, "rule broken: the newer city wins") {
			t.Errorf("served %q: finding does not name the rule:\n%s", tc.served, msg)
		}
	}
}
