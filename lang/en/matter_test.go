package en

import (
	"strings"
	"testing"
)

func TestMatterGloss(t *testing.T) {
	g := MatterGloss("amount_probate_" + DurationMatter)
	for _, w := range []string{"long", "take", "process", "timeline"} {
		if !strings.Contains(" "+g+" ", " "+w+" ") {
			t.Errorf("the gloss of a duration %q lacks %q", g, w)
		}
	}
	if g := MatterGloss("amount_grocery_budget"); g != "" {
		t.Errorf("a budget's extra gloss = %q, want none", g)
	}
	for _, w := range []string{"process", "timeline", "procedure"} {
		if !TimeMeasureNoun(w) || !DurationNoun(w) {
			t.Errorf("%q: not a time-measure and duration noun", w)
		}
	}
	if TimeMeasureNoun("time") {
		t.Error(`"time" is a time-measure noun: "screen time" would become "screen duration"`)
	}
}
