package memor

import (
	"math"
	"sort"
)

// signalled is the candidates fusion ranks: similarity alone, and weak,
// is noise, so a candidate needs a word or entity in common with the
// question or a close vector.
func signalled(cands candidateSet) []*candidate {
	list := make([]*candidate, 0, len(cands))
	for _, c := range cands {
		if c.signals.BM25 == 0 && c.signals.Entity == 0 && c.rawVector < minVectorAlone {
			continue
		}
		list = append(list, c)
	}
	return list
}

// fuse combines the signals into one score (DESIGN §5).
func fuse(list []*candidate, w Weights, how Fusion) {
	if how == RRF {
		for _, sig := range []func(*candidate) *float64{
			func(c *candidate) *float64 { return &c.signals.Vector },
			func(c *candidate) *float64 { return &c.signals.BM25 },
			func(c *candidate) *float64 { return &c.signals.Entity },
		} {
			ranked := make([]*candidate, 0, len(list))
			for _, c := range list {
				if *sig(c) > 0 {
					ranked = append(ranked, c)
				}
			}
			sort.SliceStable(ranked, func(i, j int) bool { return *sig(ranked[i]) > *sig(ranked[j]) })
			for i, c := range ranked {
				c.score += 1 / float64(rrfK+i+1)
			}
		}
		return
	}
	norm := func(sig func(*candidate) *float64) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range list {
			if v := *sig(c); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		for _, c := range list {
			p := sig(c)
			switch {
			case *p <= 0:
				*p = 0
			case hi == lo:
				*p = 1
			default:
				// Min-max over the candidates that have the signal; the
				// weakest still counts a little (it did match).
				*p = 0.1 + 0.9*(*p-lo)/(hi-lo)
			}
		}
	}
	scaleText(list)
	scaleVector(list)
	norm(func(c *candidate) *float64 { return &c.signals.Entity })
	for _, c := range list {
		c.score = w.Vector*c.signals.Vector + w.BM25*c.signals.BM25 + w.Entity*c.signals.Entity
	}
}

// sortCandidates orders by score, facts before episodes on ties, then by
// document for determinism.
func sortCandidates(list []*candidate) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if (a.fact != nil) != (b.fact != nil) {
			return a.fact != nil
		}
		return a.doc < b.doc
	})
}
