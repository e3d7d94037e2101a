package memor

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/index/bm25"
)

// This file holds the parts of Query's scoring that are not fusion itself:
// how the question is embedded, and the orderings applied to the fused
// candidates (a fact above its episode, optionally the newest word first).
// Each leaves its mark in Signals, so a result says why it ranked where it
// did.

// stopWordWeight is the weight of a word the BM25 index leaves out (a stop
// word, which therefore has no IDF there): that of a term in about 37 % of
// the documents (IDF 1). Dropping stop words altogether lost the
// first-person wording ("I prefer", "my") that tells a user's own
// statements from the assistant's.
const stopWordWeight = 1

// queryVector embeds the question for vector search. With an embedder
// that weights words, each word counts by the square root of its IDF
// over the user's own documents (the BM25 index's statistics): a
// feature-hashed vector otherwise counts "what", "did" and "how" as much
// as the words that say what is asked, and a turn sharing only those
// scores high. The root keeps the rarest words of a question from
// drowning the rest (each word also owns its trigrams, which already tie
// inflections together). The stored vectors stay unweighted: weighting
// the query alone shifts cosine's emphasis to the rare words.
func (e *Engine) queryVector(ctx context.Context, ui *userIndex, text string) ([]float32, error) {
	// The default embedder only: a type that embeds *embed.Hash to
	// override Embed would otherwise be bypassed.
	we, ok := e.idx.emb.(*embed.Hash)
	if !ok {
		return e.idx.embedOne(ctx, text)
	}
	idf := termIDF(ui.bm, text)
	v, err := we.EmbedWeighted(ctx, text, func(word string) float32 {
		return float32(wordWeight(ui.bm, idf, word))
	})
	if err != nil {
		return nil, fmt.Errorf("memor: embed: %w", err)
	}
	return v, nil
}

// wordWeight is the weight of one word of a question in its vector:
// √IDF of its BM25 term (looked up in idf, filled in from ix for a term
// the question's own analysis split differently), stopWordWeight for a
// stop word.
func wordWeight(ix *bm25.Index, idf map[string]float64, word string) float64 {
	terms := bm25.Tokenize(word)
	if len(terms) == 0 {
		return stopWordWeight
	}
	w, ok := idf[terms[0]]
	if !ok {
		w = termIDF(ix, terms[0])[terms[0]]
		idf[terms[0]] = w
	}
	return math.Sqrt(w)
}

// noDoc is a document number no index holds: Explain of it gives a
// text's collection statistics alone.
const noDoc = math.MaxUint32

// termIDF maps each of text's BM25 terms to its IDF in ix. A term no
// document holds weighs as if one did: it can still match through the
// trigrams it shares with stored words.
func termIDF(ix *bm25.Index, text string) map[string]float64 {
	ex := ix.Explain(text, noDoc)
	m := make(map[string]float64, len(ex.Terms))
	for _, t := range ex.Terms {
		if t.DF == 0 {
			m[t.Term] = math.Log(1 + (float64(ex.N)-0.5)/1.5)
		} else {
			m[t.Term] = t.IDF
		}
	}
	return m
}

// factsOverSources ranks a fact at least as high as the episode it came
// from when both are candidates: the fact is the episode's answer made
// precise (and current; a stale fact is no candidate), so it comes first
// (sortCandidates puts a fact before an episode on equal scores).
// Signals.Source is what the fact gained.
func factsOverSources(list []*candidate) {
	best := map[uint64]float64{}
	for _, c := range list {
		if c.episode != nil && c.score > best[c.episode.Seq] {
			best[c.episode.Seq] = c.score
		}
	}
	for _, c := range list {
		if c.fact == nil {
			continue
		}
		if s, ok := best[c.fact.Episode]; ok && s > c.score {
			c.signals.Source = s - c.score
			c.score = s
		}
	}
}

// termVector is a text's BM25 terms weighted by (1 + ln tf)·IDF, the
// vector "the same matter" is measured with.
type termVector map[string]float64

func termVectorOf(ix *bm25.Index, text string) termVector {
	idf := termIDF(ix, text)
	tf := map[string]float64{}
	for _, t := range bm25.Tokenize(text) {
		tf[t]++
	}
	v := make(termVector, len(idf))
	for t, w := range idf {
		v[t] = (1 + math.Log(max(tf[t], 1))) * w
	}
	return v
}

func (a termVector) cosine(b termVector) float64 {
	var dot, na, nb float64
	for k, x := range a {
		na += x * x
		dot += x * b[k]
	}
	for _, y := range b {
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// said is when a candidate's content was said: an episode's time, a fact
// version's valid-from.
func (c *candidate) said() time.Time {
	switch {
	case c.fact != nil:
		return c.fact.ValidFrom
	case c.episode != nil:
		return c.episode.At
	}
	return time.Time{}
}

func (c *candidate) text() string {
	switch {
	case c.fact != nil:
		return c.fact.String()
	case c.episode != nil:
		return c.episode.Text
	}
	return ""
}

// staleFactor multiplies the score of a result once for each later one
// that says the same matter: below the newer one, which inherits its
// score, and otherwise where it was.
const staleFactor = 0.98

// newerWins makes the newest word win among results that say the same
// matter: when a later result's text is similar to an earlier one's
// (cosine of IDF-weighted terms at least sameMatter), the later one's
// score is raised to the earlier's (the relevance of a matter belongs to
// its latest statement: "I have now uploaded 30 documents" answers
// whatever "I have uploaded 25 documents" answered) and the earlier one
// is multiplied by staleFactor per later restatement, so it ranks just
// below. It needs no extracted fact. Signals.Newer is what the later one
// gained, Signals.Stale the earlier one's factor.
//
// It is off by default (QueryOptions.sameMatter): in long single-topic
// conversations, text similarity does not tell a restatement from
// another turn on the same project, and raising later turns pushed
// evidence out at every threshold measured.
func newerWins(ix *bm25.Index, list []*candidate, sameMatter float64) {
	if len(list) < 2 {
		return
	}
	order := make([]*candidate, len(list))
	copy(order, list)
	sort.SliceStable(order, func(i, j int) bool { return order[i].said().Before(order[j].said()) })
	vecs := make([]termVector, len(order))
	for i, c := range order {
		vecs[i] = termVectorOf(ix, c.text())
	}
	stale := make([]float64, len(order))
	for i := range stale {
		stale[i] = 1
	}
	for j := 1; j < len(order); j++ {
		later := order[j]
		for i := 0; i < j; i++ {
			earlier := order[i]
			if !earlier.said().Before(later.said()) || vecs[i].cosine(vecs[j]) < sameMatter {
				continue
			}
			stale[i] *= staleFactor
			if earlier.score > later.score {
				later.signals.Newer += earlier.score - later.score
				later.score = earlier.score
			}
		}
	}
	for i, c := range order {
		if stale[i] < 1 {
			c.signals.Stale = stale[i]
			c.score *= stale[i]
		}
	}
}

// completeSignals gives every candidate the text and vector scores it
// has, not only those of the signals that found it: a turn in BM25's top
// 50 but not in the vector index's counted 0 for the vector (and the
// other way round), as if it shared nothing with the question. Scoring
// the few candidates a signal missed is one search of each index
// restricted to them.
func completeSignals(ctx context.Context, ui *userIndex, text string, q []float32, cands map[uint32]*candidate) error {
	noText, noVec := roaring.New(), roaring.New()
	for doc, c := range cands {
		if c.signals.BM25 == 0 {
			noText.Add(doc)
		}
		if c.rawVector == 0 {
			noVec.Add(doc)
		}
	}
	if n := int(noText.GetCardinality()); n > 0 {
		hits, err := ui.bm.Search(ctx, text, n, noText)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if h.Score > 0 {
				cands[h.Doc].signals.BM25 = h.Score
			}
		}
	}
	if n := int(noVec.GetCardinality()); n > 0 && !isZero(q) {
		hits, err := ui.vec.Search(ctx, q, n, noVec)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if c := cands[h.ID]; c != nil && float64(h.Score) >= minVector {
				c.signals.Vector, c.rawVector = float64(h.Score), float64(h.Score)
			}
		}
	}
	return nil
}

// scaleText puts each candidate's BM25 score on [0, 1] as a fraction of
// the best candidate's. Min-max over the candidates made the weakest match
// worth 0.1 and the best 1 however close they were, so a turn sharing
// only a name with the question counted as a tenth of one sharing what is
// asked, and as much as anything the vector signal lifted: the ratio keeps
// how much weaker a weak match is.
func scaleText(list []*candidate) {
	var hi float64
	for _, c := range list {
		hi = max(hi, c.signals.BM25)
	}
	for _, c := range list {
		if hi > 0 && c.signals.BM25 > 0 {
			c.signals.BM25 /= hi
		} else {
			c.signals.BM25 = 0
		}
	}
}

// scaleVector puts each candidate's cosine on [0, 1] as its height above
// the noise floor (minVector, the similarity unrelated texts reach through
// shared hashed features) relative to the best candidate's: a hit at the
// floor is worth nothing, whereas min-max made the weakest hit worth 0.1
// and the best 1 however close to noise both were.
func scaleVector(list []*candidate) {
	hi := minVector
	for _, c := range list {
		hi = max(hi, c.signals.Vector)
	}
	for _, c := range list {
		if v := c.signals.Vector; v > minVector && hi > minVector {
			c.signals.Vector = (v - minVector) / (hi - minVector)
		} else {
			c.signals.Vector = 0
		}
	}
}
