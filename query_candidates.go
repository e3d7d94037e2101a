package memor

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/norm"
)

// candidate is one document under consideration.
type candidate struct {
	doc uint32
	// shallow: episode holds only what the document map records of it
	// (see qview.loadDoc), until readEpisodes reads it. (Beside doc, in
	// its padding: a candidate is allocated per document a signal finds.)
	shallow bool
	signals Signals
	path    string
	// walk, when path is empty, is the graph path that reached the
	// candidate, rendered into Result.Path only if it is served.
	walk  graph.Path
	score float64
	// rawVector is the cosine before normalisation.
	rawVector float64
	fact      *Fact
	episode   *Episode
}

// candidateSet holds a query's candidates by document, each created the
// first time a signal finds it.
type candidateSet map[uint32]*candidate

// get returns doc's candidate, creating it.
func (cs candidateSet) get(doc uint32) *candidate {
	c := cs[doc]
	if c == nil {
		c = &candidate{doc: doc}
		cs[doc] = c
	}
	return c
}

// bm25Candidates is the text signal's candidate generation: the best
// candidatesPerSignal documents of allow by BM25. It returns how many
// documents it scored.
func bm25Candidates(ctx context.Context, ui *userIndex, text string, allow *roaring.Bitmap, cs candidateSet) (int, error) {
	hits, err := ui.bm.Search(ctx, text, candidatesPerSignal, allow)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range hits {
		if h.Score > 0 {
			cs.get(h.Doc).signals.BM25 = h.Score
			n++
		}
	}
	return n, nil
}

// vectorCandidates is the vector signal's candidate generation: the
// nearest candidatesPerSignal documents of allow to the question's vector
// q, those at least minVector similar. It returns how many it kept.
func vectorCandidates(ctx context.Context, ui *userIndex, q []float32, allow *roaring.Bitmap, cs candidateSet) (int, error) {
	vhits, err := ui.vec.Search(ctx, q, candidatesPerSignal, allow)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range vhits {
		if h.Score >= minVector {
			c := cs.get(h.ID)
			c.signals.Vector, c.rawVector = float64(h.Score), float64(h.Score)
			n++
		}
	}
	return n, nil
}

// minVector is the cosine similarity below which a vector hit is noise:
// feature-hashed vectors of unrelated sentences still share a few features.
const minVector = 0.15

// minVectorAlone is the similarity a candidate needs when no other signal
// supports it.
const minVectorAlone = 0.35

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// entityCandidates walks the fact graph from the focus's seeds. A fact
// reached by a path scores by how many query words its path explains, per
// hop, so "what kind of dog does my brother have" prefers user → brother →
// Alex → has_pet → golden retriever over Alex's other facts. It returns
// what it matched of the words (for support), nil if it walked nowhere.
func (e *Engine) entityCandidates(ctx context.Context, ui *userIndex, text string, seeds []string, depth int, facts *roaring.Bitmap, get func(uint32) *candidate) (*pathTokens, error) {
	if len(seeds) == 0 {
		return nil, nil
	}
	paths, err := ui.g.BFSLimit(ctx, seeds, depth, 4*candidatesPerSignal, facts)
	if err != nil {
		return nil, err
	}
	words := map[string]bool{}
	for _, t := range bm25.Tokenize(text) {
		words[t] = true
	}
	tokens := newPathTokens(ui, words, e.preds.gloss, len(paths)+len(seeds))
	for _, p := range paths {
		score := pathScore(p, tokens)
		if score == 0 {
			continue
		}
		c := get(p.Doc())
		if score > c.signals.Entity {
			c.signals.Entity = score
			c.path, c.walk = "", p
		}
	}
	return tokens, nil
}

// outdatedCandidates answers questions phrased with an outdated value: "is
// my iPhone 13 still working?" names a value that no longer holds, so the
// value now in force in the same slot (user uses_device Android) becomes a
// candidate, reached through the old edge.
func (e *Engine) outdatedCandidates(ctx context.Context, ui *userIndex, text string, facts *roaring.Bitmap, get func(uint32) *candidate) error {
	type slot struct{ subject, label string }
	seen := map[slot]bool{}
	for _, name := range ui.g.Entities(text) {
		past, err := ui.g.BFSLimit(ctx, []string{name}, 1, candidatesPerSignal, nil)
		if err != nil {
			return err
		}
		for _, p := range past {
			h := p.Hops[0]
			if !h.Inverse || facts.Contains(h.Doc) {
				continue // not a value of someone's slot, or still in force
			}
			s := slot{norm.Key(h.To), h.Label}
			if seen[s] {
				continue // another old value of a slot already looked at
			}
			seen[s] = true
			for _, n := range ui.g.Out(h.To, h.Label, facts) {
				c := get(n.Doc)
				if c.signals.Entity < 1 {
					c.signals.Entity = 1
					c.path, c.walk = name+" → now → "+graph.Path{Hops: []graph.Hop{n}}.String(), graph.Path{}
				}
			}
		}
	}
	return nil
}
