package en

import "testing"

func TestRateAt(t *testing.T) {
	for _, c := range []struct {
		words []string
		rate  string
		n     int
	}{
		{[]string{"monthly"}, "monthly", 1},
		{[]string{"per", "month"}, "monthly", 2},
		{[]string{"a", "week"}, "weekly", 2},
		{[]string{"/", "yr"}, "yearly", 2},
		{[]string{"annual", "budget"}, "yearly", 1},
		{[]string{"a", "book"}, "", 0},
		{[]string{"month"}, "", 0},
		{nil, "", 0},
	} {
		if r, n := RateAt(c.words, 0); r != c.rate || n != c.n {
			t.Errorf("RateAt(%q) = %q, %d; want %q, %d", c.words, r, n, c.rate, c.n)
		}
	}
}

func TestPeriodWord(t *testing.T) {
	for w, want := range map[string]bool{
		"january": true, "sept": true, "winter": true, "2024": true, "april-june": true,
		"may": false, "mar": false, "2024-budget": false, "budget": false, "1200": false, "": false,
	} {
		if got := PeriodWord(w); got != want {
			t.Errorf("PeriodWord(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestSingular(t *testing.T) {
	for w, want := range map[string]string{
		"groceries": "grocery", "books": "book", "boxes": "box", "watches": "watch",
		"bus": "bus", "glass": "glass", "analysis": "analysis", "budget": "budget", "gas": "gas",
	} {
		if got := Singular(w); got != want {
			t.Errorf("Singular(%q) = %q, want %q", w, got, want)
		}
	}
}
