package memor

import (
	"github.com/RoaringBitmap/roaring/v2"
)

// visibleDocs is the view's filter: the documents text and vector search
// may return, the fact versions visible at the view's instants (facts),
// the episodes visible with them (eps, nil with noEpisodes) and the
// pending documents of a write in progress. It shares facts unless
// episodes or pending documents are added (copying a large tenant's view
// cost a tenth of a query): neither is ever modified.
func visibleDocs(qv *qview, noEpisodes bool) (allow, eps *roaring.Bitmap) {
	allow = qv.facts
	if !noEpisodes {
		eps = qv.ui.visibleEpisodes(qv.validAt.UnixNano(), qv.knownAt.UnixNano(), qv.facts)
		if !eps.IsEmpty() {
			allow = roaring.Or(qv.facts, eps)
		}
	}
	if qv.pending != nil {
		allow = roaring.Or(allow, qv.pending)
	}
	return allow, eps
}

// focusFilter narrows allow to the focus's documents when the question is
// about someone. The focus is a filter like the view: applied inside
// candidate generation, it gives the focus's facts the whole candidate
// pool instead of what facts about others leave of it, and it bounds the
// work by the focus's facts, not by the tenant's.
func focusFilter(foc focus, qv *qview, eps, allow *roaring.Bitmap) *roaring.Bitmap {
	if foc.about == nil {
		return allow
	}
	allow = foc.candidates(qv.ui, qv.facts, eps)
	if qv.pending != nil {
		allow = roaring.Or(allow, qv.pending)
	}
	return allow
}

// abstains reports whether Query answers nothing known: the best
// candidate explains less than MinSupport of the question's term weight,
// and the question names no one memor holds facts about.
// tokens: the entity stage's matches (see support), or nil.
func (e *Engine) abstains(opts QueryOptions, foc focus, ui *userIndex, text string, cands candidateSet, tokens *pathTokens) bool {
	minSupport := opts.MinSupport
	if minSupport < 0 || foc.named {
		return false
	}
	if minSupport == 0 {
		minSupport = DefaultMinSupport
	}
	return e.support(ui, text, cands, tokens) < minSupport
}
