package en

import "strings"

// The words a stated figure is read with (see the rule extractor's
// quantities): the rate it is counted at and the seasons that name a
// period beside the months.

// rateWords name the period a figure is counted per, as an adverb or
// adjective ("monthly", "a yearly fee").
var rateWords = map[string]string{
	"daily": "daily", "nightly": "nightly", "weekly": "weekly", "biweekly": "biweekly", "fortnightly": "biweekly",
	"monthly": "monthly", "quarterly": "quarterly", "yearly": "yearly", "annual": "yearly",
	"annually": "yearly",
}

// rateUnits name the period a figure is counted per after "per", "a",
// "each", "every" or a slash ("$550/month", "$20 a week").
var rateUnits = map[string]string{
	"day": "daily", "night": "nightly", "week": "weekly", "wk": "weekly", "month": "monthly", "mo": "monthly",
	"quarter": "quarterly", "year": "yearly", "yr": "yearly", "annum": "yearly",
}

// rateIntro are the words that put a rate unit after a figure.
var rateIntro = set("per", "a", "an", "each", "every", "/")

// RateAt reads a rate at w[i:] ("monthly", "per month", "a week", "/ mo")
// and returns its canonical name ("monthly") and how many words it spans
// (0: none).
func RateAt(w []string, i int) (string, int) {
	if i >= len(w) {
		return "", 0
	}
	if r, ok := rateWords[w[i]]; ok {
		return r, 1
	}
	if rateIntro[w[i]] && i+1 < len(w) {
		if r, ok := rateUnits[w[i+1]]; ok {
			return r, 2
		}
	}
	return "", 0
}

// identifierNouns head phrases whose figure names something rather than
// counts it ("my order number is 55123", "my room is 101").
var identifierNouns = set("number", "id", "code", "pin", "password", "version", "address",
	"zip", "zipcode", "postcode", "extension", "room", "seat", "gate", "platform", "flight",
	"ticket", "account", "plate", "model", "serial", "name", "username", "handle")

// IdentifierNoun reports whether a noun (singular, lower case) names
// things by a figure rather than counts them.
func IdentifierNoun(w string) bool { return identifierNouns[w] }

// seasons name a period of the year.
var seasons = set("spring", "summer", "autumn", "fall", "winter")

// PeriodWord reports whether w names a period on its own: a month or its
// abbreviation, a season, a year ("2024"), or a range of them joined by a
// hyphen ("april-june").
func PeriodWord(w string) bool {
	if w == "" {
		return false
	}
	if _, ok := monthNames[w]; ok && w != "may" && w != "mar" {
		// "may" and "mar" are verbs as often as months.
		return true
	}
	if seasons[w] {
		return true
	}
	if YearFigure(w) {
		return true
	}
	if a, b, ok := strings.Cut(w, "-"); ok && a != "" && b != "" {
		return PeriodWord(a) && PeriodWord(b)
	}
	return false
}

// YearFigure reports whether w is a year written in figures ("1998", "2024").
func YearFigure(w string) bool {
	return len(w) == 4 && (strings.HasPrefix(w, "19") || strings.HasPrefix(w, "20")) && strings.Trim(w, "0123456789") == ""
}

// Singular undoes the common English plural endings of a noun
// ("groceries" → "grocery", "boxes" → "box", "books" → "book"); other
// words are returned as they are.
func Singular(w string) string {
	switch {
	case len(w) <= 3 || strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") ||
		strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// durationUnits are the units of a figure that measures time ("5-7
// months").
var durationUnits = set("second", "minute", "hour", "day", "week", "month", "year")

// DurationUnit reports whether a unit word (either number) measures time.
func DurationUnit(w string) bool { return durationUnits[Singular(w)] }

// durationNouns head phrases whose figure is how long they take ("the
// probate process", "my commute"): a pronoun's figure of time is theirs.
var durationNouns = set("process", "timeline", "timeframe", "duration", "procedure", "wait", "delay", "commute", "review",
	"approval", "processing", "period", "term", "stay", "trip", "course", "program", "programme",
	"recovery", "treatment", "appointment", "session", "shift", "workout", "journey", "drive", "ride")

// DurationNoun reports whether a noun (singular, lower case) is measured
// by how long it takes.
func DurationNoun(w string) bool { return durationNouns[w] }

// timeMeasureNouns head phrases that, measured in time, name how long
// their modifier takes rather than a thing of their own: "the probate
// process takes 6-9 months", "the probate timeline is 6-9 months" and
// "probate takes 6-9 months" state one figure.
var timeMeasureNouns = set("process", "procedure", "timeline", "timeframe", "duration", "length")

// DurationMatter ends the name of a matter measured in time whose head
// was a time-measure noun ("probate duration"; see TimeMeasureNoun).
const DurationMatter = "duration"

// MatterGloss returns the words, beyond its own, that a predicate naming
// a figure goes by: one for how long something takes ("…_duration")
// goes by every head merged into it and the words that ask for a span
// of time, since "how long does the probate process take?" names neither
// "duration" nor a unit. Others have none.
func MatterGloss(pred string) string {
	if !strings.HasSuffix(pred, "_"+DurationMatter) {
		return ""
	}
	return durationGloss
}

// durationGloss is MatterGloss for a span of time, in a fixed order.
var durationGloss = "long take takes took time process procedure timeline timeframe length"

// TimeMeasureNoun reports whether a noun (singular, lower case), heading
// a phrase with a noun modifier and measured in time, stands for how long
// the modifier takes.
func TimeMeasureNoun(w string) bool { return timeMeasureNouns[w] }

// moneyNouns head phrases whose figure is a sum of money ("the grocery
// budget", "my rent").
var moneyNouns = set("budget", "cost", "price", "fee", "rent", "salary", "fund", "allowance", "bill",
	"payment", "limit", "expense", "fare", "income", "saving", "loan", "debt", "premium", "wage",
	"deposit", "mortgage", "tuition", "spending")

// MoneyNoun reports whether a noun (singular, lower case) is measured in
// money.
func MoneyNoun(w string) bool { return moneyNouns[w] }
