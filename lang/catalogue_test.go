package lang_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/memor-db/memor/lang"
)

func TestCatalogue(t *testing.T) {
	c := lang.NewCatalogue(
		lang.Predicate{Name: "lives_in", One: true, Aliases: []string{"city"}, Gloss: "lives in home", Topic: []string{"city"}},
		lang.Predicate{Name: "favorite_", One: true, Family: true, Aliases: []string{"favourite_"}},
		lang.Predicate{Name: "brother", Relation: true},
	)
	for in, want := range map[string]string{"city": "lives_in", "lives_in": "lives_in",
		"favourite_colour": "favorite_colour", "favorite_food": "favorite_food", "brother": "brother", "unknown": "unknown"} {
		if got := c.Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	if p, ok := c.Lookup("favorite_food"); !ok || !p.One {
		t.Errorf("Lookup(favorite_food) = %+v, %v: a family member is One", p, ok)
	}
	if _, ok := c.Lookup("favorite_"); ok {
		t.Error("the family prefix itself is no predicate")
	}
	if _, ok := c.Lookup("unknown"); ok {
		t.Error("Lookup(unknown) ok")
	}
	// Re-declaring keeps what the new declaration leaves empty.
	c.Register(lang.Predicate{Name: "lives_in", Aliases: []string{"home_city"}, Topic: []string{"live"}})
	p, _ := c.Lookup("lives_in")
	if p.One || p.Gloss != "lives in home" || !slices.Equal(p.Aliases, []string{"city", "home_city"}) || !slices.Equal(p.Topic, []string{"city", "live"}) {
		t.Errorf("after re-declaring: %+v", p)
	}
	if c.Canonical("home_city") != "lives_in" {
		t.Error("the new alias is not read")
	}
	// A name registered later stops being an alias.
	c.Register(lang.Predicate{Name: "city", Gloss: "city"})
	if c.Canonical("city") != "city" {
		t.Error("a registered name is still an alias")
	}
	if !c.IsRelation("brother") || c.IsRelation("lives_in") {
		t.Error("IsRelation")
	}
	if got := c.OfTopic("live"); !slices.Equal(got, []string{"lives_in"}) {
		t.Errorf("OfTopic(live) = %v", got)
	}
	names := []string{}
	for _, p := range c.All() {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"lives_in", "favorite_", "brother", "city"}) {
		t.Errorf("All: %v, want registration order", names)
	}
	// Returned values are copies.
	c.All()[0].Aliases[0] = "x"
	if c.Canonical("city") != "city" || c.Canonical("home_city") != "lives_in" {
		t.Error("All returned the catalogue's own slices")
	}
	if p, _ := c.Lookup("lives_in"); p.Aliases[0] != "city" {
		t.Error("All returned the catalogue's own slices")
	}
}

// TestCatalogueConcurrent: registration while others read (run with -race).
func TestCatalogueConcurrent(t *testing.T) {
	c := lang.NewCatalogue()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if i == 0 {
					c.Register(lang.Predicate{Name: "p", One: j%2 == 0, Aliases: []string{"q"}})
				}
				c.Canonical("q")
				c.Lookup("p")
				c.All()
			}
		}()
	}
	wg.Wait()
}
