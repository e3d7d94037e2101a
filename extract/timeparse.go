package extract

import (
	"strconv"
	"strings"
	"time"
)

// ParseTime resolves an English time expression against at, the instant the
// episode was said, and reports whether expr was recognised as a whole. It
// knows:
//
//   - deictic words: "today", "now", "yesterday", "last night", "this
//     morning", "the day before yesterday";
//   - "last week|weekend|month|year", "last Monday", "last March";
//   - "3 days ago", "two weeks ago", "a couple of months ago", "a few years ago";
//   - durations counted back from at: "for 5 years", "for the past two months";
//   - absolute dates: "2026-07-11", "July 11", "11 July 2025", "July 11th, 2025",
//     "March 2024", "2019" (a bare year only after a preposition);
//   - prefixes "since", "on", "in", "from", "back in", "as of", "during",
//     "ever since", "starting" in front of the above ("since March 2024",
//     "on 2026-07-11", "in January", "on Monday").
//
// A month without a year means its most recent occurrence not after at
// ("in January" said in July 2026 is 2026-01-01; said in December it is
// still that year's January). Relative offsets keep at's clock time; named
// days, months and years resolve to midnight in at's location. Month
// arithmetic clamps to the last day of the month (one month before March 31
// is February 28/29). Expressions about the future ("tomorrow", "next week",
// "in two days") and dates after at are rejected: memor records what became
// true, not plans.
func ParseTime(expr string, at time.Time) (time.Time, bool) {
	words := timeWords(expr)
	if len(words) == 0 {
		return time.Time{}, false
	}
	m := matchTime(words, at)
	if m.n != len(words) || m.future {
		return time.Time{}, false
	}
	return m.t, true
}

// timeWords lower-cases expr and splits it into words, keeping commas as
// their own words and dropping other punctuation at word edges.
func timeWords(expr string) []string {
	expr = strings.ToLower(expr)
	var out []string
	for _, f := range strings.Fields(expr) {
		comma := strings.HasSuffix(f, ",")
		f = strings.Trim(f, ".,;:!?()\"'")
		if f != "" {
			out = append(out, f)
		}
		if comma {
			out = append(out, ",")
		}
	}
	return out
}

// timeMatch is the result of matching a time expression at the start of a
// word slice: n words consumed (0 = no match), the resolved instant, and
// whether the expression points into the future.
type timeMatch struct {
	n      int
	t      time.Time
	future bool
}

var monthNames = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
	"april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
	"august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var weekdayNames = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
	"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday,
	"saturday": time.Saturday,
}

var numberWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
	"twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "several": 3,
}

// unitOf maps a duration word to (days, months) per unit, or ok=false.
func unitOf(w string) (hours, days, months int, ok bool) {
	switch strings.TrimSuffix(w, "s") {
	case "hour":
		return 1, 0, 0, true
	case "day":
		return 0, 1, 0, true
	case "week":
		return 0, 7, 0, true
	case "fortnight":
		return 0, 14, 0, true
	case "month":
		return 0, 0, 1, true
	case "year":
		return 0, 0, 12, true
	case "decade":
		return 0, 0, 120, true
	}
	return 0, 0, 0, false
}

// matchTime tries to match a time expression at the start of w.
func matchTime(w []string, at time.Time) timeMatch {
	if len(w) == 0 {
		return timeMatch{}
	}
	at2 := func(n int, t time.Time) timeMatch {
		if t.After(at) {
			return timeMatch{n: n, t: t, future: true}
		}
		return timeMatch{n: n, t: t}
	}
	switch w[0] {
	case "since", "on", "from", "during", "starting", "as", "back", "ever", "in":
		pre := 1
		switch {
		case w[0] == "as" && len(w) > 1 && w[1] == "of":
			pre = 2
		case w[0] == "back" && len(w) > 1 && w[1] == "in":
			pre = 2
		case w[0] == "ever" && len(w) > 1 && w[1] == "since":
			pre = 2
		case w[0] == "as" || w[0] == "back" || w[0] == "ever":
			return timeMatch{}
		}
		rest := w[pre:]
		if w[0] == "in" {
			// "in two weeks" is the future; "in January", "in 2019" are dates.
			if _, n := matchDuration(rest); n > 0 {
				return timeMatch{n: pre + n, t: at, future: true}
			}
		}
		m := matchCore(rest, at, true)
		if m.n == 0 {
			return timeMatch{}
		}
		m.n += pre
		return m
	case "for", "over":
		i := 1
		if len(w) > 2 && w[1] == "the" && (w[2] == "past" || w[2] == "last") {
			i = 3
		} else if w[0] == "over" {
			return timeMatch{}
		}
		d, n := matchDuration(w[i:])
		if n == 0 && i == 3 && len(w) > 3 {
			// "for the past year": one unit.
			if h, dd, mm, ok := unitOf(w[3]); ok && !strings.HasSuffix(w[3], "s") {
				d, n = duration{hours: h, days: dd, months: mm}, 1
			}
		}
		if n == 0 {
			return timeMatch{}
		}
		return at2(i+n, d.back(at))
	}
	return matchCore(w, at, false)
}

// duration is a count of calendar units.
type duration struct{ hours, days, months int }

func (d duration) back(at time.Time) time.Time {
	t := addMonthsClamped(at, -d.months)
	return t.AddDate(0, 0, -d.days).Add(-time.Duration(d.hours) * time.Hour)
}

func (d duration) forward(at time.Time) time.Time {
	t := addMonthsClamped(at, d.months)
	return t.AddDate(0, 0, d.days).Add(time.Duration(d.hours) * time.Hour)
}

// matchDuration matches "5 years", "two weeks", "a couple of months",
// "a few days", "a year".
func matchDuration(w []string) (duration, int) {
	if len(w) < 2 {
		return duration{}, 0
	}
	i, num := 0, 0
	switch {
	case w[0] == "a" && w[1] == "couple":
		i, num = 2, 2
		if i < len(w) && w[i] == "of" {
			i++
		}
	case w[0] == "a" && w[1] == "few":
		i, num = 2, 3
	case w[0] == "couple" || w[0] == "few":
		i, num = 1, 2
		if w[0] == "few" {
			num = 3
		}
		if i < len(w) && w[i] == "of" {
			i++
		}
	default:
		if v, ok := numberWords[w[0]]; ok {
			num = v
		} else if v, err := strconv.Atoi(w[0]); err == nil && v > 0 && v <= 1000 && len(w[0]) <= 4 {
			num = v
		} else {
			return duration{}, 0
		}
		i = 1
	}
	if i >= len(w) {
		return duration{}, 0
	}
	h, d, m, ok := unitOf(w[i])
	if !ok {
		return duration{}, 0
	}
	return duration{hours: h * num, days: d * num, months: m * num}, i + 1
}

// matchCore matches an expression without a leading preposition. afterPrep
// allows a bare year ("in 2019") and a bare weekday ("on Monday").
func matchCore(w []string, at time.Time, afterPrep bool) timeMatch {
	if len(w) == 0 {
		return timeMatch{}
	}
	loc := at.Location()
	midnight := func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	past := func(n int, t time.Time) timeMatch {
		if t.After(at) {
			return timeMatch{n: n, t: t, future: true}
		}
		return timeMatch{n: n, t: t}
	}
	switch w[0] {
	case "today", "now", "tonight", "currently":
		return timeMatch{n: 1, t: at}
	case "yesterday":
		return timeMatch{n: 1, t: at.AddDate(0, 0, -1)}
	case "tomorrow", "soon":
		return timeMatch{n: 1, t: at, future: true}
	case "this":
		if len(w) > 1 {
			switch w[1] {
			case "morning", "afternoon", "evening":
				return timeMatch{n: 2, t: at}
			}
		}
		return timeMatch{}
	case "earlier":
		if len(w) > 1 && w[1] == "today" {
			return timeMatch{n: 2, t: at}
		}
		return timeMatch{}
	case "the":
		if len(w) >= 4 && w[1] == "day" && w[2] == "before" && w[3] == "yesterday" {
			return timeMatch{n: 4, t: at.AddDate(0, 0, -2)}
		}
		return timeMatch{}
	case "next":
		if len(w) > 1 {
			if _, _, _, ok := unitOf(w[1]); ok || w[1] == "weekend" {
				return timeMatch{n: 2, t: at, future: true}
			}
			if _, ok := weekdayNames[w[1]]; ok {
				return timeMatch{n: 2, t: at, future: true}
			}
			if _, ok := monthNames[w[1]]; ok {
				return timeMatch{n: 2, t: at, future: true}
			}
		}
		return timeMatch{}
	case "last", "past":
		if len(w) < 2 {
			return timeMatch{}
		}
		switch w[1] {
		case "night":
			return timeMatch{n: 2, t: at.AddDate(0, 0, -1)}
		case "week":
			return timeMatch{n: 2, t: at.AddDate(0, 0, -7)}
		case "weekend":
			// The Saturday of the previous weekend: said on a Saturday or
			// Sunday, "last weekend" is the one before.
			d := (int(at.Weekday()) - int(time.Saturday) + 7) % 7
			if d < 2 {
				d += 7
			}
			return timeMatch{n: 2, t: midnight(at.AddDate(0, 0, -d))}
		case "month":
			return timeMatch{n: 2, t: addMonthsClamped(at, -1)}
		case "year":
			return timeMatch{n: 2, t: addMonthsClamped(at, -12)}
		}
		if wd, ok := weekdayNames[w[1]]; ok {
			d := (int(at.Weekday()) - int(wd) + 7) % 7
			if d == 0 {
				d = 7
			}
			return timeMatch{n: 2, t: midnight(at.AddDate(0, 0, -d))}
		}
		if mo, ok := monthNames[w[1]]; ok && len(w[1]) > 3 {
			y := at.Year()
			if mo >= at.Month() {
				y--
			}
			return timeMatch{n: 2, t: time.Date(y, mo, 1, 0, 0, 0, 0, loc)}
		}
		return timeMatch{}
	}
	// "3 days ago", "a couple of weeks ago".
	if d, n := matchDuration(w); n > 0 {
		if n < len(w) && w[n] == "ago" {
			return past(n+1, d.back(at))
		}
		if n < len(w) && (w[n] == "from" || w[n] == "later") {
			return timeMatch{n: n + 1, t: d.forward(at), future: true}
		}
	}
	if afterPrep {
		if wd, ok := weekdayNames[w[0]]; ok {
			d := (int(at.Weekday()) - int(wd) + 7) % 7
			return timeMatch{n: 1, t: midnight(at.AddDate(0, 0, -d))}
		}
	}
	// ISO date.
	if t, ok := parseISODate(w[0], loc); ok {
		return past(1, t)
	}
	// Month-first: "July 11", "July 11th, 2025", "March 2024", "January".
	if mo, ok := monthNames[w[0]]; ok {
		if len(w[0]) <= 3 && !afterPrep && len(w) == 1 {
			return timeMatch{} // "mar", "may" alone are not dates
		}
		n := 1
		day := 0
		if n < len(w) {
			if d, ok := parseDay(w[n]); ok {
				day, n = d, n+1
			}
		}
		year, hasYear := 0, false
		j := n
		if day > 0 && j < len(w) && w[j] == "," {
			j++
		}
		if j < len(w) {
			if y, ok := parseYear(w[j]); ok {
				year, hasYear, n = y, true, j+1
			}
		}
		if day == 0 && !hasYear && !afterPrep {
			return timeMatch{} // a month name alone needs "in"/"since"
		}
		if !hasYear {
			year = at.Year()
			if mo > at.Month() || (mo == at.Month() && day > at.Day()) {
				year--
			}
		}
		if day == 0 {
			day = 1
		}
		if day > daysIn(mo, year) {
			return timeMatch{}
		}
		return past(n, time.Date(year, mo, day, 0, 0, 0, 0, loc))
	}
	// Day-first: "11 July", "11th of July 2025".
	if day, ok := parseDay(w[0]); ok && len(w) > 1 {
		n := 1
		if w[n] == "of" && len(w) > 2 {
			n++
		}
		if mo, ok := monthNames[w[n]]; ok {
			n++
			year, hasYear := at.Year(), false
			if n < len(w) {
				if y, ok := parseYear(w[n]); ok {
					year, hasYear, n = y, true, n+1
				}
			}
			if !hasYear && (mo > at.Month() || (mo == at.Month() && day > at.Day())) {
				year--
			}
			if day > daysIn(mo, year) {
				return timeMatch{}
			}
			return past(n, time.Date(year, mo, day, 0, 0, 0, 0, loc))
		}
	}
	// A bare year needs a preposition: "in 2019", "since 2020".
	if afterPrep {
		if y, ok := parseYear(w[0]); ok {
			return past(1, time.Date(y, 1, 1, 0, 0, 0, 0, loc))
		}
	}
	return timeMatch{}
}

// addMonthsClamped moves t by months calendar months, clamping the day to
// the target month's length instead of overflowing into the next month.
func addMonthsClamped(t time.Time, months int) time.Time {
	y, m, d := t.Date()
	total := int(m) - 1 + months
	ny := y + floorDiv(total, 12)
	nm := time.Month(total - floorDiv(total, 12)*12 + 1)
	if dim := daysIn(nm, ny); d > dim {
		d = dim
	}
	hh, mm, ss := t.Clock()
	return time.Date(ny, nm, d, hh, mm, ss, t.Nanosecond(), t.Location())
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseDay parses "11", "11th", "1st", "2nd", "3rd" as a day of month.
func parseDay(s string) (int, bool) {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if strings.HasSuffix(s, suf) {
			s = s[:len(s)-len(suf)]
			break
		}
	}
	if len(s) == 0 || len(s) > 2 {
		return 0, false
	}
	d, err := strconv.Atoi(s)
	if err != nil || d < 1 || d > 31 {
		return 0, false
	}
	return d, true
}

// parseYear accepts four-digit years 1000..9999.
func parseYear(s string) (int, bool) {
	if len(s) != 4 {
		return 0, false
	}
	y, err := strconv.Atoi(s)
	if err != nil || y < 1000 {
		return 0, false
	}
	return y, true
}

// parseISODate parses YYYY-MM-DD.
func parseISODate(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
