package memor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestFocusAnyPredicate: whom a question is about narrows the answer to
// them; a word of the question that no memory holds ("pet", with the fact
// named "adopted") does not empty it. The brother's pet is found through
// the relation fact, with its path, whatever the predicates are called.
func TestFocusAnyPredicate(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	if _, err := e.AssertBatch(ctx, "u", []memor.FactInput{
		{Subject: "user", Predicate: "brother", Object: "Alex"},
		{Subject: "Alex", Predicate: "adopted", Object: "golden retriever"},
	}); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Query(ctx, "u", "What pet does my brother have?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		if r.Fact != nil && r.Fact.Object == "golden retriever" {
			found = true
			if r.Path != "user → brother → Alex → adopted → golden retriever" {
				t.Errorf("path %q, want user → brother → Alex → adopted → golden retriever", r.Path)
			}
		}
	}
	if !found {
		t.Fatalf("the brother's golden retriever was not served:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "u", "Where does the user live and what pet does their family own?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("a question naming the user, who has facts, was answered with nothing")
	}
}

// TestFocusRegisteredPredicateGloss: a registered predicate's aliases are
// words it goes by: a question saying one of them is explained by the
// graph path through it.
func TestFocusRegisteredPredicateGloss(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{Predicates: []memor.Predicate{
		{Name: "adopted", Cardinality: memor.Many, Aliases: []string{"pet"}},
	}})
	ctx := context.Background()
	if _, err := e.AssertBatch(ctx, "u", []memor.FactInput{
		{Subject: "user", Predicate: "adopted", Object: "Rex"},
		{Subject: "user", Predicate: "likes", Object: "jazz"},
	}); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Query(ctx, "u", "Which pet do I have?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "Rex" || rs[0].Signals.Entity == 0 {
		t.Fatalf("want user adopted Rex first, reached through its gloss:\n%s", texts(rs))
	}
}

// TestAbstention: a question none of whose words any memory holds is
// answered with nothing; MinSupport < 0 turns that off, and a larger one
// refuses what matches only part of the question.
func TestAbstention(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	for _, s := range []string{"I live in Denver.", "I like sushi."} {
		if _, err := e.Add(ctx, "u", s, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := e.Query(ctx, "u", "What phone do I use?", memor.QueryOptions{})
	if err != nil || len(rs) != 0 {
		t.Fatalf("err %v, want nothing known:\n%s", err, texts(rs))
	}
	// One of four words known: below the default support.
	const weak = "which phone shop near Denver?"
	if rs, _ := e.Query(ctx, "u", weak, memor.QueryOptions{}); len(rs) != 0 {
		t.Fatalf("one word in four known: want nothing known:\n%s", texts(rs))
	}
	if rs, _ := e.Query(ctx, "u", weak, memor.QueryOptions{MinSupport: -1}); !served(rs, "Denver") {
		t.Fatalf("abstention off: want the Denver memories:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "u", "Do I like sushi?", memor.QueryOptions{})
	if err != nil || !served(rs, "sushi") {
		t.Fatalf("err %v, want the sushi memories:\n%s", err, texts(rs))
	}
	// "sushi" and "recipe": half the question is known.
	if rs, _ := e.Query(ctx, "u", "sushi recipe", memor.QueryOptions{}); len(rs) == 0 {
		t.Fatal("half a question known: answered with nothing at the default")
	}
	if rs, _ := e.Query(ctx, "u", "sushi recipe", memor.QueryOptions{MinSupport: 0.9}); len(rs) != 0 {
		t.Fatalf("MinSupport 0.9 answered half a question:\n%s", texts(rs))
	}
}

// addAt adds text said at day to user u, applied before it returns.
func addAt(t *testing.T, e *memor.Engine, day, text string) {
	t.Helper()
	if _, err := e.Add(context.Background(), "u", text, memor.At(at(day)), memor.Sync()); err != nil {
		t.Fatal(err)
	}
}

// TestServeEnds: an end with nothing in force says something still true
// ("I lost my job at Door Dash"): its episode is served, now and later.
func TestServeEnds(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	clock.Set(at("2026-05-01"))
	addAt(t, e, "2026-04-20", "I also lost my job at Door Dash this month.")
	rs, err := e.Query(context.Background(), "u", "Door Dash job", memor.QueryOptions{})
	if err != nil || !served(rs, "Door Dash") {
		t.Fatalf("err %v: the Door Dash episode was not served:\n%s", err, texts(rs))
	}
}

// TestServeRestatements: a restatement that also says something else (a
// dog-training course) is served while what it restates holds.
func TestServeRestatements(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	clock.Set(at("2026-05-01"))
	addAt(t, e, "2026-02-01", "I have a dog.")
	const course = "I have a dog, and this week I signed him up for an obedience training course at the shelter."
	addAt(t, e, "2026-03-01", course)
	st, err := e.State(context.Background(), "u")
	if err != nil {
		t.Fatal(err)
	}
	pets := 0
	for _, f := range st {
		if f.Predicate == "has_pet" {
			pets++
		}
	}
	if pets != 1 {
		t.Fatalf("want one has_pet fact (the second episode restates it), got %v", st)
	}
	rs, err := e.Query(context.Background(), "u", "Which training course did I sign my dog up for?", memor.QueryOptions{})
	if err != nil || !served(rs, "obedience training course") {
		t.Fatalf("err %v: the restating episode was not served:\n%s", err, texts(rs))
	}
}

// TestWithholdStale: "I live in Boston" alone is withheld once Boston is
// superseded, served as of when it held; an episode that says more than
// its stale claim is served.
func TestWithholdStale(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e, dir := openTest(t, memor.Options{Clock: clock.Now})
	ctx := context.Background()
	clock.Set(at("2026-06-01"))
	addAt(t, e, "2026-01-10", "I live in Boston.")
	addAt(t, e, "2026-02-10", "I live in Boston, and the harbour walks there got me into sailing and photography.")
	addAt(t, e, "2026-05-01", "I moved to Seattle.")
	withholdStale(t, e)
	// The rule's inputs are stored: the indexes loaded afresh, and the
	// episodes replayed by Rebuild, decide the same.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := memor.Open(dir, memor.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	withholdStale(t, e)
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	withholdStale(t, e)
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func withholdStale(t *testing.T, e *memor.Engine) {
	t.Helper()
	ctx := context.Background()
	rs, err := e.Query(ctx, "u", "Boston", memor.QueryOptions{K: 20, MinSupport: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Episode != nil && r.Episode.Text == "I live in Boston." {
			t.Fatalf("the superseded episode was served now:\n%s", texts(rs))
		}
	}
	if !served(rs, "sailing") {
		t.Fatalf("an episode saying more than its stale claim was withheld:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "u", "Boston", memor.QueryOptions{K: 20, ValidAt: at("2026-01-20"), MinSupport: -1})
	if err != nil || !served(rs, "[2026-01-10] I live in Boston.") {
		t.Fatalf("err %v: as of January the Boston episode is not stale:\n%s", err, texts(rs))
	}
}

// TestWithholdStaleRestatement: a restatement stands on the fact it
// restated: once that fact is ended, the restatement, like the first
// telling and the end that closed it, is withheld.
func TestWithholdStaleRestatement(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	clock.Set(at("2026-06-01"))
	addAt(t, e, "2026-01-10", "I have a hamster.")
	addAt(t, e, "2026-02-10", "I have a hamster.")
	rs, err := e.Query(context.Background(), "u", "hamster", memor.QueryOptions{K: 20})
	if err != nil || !served(rs, "[2026-02-10] I have a hamster.") {
		t.Fatalf("err %v: the restatement is not stale yet:\n%s", err, texts(rs))
	}
	addAt(t, e, "2026-05-01", "I no longer have a hamster.")
	rs, err = e.Query(context.Background(), "u", "hamster", memor.QueryOptions{K: 20, MinSupport: -1})
	if err != nil || served(rs, "hamster") {
		t.Fatalf("err %v: a stale hamster was served:\n%s", err, texts(rs))
	}
}

// TestWithholdStaleReplay: the same message told twice at the same instant
// (a replayed claim) goes stale with the first.
func TestWithholdStaleReplay(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	clock.Set(at("2026-06-01"))
	addAt(t, e, "2026-01-10", "I live in Boston.")
	addAt(t, e, "2026-01-10", "I live in Boston.")
	addAt(t, e, "2026-05-01", "I moved to Seattle.")
	rs, err := e.Query(context.Background(), "u", "Boston", memor.QueryOptions{K: 20, MinSupport: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Episode != nil && strings.Contains(r.Episode.Text, "Boston") {
			t.Fatalf("a stale Boston episode was served:\n%s", texts(rs))
		}
	}
}

// TestFocusNamedPersonRelation: a possessive of someone memor knows
// ("Caroline's brother") names a person through that someone's relation
// facts, as "my brother" does through the owner's: the answer is the
// brother's fact, reached along Caroline → brother → Alex, not
// Caroline's own facts nor the owner's brother's. A relation of a named
// person that nothing resolves and no memory says is nothing known.
func TestFocusNamedPersonRelation(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	if _, err := e.AssertBatch(ctx, "u", []memor.FactInput{
		{Subject: "Caroline", Predicate: "brother", Object: "Alex"},
		{Subject: "Caroline", Predicate: "lives_in", Object: "Boston"},
		{Subject: "Alex", Predicate: "lives_in", Object: "Austin"},
		{Subject: "user", Predicate: "brother", Object: "Sam"},
		{Subject: "Sam", Predicate: "lives_in", Object: "Denver"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"Where does Caroline's brother live?", "where does caroline’s older brother live"} {
		rs, err := e.Query(ctx, "u", q, memor.QueryOptions{Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.String() != "Alex lives_in Austin" {
			t.Fatalf("%q: first result is not the brother's city:\n%s", q, texts(rs))
		}
		if want := "Caroline → brother → Alex → lives_in → Austin"; rs[0].Path != want {
			t.Errorf("%q: path %q, want %q", q, rs[0].Path, want)
		}
		for _, r := range rs {
			if r.Fact != nil && (r.Fact.Object == "Boston" || r.Fact.Object == "Denver") {
				t.Errorf("%q served a fact about someone else: %s", q, r.Text())
			}
		}
		if foc := rs[0].Explanation.Query.Focus; foc.By != "relation" || foc.Relation != "brother" || !strings.Contains(foc.Asked, "does Alex live") {
			t.Errorf("%q: focus %+v, want by relation brother, asked of Alex", q, foc)
		}
	}
	// The owner's brother is still the owner's.
	rs, err := e.Query(ctx, "u", "Where does my brother live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.String() != "Sam lives_in Denver" {
		t.Fatalf("my brother: first result:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "u", "Where does Caroline's sister live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 0 {
		t.Fatalf("Caroline's sister, whom nothing names, was answered:\n%s", texts(rs))
	}
}

// TestFocusWithFirstPerson: a question that joins the owner to someone
// ("Priya and I") is about both: the owner's stated figure is served, and
// the latest figure for the matter ranks above the turn that gave the
// earlier one.
func TestFocusWithFirstPerson(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	day := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	for i, text := range []string{
		"My partner Priya works at the city library.",
		"Priya and I agreed on a plan: our budget for groceries is $400 a month.",
		"The heater in the hallway is making a clicking noise again.",
		"Priya found a recipe for lentil soup that we both liked.",
		"I've raised our grocery budget to $460 a month because prices went up.",
	} {
		if _, err := e.Add(ctx, "u", text, memor.At(day.AddDate(0, 0, 7*i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	// Priya is someone memor holds facts about, so the question names
	// someone in focus.
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "Priya", Predicate: "works_at", Object: "city library"}); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Query(ctx, "u", "What monthly grocery budget did Priya and I agree on?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newer, older := -1, -1
	for i, r := range rs {
		switch {
		case r.Fact != nil && r.Fact.Object == "$460 monthly" && newer < 0:
			newer = i
		case r.Episode != nil && strings.Contains(r.Episode.Text, "$400") && older < 0:
			older = i
		}
	}
	if newer < 0 || (older >= 0 && older < newer) {
		t.Fatalf("the $460 figure at %d, the $400 turn at %d; want the figure first:\n%s", newer, older, texts(rs))
	}
}
