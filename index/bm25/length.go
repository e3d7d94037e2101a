package bm25

// DocLen returns the length, in terms, of a live document, and whether the
// index holds it. AvgDocLen is the mean over the live documents: with it a
// caller can normalise another signal for length the way BM25 does.
func (ix *Index) DocLen(doc uint32) (int, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.live.Contains(doc) {
		return 0, false
	}
	return int(ix.docLen(doc)), true
}

// AvgDocLen is the mean length, in terms, of the live documents (0 for an
// empty index).
func (ix *Index) AvgDocLen() float64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := ix.live.GetCardinality()
	if n == 0 {
		return 0
	}
	return float64(ix.total) / float64(n)
}
