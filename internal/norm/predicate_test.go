package norm

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// TestPlainFastPaths: Predicate returns its input unchanged only
// where the general path would: random strings over the characters that
// matter (spaces and other white space, upper case, underscores,
// separators, non-ASCII, control bytes). Key and Clean are
// tested alike.
func TestPlainFastPaths(t *testing.T) {
	alphabet := []string{"a", "z", "A", "Z", "0", "9", " ", "  ", "\t", "\n", "_", "-", ".", "é", "\u00a0", "\u0085", "\x00", "\x7f", "ß", "İ"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if plainPredicate(s) {
			var ref strings.Builder
			us := false
			for _, c := range strings.TrimSpace(s) {
				if unicode.IsLetter(c) || unicode.IsDigit(c) {
					if us && ref.Len() > 0 {
						ref.WriteByte('_')
					}
					us = false
					ref.WriteRune(unicode.ToLower(c))
					continue
				}
				us = true
			}
			if ref.String() != s {
				t.Fatalf("plainPredicate(%q), but its normal form is %q", s, ref.String())
			}
		}
	}
}
