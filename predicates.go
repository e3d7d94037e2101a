package memor

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/lang"
	"github.com/memor-db/memor/lang/en"
)

// predicates is an engine's predicate catalogue: en's defaults (DESIGN
// §3) and what the application registered. The resolver, the index
// glosses, the graph walk's scoring and the extractor all read it.
type predicates struct {
	cat *lang.Catalogue
}

func newPredicates() *predicates {
	return &predicates{cat: en.NewCatalogue()}
}

// MaxPredicateBytes bounds a predicate name or alias given to
// RegisterPredicate or Options.Predicates.
const MaxPredicateBytes = 1 << 10

// checkPredicate validates a predicate declaration and returns its
// canonical name and aliases, or an error wrapping ErrInvalidPredicate.
func checkPredicate(name string, c Cardinality, aliases []string) (string, []string, error) {
	if c != One && c != Many {
		return "", nil, fmt.Errorf("%w: %q: cardinality %d is neither One nor Many", ErrInvalidPredicate, name, c)
	}
	n, err := predicateName(name, "name")
	if err != nil {
		return "", nil, err
	}
	als := make([]string, 0, len(aliases))
	for _, a := range aliases {
		a, err := predicateName(a, "alias of "+n)
		if err != nil {
			return "", nil, err
		}
		als = append(als, a)
	}
	return n, als, nil
}

// predicateName returns the canonical form of a declared name or alias.
// It refuses what normalises to nothing ("  ", "\x00", "__"): such a
// name would make every claim of its aliases one no index can store.
func predicateName(s, what string) (string, error) {
	switch {
	case len(s) > MaxPredicateBytes:
		return "", fmt.Errorf("%w: %s of %d bytes (max %d)", ErrInvalidPredicate, what, len(s), MaxPredicateBytes)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidPredicate, what, s)
	}
	n := normPredicate(s)
	if n == "" {
		return "", fmt.Errorf("%w: %s %q has no letter or digit", ErrInvalidPredicate, what, s)
	}
	return n, nil
}

// register declares a predicate; name and aliases are canonical (see
// checkPredicate), and so are p's other fields' words.
func (p *predicates) register(name string, c Cardinality, aliases []string, decl Predicate) {
	topic := make([]string, 0, len(decl.Topic))
	for _, w := range decl.Topic {
		if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
			topic = append(topic, w)
		}
	}
	p.cat.Register(lang.Predicate{Name: name, One: c == One, Aliases: aliases,
		Gloss: decl.Gloss, Topic: topic, Note: decl.Note, Relation: decl.Relation})
}

// canonical maps a predicate through normalisation and aliases.
func (p *predicates) canonical(pred string) string {
	return p.cat.Canonical(normPredicate(pred))
}

// lookup returns the cardinality of a canonical predicate and whether it is
// known.
func (p *predicates) lookup(pred string) (Cardinality, bool) {
	d, ok := p.cat.Lookup(pred)
	if ok && d.One {
		return One, true
	}
	return Many, ok
}

// gloss is the words a predicate goes by, which the text indexes, the
// graph walk's path scores and the abstention's support see: its gloss
// (or its name's words) and its aliases' words, so "adopted" registered
// with the alias "has_pet" is found by "pet".
func (p *predicates) gloss(pred string) string {
	g := p.cat.Gloss(pred)
	if g == "" {
		g = strings.ReplaceAll(pred, "_", " ")
	}
	if d, ok := p.cat.Lookup(pred); ok && !d.Family {
		for _, a := range d.Aliases {
			if a != pred {
				g += " " + strings.ReplaceAll(a, "_", " ")
			}
		}
	}
	if m := en.MatterGloss(pred); m != "" {
		g += " " + m
	}
	return g
}

// factText is what the text indexes see for a fact.
func (p *predicates) factText(f *Fact) string {
	s := f.Subject + " " + p.gloss(f.Predicate) + " " + f.Object
	if f.Context != "" {
		s += " " + f.Context
	}
	return s
}

// normPredicate is norm.Predicate: "Lives In" → "lives_in".
func normPredicate(s string) string { return norm.Predicate(s) }
