package en

import "time"

// InText finds the first past date a question names after a preposition
// ("in March 2026", "on 27 March, 2022", "during 2019", "as of
// 2026-02-01", "back in June 2024", "at the start of 2025") and resolves it
// against now. Only a date that gives its year, or a full numeric date,
// counts: "in January" or "on Monday" in a question is too often about a
// habit ("what do I do on Mondays?") to move the view. A date after now is
// skipped.
func InText(text string, now time.Time) (Time, bool) {
	w := Fields(text)
	for i := 0; i < len(w); i++ {
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
			continue
		}
		m := matchCore(w[i+pre:], now, true)
		if m.N == 0 || !m.Dated || m.Future {
			continue
		}
		m.N += pre
		return m, true
	}
	return Time{}, false
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
