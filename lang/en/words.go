package en

import (
	"strings"
	"unicode"
)

// Words splits text into lower-cased words for matching a question
// against the lexicon and against names: runs of letters and digits,
// apostrophes kept inside a word ("don't", "i'm"), a possessive "'s"
// dropped ("mother's" → "mother"), straight and curly apostrophes alike.
func Words(text string) []string {
	ws := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
	out := ws[:0]
	for _, w := range ws {
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		if w = strings.Trim(w, "'’"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
