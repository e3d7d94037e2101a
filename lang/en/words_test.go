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

func TestPossessedRelation(t *testing.T) {
	for _, c := range []struct {
		text, owner, rel, phrase string
	}{
		{"Where does Caroline's brother live?", "Caroline", "brother", "Caroline's brother"},
		{"where does caroline’s older brother live", "Caroline", "brother", "caroline’s older brother"},
		{"What does James' best friend do?", "James", "friend", "James' best friend"},
		{"Where does Mary Jane's mum work?", "Mary Jane", "mother", "Mary Jane's mum"},
		{"Where does Caroline live with her brother?", "Caroline", "", ""},
		{"Where does Caroline's dog sleep on the sofa with her brother?", "Caroline", "", ""},
		{"Where does Jane's brother live?", "Mary Jane", "", ""},
		{"Where does Carolines brother live?", "Caroline", "", ""},
	} {
		p, ok := PossessedRelation(c.text, c.owner)
		if p.Relation != c.rel || ok != (c.rel != "") {
			t.Errorf("PossessedRelation(%q, %q) = %q, %v; want %q", c.text, c.owner, p.Relation, ok, c.rel)
		}
		if ok && c.phrase != c.text[p.Start:p.End] {
			t.Errorf("PossessedRelation(%q, %q): phrase %q, want %q", c.text, c.owner, c.text[p.Start:p.End], c.phrase)
		}
	}
}

func TestFirstPersonRelation(t *testing.T) {
	text := "What pet does my older brother have?"
	p, ok := FirstPersonRelation(text)
	if !ok || p.Relation != "brother" || text[p.Start:p.End] != "my older brother" {
		t.Fatalf("FirstPersonRelation(%q) = %+v, %v", text, p, ok)
	}
	if _, ok := FirstPersonRelation("Where does the brother live?"); ok {
		t.Fatal("a relation with no first-person possessive was taken as one")
	}
}
