package memor

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Default predicates, registered at Open (DESIGN §3).
var (
	defaultOne = map[string][]string{
		"lives_in":       {"resides_in", "home_city", "location", "city"},
		"works_at":       {"employer", "company", "works_for"},
		"job_title":      {"role", "works_as", "occupation", "profession"},
		"studies_at":     {"school", "university", "attends"},
		"marital_status": {"relationship_status"},
		"diet":           {"eats"},
		"uses_device":    {"phone", "current_phone", "device"},
	}
	defaultMany = map[string][]string{
		"likes":            {"enjoys"},
		"likes_food":       nil,
		"dislikes":         nil,
		"plays_instrument": {"plays"},
		"has_pet":          {"owns_pet", "pet"},
		"pet_name":         nil,
		"speaks_language":  {"speaks", "language"},
		"allergic_to":      {"allergy"},
		"brother":          nil,
		"sister":           nil,
		"friend":           nil,
		"mother":           nil,
		"father":           nil,
		"wife":             nil,
		"husband":          nil,
		"partner":          nil,
		"son":              nil,
		"daughter":         nil,
		"colleague":        nil,
	}
)

// favoritePrefix marks predicates that are One whatever the thing
// (favorite_color, favorite_food …): one can have only one favourite.
const favoritePrefix = "favorite_"

type predicates struct {
	mu    sync.RWMutex
	card  map[string]Cardinality
	alias map[string]string
	// glosses: the words a registered predicate goes by besides its name
	// (see gloss).
	glosses map[string]string
}

func newPredicates() *predicates {
	p := &predicates{card: map[string]Cardinality{}, alias: map[string]string{}, glosses: map[string]string{}}
	for name, al := range defaultOne {
		p.register(name, One, al)
	}
	for name, al := range defaultMany {
		p.register(name, Many, al)
	}
	return p
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
// checkPredicate).
func (p *predicates) register(name string, c Cardinality, aliases []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.card[name] = c
	delete(p.alias, name)
	g := predicateGloss[name]
	for _, a := range aliases {
		if a != name {
			p.alias[a] = name
			g += " " + strings.ReplaceAll(a, "_", " ")
		}
	}
	p.glosses[name] = strings.TrimSpace(g)
}

// gloss returns the words a predicate goes by besides its name: its
// built-in gloss and, for a registered predicate, its aliases ("adopted"
// registered with the alias "has_pet" is found by "pet"). The query's
// focus and the graph walk's path scores read it.
func (p *predicates) gloss(name string) string {
	p.mu.RLock()
	g, ok := p.glosses[name]
	p.mu.RUnlock()
	if ok {
		return g
	}
	return predicateGloss[name]
}

// canonical maps a predicate through normalisation and aliases.
func (p *predicates) canonical(pred string) string {
	pred = normPredicate(pred)
	if strings.HasPrefix(pred, "favourite_") {
		pred = favoritePrefix + pred[len("favourite_"):]
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if c, ok := p.alias[pred]; ok {
		return c
	}
	return pred
}

// lookup returns the cardinality of a canonical predicate and whether it is
// known.
func (p *predicates) lookup(pred string) (Cardinality, bool) {
	p.mu.RLock()
	c, ok := p.card[pred]
	p.mu.RUnlock()
	if ok {
		return c, true
	}
	if strings.HasPrefix(pred, favoritePrefix) {
		return One, true
	}
	return Many, false
}

// normPredicate lowercases and turns runs of spaces, dashes and other
// separators into single underscores: "Lives In" → "lives_in".
func normPredicate(s string) string {
	if plainPredicate(s) {
		return s // the common case, without a copy
	}
	var b strings.Builder
	us := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if us && b.Len() > 0 {
				b.WriteByte('_')
			}
			us = false
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		us = true
	}
	return b.String()
}

// plainPredicate reports whether s is its own normPredicate: lower-case
// ASCII letters and digits in runs joined by single underscores.
func plainPredicate(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_':
			if s[i-1] == '_' {
				return false
			}
		case c < '0' || c > '9' && c < 'a' || c > 'z':
			return false
		}
	}
	return true
}
