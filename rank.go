package memor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// This file holds the parts of Query's scoring that are not fusion itself:
// how the question is embedded, the vector signal's length normalisation,
// and the orderings applied to the fused candidates (a fact above its
// episode, the newest word first).
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

// vectorLengthSlope is the slope s of the vector signal's pivoted length
// normalisation (see vectorLength). On the development benchmark (README,
// Retrieval on real conversations) s = 0.5, 0.6, 0.75, 0.9 and 1 with the
// default weights all lifted recall@10 on both halves; 0.5 is the one that
// kept every question type within 2 points of every baseline (steeper
// slopes lifted short turns over the long answers that summary questions
// need, and cost the owner's short instructions to the vector alone).
const vectorLengthSlope = 0.5

// vectorLength normalises the default embedder's vector signal for the
// candidate's length, as BM25 normalises term frequency: a
// feature-hashed vector of a long text shares features with almost any
// question, so an assistant's long answer that repeats the question's
// words scored as close as the user's short turn that says what is asked.
// The height of the cosine above the noise floor is divided by the
// pivoted length 1 − s + s·len/avg (Singhal, Buckley and Mitra, "Pivoted
// document length normalization", SIGIR 1996; len and avg in BM25 terms,
// s = vectorLengthSlope): a text of average length keeps its cosine, a
// longer one falls, a shorter one rises by at most 1/(1 − s). A cap at 1
// (never raising a short text) was measured before and gained less; the
// full division (s = 1) lifted a turn sharing only a name with the
// question ("Gina: what did you do?", one term) above the one that answers
// it. The raw cosine (candidate.rawVector) is left for the thresholds that
// judge whether a hit is noise. Another embedder is left alone: this was
// measured on feature hashing only.
func (e *Engine) vectorLength(ix *bm25.Index, cands map[uint32]*candidate) {
	if _, ok := e.idx.emb.(*embed.Hash); !ok {
		return
	}
	lengthNormalise(ix, cands, vectorLengthSlope)
}

// lengthNormalise divides each candidate's vector height above the noise
// floor by the pivoted length 1 − s + s·len/avg.
func lengthNormalise(ix *bm25.Index, cands map[uint32]*candidate, s float64) {
	avg := ix.AvgDocLen()
	if avg == 0 {
		return
	}
	for doc, c := range cands {
		if c.signals.Vector <= minVector {
			continue
		}
		n, ok := ix.DocLen(doc)
		if !ok {
			continue
		}
		c.signals.Vector = minVector + (c.signals.Vector-minVector)/(1-s+s*float64(n)/avg)
	}
}

// sameMatterShare is the share of the question's IDF weight two served
// turns must have in common (weighted Jaccard of the question terms each
// contains) to be statements of the same matter for newestFirst. Chosen
// on conversations 1–10 (0.4 and 0.5 alike there, 0.6 fewer), confirmed
// on 11–20.
const sameMatterShare = 0.5

// sameValueShare is the share two served turns of one speaker need when
// both state a value (a figure: see statesValue). A value restated as an
// update is phrased anew around its figure ("the number of mentees I
// work with has increased to 7" after "mentoring those 5 women"), so the
// two share less of the question's wording than two mentions of one
// matter without figures. Measured on all 20 BEAM-100K conversations (it
// moves no result in or out of the list, so recall is unchanged): 0.25
// put one more update above its original (32 → 33 of 37) and none below.
const sameValueShare = 0.25

// statesValue reports whether a text states a value: it holds a figure
// (a digit, in any script). Written figures ("five") are not read: the
// test must hold without a language's number words.
func statesValue(text string) bool {
	return strings.IndexFunc(text, unicode.IsDigit) >= 0
}

// newestFirst reorders the served list so that, of the turns one speaker
// said about the same matter, the latest comes first: "I have now
// uploaded 30 documents" is served above "I have uploaded 25 documents"
// whether or not a fact was extracted from either. Two episodes are about
// the same matter, as far as the question is concerned, when they share
// most of the question's weight (sameMatterShare of the IDF of the
// question terms either holds, sameValueShare when both state a value);
// related turns form a group, and the
// group's members are dealt back into the positions the group held,
// newest first. It is a permutation of the list Query serves: the set of
// k results is unchanged, so it costs no recall at the list's own k (a
// boost did, by pulling later turns in from below). Turns of different
// speakers keep their places: an assistant's echo of the update is not
// the user's update. Facts are grouped the same way with the facts of
// their subject (never with turns: a fact stands before its episode
// already), newest valid-from first: two facts the resolver keeps apart,
// such as "user amount_budget $35 monthly" and a later "user
// amount_book_budget $50", are one matter when the question's words make
// them so ("my monthly budget for books"). A result dealt into a higher
// position takes that
// position's score (Signals.Newer is what it gained); one dealt lower,
// likewise (Signals.Stale is the factor), so scores stay in order.
func newestFirst(ix *bm25.Index, text string, list []*candidate) {
	if len(list) < 2 {
		return
	}
	idf := termIDF(ix, text)
	has := make([]map[string]bool, len(list))
	values := make([]bool, len(list))
	who := make([]string, len(list))
	for i, c := range list {
		switch {
		case c.episode != nil:
			values[i] = statesValue(c.episode.Text)
			who[i] = c.episode.voice()
		case c.fact != nil:
			// A fact groups with its subject's other facts only (the
			// prefix keeps it apart from that subject's turns).
			values[i] = statesValue(c.fact.Object)
			who[i] = "fact\x00" + norm.Key(c.fact.Subject)
		default:
			continue
		}
		has[i] = map[string]bool{}
		for _, te := range ix.Explain(text, c.doc).Terms {
			if te.TF > 0 {
				has[i][te.Term] = true
			}
		}
	}
	group := make([]int, len(list))
	for i := range group {
		group[i] = i
	}
	root := func(i int) int {
		for group[i] != i {
			group[i] = group[group[i]]
			i = group[i]
		}
		return i
	}
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			if has[i] == nil || has[j] == nil || who[i] != who[j] {
				continue
			}
			share := sameMatterShare
			if values[i] && values[j] {
				share = sameValueShare
			}
			if sameMatter(idf, has[i], has[j]) >= share {
				group[root(j)] = root(i)
			}
		}
	}
	members := map[int][]int{}
	for i := range list {
		members[root(i)] = append(members[root(i)], i)
	}
	scores := make([]float64, len(list))
	for i, c := range list {
		scores[i] = c.score
	}
	orig := slices.Clone(list)
	for _, pos := range members {
		if len(pos) < 2 {
			continue
		}
		cs := make([]*candidate, len(pos))
		for k, p := range pos {
			cs[k] = orig[p]
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].said().After(cs[b].said()) })
		for k, p := range pos {
			c := cs[k]
			list[p] = c
			switch s := scores[p]; {
			case s > c.score:
				c.signals.Newer = s - c.score
			case s < c.score && c.score > 0:
				c.signals.Stale = s / c.score
			}
			c.score = scores[p]
		}
	}
}

// supersedersFirst serves a fact above the served episodes that stated
// the value it replaced: "my grocery budget was increased to $550" made
// user amount_grocery_budget $550 supersede the $500 an earlier turn
// gave, so that fact is the newer word on the matter wherever the turn
// that said $500 ranks (newestFirst reorders turns by the question's
// words; this uses what the resolver decided). A served fact of a
// single-valued slot whose version superseded another is moved to the
// place of the highest-ranked episode that supports an earlier value of
// the same slot and context, every result between moving down one place;
// it takes that place's score (Signals.Newer is what it gained). Like
// newestFirst it is a permutation of the served list.
func supersedersFirst(ctx context.Context, qv *qview, user string, list []*candidate) error {
	pos := map[uint64]int{}
	index := func() {
		clear(pos)
		for i, c := range list {
			if c.episode != nil {
				if _, ok := pos[c.episode.Seq]; !ok {
					pos[c.episode.Seq] = i
				}
			}
		}
	}
	index()
	for j := 1; j < len(list); j++ {
		f := list[j].fact
		if f == nil || f.Rule != RuleSupersede {
			continue
		}
		top := j
		prefix := kv.AppendString(kv.AppendString(nil, norm.Key(f.Subject)), f.Predicate)
		err := historyGroups(ctx, qv.snap, user, prefix, func(group []Fact) error {
			for _, v := range group {
				if v.Context != f.Context || v.Object == f.Object || !v.ValidFrom.Before(f.ValidFrom) {
					continue
				}
				for _, seq := range v.Episodes {
					if i, ok := pos[seq]; ok && i < top {
						top = i
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if top == j {
			continue
		}
		c := list[j]
		copy(list[top+1:j+1], list[top:j])
		list[top] = c
		if s := list[top+1].score; s > c.score {
			c.signals.Newer += s - c.score
			c.score = s
		}
		index()
	}
	return nil
}

// sameMatter is the weighted Jaccard similarity of the question terms two
// texts hold: the IDF of the terms both hold over that of the terms
// either holds.
func sameMatter(idf map[string]float64, a, b map[string]bool) float64 {
	var both, either float64
	for t, w := range idf {
		x, y := a[t], b[t]
		if x || y {
			either += w
		}
		if x && y {
			both += w
		}
	}
	if either == 0 {
		return 0
	}
	return both / either
}
