package extract

import (
	"context"
	"testing"
	"time"
)

// TestQuantities checks the stated figures on sentences written for it:
// the matter a figure is for (head and nearest modifier, singular, or the
// noun of a "for" phrase), the period as context, the rate in the value,
// and the clauses that state no figure.
func TestQuantities(t *testing.T) {
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	type q struct{ pred, obj, ctx string }
	cases := []struct {
		text string
		want []q
	}{
		{"My rent is $1,250 a month.", []q{{"amount_rent", "$1,250 monthly", ""}}},
		{"Our budget for groceries is $320.", []q{{"amount_grocery_budget", "$320", ""}}},
		{"We raised our grocery budget to $380 per month after the baby came.",
			[]q{{"amount_grocery_budget", "$380 monthly", ""}}},
		{"I have a travel fund of $2,400 for the trip.", []q{{"amount_travel_fund", "$2,400", ""}}},
		{"My $90 weekly fuel allowance barely lasts.", []q{{"amount_fuel_allowance", "$90 weekly", ""}}},
		{"I've cut my screen time from 6 hours to 3 hours a day.",
			[]q{{"amount_screen_time", "3 hours daily", ""}}},
		{"My commute was shortened to 25 minutes when the new line opened.",
			[]q{{"amount_commute", "25 minutes", ""}}},
		{"I set my July-August savings target at $900.",
			[]q{{"amount_saving_target", "$900", "july-august"}}},
		{"My garden plan for spring has 14 beds.", nil},
		{"I've lowered the heating budget to $60, and it still feels high.",
			[]q{{"amount_heating_budget", "$60", ""}}},
		// A question that opens with a statement: the statement counts.
		{"My pension contribution was raised to 8%, so what should I do with the rest?",
			[]q{{"amount_pension_contribution", "8%", ""}}},
		// No figure stated for a matter of the speaker's.
		{"Is my budget $500?", nil},
		{"If my rent goes up to $1,400, I will move.", nil},
		{"I want to raise my budget to $600.", nil},
		{"My budget is not $50.", nil},
		{"My rent was raised by $100.", nil},
		{"My sister Dana is 31.", nil},
		{"My dog Biscuit is 4.", nil},
		{"My 2 cats love the window.", nil},
		{"I'm planning to increase my savings to $300.", nil},
		{"She told me a $50,000 offer is on the table.", nil},
		{"The museum ticket is $25.", nil},
		{"My flight leaves at 10:30.", nil},
		{"My blood pressure was 120/80 this morning.", []q{{"amount_blood_pressure", "120/80", ""}}},
		{"I've reduced my caffeine to 2 cups a day.", []q{{"amount_caffeine", "2 cups daily", ""}}},
		// A figure that names, measures what follows, or is one of several.
		{"My order number is 55123.", nil},
		{"My phone number is 555-1234.", nil},
		{"My address is 221 Baker Street.", nil},
		{"My score was 3 points higher than last time.", nil},
		{"My kids were 5 minutes late.", nil},
		{"Our kids are 4 and 6.", nil},
		{"Our meeting was moved to 3 pm.", nil},
		{"My birthday is March 3.", nil},
		// The speaker's own phrase measured in time, and "it" resolved to
		// the nearest earlier phrase the figure's unit fits.
		{"I'm worried about the probate process taking 6-9 months in Montserrat.",
			[]q{{"amount_probate_duration", "6-9 months", ""}}},
		{"I'm worried about the probate process, so can you tell me how it was shortened to 5-7 months?",
			[]q{{"amount_probate_duration", "5-7 months", ""}}},
		{"I asked about the grocery budget and the meal plan, and it was raised to $600.",
			[]q{{"amount_grocery_budget", "$600", ""}}},
		{"I feel drained even after cutting my work hours to 45 weekly.",
			[]q{{"amount_work_hour", "45 weekly", ""}}},
		{"I'm trying to rebuild my motivation after reducing my work hours to 45 weekly.",
			[]q{{"amount_work_hour", "45 weekly", ""}}},
		{"I'm thinking about cutting my work hours to 30 weekly.", nil},
		{"I want to move after I cut my hours, so I might set my budget to $900.", nil},
		{"I've got a question about the probate timeline that Stephanie explained, which typically takes 6-9 months.",
			[]q{{"amount_probate_duration", "6-9 months", ""}}},
		{"My commute was shortened to 25 minutes.", []q{{"amount_commute", "25 minutes", ""}}},
		{"The movie took 3 hours.", nil},
		{"The process might take 6 months.", nil},
		{"I read the report, and it was increased to 40 pages.", nil},
		{"Can you explain how it was shortened to 5 months?", nil},
		{"I talked about the budget, so can you tell me how it could be raised to $600?", nil},
	}
	r := NewRuleExtractor()
	for _, c := range cases {
		ops, err := r.Extract(context.Background(), c.text, at)
		if err != nil {
			t.Fatal(err)
		}
		var got []q
		for _, o := range ops {
			if family(o.Predicate) == "amount_*" {
				if o.Subject != User || o.Kind != Assert {
					t.Errorf("%q: %s, want an assert about the user", c.text, render(o))
				}
				got = append(got, q{o.Predicate, o.Object, o.Context})
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.text, got[i], c.want[i])
			}
		}
	}
}
