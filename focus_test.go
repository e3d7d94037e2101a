package memor_test

import (
	"context"
	"testing"

	"github.com/memor-db/memor"
)

// TestFocusAnyPredicate: whom a question is about narrows the answer to
// them; a word of the question that no memory holds ("pet", with the fact
// named "adopted") does not empty it. The brother's pet is found through
// the relation fact, with its path, whatever the predicates are called.
func TestFocusAnyPredicate(t *testing.T) {
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
