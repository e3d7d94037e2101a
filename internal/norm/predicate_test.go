package norm

import (
	"math/rand/v2"
	"testing"
)

// TestPlainFastPaths: Predicate returns its input unchanged only where
// the general path would: random strings over the characters that matter
// (spaces and other white space, upper case, underscores, separators,
// non-ASCII, control bytes). TestFastPath tests Key and Clean alike.
func TestPlainFastPaths(t *testing.T) {
	alphabet := []string{"a", "z", "A", "Z", "0", "9", " ", "  ", "\t", "\n", "_", "-", ".", "é", "\u00a0", "\u0085", "\x00", "\x7f", "ß", "İ"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		s := randomString(r, alphabet, 8)
		if plainPredicate(s) && predicate(s) != s {
			t.Fatalf("plainPredicate(%q), but its normal form is %q", s, predicate(s))
		}
	}
}
