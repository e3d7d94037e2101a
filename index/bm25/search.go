package bm25

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// Hit is one search result.
type Hit struct {
	Doc   uint32
	Score float64
}

// window is the width of the document-ID blocks that Search scores one at a
// time (Lucene's BooleanScorer does the same): every query term's postings
// in the block are added into a dense accumulator, then the touched slots
// are offered to the top-k heap. The accumulator (32 KiB) stays in L1/L2.
const (
	windowShift = 12
	window      = 1 << windowShift
)

// qterm is one distinct query term found in the dictionary.
type qterm struct {
	id  uint32
	idf float64
	w   float64 // idf·(k1+1), the numerator factor
}

// idf is the BM25 inverse document frequency in Lucene's non-negative form,
// log(1 + (N − df + 0.5)/(df + 0.5)), so that a term in more than half the
// documents still adds a little instead of subtracting.
func idf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// contrib is what a term of weight w = idf·(k1+1) occurring tf times adds
// to the score of a document of length dl: w·tf / (tf + kA + kB·dl). Every
// scorer, Explain and every pruning bound computes it here, so a score is
// the same bits wherever it is computed. The conversion stops the compiler
// from fusing kB·dl into a multiply-add (which Go may do on some
// architectures): each step is then one correctly rounded, monotone
// operation, so contrib is exactly non-increasing in dl (see bound).
func contrib(w, tf, dl, kA, kB float64) float64 {
	return w * tf / (tf + kA + float64(kB*dl))
}

// bound returns a number no document can exceed in contrib for a term of
// weight w occurring at most maxTF times in documents at least minDL long:
// contrib(w, maxTF, minDL) itself, so that a block whose documents all tie
// with the k-th best score is recognised as unable to beat it. That value
// bounds the rounded contrib exactly: the rounded contrib does not grow with
// dl (monotone steps), and between tf and tf+1 the exact value grows by a
// relative c/(tf·(tf+1+c)), c = kA + kB·dl, far more than the few ulps of
// rounding unless tf is huge or c tiny; then a relative margin that covers
// the rounding is added.
func bound(w float64, maxTF, minDL uint32, kA, kB float64) float64 {
	tf, dl := float64(maxTF), float64(minDL)
	b := contrib(w, tf, dl, kA, kB)
	if maxTF > 1 {
		c, t := kA+kB*dl, tf-1
		if c/(t*(t+1+c)) < 1e-12 {
			b *= 1 + 1e-12
		}
	}
	return b
}

// Search returns the k best documents for query by Okapi BM25, best first
// (ties by ascending document). A query term counts once however often it
// is repeated. When allow is non-nil only documents in it are scored, so the
// result is the top k among the allowed documents, not a filtered top k.
// Documents that match no query term are never returned. Statistics (N,
// average length, document frequencies) are those of the whole index, so a
// document's score does not depend on allow.
func (ix *Index) Search(ctx context.Context, query string, k int, allow *roaring.Bitmap) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	s := ix.getScratch()
	defer ix.putScratch(s)
	if _, err := s.analyze(query); err != nil {
		return nil, err
	}
	ix.rlockDecoded(s)
	defer ix.mu.RUnlock()
	n := float64(ix.live.GetCardinality())
	if n == 0 {
		return nil, nil
	}
	s.query = s.query[:0]
	var cost uint64
	for _, c := range s.counts {
		id, ok := ix.ids[string(c.b)]
		if !ok {
			continue
		}
		df := len(ix.terms[id].tfs)
		f := idf(n, float64(df))
		s.query = append(s.query, qterm{id: id, idf: f, w: f * (ix.k1 + 1)})
		cost += uint64(df)
	}
	if len(s.query) == 0 {
		return nil, nil
	}
	// Per document, tf·(k1+1)·idf / (tf + kA + kB·dl) with
	// kA + kB·dl = k1·(1 − b + b·dl/avgdl).
	avgdl := float64(ix.total) / n
	kA := ix.k1 * (1 - ix.b)
	kB := 0.0
	if avgdl > 0 {
		kB = ix.k1 * ix.b / avgdl
	}
	s.heap.reset(k)
	var err error
	if allow != nil && !ix.noRefs && allow.GetCardinality()*uint64(len(s.query)+4) < cost {
		// Few allowed documents: scoring each from its own term list beats
		// walking the postings.
		err = ix.scoreAllowed(ctx, s, allow, kA, kB)
	} else {
		err = ix.scorePostings(ctx, s, allow, kA, kB)
	}
	if err != nil {
		return nil, err
	}
	return s.heap.sorted(), nil
}

// cursor walks one term's postings in document order.
type cursor struct {
	it   roaring.ManyIntIterable
	buf  []uint32
	n    int // valid entries in buf
	pos  int // current entry in buf
	tfs  []uint32
	ti   int // index into tfs of the current entry
	w    float64
	done bool
	// MaxScore state.
	ub        float64 // upper bound of the term's contribution, with a margin
	essential bool    // postings still walked
	// Block-max state: tb bounds the term's contribution exactly (no
	// margin, see bound); blocks are the posting's per-block bounds (nil:
	// tb holds in every block), bi the first not before the current block.
	tb     float64
	blocks []blockBound
	bi     int
}

func (c *cursor) cur() uint32 { return c.buf[c.pos] }

// exhausted is an iterator with nothing left (zero-sized: storing it in
// an interface allocates nothing).
type exhausted struct{}

func (exhausted) NextMany([]uint32) int           { return 0 }
func (exhausted) NextMany64(uint64, []uint64) int { return 0 }

func (c *cursor) next() {
	c.ti++
	if c.pos++; c.pos < c.n {
		return
	}
	c.n, c.pos = c.it.NextMany(c.buf), 0
	c.done = c.n == 0
}

// skip moves past every posting below end without scoring it.
func (c *cursor) skip(end uint64) {
	for !c.done {
		if uint64(c.buf[c.n-1]) >= end {
			j, _ := slices.BinarySearch(c.buf[c.pos:c.n], uint32(end))
			c.ti += j
			c.pos += j
			return
		}
		c.ti += c.n - c.pos
		c.n, c.pos = c.it.NextMany(c.buf), 0
		c.done = c.n == 0
	}
}

// blockBound returns the most the term adds to a document of block blk
// (blocks are asked in ascending order).
func (c *cursor) blockBound(blk uint32, w, kA, kB float64) float64 {
	if c.blocks == nil {
		return c.tb
	}
	for c.bi < len(c.blocks) && c.blocks[c.bi].blk < blk {
		c.bi++
	}
	if c.bi == len(c.blocks) || c.blocks[c.bi].blk != blk {
		return 0
	}
	b := &c.blocks[c.bi]
	return bound(w, b.maxTF, b.minDL, kA, kB)
}

// nextBlock returns the first block after blk where an essential term has
// postings and the terms' block bounds sum to more than theta, and false if
// there is none: only an essential term can bring a document up (the
// others' bounds sum to at most theta). Blocks are found in the essential
// terms' bound lists, so ties are skipped without decoding their postings;
// when an essential term keeps no per-block bounds any block may qualify
// and nextBlock answers blk+1.
func (ix *Index) nextBlock(cs []cursor, query []qterm, blk uint32, theta, kA, kB float64) (uint32, bool) {
	for i := range cs {
		if cs[i].essential && !cs[i].done && cs[i].blocks == nil {
			if blk == math.MaxUint32>>windowShift {
				return 0, false
			}
			return blk + 1, true
		}
	}
	for {
		// The next block after blk where an essential term has postings.
		cand, found := uint32(0), false
		for i := range cs {
			c := &cs[i]
			if !c.essential || c.done {
				continue
			}
			j := c.bi
			for j < len(c.blocks) && c.blocks[j].blk <= blk {
				j++
			}
			if j < len(c.blocks) && (!found || c.blocks[j].blk < cand) {
				cand, found = c.blocks[j].blk, true
			}
		}
		if !found {
			return 0, false
		}
		sum := 0.0
		for i := range cs { // query order, as the scores are summed
			sum += cs[i].blockBound(cand, query[i].w, kA, kB)
		}
		if sum > theta {
			return cand, true
		}
		blk = cand
	}
}

// scorePostings is the block-at-a-time scorer over the query postings,
// with two exact dynamic prunings once the heap is full:
//
// MaxScore (Turtle & Flood, "Query evaluation: strategies and
// optimizations", IP&M 31(6), 1995): the terms with the smallest score
// bounds whose bounds sum to at most the k-th best score cannot lift a
// document into the top k on their own. Their postings are no longer
// walked ("non-essential"); they are looked up in the term lists of the
// documents the other terms bring up. The threshold only rises, so a term
// never becomes essential again.
//
// Block-max (Ding & Suel, "Faster top-k document retrieval using
// block-max indexes", SIGIR 2011, here over MaxScore's essential terms as
// in Lucene): before a block of window documents is scored, the bounds of
// every query term in that block (largest tf, shortest document) are summed
// in query order; a block whose sum does not exceed the k-th best score is
// skipped. Blocks come in ascending document order, so a document of a
// later block ties with the k-th only by losing the tie: to enter it must
// score strictly more. The bounds are exact (see bound) and the sum is taken
// in the order the scores are, so a block of ties is skipped, which is what
// a one-word query over near-identical facts is made of.
//
// Every document's score is summed in query-term order whichever way each
// term's contribution was found, so scores are bit-identical to
// scoreAllowed, Explain and each other.
func (ix *Index) scorePostings(ctx context.Context, s *scratch, allow *roaring.Bitmap, kA, kB float64) error {
	m := len(s.query)
	if cap(s.cursors) < m {
		s.cursors = make([]cursor, m)
	}
	cs := s.cursors[:m]
	s.order = s.order[:0]
	for i, q := range s.query {
		t := &ix.terms[q.id]
		c := &cs[i]
		if c.buf == nil {
			c.buf = make([]uint32, 256)
		}
		c.tfs, c.w, c.essential = t.tfs, q.w, true
		if t.docs == nil {
			// A one-document posting: the state next leaves after
			// reading it from an iterator.
			c.it, c.buf[0], c.n, c.pos, c.ti, c.done = exhausted{}, t.one, 1, 0, 0, false
		} else {
			c.it, c.pos, c.n, c.ti = t.docs.ManyIterator(), 0, 0, -1
			c.next()
		}
		c.tb = bound(q.w, t.maxTF, t.minDL, kA, kB)
		c.blocks, c.bi = t.blocks, 0
		// MaxScore sums bounds in another order than the scores are
		// summed; the small relative margin covers that rounding.
		c.ub = c.tb * (1 + 1e-9)
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int { return cmpFloat(cs[a].ub, cs[b].ub) })
	if cap(s.contrib) < m {
		s.contrib = make([]float64, m)
	}
	s.contrib = s.contrib[:m]
	if n := m * window; cap(s.acc) < n {
		s.acc = make([]float64, n)
	}
	acc := s.acc[:m*window]
	touched := &s.touched
	var allowIt roaring.IntPeekable
	if allow != nil {
		allowIt = allow.Iterator()
	}
	nonEss, nonEssUB := 0, 0.0 // s.order[:nonEss] are non-essential
	for blocks := 0; ; blocks++ {
		if blocks&15 == 15 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		theta, full := s.heap.threshold()
		full = full && !ix.noPrune
		for full && nonEss < m && nonEssUB+cs[s.order[nonEss]].ub <= theta {
			nonEssUB += cs[s.order[nonEss]].ub
			cs[s.order[nonEss]].essential = false
			nonEss++
		}
		lo := uint64(math.MaxUint64)
		for i := range cs {
			if cs[i].essential && !cs[i].done {
				lo = min(lo, uint64(cs[i].cur()))
			}
		}
		if lo == math.MaxUint64 {
			return nil
		}
		base := uint32(lo) &^ (window - 1)
		end := uint64(base) + window
		if full {
			blk, sum := base>>windowShift, 0.0
			for i := range cs { // query order, as the scores are summed
				sum += cs[i].blockBound(blk, s.query[i].w, kA, kB)
			}
			if sum <= theta {
				next, ok := ix.nextBlock(cs, s.query, blk, theta, kA, kB)
				if !ok {
					return nil
				}
				for i := range cs {
					if cs[i].essential {
						cs[i].skip(uint64(next) << windowShift)
					}
				}
				continue
			}
		}
		for i := range cs {
			c := &cs[i]
			if !c.essential {
				continue
			}
			a := acc[i*window : (i+1)*window]
			for !c.done && uint64(c.cur()) < end {
				d := c.cur()
				tf := float64(c.tfs[c.ti])
				dl := float64(ix.pages[d>>pageShift].lens[d&pageMask])
				off := d - base
				a[off] = contrib(c.w, tf, dl, kA, kB)
				touched[off>>6] |= 1 << (off & 63)
				c.next()
			}
		}
		for wi, word := range touched {
			if word == 0 {
				continue
			}
			touched[wi] = 0
			for word != 0 {
				off := uint32(wi<<6 | bits.TrailingZeros64(word))
				word &= word - 1
				d := base + off
				if allowIt != nil {
					allowIt.AdvanceIfNeeded(d)
					if !allowIt.HasNext() || allowIt.PeekNext() != d {
						ix.clearSlot(cs, acc, off)
						continue
					}
				}
				if nonEss == 0 {
					score := 0.0
					for i := range cs {
						score += acc[i*window+int(off)]
						acc[i*window+int(off)] = 0
					}
					s.heap.offer(d, score)
					continue
				}
				partial := 0.0
				for i := range cs {
					partial += acc[i*window+int(off)]
				}
				if partial+nonEssUB <= theta {
					ix.clearSlot(cs, acc, off)
					continue
				}
				// Look the non-essential terms up, largest bound first, and
				// stop as soon as the document provably cannot enter.
				refs := ix.docTerms(d)
				dl := float64(ix.docLen(d))
				est, rest, pruned := partial, nonEssUB, false
				for j := nonEss - 1; j >= 0; j-- {
					i := s.order[j]
					c := 0.0
					if tf, ok := ix.tfOf(refs, s.query[i].id, d); ok {
						c = contrib(cs[i].w, tf, dl, kA, kB)
					}
					s.contrib[i] = c
					est += c
					rest -= cs[i].ub
					if j > 0 && est+rest <= theta {
						pruned = true
						break
					}
				}
				if pruned {
					ix.clearSlot(cs, acc, off)
					continue
				}
				score := 0.0
				for i := range cs { // query order: adding 0 for a missing term is exact
					if cs[i].essential {
						score += acc[i*window+int(off)]
						acc[i*window+int(off)] = 0
					} else {
						score += s.contrib[i]
					}
				}
				s.heap.offer(d, score)
			}
		}
	}
}

func (ix *Index) clearSlot(cs []cursor, acc []float64, off uint32) {
	for i := range cs {
		acc[i*window+int(off)] = 0
	}
}

// findTF returns the frequency of term id in a document's sorted term list.
func findTF(refs []termRef, id uint32) (float64, bool) {
	lo, hi := 0, len(refs)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if refs[h].id < id {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo < len(refs) && refs[lo].id == id {
		return float64(refs[lo].tf), true
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scoreAllowed scores each allowed document from its term list.
func (ix *Index) scoreAllowed(ctx context.Context, s *scratch, allow *roaring.Bitmap, kA, kB float64) error {
	it := roaring.And(allow, ix.live).Iterator()
	for i := 0; it.HasNext(); i++ {
		if i&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		d := it.Next()
		refs := ix.docTerms(d)
		dl := float64(ix.docLen(d))
		score, matched := 0.0, false
		for _, q := range s.query { // query order, as scorePostings sums
			tf, ok := findTF(refs, q.id)
			if !ok {
				continue
			}
			score += contrib(q.w, tf, dl, kA, kB)
			matched = true
		}
		if matched {
			s.heap.offer(d, score)
		}
	}
	return nil
}

// topK keeps the k best hits seen, worst at the root.
type topK struct {
	k int
	h []Hit
}

// worse orders hits for the heap: lower score, then higher document.
func worse(a, b Hit) bool {
	return a.Score < b.Score || (a.Score == b.Score && a.Doc > b.Doc)
}

func (t *topK) reset(k int) {
	t.k = k
	if cap(t.h) < k && k <= 1<<16 {
		t.h = make([]Hit, 0, k)
	}
	t.h = t.h[:0]
}

// threshold returns the k-th best score and whether k hits are held: a
// later (larger) document must score strictly more to enter.
func (t *topK) threshold() (float64, bool) {
	if len(t.h) < t.k {
		return 0, false
	}
	return t.h[0].Score, true
}

func (t *topK) offer(doc uint32, score float64) {
	x := Hit{doc, score}
	h := t.h
	if len(h) < t.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if !worse(h[0], x) {
		return
	}
	h[0] = x
	for i := 0; ; { // sift down
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted returns a fresh slice of the hits, best first.
func (t *topK) sorted() []Hit {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}
