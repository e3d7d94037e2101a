package memor

import (
	"errors"
	"math"
	"time"

	"github.com/memor-db/memor/kv"
)

// maxBoost is the largest reinforcement boost β(r) = 1 + 0.05·min(r−1, 5).
const maxBoost = 1.25

// boost applies the reinforcement boost and, if asked, the forgetting curve.
func (e *Engine) boost(c *candidate, validAt time.Time, forgetting bool) {
	r := 1
	var last time.Time
	if c.fact != nil {
		r, last = c.fact.Reinforced, c.fact.LastSeen
	} else if c.episode != nil {
		last = c.episode.At
	}
	c.signals.Boost = 1 + 0.05*float64(min(max(r-1, 0), 5))
	c.score *= c.signals.Boost
	if forgetting {
		age := max(validAt.Sub(last), 0)
		stability := time.Duration(max(r, 1)) * forgettingBase
		c.signals.Recency = math.Exp(-float64(age) / float64(stability))
		c.score *= c.signals.Recency
	}
}

// loadAndBoost resolves the fused candidates, best first, to the facts and
// episodes they name, keeping those the focus admits, and applies the
// reinforcement boost, the forgetting curve and the voice prior. The boost
// can lift a score by at most maxBoost (and the voice prior by
// 1+voicePrior), so loading stops once the next candidate cannot reach the
// want-th score. A document whose version is not (yet) committed is
// skipped. The list is then ordered with facts ranked over the episodes
// they came from (and, if asked, newer over older on the same matter).
func (e *Engine) loadAndBoost(qv *qview, user string, p queryPlan, foc focus, list []*candidate) ([]*candidate, error) {
	loaded := list[:0]
	var kth float64
	for _, c := range list {
		if len(loaded) >= p.want && !p.opts.Forgetting && c.score*maxBoost*(1+voicePrior) < kth {
			break
		}
		if err := qv.loadDoc(user, c, foc.admitsSubject); err != nil {
			if errors.Is(err, kv.ErrNotFound) || errors.Is(err, errSkip) {
				continue
			}
			return nil, err
		}
		if !foc.admits(qv.ui, c) {
			continue
		}
		e.boost(c, qv.validAt, p.opts.Forgetting)
		foc.voice(c)
		loaded = append(loaded, c)
		if len(loaded) >= p.want {
			sortCandidates(loaded)
			kth = loaded[p.want-1].score
		}
	}
	list = loaded
	factsOverSources(list)
	sortCandidates(list)
	return list, nil
}
