package bm25

import (
	"fmt"
	"strings"
)

// Explanation says why a document scored what it did for a query: the
// collection statistics and, per distinct query term, the BM25 factors. Its
// String method renders the tree the way bleve's search.Explanation does.
type Explanation struct {
	Doc       uint32            `json:"doc"`
	Found     bool              `json:"found"`       // the document is in the index
	Score     float64           `json:"score"`       // sum of Terms[i].Score; equals the Search score
	N         int               `json:"n"`           // documents in the index
	AvgDocLen float64           `json:"avg_doc_len"` // average document length, in terms
	DocLen    int               `json:"doc_len"`     // this document's length, in terms
	K1        float64           `json:"k1"`
	B         float64           `json:"b"`
	Terms     []TermExplanation `json:"terms"` // in the order Search sums them
}

// TermExplanation is one query term's share of a score:
// Score = IDF · TF·(k1+1) / (TF + Norm) where Norm = k1·(1 − b + b·DocLen/AvgDocLen).
type TermExplanation struct {
	Term  string  `json:"term"` // the term after analysis ([Tokenize])
	DF    int     `json:"df"`   // documents containing the term
	IDF   float64 `json:"idf"`
	TF    int     `json:"tf"` // occurrences in this document
	Norm  float64 `json:"norm"`
	Score float64 `json:"score"`
}

// Explain breaks down the score of doc for query. Terms absent from the
// index or from the document are listed with a zero score.
func (ix *Index) Explain(query string, doc uint32) Explanation {
	s := ix.getScratch()
	defer ix.putScratch(s)
	_, _ = s.analyze(query) // an over-long query explains its first 2³² terms
	ix.rlockDecoded(s)
	defer ix.mu.RUnlock()
	e := Explanation{Doc: doc, Found: ix.live.Contains(doc), N: int(ix.live.GetCardinality()), K1: ix.k1, B: ix.b}
	if e.N > 0 {
		e.AvgDocLen = float64(ix.total) / float64(e.N)
	}
	if e.Found {
		e.DocLen = int(ix.docLen(doc))
	}
	kA := ix.k1 * (1 - ix.b)
	kB := 0.0
	if e.AvgDocLen > 0 {
		kB = ix.k1 * ix.b / e.AvgDocLen
	}
	for _, c := range s.counts {
		te := TermExplanation{Term: string(c.b)}
		id, ok := ix.ids[te.Term]
		if ok {
			te.DF = len(ix.terms[id].tfs)
			te.IDF = idf(float64(e.N), float64(te.DF))
			if tf, ok := ix.terms[id].tf(doc); ok && e.Found {
				te.TF = int(tf)
			}
		}
		te.Norm = kA + kB*float64(e.DocLen)
		if te.TF > 0 {
			tf := float64(te.TF)
			// Same expression as the scorers, so Score matches bit for bit.
			te.Score = contrib(te.IDF*(ix.k1+1), tf, float64(e.DocLen), kA, kB)
			e.Score += te.Score
		}
		e.Terms = append(e.Terms, te)
	}
	return e
}

// String renders the explanation as an indented tree.
func (e Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.6g = sum of (doc %d, len %d, avg len %.4g, N %d, k1 %g, b %g):\n",
		e.Score, e.Doc, e.DocLen, e.AvgDocLen, e.N, e.K1, e.B)
	if !e.Found {
		b.WriteString("  document not in index\n")
	}
	for _, t := range e.Terms {
		fmt.Fprintf(&b, "  %.6g = weight(%q) = idf · tf·(k1+1)/(tf + norm):\n", t.Score, t.Term)
		fmt.Fprintf(&b, "    %.6g = idf = ln(1 + (N - df + 0.5)/(df + 0.5)), df %d\n", t.IDF, t.DF)
		fmt.Fprintf(&b, "    %d = tf\n", t.TF)
		fmt.Fprintf(&b, "    %.6g = norm = k1·(1 - b + b·len/avg len)\n", t.Norm)
	}
	return b.String()
}
