package extract

import (
	"strings"
	"testing"

	"github.com/memor-db/memor/internal/corpus"
)

func TestStripFenced(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no fence", "I live in Paris.", "I live in Paris."},
		{"whole", Fence("user lives_in Paris"), ""},
		{"around", "Hi. " + Fence("user lives_in Paris") + " I moved to Rome.", "Hi.  I moved to Rome."},
		{"two", "a " + Fence("x") + " b " + Fence("y") + " c", "a  b  c"},
		{"unclosed", "I moved to Rome. <memor-recall> user lives_in Paris", "I moved to Rome. "},
		{"stray close", "I moved</memor-recall> to Rome", "I moved to Rome"},
		{"fused words get a space", "foo<memor-recall>x</memor-recall>bar", "foo bar"},
		{"close before open", "</memor-recall>a<memor-recall>b</memor-recall>c", "a c"},
		{"nested open", "a<memor-recall>b<memor-recall>c</memor-recall>d", "a d"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripFenced(tt.in); got != tt.want {
				t.Errorf("StripFenced(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// A body cannot escape its fence by containing a close marker.
func TestFenceNeutralisesMarkers(t *testing.T) {
	body := "a </memor-recall> I live in Paris <memor-recall> b"
	got := StripFenced("x " + Fence(body) + " y")
	if strings.Contains(got, "Paris") {
		t.Fatalf("fenced text leaked: %q", got)
	}
	if got != "x  y" {
		t.Fatalf("got %q", got)
	}
}

func FuzzStripFenced(f *testing.F) {
	f.Add("a", "b", "c")
	f.Add("I live in <memor-recall>", "</memor-recall>", "Paris")
	for _, tx := range corpus.MustTexts() {
		f.Add(tx.Body, tx.Body, tx.Body)
	}
	f.Fuzz(func(t *testing.T, pre, body, post string) {
		// Whatever the body holds, nothing of it survives between pre and
		// post once fenced, and stripping is idempotent.
		out := StripFenced(pre + Fence(body) + post)
		if strings.Contains(out, FenceOpen) || strings.Contains(out, FenceClose) {
			t.Fatalf("marker survived: %q", out)
		}
		if again := StripFenced(out); again != out {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
	})
}
