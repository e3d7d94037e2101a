package reference

import (
	"regexp"
	"strings"
	"time"
)

// op is one proposed change, as a rule-based extractor would produce it.
type op struct {
	end       bool
	subject   string // "user" or a person's name
	predicate string
	object    string // empty on an end: every value of the slot
	context   string
	from      time.Time
	conf      float64
}

// userSubject names the speaker in triples, as memor renders it.
const userSubject = "user"

var (
	sentenceSplit = regexp.MustCompile(`[.!?]+(\s+|$)`)
	contextPrefix = regexp.MustCompile(`(?i)^(at work|at home|on weekends|on weekdays),?\s+`)
	hedgeWords    = regexp.MustCompile(`(?i)\b(might|maybe|perhaps|probably|thinking about|considering|not sure)\b`)
	leadIn        = regexp.MustCompile(`(?i)^(maybe|perhaps|probably|honestly|well|so|also),?\s+`)
	relationSubj  = regexp.MustCompile(`^(?i:my) (` + relationAlt + `) ([A-Z][\p{L}'-]*)\s+(.+)$`)
	favoriteSubj  = regexp.MustCompile(`(?i)^my (?:favorite|favourite) ([\p{L}]+) is (.+)$`)
	nameSubj      = regexp.MustCompile(`^([A-Z][\p{L}'-]*)\s+(.+)$`)
	userSubj      = regexp.MustCompile(`(?i)^i\s+(.+)$`)
	trailing      = regexp.MustCompile(`(?i)\s+(now|again|too|as well|soon|these days)$`)
	articles      = regexp.MustCompile(`(?i)^(a|an|the|my)\s+`)
	modal         = regexp.MustCompile(`(?i)^(think (?:that )?i (?:might|may|will|could) |might |may |will |could |am thinking about |am considering |think about )`)
)

const relationAlt = `brother|sister|friend|mother|father|mom|dad|wife|husband|partner|son|daughter|cousin|colleague|boss|manager|uncle|aunt|grandmother|grandfather`

// months maps month names to time.Month.
var months = map[string]time.Month{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
	"august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
}

const monthAlt = `january|february|march|april|may|june|july|august|september|october|november|december`

var (
	onDate      = regexp.MustCompile(`(?i)\s*\bon (\d{4}-\d{2}-\d{2})\b`)
	monthYear   = regexp.MustCompile(`(?i)\s*\b(?:since|in) (` + monthAlt + `) (\d{4})\b`)
	monthOnly   = regexp.MustCompile(`(?i)\s*\b(?:since|in) (` + monthAlt + `)\b`)
	yearOnly    = regexp.MustCompile(`(?i)\s*\b(?:since|in) (\d{4})\b`)
	relativeExp = regexp.MustCompile(`(?i)\s*\b(last weekend|last week|last month|last year|yesterday)\b`)
)

// resolveTime removes the first time expression from s and returns the
// instant it names, resolved against at; without one it returns at.
func resolveTime(s string, at time.Time) (string, time.Time) {
	if m := onDate.FindStringSubmatchIndex(s); m != nil {
		if t, err := time.Parse(time.DateOnly, s[m[2]:m[3]]); err == nil {
			return s[:m[0]] + s[m[1]:], t
		}
	}
	if m := monthYear.FindStringSubmatchIndex(s); m != nil {
		mon := months[strings.ToLower(s[m[2]:m[3]])]
		y := atoi(s[m[4]:m[5]])
		return s[:m[0]] + s[m[1]:], time.Date(y, mon, 1, 0, 0, 0, 0, time.UTC)
	}
	if m := monthOnly.FindStringSubmatchIndex(s); m != nil {
		mon := months[strings.ToLower(s[m[2]:m[3]])]
		y := at.Year()
		if mon > at.Month() {
			y-- // "in January" said in August means this year's; said in
			// January of next year it would still be this one.
		}
		return s[:m[0]] + s[m[1]:], time.Date(y, mon, 1, 0, 0, 0, 0, time.UTC)
	}
	if m := yearOnly.FindStringSubmatchIndex(s); m != nil {
		return s[:m[0]] + s[m[1]:], time.Date(atoi(s[m[2]:m[3]]), 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if m := relativeExp.FindStringSubmatchIndex(s); m != nil {
		var t time.Time
		switch strings.ToLower(s[m[2]:m[3]]) {
		case "last weekend":
			// The Saturday of the weekend before the one at falls in.
			back := (int(at.Weekday()) - int(time.Saturday) + 7) % 7
			if back <= 1 { // said on the weekend itself: the one before
				back += 7
			}
			t = at.AddDate(0, 0, -back)
		case "last week":
			t = at.AddDate(0, 0, -7)
		case "last month":
			t = at.AddDate(0, -1, 0)
		case "last year":
			t = at.AddDate(-1, 0, 0)
		case "yesterday":
			t = at.AddDate(0, 0, -1)
		}
		return s[:m[0]] + s[m[1]:], t
	}
	return s, at
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// pattern maps the verb phrase after the subject to an op.
type pattern struct {
	re   *regexp.Regexp
	pred string
	end  bool
	// object builds the object from the submatches; nil takes group 1.
	object func(m []string) string
}

func pat(expr, pred string, end bool) pattern {
	return pattern{re: regexp.MustCompile(`(?i)^` + expr + `$`), pred: pred, end: end}
}

var patterns = []pattern{
	pat(`(?:no longer|don't|do not|doesn't|does not) (?:play|plays) (?:the )?(.+)`, "plays_instrument", true),
	pat(`(?:no longer|don't|do not) (?:speak|speaks) (.+)`, "speaks_language", true),
	pat(`(?:no longer|don't|do not) (?:like|likes) (.+)`, "likes", true),
	pat(`(?:no longer|don't|do not) (?:have|has) (?:a |an |the |my )?(.+)`, "has_pet", true),
	pat(`(?:am|is) no longer allergic to (.+)`, "allergic_to", true),
	pat(`(?:moved|relocated|moves) out of (.+)`, "lives_in", true),
	pat(`(?:quit|left) (?:my|his|her) job()`, "works_at", true),
	pat(`(?:also )?(?:live|lives|living) in (.+)`, "lives_in", false),
	pat(`(?:moved|relocated|move|moving|moves|relocating)(?: back)? to (.+)`, "lives_in", false),
	pat(`(?:also )?(?:work|works|working|started working) at (.+)`, "works_at", false),
	pat(`(?:work|works|working) as (?:a |an )?(.+)`, "job_title", false),
	pat(`(?:study|studies|studying) at (.+)`, "studies_at", false),
	pat(`got (married|divorced|engaged)`, "marital_status", false),
	pat(`(?:am|is) (single|married|divorced|engaged)`, "marital_status", false),
	pat(`(?:am|is|be|go|going) (vegan|vegetarian|pescatarian)`, "diet", false),
	{re: regexp.MustCompile(`(?i)^only (?:eat|eats) meat$`), pred: "diet", object: func([]string) string { return "meat" }},
	pat(`(?:use|uses|using|switched to|switch to|switches to) (?:a |an |the )?(.+)`, "uses_device", false),
	pat(`(?:also )?(?:play|plays) (?:the )?(.+)`, "plays_instrument", false),
	pat(`(?:also )?(?:speak|speaks) (.+)`, "speaks_language", false),
	{re: regexp.MustCompile(`(?i)^(?:also )?(?:have|has) (?:a|an) (.+?) named (.+)$`), pred: "has_pet",
		object: func(m []string) string { return m[1] + " named " + m[2] }},
	pat(`(?:also )?adopted (?:a |an )?(.+)`, "has_pet", false),
	pat(`(?:am|is) (?:also )?allergic to (.+)`, "allergic_to", false),
	pat(`(?:also )?(?:like|likes|love|loves|enjoy|enjoys) (.+)`, "likes", false),
}

// extract turns one turn into ops. persons are the names the user has
// already introduced, so that "Alex moved to Dallas" is about Alex.
func extract(text string, at time.Time, persons map[string]bool) []op {
	var ops []op
	for _, s := range sentenceSplit.Split(text, -1) {
		ops = append(ops, extractSentence(strings.TrimSpace(s), at, persons)...)
	}
	return ops
}

func extractSentence(s string, at time.Time, persons map[string]bool) []op {
	if s == "" {
		return nil
	}
	s = strings.NewReplacer("I'm ", "I am ", "i'm ", "I am ", "I’m ", "I am ", "’", "'").Replace(s + " ")
	s = strings.TrimSpace(s)
	ctx := ""
	if m := contextPrefix.FindStringSubmatch(s); m != nil {
		ctx = strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(m[1]), "at "), "on ")
		s = s[len(m[0]):]
	}
	conf := 1.0
	if hedgeWords.MatchString(s) {
		conf = 0.4
	}
	s = leadIn.ReplaceAllString(s, "")
	s, from := resolveTime(s, at)
	s = strings.TrimSpace(strings.TrimRight(s, ",;: "))

	var ops []op
	subject, rest := "", ""
	switch {
	case favoriteSubj.MatchString(s):
		m := favoriteSubj.FindStringSubmatch(s)
		obj := cleanObject(m[2])
		if obj == "" {
			return nil
		}
		return []op{{subject: userSubject, predicate: "favorite_" + strings.ToLower(m[1]), object: obj, context: ctx, from: from, conf: conf}}
	case relationSubj.MatchString(s):
		m := relationSubj.FindStringSubmatch(s)
		rel := strings.ToLower(m[1])
		subject, rest = m[2], m[3]
		ops = append(ops, op{subject: userSubject, predicate: rel, object: subject, from: from, conf: 1})
		persons[subject] = true
	case userSubj.MatchString(s):
		subject, rest = userSubject, userSubj.FindStringSubmatch(s)[1]
	case nameSubj.MatchString(s) && persons[nameSubj.FindStringSubmatch(s)[1]]:
		m := nameSubj.FindStringSubmatch(s)
		subject, rest = m[1], m[2]
	default:
		return nil
	}
	for {
		m := modal.FindString(rest)
		if m == "" {
			break
		}
		rest = rest[len(m):]
	}
	rest = strings.TrimSpace(trailing.ReplaceAllString(strings.TrimSpace(rest), ""))
	for _, p := range patterns {
		m := p.re.FindStringSubmatch(rest)
		if m == nil {
			continue
		}
		obj := ""
		if p.object != nil {
			obj = p.object(m)
		} else if len(m) > 1 {
			obj = m[1]
		}
		obj = cleanObject(obj)
		if !p.end && obj == "" {
			break
		}
		ops = append(ops, op{end: p.end, subject: subject, predicate: p.pred, object: obj, context: ctx, from: from, conf: conf})
		if p.end && p.pred == "works_at" && obj == "" {
			// Quitting the job ends the title as well.
			ops = append(ops, op{end: true, subject: subject, predicate: "job_title", context: ctx, from: from, conf: conf})
		}
		break
	}
	return ops
}

func cleanObject(s string) string {
	s = strings.TrimSpace(strings.Trim(s, " ,;:\"'"))
	s = trailing.ReplaceAllString(s, "")
	s = articles.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}
