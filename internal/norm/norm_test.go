package norm

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFastPath: Clean and Key agree with their definitions on every kind
// of input, whether or not the fast path for plain names takes it:
// ASCII and Unicode white space, control bytes, DEL, case that changes
// length when lowered.
func TestFastPath(t *testing.T) {
	alphabet := []string{"a", "z", "A", "Z", "q", "0", "9", " ", "  ", "\t", "\n", "\v", "\f", "\r", "_", "-", ".", "/",
		"é", "É", "ß", "İ", "\u00a0", "\u0085", "\u2003", "\x00", "\x7f"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		s := randomString(r, alphabet, 12)
		if got, want := Clean(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("Clean(%q) = %q, want %q", s, got, want)
		}
		if got, want := Key(s), strings.ToLower(strings.Join(strings.Fields(s), " ")); got != want {
			t.Fatalf("Key(%q) = %q, want %q", s, got, want)
		}
	}
}

// randomString joins fewer than n pieces of alphabet drawn by r.
func randomString(r *rand.Rand, alphabet []string, n int) string {
	var b strings.Builder
	for range r.IntN(n) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}
