// Package naive is the baseline arm of memortest: a typical chunk memory.
// It appends every turn verbatim, ranks turns against the question with a
// small BM25 (k1 = 1.2, b = 0.75, the usual defaults from Robertson and
// Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)
// and breaks score ties in favour of the latest turn. It has no notion of
// facts, so it serves superseded, ended and contested values whenever their
// words match the question: that is what the suite measures it for.
//
// It imports only the standard library.
package naive

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// ErrEmpty reports an Add with no text.
var ErrEmpty = errors.New("naive: empty text")

// BM25 constants.
const (
	k1 = 1.2
	b  = 0.75
)

// Memory is the naive chunk memory. It is safe for concurrent use.
type Memory struct {
	mu    sync.RWMutex
	users map[string]*corpus
}

type doc struct {
	text  string
	at    time.Time
	seq   int
	terms map[string]int
	n     int // length in terms
}

type corpus struct {
	docs  []doc
	df    map[string]int
	total int // sum of lengths
}

// New returns an empty Memory.
func New() *Memory { return &Memory{users: map[string]*corpus{}} }

// Add appends text as one chunk.
func (m *Memory) Add(ctx context.Context, user, text string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return ErrEmpty
	}
	terms := Tokenize(text)
	d := doc{text: text, at: at, terms: map[string]int{}, n: len(terms)}
	for _, t := range terms {
		d.terms[t]++
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.users[user]
	if c == nil {
		c = &corpus{df: map[string]int{}}
		m.users[user] = c
	}
	d.seq = len(c.docs)
	for t := range d.terms {
		c.df[t]++
	}
	c.total += d.n
	c.docs = append(c.docs, d)
	return nil
}

// Reset forgets user.
func (m *Memory) Reset(ctx context.Context, user string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, user)
	return nil
}

// Query returns up to k turns that share a term with q, best BM25 score
// first, the later turn first on a tie, each as "YYYY-MM-DD: text".
func (m *Memory) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := m.users[user]
	if c == nil || k <= 0 {
		return nil, nil
	}
	qt := Tokenize(q)
	slices.Sort(qt)
	qt = slices.Compact(qt)
	type hit struct {
		d     *doc
		score float64
	}
	var hits []hit
	n := float64(len(c.docs))
	avg := float64(c.total) / n
	for i := range c.docs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d := &c.docs[i]
		s := 0.0
		for _, t := range qt {
			tf := float64(d.terms[t])
			if tf == 0 {
				continue
			}
			df := float64(c.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(d.n)/avg))
		}
		if s > 0 {
			hits = append(hits, hit{d, s})
		}
	}
	const eps = 1e-9 // scores within eps are a tie
	slices.SortFunc(hits, func(x, y hit) int {
		if math.Abs(x.score-y.score) > eps {
			return cmp.Compare(y.score, x.score)
		}
		if c := y.d.at.Compare(x.d.at); c != 0 {
			return c
		}
		return cmp.Compare(y.d.seq, x.d.seq)
	})
	out := make([]string, 0, min(k, len(hits)))
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.d.at.UTC().Format(time.DateOnly)+": "+h.d.text)
	}
	return out, nil
}

var stop = map[string]bool{
	"i": true, "me": true, "my": true, "a": true, "an": true, "the": true, "do": true, "doe": true,
	"did": true, "is": true, "am": true, "are": true, "was": true, "to": true, "in": true, "at": true,
	"of": true, "and": true, "or": true, "what": true, "which": true, "where": true, "who": true,
	"how": true, "have": true, "ha": true, "now": true, "still": true, "for": true, "on": true,
	"it": true, "that": true, "this": true, "any": true, "also": true, "with": true,
}

// Tokenize lowercases text, splits it into words, drops stop words and
// strips a plural or third-person "s" ("lives" → "live"), the light
// stemming most chunk memories have.
func Tokenize(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		w = strings.TrimSuffix(strings.Trim(w, "'"), "'s")
		switch {
		case strings.HasSuffix(w, "ies") && len(w) > 4:
			w = w[:len(w)-3] + "y"
		case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 2:
			w = w[:len(w)-1]
		}
		if w == "" || stop[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}
