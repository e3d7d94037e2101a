package en

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
