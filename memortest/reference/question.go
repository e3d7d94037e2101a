package reference

import (
	"regexp"
	"strings"
	"time"
)

// question is what a query asks about.
type question struct {
	// subjects are the subjects asked about when no relation is named.
	subjects []string
	// relation ("brother") and optional name ("Sarah") select the subjects
	// through the user's relations instead.
	relation, name string
	// wantsRelation: the question asks who the relative is.
	wantsRelation bool
	predicates    []string
	context       string
	// at is the valid time asked about; zero means now.
	at time.Time
}

var (
	qRelation = regexp.MustCompile(`\b(?i:my) (` + relationAlt + `)(?:'s)?(?:\s+([A-Z][\p{L}-]*))?`)
	qContext  = regexp.MustCompile(`(?i)\b(at work|at home|on weekends|on weekdays)\b`)
	qMonth    = regexp.MustCompile(`(?i)\bin (` + monthAlt + `) (\d{4})\b`)
	qDate     = regexp.MustCompile(`(?i)\bon (\d{4}-\d{2}-\d{2})\b`)
	qYear     = regexp.MustCompile(`(?i)\bin (\d{4})\b`)
	qWord     = regexp.MustCompile(`[\p{L}\d]+`)
)

// keywords maps a question word to the predicates it asks about.
var keywords = map[string][]string{
	"live": {"lives_in"}, "lives": {"lives_in"}, "living": {"lives_in"}, "lived": {"lives_in"},
	"city": {"lives_in"}, "reside": {"lives_in"}, "located": {"lives_in"}, "based": {"lives_in"},
	"work": {"works_at"}, "works": {"works_at"}, "working": {"works_at"}, "worked": {"works_at"},
	"employer": {"works_at"}, "company": {"works_at"}, "employed": {"works_at"},
	"job": {"works_at", "job_title"}, "role": {"job_title"}, "title": {"job_title"},
	"position": {"job_title"}, "occupation": {"job_title"}, "profession": {"job_title"},
	"study": {"studies_at"}, "studies": {"studies_at"}, "studying": {"studies_at"},
	"school": {"studies_at"}, "university": {"studies_at"}, "college": {"studies_at"}, "attend": {"studies_at"},
	"diet": {"diet"}, "eat": {"diet"}, "vegan": {"diet"}, "vegetarian": {"diet"}, "meat": {"diet"},
	"married": {"marital_status"}, "marital": {"marital_status"}, "divorced": {"marital_status"},
	"engaged": {"marital_status"}, "single": {"marital_status"}, "spouse": {"marital_status"},
	"phone": {"uses_device"}, "device": {"uses_device"}, "iphone": {"uses_device"}, "android": {"uses_device"},
	"instrument": {"plays_instrument"}, "instruments": {"plays_instrument"}, "play": {"plays_instrument"},
	"pet": {"has_pet"}, "pets": {"has_pet"}, "dog": {"has_pet"}, "cat": {"has_pet"}, "animal": {"has_pet"},
	"language": {"speaks_language"}, "languages": {"speaks_language"}, "speak": {"speaks_language"},
	"allergic": {"allergic_to"}, "allergy": {"allergic_to"}, "allergies": {"allergic_to"},
	"food": {"likes"}, "foods": {"likes"}, "like": {"likes"}, "enjoy": {"likes"},
}

// parseQuestion reads the subject, predicates, context and valid time a
// question asks about. persons are the names the user has introduced.
func parseQuestion(q string, persons map[string]bool) question {
	var qs question
	q = strings.ReplaceAll(q, "’", "'")
	if m := qMonth.FindStringSubmatch(q); m != nil {
		// A month stands for its middle: the cases keep changes away from it.
		qs.at = time.Date(atoi(m[2]), months[strings.ToLower(m[1])], 15, 12, 0, 0, 0, time.UTC)
	} else if m := qDate.FindStringSubmatch(q); m != nil {
		if t, err := time.Parse(time.DateOnly, m[1]); err == nil {
			qs.at = t.Add(12 * time.Hour)
		}
	} else if m := qYear.FindStringSubmatch(q); m != nil {
		qs.at = time.Date(atoi(m[1]), 7, 1, 0, 0, 0, 0, time.UTC)
	}
	if m := qContext.FindStringSubmatch(q); m != nil {
		l := strings.ToLower(m[1])
		qs.context = l[strings.IndexByte(l, ' ')+1:]
		q = strings.Replace(q, m[0], " ", 1)
	}
	if m := qRelation.FindStringSubmatch(q); m != nil {
		qs.relation, qs.name = strings.ToLower(m[1]), m[2]
		q = strings.Replace(q, m[0], " ", 1)
	} else {
		for _, w := range qWord.FindAllString(q, -1) {
			if persons[w] {
				qs.subjects = append(qs.subjects, w)
			}
		}
		if len(qs.subjects) == 0 {
			qs.subjects = []string{userSubject}
		}
	}
	words := qWord.FindAllString(strings.ToLower(q), -1)
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			qs.predicates = append(qs.predicates, p)
		}
	}
	for i, w := range words {
		if (w == "favorite" || w == "favourite") && i+1 < len(words) {
			add("favorite_" + words[i+1])
			return qs
		}
	}
	for _, w := range words {
		switch w {
		case "who", "name":
			qs.wantsRelation = true
		}
		for _, p := range keywords[w] {
			add(p)
		}
	}
	return qs
}
