package norm

import (
	"strings"
	"unicode"
)

// Predicate lowercases and turns runs of spaces, dashes and other
// separators into single underscores: "Lives In" → "lives_in".
func Predicate(s string) string {
	if plainPredicate(s) {
		return s // the common case, without a copy
	}
	return predicate(s)
}

// predicate is Predicate's general path.
func predicate(s string) string {
	var b strings.Builder
	us := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if us && b.Len() > 0 {
				b.WriteByte('_')
			}
			us = false
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		us = true
	}
	return b.String()
}

// plainPredicate reports whether s is its own Predicate: lower-case
// ASCII letters and digits in runs joined by single underscores.
func plainPredicate(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_':
			if s[i-1] == '_' {
				return false
			}
		case c < '0' || c > '9' && c < 'a' || c > 'z':
			return false
		}
	}
	return true
}
