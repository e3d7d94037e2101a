package en

import (
	"testing"
	"time"
)

var said = time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// TestParseDates: absolute dates in the orders people write them, each
// with the extent it names.
func TestParseDates(t *testing.T) {
	for _, tt := range []struct {
		expr  string
		want  time.Time
		grain Grain
		dated bool
	}{
		{"27 March, 2022", date(2022, 3, 27), Day, true},
		{"on 27 March, 2022", date(2022, 3, 27), Day, true},
		{"27th of March 2022", date(2022, 3, 27), Day, true},
		{"March 27th, 2022", date(2022, 3, 27), Day, true},
		{"March 27, 2022", date(2022, 3, 27), Day, true},
		{"27/03/2022", date(2022, 3, 27), Day, true},
		{"03/27/2022", date(2022, 3, 27), Day, true},
		{"2022/03/27", date(2022, 3, 27), Day, true},
		{"27.03.2022", date(2022, 3, 27), Day, true},
		{"05/05/2022", date(2022, 5, 5), Day, true},
		{"2026-07-11", date(2026, 7, 11), Day, true},
		{"11 July", date(2026, 7, 11), Day, false},
		{"March 2024", date(2024, 3, 1), Month, true},
		{"in January", date(2026, 1, 1), Month, false},
		{"last March", date(2026, 3, 1), Month, false},
		{"in 2019", date(2019, 1, 1), Year, true},
		{"yesterday", said.AddDate(0, 0, -1), Day, false},
		{"last Monday", date(2026, 7, 6), Day, false},
		{"3 days ago", said.AddDate(0, 0, -3), Instant, false},
	} {
		got, ok := Parse(tt.expr, said)
		if !ok || !got.At.Equal(tt.want) || got.Grain != tt.grain || got.Dated != tt.dated {
			t.Errorf("Parse(%q) = %+v, %v; want %v grain %d dated %v", tt.expr, got, ok, tt.want, tt.grain, tt.dated)
		}
	}
}

// TestParseRefuses: ambiguous numeric dates, impossible dates and the
// future are not dates memor records.
func TestParseRefuses(t *testing.T) {
	for _, expr := range []string{"03/04/2022", "31/02/2022", "13/13/2022", "27/03/22", "1/2/3",
		"27 March, 2027", "tomorrow", "next week", "in two days", "27 March,", "12/25/2099"} {
		if got, ok := Parse(expr, said); ok {
			t.Errorf("Parse(%q) = %+v, want no date", expr, got)
		}
	}
}

// TestSpan: a named day covers the whole day, a month the month, a year
// the year; an instant is empty.
func TestSpan(t *testing.T) {
	for _, tt := range []struct {
		expr       string
		start, end time.Time
	}{
		{"27 March, 2022", date(2022, 3, 27), date(2022, 3, 28)},
		{"yesterday", date(2026, 7, 10), date(2026, 7, 11)},
		{"February 2024", date(2024, 2, 1), date(2024, 3, 1)},
		{"in 2019", date(2019, 1, 1), date(2020, 1, 1)},
		{"3 days ago", said.AddDate(0, 0, -3), said.AddDate(0, 0, -3)},
	} {
		m, ok := Parse(tt.expr, said)
		if !ok {
			t.Fatalf("Parse(%q) failed", tt.expr)
		}
		if s, e := m.Span(); !s.Equal(tt.start) || !e.Equal(tt.end) {
			t.Errorf("Parse(%q).Span() = [%v, %v), want [%v, %v)", tt.expr, s, e, tt.start, tt.end)
		}
	}
}

// TestInText: a question's date is found after its preposition, in any
// written order; dates without a year, the future and dates without a
// preposition do not count.
func TestInText(t *testing.T) {
	for _, tt := range []struct {
		q     string
		want  time.Time
		grain Grain
	}{
		{"What did we talk about on 27 March, 2022?", date(2022, 3, 27), Day},
		{"What did I say on March 27th, 2022?", date(2022, 3, 27), Day},
		{"Where was I on 27/03/2022?", date(2022, 3, 27), Day},
		{"Where did I work on 2024-12-01?", date(2024, 12, 1), Day},
		{"Where did I live in March 2025?", date(2025, 3, 1), Month},
		{"Where was I back in 2019?", date(2019, 1, 1), Year},
		{"what did I eat at the start of 2024", date(2024, 1, 1), Year},
		{"as of June 2024, what did I play?", date(2024, 6, 1), Month},
	} {
		m, ok := InText(tt.q, said)
		if !ok || !m.At.Equal(tt.want) || m.Grain != tt.grain {
			t.Errorf("InText(%q) = %+v, %v; want %v grain %d", tt.q, m, ok, tt.want, tt.grain)
		}
	}
	for _, q := range []string{"What do I do on Mondays?", "Where did I live in January?",
		"What will I do in March 2027?", "Did 2019 go well?", "Where was I on 03/04/2022?",
		"I have 2024 reasons"} {
		if m, ok := InText(q, said); ok {
			t.Errorf("InText(%q) = %+v, want none", q, m)
		}
	}
}

func TestAsksWhen(t *testing.T) {
	for q, want := range map[string]bool{
		"When did I move to Boston?":                    true,
		"so when was the trip in 2022?":                 true,
		"WHEN HAVE I met Alex?":                         true,
		"Where did I live in March 2025?":               false,
		"When I lived in Paris, what did I eat?":        false,
		"What did I say about whenever we met in 2022?": false,
	} {
		if got := AsksWhen(q); got != want {
			t.Errorf("AsksWhen(%q) = %v, want %v", q, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"27 March, 2022", "27/03/2022", "03/04/2022", "in 2019", "last week", "9999/99/99", "0/0/0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		m, ok := Parse(expr, said)
		if !ok {
			return
		}
		if m.At.After(said) || m.Future {
			t.Fatalf("Parse(%q) = %+v: in the future", expr, m)
		}
		if s, e := m.Span(); e.Before(s) || m.At.Before(s) || (e.After(s) && !m.At.Before(e)) {
			t.Fatalf("Parse(%q): At %v outside its span [%v, %v)", expr, m.At, s, e)
		}
		if _, ok := InText("on "+expr, said); ok && !m.Dated {
			t.Fatalf("InText took %q, not dated", expr)
		}
	})
}
