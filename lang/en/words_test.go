package en

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"Where does my mother's friend live?": {"where", "does", "my", "mother", "friend", "live"},
		"I'm at James’ place, aren't I?":      {"i'm", "at", "james", "place", "aren't", "i"},
		"Alex’s dog, 'Rex'":                   {"alex", "dog", "rex"},
		"' '' ’":                              {},
		"co-worker #2":                        {"co", "worker", "2"},
	} {
		if got := Words(in); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLexicon(t *testing.T) {
	if !FirstPerson("i'm") || FirstPerson("we") {
		t.Error("FirstPerson")
	}
	if p, ok := Relation("mum"); !ok || p != "mother" {
		t.Errorf("Relation(mum) = %q, %v", p, ok)
	}
	if c, ok := Context("office"); !ok || c != "work" {
		t.Errorf("Context(office) = %q, %v", c, ok)
	}
	if c, ok := ContextAt(Words("what do I use at work"), 5); !ok || c != "work" {
		t.Errorf("ContextAt(at work) = %q, %v", c, ok)
	}
	if _, ok := ContextAt(Words("I work from home"), 1); ok {
		t.Error("ContextAt took a verb for a context")
	}
	// Every relation noun names a relation predicate of the catalogue.
	cat := NewCatalogue()
	for noun, p := range Relations() {
		if !cat.IsRelation(p) {
			t.Errorf("relation noun %q names %q, not a relation predicate", noun, p)
		}
	}
	Relations()["mum"] = "x"
	if p, _ := Relation("mum"); p != "mother" {
		t.Error("Relations returned the lexicon itself")
	}
}
