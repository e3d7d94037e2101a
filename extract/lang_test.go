package extract

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor/lang"
	"github.com/memor-db/memor/lang/en"
)

var (
	_ Catalogued          = (*RuleExtractor)(nil)
	_ KnownNamesExtractor = (*RuleExtractor)(nil)
)

// TestRuleExtractorReadsCatalogue: a hedged intention is proposed only on
// a predicate the catalogue says is single-valued, so re-declaring a
// predicate's cardinality changes what the rule extractor proposes.
func TestRuleExtractorReadsCatalogue(t *testing.T) {
	ctx := context.Background()
	const text = "I might move to Boston."
	count := func(x Extractor) int {
		ops, err := x.(KnownNamesExtractor).ExtractKnown(ctx, text, time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(ops)
	}
	if n := count(NewRuleExtractor()); n != 1 {
		t.Fatalf("default catalogue: %d ops, want the hedged lives_in", n)
	}
	cat := en.NewCatalogue()
	cat.Register(lang.Predicate{Name: "lives_in", One: false})
	if n := count(NewRuleExtractor().WithCatalogue(cat)); n != 0 {
		t.Errorf("lives_in declared Many: %d ops, want none", n)
	}
}

// TestRuleExtractorDayFirstDateWithComma: the episode parser is en's, so
// "27 March, 2022" dates the move in 2022 (it was read as this year's 27
// March, the year left over).
func TestRuleExtractorDayFirstDateWithComma(t *testing.T) {
	ops, err := NewRuleExtractor().Extract(context.Background(), "I moved to Boston on 27 March, 2022.",
		time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2022, 3, 27, 0, 0, 0, 0, time.UTC)
	if len(ops) != 1 || ops[0].Object != "Boston" || !ops[0].ValidFrom.Equal(want) {
		t.Errorf("ops = %+v, want lives_in Boston from %v", ops, want)
	}
}
