package memor

import (
	"errors"
	"math"
	"slices"
	"sync"
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
//
// An episode is ranked on what the document map holds of it (loadDoc's
// shallow), unless the focus judges it by its text; the first p.want (or
// k) candidates are then read in full (readEpisodes), so that only the
// episodes a query serves (or reranks) are read. One of them the snapshot
// does not hold (a damaged store: the document map names it) is dropped
// as loading drops it, and the next loaded candidate moves up.
func (e *Engine) loadAndBoost(qv *qview, user string, p queryPlan, foc focus, list []*candidate) ([]*candidate, error) {
	loaded := list[:0]
	var kth float64
	shallow := !foc.readsText()
	for _, c := range list {
		if len(loaded) >= p.want && !p.opts.Forgetting && c.score*maxBoost*(1+voicePrior) < kth {
			break
		}
		if err := qv.loadDoc(user, c, foc.admitsSubject, shallow); err != nil {
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
	return e.readEpisodes(qv, user, list, max(p.want, p.k))
}

// defaultReadAtOnce is how long one of the episodes a query serves must
// take to read for the rest to be read at once (tuning.readAtOnce): about
// a disk's latency. A read served by Pebble's block cache or the page
// cache takes microseconds, and then starting goroutines costs more than
// it saves; one that waited on the disk says the others will too, and a
// disk serves several at once.
const defaultReadAtOnce = 50 * time.Microsecond

// readEpisodes reads the shallow episodes (see qview.loadDoc) among the
// first n candidates of list: one after the other while each reads in
// less than tuning.readAtOnce, the rest at once after one that did not. A
// candidate whose episode the snapshot does not hold is dropped, and
// those that move up into the first n are read in turn.
func (e *Engine) readEpisodes(qv *qview, user string, list []*candidate, n int) ([]*candidate, error) {
	for {
		var todo []*candidate
		for _, c := range list[:min(n, len(list))] {
			if c.shallow {
				todo = append(todo, c)
			}
		}
		if len(todo) == 0 {
			return list, nil
		}
		errs := make([]error, len(todo))
		read := func(i int) {
			defer func() {
				if p := recover(); p != nil { // (a goroutine's, which recovered does not see)
					errs[i] = e.panicError(p, "query", user)
				}
			}()
			c := todo[i]
			ep, err := getEpisode(qv.snap, user, c.episode.Seq)
			if errs[i] = err; err == nil {
				c.episode, c.shallow = &ep, false
			}
		}
		for i := 0; i < len(todo); i++ {
			t := time.Now()
			if read(i); time.Since(t) < e.tune.readAtOnce || i+1 == len(todo) {
				continue
			}
			var wg sync.WaitGroup
			for j := i + 2; j < len(todo); j++ {
				wg.Go(func() { read(j) })
			}
			read(i + 1)
			wg.Wait()
			break
		}
		gone := false
		for i, err := range errs {
			switch {
			case errors.Is(err, kv.ErrNotFound):
				todo[i].episode, gone = nil, true
			case err != nil:
				return nil, err
			}
		}
		if !gone {
			return list, nil
		}
		list = slices.DeleteFunc(list, func(c *candidate) bool { return c.fact == nil && c.episode == nil })
	}
}
