// Package norm holds the normal forms of the names memor stores (subjects,
// objects, contexts, graph entities), shared so that the engine and the
// graph agree on them: Clean, the display form, and Key, the identity
// form under which "Seattle" and " seattle" are one value.
package norm

import "strings"

// Clean trims s and turns each run of white space into one space.
func Clean(s string) string {
	if plain(s, false) {
		return s // the common case, without a copy
	}
	return strings.Join(strings.Fields(s), " ")
}

// Key is Clean lower-cased: the identity form.
func Key(s string) string {
	if plain(s, true) {
		return s
	}
	return strings.ToLower(Clean(s))
}

// plain reports whether s is ASCII with single inner spaces and no other
// white space (and, if lower, no upper case): what Clean (and Key) would
// return unchanged. Most names are, and the check spares them the
// general path's allocations.
func plain(s string, lower bool) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && s[i+1] == ' ':
			return false
		case lower && 'A' <= c && c <= 'Z':
			return false
		}
	}
	return true
}
