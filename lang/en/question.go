package en

import (
	"strings"
	"time"
)

// InText finds the first past date a question names after a preposition
// ("in March 2026", "on 27 March, 2022", "during 2019", "as of
// 2026-02-01", "back in June 2024", "at the start of 2025") and resolves it
// against now. Only a date that gives its year, or a full numeric date,
// counts: "in January" or "on Monday" in a question is too often about a
// habit ("what do I do on Mondays?") to move the view. A date after now is
// skipped.
func InText(text string, now time.Time) (Time, bool) {
	w := Fields(text)
	for i := range w {
		if m, ok := dateAt(w, i, now); ok {
			return m, true
		}
	}
	return Time{}, false
}

// WithoutDates returns text's words (as Fields splits them) less the
// dates InText would read, wherever they are: what a question asks about
// once the instant it names has chosen the view.
func WithoutDates(text string, now time.Time) string {
	w := Fields(text)
	out := make([]string, 0, len(w))
	for i := 0; i < len(w); i++ {
		if m, ok := dateAt(w, i, now); ok {
			i += m.N - 1
			continue
		}
		out = append(out, w[i])
	}
	return strings.Join(out, " ")
}

// dateAt matches, at w[i], a preposition and the past date with a year
// that follows it; N counts both.
func dateAt(w []string, i int, now time.Time) (Time, bool) {
	pre := 0
	switch w[i] {
	case "in", "on", "during":
		pre = 1
	case "as":
		if i+1 < len(w) && w[i+1] == "of" {
			pre = 2
		}
	case "back":
		if i+1 < len(w) && w[i+1] == "in" {
			pre = 2
		}
	case "at":
		if i+3 < len(w) && w[i+1] == "the" && w[i+2] == "start" && w[i+3] == "of" {
			pre = 4
		}
	}
	if pre == 0 {
		return Time{}, false
	}
	m := matchCore(w[i+pre:], now, true)
	if m.N == 0 || !m.Dated || m.Future {
		return Time{}, false
	}
	m.N += pre
	return m, true
}

// auxiliaries follow "when" in a question about the time of something.
var auxiliaries = set("did", "do", "does", "was", "were", "is", "are", "have", "has", "had",
	"will", "would", "can", "could", "should")

// AsksWhen reports whether a question asks for the time of something
// ("When did I move to Boston?", "so when was the trip in 2022?"): what it
// wants is an event, found by its words, not a view of what was true at
// the date it may also name.
func AsksWhen(text string) bool {
	w := Words(text)
	for i := 0; i+1 < len(w); i++ {
		if w[i] == "when" && auxiliaries[w[i+1]] {
			return true
		}
	}
	return false
}
