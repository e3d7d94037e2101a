package bm25

// The stemmer is the inflectional part of M. F. Porter, "An algorithm for
// suffix stripping", Program 14(3), 1980: steps 1a (plurals), 1b (-ed,
// -ing), 1c (y → i) and 5 (final -e, -ll). The derivational steps 2–4
// (-ational, -ness, -ment …) are left out on purpose: they conflate words an
// agent's memory must keep apart ("organ"/"organization") and buy little on
// short fact sentences. It works in place on a lower-case ASCII word.

// isCons reports whether w[i] is a consonant in Porter's sense: a letter
// other than a e i o u, and other than a y preceded by a consonant.
func isCons(w []byte, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isCons(w, i-1)
	}
	return true
}

// measure is Porter's m: the number of VC sequences in [C](VC)^m[V].
func measure(w []byte) int {
	m, i, n := 0, 0, len(w)
	for i < n && isCons(w, i) {
		i++
	}
	for i < n {
		for i < n && !isCons(w, i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && isCons(w, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(w []byte) bool {
	for i := range w {
		if !isCons(w, i) {
			return true
		}
	}
	return false
}

// cvc reports whether w ends consonant-vowel-consonant with the last
// consonant not w, x or y (Porter's *o).
func cvc(w []byte) bool {
	n := len(w)
	if n < 3 || !isCons(w, n-1) || isCons(w, n-2) || !isCons(w, n-3) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

func stem(w []byte) []byte {
	if len(w) < 3 {
		return w
	}
	// Step 1a: plurals.
	switch {
	case hasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case hasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case hasSuffix(w, "ss"), hasSuffix(w, "us"):
		// "class", "status": not plurals.
	case hasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Step 1b: -eed, -ed, -ing.
	switch {
	case hasSuffix(w, "eed"):
		if measure(w[:len(w)-3]) > 0 {
			w = w[:len(w)-1]
		}
	case hasSuffix(w, "ed") && hasVowel(w[:len(w)-2]):
		w = step1bFix(w[:len(w)-2])
	case hasSuffix(w, "ing") && hasVowel(w[:len(w)-3]):
		w = step1bFix(w[:len(w)-3])
	}
	// Step 1c: y → i when the stem has a vowel ("happy" = "happi-ness").
	if n := len(w); n > 1 && w[n-1] == 'y' && hasVowel(w[:n-1]) {
		w[n-1] = 'i'
	}
	// Step 5a: final -e.
	if n := len(w); n > 1 && w[n-1] == 'e' {
		if m := measure(w[:n-1]); m > 1 || (m == 1 && !cvc(w[:n-1])) {
			w = w[:n-1]
		}
	}
	// Step 5b: -ll → -l on long stems.
	if n := len(w); n > 1 && w[n-1] == 'l' && w[n-2] == 'l' && measure(w) > 1 {
		w = w[:n-1]
	}
	return w
}

// step1bFix restores what removing -ed / -ing took too much of.
func step1bFix(w []byte) []byte {
	n := len(w)
	switch {
	case hasSuffix(w, "at"), hasSuffix(w, "bl"), hasSuffix(w, "iz"):
		return append(w, 'e')
	case n >= 2 && w[n-1] == w[n-2] && isCons(w, n-1) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z':
		return w[:n-1] // "hopping" → "hop"
	case measure(w) == 1 && cvc(w):
		return append(w, 'e') // "hoping" → "hope"
	}
	return w
}
