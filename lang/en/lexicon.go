package en

import (
	"strings"
	"unicode"
)

// The English words the engine and its rule extractor share. Entries are
// lower case. They are read through functions so that no caller can change
// them.

// firstPerson are the words a speaker uses for themselves.
var firstPerson = set("i", "me", "my", "mine", "myself", "i'm", "i've", "i'd")

// FirstPerson reports whether w (lower case, as Words gives it) is a
// first-person word: a sentence with one is about the speaker.
func FirstPerson(w string) bool { return firstPerson[w] }

// relations maps a kinship or social noun to its relation predicate (see
// Predicates: the ones marked Relation).
var relations = map[string]string{
	"brother": "brother", "brothers": "brother", "sister": "sister", "sisters": "sister",
	"friend": "friend", "friends": "friend", "bestie": "friend", "bff": "friend",
	"mom": "mother", "mum": "mother", "mother": "mother", "mommy": "mother", "mama": "mother",
	"dad": "father", "father": "father", "daddy": "father", "papa": "father",
	"wife": "wife", "husband": "husband",
	"partner": "partner", "boyfriend": "partner", "girlfriend": "partner", "spouse": "partner",
	"fiance": "partner", "fiancé": "partner", "fiancee": "partner", "fiancée": "partner",
	"son": "son", "sons": "son", "daughter": "daughter", "daughters": "daughter",
	"colleague": "colleague", "colleagues": "colleague", "coworker": "colleague",
	"coworkers": "colleague", "co-worker": "colleague", "co-workers": "colleague",
	"workmate": "colleague",
}

// Relation returns the relation predicate a noun names ("mum" → mother).
func Relation(noun string) (string, bool) {
	p, ok := relations[noun]
	return p, ok
}

// Relations returns a copy of the relation nouns and their predicates.
func Relations() map[string]string {
	m := make(map[string]string, len(relations))
	for k, v := range relations {
		m[k] = v
	}
	return m
}

// contextWords name the contexts a value may hold in, as a question says
// them after "at", "on" or "the" ("at work", "on weekends").
var contextWords = map[string]string{"work": "work", "office": "work", "home": "home",
	"weekends": "weekends", "weekend": "weekends", "weekdays": "weekdays"}

// Context returns the context a word names ("office" → work).
func Context(w string) (string, bool) {
	c, ok := contextWords[w]
	return c, ok
}

// ContextAt returns the context ws[i] names as a question says it: after
// "at", "on" or "the" ("at work", "on weekends", "the office").
func ContextAt(ws []string, i int) (string, bool) {
	if i <= 0 || i >= len(ws) {
		return "", false
	}
	switch ws[i-1] {
	case "at", "on", "the":
		return Context(ws[i])
	}
	return "", false
}

// ContextPhrase is a phrase that opens a clause with the circumstance its
// values hold in ("at work I use a BlackBerry").
type ContextPhrase struct {
	Words   []string
	Context string
}

// ContextPhrases returns the context phrases, longest first where one is a
// prefix of another. Each call returns fresh values.
func ContextPhrases() []ContextPhrase {
	return []ContextPhrase{
		{[]string{"at", "the", "office"}, "work"},
		{[]string{"at", "my", "office"}, "work"},
		{[]string{"in", "the", "office"}, "work"},
		{[]string{"at", "my", "job"}, "work"},
		{[]string{"at", "work"}, "work"},
		{[]string{"for", "work"}, "work"},
		{[]string{"at", "home"}, "home"},
		{[]string{"on", "weekdays"}, "weekdays"},
		{[]string{"on", "the", "weekdays"}, "weekdays"},
		{[]string{"during", "the", "week"}, "weekdays"},
		{[]string{"during", "weekdays"}, "weekdays"},
		{[]string{"on", "weekends"}, "weekends"},
		{[]string{"on", "the", "weekends"}, "weekends"},
		{[]string{"at", "weekends"}, "weekends"},
		{[]string{"during", "weekends"}, "weekends"},
		{[]string{"during", "the", "weekends"}, "weekends"},
	}
}

// possessedGap is how many words may stand between a possessive and the
// relation noun it owns ("Caroline's older brother", "Sam's best friend").
const possessedGap = 2

// Possessed is a relation a text attributes to someone by a possessive.
type Possessed struct {
	// Relation is the relation predicate, Noun the word that names it.
	Relation, Noun string
	// Start and End are the byte offsets in the text of the phrase, from
	// the possessive through the noun ("Caroline's older brother").
	Start, End int
}

// PossessedRelation returns the relation that text attributes to owner by
// a possessive: "Caroline's brother" → brother, "James' older sister" →
// sister. Owner is a name, matched word by word and case-insensitively.
func PossessedRelation(text, owner string) (Possessed, bool) {
	name := Words(owner)
	if len(name) == 0 {
		return Possessed{}, false
	}
	last := name[len(name)-1]
	return possessed(text, func(toks []token, i int) int {
		if i < len(name)-1 || !possessiveOf(toks[i].w, last) {
			return -1
		}
		first := i - len(name) + 1
		for k, w := range name[:len(name)-1] {
			if toks[first+k].w != w {
				return -1
			}
		}
		return first
	})
}

// FirstPersonRelation returns the relation a first-person possessive
// names in text: "my brother", "my older sister".
func FirstPersonRelation(text string) (Possessed, bool) {
	return possessed(text, func(toks []token, i int) int {
		if w := toks[i].w; w == "my" || w == "mine" {
			return i
		}
		return -1
	})
}

// token is a word of a text, lower-cased, and where it is in the text.
type token struct {
	w          string
	start, end int
}

// possessed finds the first relation noun within possessedGap words after
// a possessive; owner reports where the possessive toks[i] ends begins
// (the index of its first word), or -1 when toks[i] is none.
func possessed(text string, owner func(toks []token, i int) int) (Possessed, bool) {
	var toks []token
	start := -1
	for i, r := range text + " " {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’'
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			toks = append(toks, token{strings.ToLower(text[start:i]), start, i})
			start = -1
		}
	}
	for i := range toks {
		first := owner(toks, i)
		if first < 0 {
			continue
		}
		for j := i + 1; j < len(toks) && j <= i+1+possessedGap; j++ {
			w := strings.Trim(toks[j].w, "'’")
			if p, ok := Relation(w); ok {
				return Possessed{Relation: p, Noun: w, Start: toks[first].start, End: toks[j].end}, true
			}
		}
	}
	return Possessed{}, false
}

// possessiveOf reports whether tok is the possessive of the word w
// ("caroline's", "caroline’s", and "james'" for a word ending in s).
func possessiveOf(tok, w string) bool {
	for _, a := range [...]string{"'", "’"} {
		if tok == w+a+"s" || (strings.HasSuffix(w, "s") && tok == w+a) {
			return true
		}
	}
	return false
}
