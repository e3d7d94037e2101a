package lang

import (
	"slices"
	"strings"
	"sync"
)

// Predicate is what the engine knows about one predicate: how many values
// it holds at once and the words people use for it. Names and aliases are
// canonical predicate names (lower-case words joined by underscores);
// normalising what a caller wrote is the caller's work.
type Predicate struct {
	// Name is the canonical name ("lives_in"). With Family set it is a
	// prefix ("favorite_"): every predicate that starts with it shares
	// its cardinality, and an alias of a family ("favourite_") is a
	// prefix spelling of it.
	Name string
	// One: a single value holds at a time (a newer value supersedes the
	// one in force); otherwise several values may hold at once.
	One bool
	// Aliases are other names of the predicate; claims made with an
	// alias are the predicate's.
	Aliases []string
	// Gloss is the words people use for the predicate, in the language of
	// the text ("lives in live living home city where"): the text indexes
	// see it beside the subject and object of each fact, so a question in
	// words finds a fact whose predicate name is not a word.
	Gloss string
	// Topic lists the words of a question that ask about this predicate's
	// topic ("pet", "dog" for has_pet).
	Topic []string
	// Relation: the object is a person related to the subject ("user
	// brother Alex"); questions reach that person through it.
	Relation bool
	// Note is what a model is told about the values beside the name
	// ("the kind or breed, e.g. golden retriever"); empty: the gloss.
	Note string
	// Family: Name is a prefix (see Name).
	Family bool
}

// Catalogue is the set of predicates an engine knows, in the order they
// were first registered. It is safe for concurrent use; the Predicates it
// returns are copies.
type Catalogue struct {
	mu    sync.RWMutex
	order []string // names, first registration first
	preds map[string]Predicate
	alias map[string]string // alias → name
	// families are the family names and their aliases, longest first.
	families []familyName
}

type familyName struct{ prefix, name string }

// NewCatalogue returns a catalogue holding ps, registered in order.
func NewCatalogue(ps ...Predicate) *Catalogue {
	c := &Catalogue{preds: map[string]Predicate{}, alias: map[string]string{}}
	for _, p := range ps {
		c.Register(p)
	}
	return c
}

// Register declares p. Registering a known name again sets its
// cardinality, adds its aliases and topic words, and replaces its gloss,
// note and relation mark only when p gives them: an application that
// re-declares lives_in as Many keeps its English gloss.
func (c *Catalogue) Register(p Predicate) {
	if p.Name == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.preds[p.Name]
	if known {
		old.One, old.Family = p.One, p.Family
		for _, a := range p.Aliases {
			if !slices.Contains(old.Aliases, a) {
				old.Aliases = append(old.Aliases, a)
			}
		}
		for _, w := range p.Topic {
			if !slices.Contains(old.Topic, w) {
				old.Topic = append(old.Topic, w)
			}
		}
		if p.Gloss != "" {
			old.Gloss = p.Gloss
		}
		if p.Note != "" {
			old.Note = p.Note
		}
		old.Relation = old.Relation || p.Relation
		p = old
	} else {
		p.Aliases = slices.Clone(p.Aliases)
		p.Topic = slices.Clone(p.Topic)
		c.order = append(c.order, p.Name)
	}
	c.preds[p.Name] = p
	// A name is never an alias of something else.
	delete(c.alias, p.Name)
	for _, a := range p.Aliases {
		if a == p.Name {
			continue
		}
		c.alias[a] = p.Name
		if p.Family {
			c.families = append(c.families, familyName{a, p.Name})
		}
	}
	if p.Family && !known {
		c.families = append(c.families, familyName{p.Name, p.Name})
	}
	slices.SortStableFunc(c.families, func(a, b familyName) int { return len(b.prefix) - len(a.prefix) })
}

// Canonical maps a canonical-form name through the aliases: an alias
// gives its predicate's name, an alias prefix of a family its family's
// spelling ("favourite_color" → "favorite_color"), anything else itself.
func (c *Catalogue) Canonical(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n, ok := c.alias[name]; ok {
		return n
	}
	for _, f := range c.families {
		if f.prefix != f.name && strings.HasPrefix(name, f.prefix) && len(name) > len(f.prefix) {
			return f.name + name[len(f.prefix):]
		}
	}
	return name
}

// Lookup returns the predicate a canonical name declares (or the family
// it belongs to) and whether it is known.
func (c *Catalogue) Lookup(name string) (Predicate, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p, ok := c.preds[name]; ok && !p.Family {
		return clone(p), true
	}
	for _, f := range c.families {
		if f.prefix == f.name && strings.HasPrefix(name, f.prefix) && len(name) > len(f.prefix) {
			return clone(c.preds[f.name]), true
		}
	}
	return Predicate{}, false
}

// Gloss returns the gloss of a canonical name ("" when it has none).
func (c *Catalogue) Gloss(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p, ok := c.preds[name]; ok && !p.Family {
		return p.Gloss
	}
	return ""
}

// IsRelation reports whether name is a relation predicate.
func (c *Catalogue) IsRelation(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.preds[name].Relation
}

// OfTopic returns, in catalogue order, the names of the predicates whose
// topic word is w.
func (c *Catalogue) OfTopic(w string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, n := range c.order {
		if slices.Contains(c.preds[n].Topic, w) {
			out = append(out, n)
		}
	}
	return out
}

// All returns every predicate, in the order first registered.
func (c *Catalogue) All() []Predicate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Predicate, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, clone(c.preds[n]))
	}
	return out
}

func clone(p Predicate) Predicate {
	p.Aliases = slices.Clone(p.Aliases)
	p.Topic = slices.Clone(p.Topic)
	return p
}
