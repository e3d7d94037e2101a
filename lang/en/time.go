package en

import (
	"strconv"
	"strings"
	"time"
)

// Grain is how much of the calendar a time expression names.
type Grain uint8

const (
	// Instant: a point ("now", "3 days ago", "for 5 years").
	Instant Grain = iota
	// Day: a whole day ("2026-07-11", "27 March, 2022", "yesterday", "last
	// Monday").
	Day
	// Month: a whole month ("March 2024", "in January", "last March").
	Month
	// Year: a whole year ("in 2019").
	Year
)

// Time is a time expression resolved against the instant it was said.
type Time struct {
	// At is the instant the expression resolves to: a relative offset
	// keeps the clock time of the instant it was said ("3 days ago"); a
	// named day, month or year is its first instant (midnight in the
	// location of the instant it was said).
	At time.Time
	// Grain is what the expression names; Span gives it as an interval.
	Grain Grain
	// N is how many words (see Fields) the expression spans.
	N int
	// Future: the expression points after the instant it was said
	// ("tomorrow", "next week", "in two days", a later date).
	Future bool
	// Dated: the expression names its year or a full numeric date
	// ("March 2024", "2026-07-11", "27/03/2022"), so it means the same
	// whenever it is said.
	Dated bool
}

// Span is the interval [start, end) the expression covers: a named day
// from its midnight to the next, a month or a year likewise; an instant is
// the empty interval [At, At).
func (t Time) Span() (start, end time.Time) {
	loc := t.At.Location()
	y, m, d := t.At.Date()
	switch t.Grain {
	case Day:
		start = time.Date(y, m, d, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 0, 1)
	case Month:
		start = time.Date(y, m, 1, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 1, 0)
	case Year:
		start = time.Date(y, 1, 1, 0, 0, 0, 0, loc)
		return start, start.AddDate(1, 0, 0)
	}
	return t.At, t.At
}

// Parse resolves an English time expression against at, the instant it
// was said, and reports whether expr was recognised as a whole. It knows:
//
//   - deictic words: "today", "now", "yesterday", "last night", "this
//     morning", "the day before yesterday";
//   - "last week|weekend|month|year", "last Monday", "last March";
//   - "3 days ago", "two weeks ago", "a couple of months ago", "a few years ago";
//   - durations counted back from at: "for 5 years", "for the past two months";
//   - absolute dates: "2026-07-11", "July 11", "11 July 2025", "July 11th, 2025",
//     "27 March, 2022", "27th of March 2022", "March 2024", "2019" (a bare
//     year only after a preposition);
//   - numeric dates where the order is unambiguous: "27/03/2022" (27 is
//     no month), "03/27/2022", "2022/03/27"; "03/04/2022" is refused;
//   - prefixes "since", "on", "in", "from", "back in", "as of", "during",
//     "ever since", "starting" in front of the above ("since March 2024",
//     "on 2026-07-11", "in January", "on Monday").
//
// A month without a year means its most recent occurrence not after at
// ("in January" said in July 2026 is 2026-01-01; said in December it is
// still that year's January). Relative offsets keep at's clock time; named
// days, months and years resolve to midnight in at's location, with the
// Grain that names their extent. Month arithmetic clamps to the last day
// of the month (one month before March 31 is February 28/29). Expressions
// about the future ("tomorrow", "next week", "in two days") and dates
// after at are refused.
func Parse(expr string, at time.Time) (Time, bool) {
	words := Fields(expr)
	if len(words) == 0 {
		return Time{}, false
	}
	m := Match(words, at)
	if m.N != len(words) || m.Future {
		return Time{}, false
	}
	return m, true
}

// Fields lower-cases expr and splits it into the words Match reads,
// keeping commas as their own words and dropping other punctuation at
// word edges.
func Fields(expr string) []string {
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

// Match matches a time expression at the start of w (as Fields splits
// it), resolved against at; N is 0 when none starts there. Unlike Parse it
// reports expressions about the future, with Future set.
func Match(w []string, at time.Time) Time {
	if len(w) == 0 {
		return Time{}
	}
	at2 := func(n int, t time.Time) Time {
		if t.After(at) {
			return Time{N: n, At: t, Future: true}
		}
		return Time{N: n, At: t}
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
			return Time{}
		}
		rest := w[pre:]
		if w[0] == "in" {
			// "in two weeks" is the future; "in January", "in 2019" are dates.
			if _, n := matchDuration(rest); n > 0 {
				return Time{N: pre + n, At: at, Future: true}
			}
		}
		m := matchCore(rest, at, true)
		if m.N == 0 {
			return Time{}
		}
		m.N += pre
		return m
	case "for", "over":
		i := 1
		if len(w) > 2 && w[1] == "the" && (w[2] == "past" || w[2] == "last") {
			i = 3
		} else if w[0] == "over" {
			return Time{}
		}
		d, n := matchDuration(w[i:])
		if n == 0 && i == 3 && len(w) > 3 {
			// "for the past year": one unit.
			if h, dd, mm, ok := unitOf(w[3]); ok && !strings.HasSuffix(w[3], "s") {
				d, n = duration{hours: h, days: dd, months: mm}, 1
			}
		}
		if n == 0 {
			return Time{}
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
func matchCore(w []string, at time.Time, afterPrep bool) Time {
	if len(w) == 0 {
		return Time{}
	}
	loc := at.Location()
	midnight := func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	past := func(n int, t time.Time) Time {
		if t.After(at) {
			return Time{N: n, At: t, Future: true}
		}
		return Time{N: n, At: t}
	}
	// named is a named day, month or year; dated when it gives its year.
	named := func(n int, t time.Time, g Grain, dated bool) Time {
		m := past(n, t)
		m.Grain, m.Dated = g, dated
		return m
	}
	switch w[0] {
	case "today", "now", "tonight", "currently":
		return Time{N: 1, At: at}
	case "yesterday":
		return Time{N: 1, At: at.AddDate(0, 0, -1), Grain: Day}
	case "tomorrow", "soon":
		return Time{N: 1, At: at, Future: true}
	case "this":
		if len(w) > 1 {
			switch w[1] {
			case "morning", "afternoon", "evening":
				return Time{N: 2, At: at}
			}
		}
		return Time{}
	case "earlier":
		if len(w) > 1 && w[1] == "today" {
			return Time{N: 2, At: at}
		}
		return Time{}
	case "the":
		if len(w) >= 4 && w[1] == "day" && w[2] == "before" && w[3] == "yesterday" {
			return Time{N: 4, At: at.AddDate(0, 0, -2), Grain: Day}
		}
		return Time{}
	case "next":
		if len(w) > 1 {
			if _, _, _, ok := unitOf(w[1]); ok || w[1] == "weekend" {
				return Time{N: 2, At: at, Future: true}
			}
			if _, ok := weekdayNames[w[1]]; ok {
				return Time{N: 2, At: at, Future: true}
			}
			if _, ok := monthNames[w[1]]; ok {
				return Time{N: 2, At: at, Future: true}
			}
		}
		return Time{}
	case "last", "past":
		if len(w) < 2 {
			return Time{}
		}
		switch w[1] {
		case "night":
			return Time{N: 2, At: at.AddDate(0, 0, -1)}
		case "week":
			return Time{N: 2, At: at.AddDate(0, 0, -7)}
		case "weekend":
			// The Saturday of the previous weekend: said on a Saturday or
			// Sunday, "last weekend" is the one before.
			d := (int(at.Weekday()) - int(time.Saturday) + 7) % 7
			if d < 2 {
				d += 7
			}
			return Time{N: 2, At: midnight(at.AddDate(0, 0, -d)), Grain: Day}
		case "month":
			return Time{N: 2, At: addMonthsClamped(at, -1)}
		case "year":
			return Time{N: 2, At: addMonthsClamped(at, -12)}
		}
		if wd, ok := weekdayNames[w[1]]; ok {
			d := (int(at.Weekday()) - int(wd) + 7) % 7
			if d == 0 {
				d = 7
			}
			return Time{N: 2, At: midnight(at.AddDate(0, 0, -d)), Grain: Day}
		}
		if mo, ok := monthNames[w[1]]; ok && len(w[1]) > 3 {
			y := at.Year()
			if mo >= at.Month() {
				y--
			}
			return Time{N: 2, At: time.Date(y, mo, 1, 0, 0, 0, 0, loc), Grain: Month}
		}
		return Time{}
	}
	// "3 days ago", "a couple of weeks ago".
	if d, n := matchDuration(w); n > 0 {
		if n < len(w) && w[n] == "ago" {
			return past(n+1, d.back(at))
		}
		if n < len(w) && (w[n] == "from" || w[n] == "later") {
			return Time{N: n + 1, At: d.forward(at), Future: true}
		}
	}
	if afterPrep {
		if wd, ok := weekdayNames[w[0]]; ok {
			d := (int(at.Weekday()) - int(wd) + 7) % 7
			return Time{N: 1, At: midnight(at.AddDate(0, 0, -d)), Grain: Day}
		}
	}
	// ISO date, or a numeric one whose order is unambiguous.
	if t, ok := parseISODate(w[0], loc); ok {
		return named(1, t, Day, true)
	}
	if t, ok := parseNumericDate(w[0], loc); ok {
		return named(1, t, Day, true)
	}
	// Month-first: "July 11", "July 11th, 2025", "March 2024", "January".
	if mo, ok := monthNames[w[0]]; ok {
		if len(w[0]) <= 3 && !afterPrep && len(w) == 1 {
			return Time{} // "mar", "may" alone are not dates
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
			return Time{} // a month name alone needs "in"/"since"
		}
		if !hasYear {
			year = at.Year()
			if mo > at.Month() || (mo == at.Month() && day > at.Day()) {
				year--
			}
		}
		g := Day
		if day == 0 {
			day, g = 1, Month
		}
		if day > daysIn(mo, year) {
			return Time{}
		}
		return named(n, time.Date(year, mo, day, 0, 0, 0, 0, loc), g, hasYear)
	}
	// Day-first: "11 July", "11th of July 2025", "27 March, 2022".
	if day, ok := parseDay(w[0]); ok && len(w) > 1 {
		n := 1
		if w[n] == "of" && len(w) > 2 {
			n++
		}
		if mo, ok := monthNames[w[n]]; ok {
			n++
			year, hasYear := at.Year(), false
			j := n
			if j+1 < len(w) && w[j] == "," {
				j++ // the comma only before a year: "on 27 March, I moved"
			}
			if j < len(w) {
				if y, ok := parseYear(w[j]); ok {
					year, hasYear, n = y, true, j+1
				}
			}
			if !hasYear && (mo > at.Month() || (mo == at.Month() && day > at.Day())) {
				year--
			}
			if day > daysIn(mo, year) {
				return Time{}
			}
			return named(n, time.Date(year, mo, day, 0, 0, 0, 0, loc), Day, hasYear)
		}
	}
	// A bare year needs a preposition: "in 2019", "since 2020".
	if afterPrep {
		if y, ok := parseYear(w[0]); ok {
			return named(1, time.Date(y, 1, 1, 0, 0, 0, 0, loc), Year, true)
		}
	}
	return Time{}
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

// parseNumericDate parses a day, month and four-digit year joined by "/",
// "-" or ".", in whichever order the numbers leave no doubt about:
// "27/03/2022" (27 is no month), "03/27/2022", "2022/03/27", "05/05/2022".
// "03/04/2022" is the 3rd of April or the 4th of March: refused.
func parseNumericDate(s string, loc *time.Location) (time.Time, bool) {
	if len(s) < 8 || len(s) > 10 {
		return time.Time{}, false
	}
	sep := strings.IndexAny(s, "/-.")
	if sep < 0 {
		return time.Time{}, false
	}
	parts := strings.Split(s, s[sep:sep+1])
	if len(parts) != 3 {
		return time.Time{}, false
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || p[0] == '+' || p[0] == '-' {
			return time.Time{}, false
		}
		n[i] = v
	}
	var y, m, d int
	switch {
	case len(parts[0]) == 4 && len(parts[1]) <= 2 && len(parts[2]) <= 2:
		y, m, d = n[0], n[1], n[2] // year first is always year-month-day
	case len(parts[2]) == 4 && len(parts[0]) <= 2 && len(parts[1]) <= 2:
		y = n[2]
		switch a, b := n[0], n[1]; {
		case a == b || b > 12:
			m, d = a, b
		case a > 12:
			d, m = a, b
		default:
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	if y < 1000 || m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc), true
}

// Number returns the value of a number word ("two" → 2; "a", "several"
// count as 1 and 3).
func Number(w string) (int, bool) {
	n, ok := numberWords[w]
	return n, ok
}

// NumberWords returns a copy of the number words Number knows.
func NumberWords() map[string]int {
	m := make(map[string]int, len(numberWords))
	for k, v := range numberWords {
		m[k] = v
	}
	return m
}

// MonthNames returns a copy of the month names and abbreviations.
func MonthNames() map[string]time.Month {
	m := make(map[string]time.Month, len(monthNames))
	for k, v := range monthNames {
		m[k] = v
	}
	return m
}

// MatchAfter is Match for words that follow a preposition the caller has
// already read ("2018" after "to" in "from 2015 to 2018"), where a bare
// year is a date.
func MatchAfter(w []string, at time.Time) Time { return matchCore(w, at, true) }

// Unit reports the length of the time unit w names ("day", "weeks",
// "year"), in hours, days and months.
func Unit(w string) (hours, days, months int, ok bool) { return unitOf(w) }
