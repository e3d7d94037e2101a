package extract

import (
	"time"

	"github.com/memor-db/memor/lang/en"
)

// ParseTime resolves an English time expression against at, the instant the
// episode was said, and reports whether expr was recognised as a whole: it
// is [en.Parse]'s instant (see there for what it knows). Named days,
// months and years resolve to their first instant; expressions about the
// future are rejected: memor records what became true, not plans.
func ParseTime(expr string, at time.Time) (time.Time, bool) {
	t, ok := en.Parse(expr, at)
	if !ok {
		return time.Time{}, false
	}
	return t.At, true
}

// timeMatch is a time expression matched at the start of a word slice: n
// words consumed (0 = no match), the resolved instant, and whether the
// expression points into the future.
type timeMatch struct {
	n      int
	t      time.Time
	future bool
}

// matchTime tries to match a time expression at the start of w.
func matchTime(w []string, at time.Time) timeMatch {
	m := en.Match(w, at)
	return timeMatch{n: m.N, t: m.At, future: m.Future}
}

// The English words the grammar shares with the time parser.
var (
	numberWords = en.NumberWords()
	monthNames  = en.MonthNames()
)

// matchCore matches a time expression after a preposition already read
// (afterPrep) or at the start of w.
func matchCore(w []string, at time.Time, afterPrep bool) timeMatch {
	m := en.Match(w, at)
	if afterPrep {
		m = en.MatchAfter(w, at)
	}
	return timeMatch{n: m.N, t: m.At, future: m.Future}
}

// unitOf is en.Unit.
func unitOf(w string) (hours, days, months int, ok bool) { return en.Unit(w) }
