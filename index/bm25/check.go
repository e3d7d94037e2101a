package bm25

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv"
)

// maxFindings bounds the findings Check reports, so a wholly wrong index
// yields a readable error.
const maxFindings = 50

type findings struct {
	errs    []error
	dropped int
}

func (f *findings) add(format string, args ...any) {
	if len(f.errs) >= maxFindings {
		f.dropped++
		return
	}
	f.errs = append(f.errs, fmt.Errorf("%w: "+format, append([]any{ErrMismatch}, args...)...))
}

func (f *findings) err() error {
	if f.dropped > 0 {
		f.errs = append(f.errs, fmt.Errorf("%w: %d more findings", ErrMismatch, f.dropped))
	}
	return errors.Join(f.errs...)
}

// Check verifies that the in-memory index equals what r holds under its
// prefix, record by record, and that its own structures agree (postings
// against document term lists, counters against sums). It returns nil or
// the errors.Join of every finding (at most 50, then a count), each
// matching [ErrMismatch] or [ErrCorrupt]. It holds a read lock throughout
// (after building what an index loaded from an image leaves unbuilt).
func (ix *Index) Check(ctx context.Context, r kv.Reader) error {
	ix.mu.Lock()
	ix.materializeLocked()
	ix.mu.Unlock()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var f findings
	seen := roaring.New()
	err := r.Scan(ctx, ix.prefix, func(k, v []byte) error {
		doc, err := ix.parseKey(k)
		if err != nil {
			f.errs = append(f.errs, err)
			return nil
		}
		seen.Add(doc)
		length, terms, err := decodeRecord(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("doc %d: %w", doc, err))
			return nil
		}
		if !ix.live.Contains(doc) {
			f.add("doc %d is stored but not in memory", doc)
			return nil
		}
		if got := ix.docLen(doc); got != length {
			f.add("doc %d: length %d in memory, %d stored", doc, got, length)
		}
		mem := ix.docCounts(doc)
		if !slices.Equal(mem, terms) {
			f.add("doc %d: terms %v in memory, %v stored", doc, mem, terms)
		}
		return nil
	})
	if err != nil {
		return errors.Join(append(f.errs, fmt.Errorf("bm25: check: %w", err))...)
	}
	if missing := roaring.AndNot(ix.live, seen); !missing.IsEmpty() {
		f.add("docs %v are in memory but not stored", firstN(missing, 20))
	}
	ix.checkMemory(&f)
	return f.err()
}

// docCounts returns a live document's terms as stored: sorted by term.
func (ix *Index) docCounts(doc uint32) []termCount {
	refs := ix.docTerms(doc)
	out := make([]termCount, len(refs))
	for i, r := range refs {
		out[i] = termCount{ix.terms[r.id].text, r.tf}
	}
	slices.SortFunc(out, func(a, b termCount) int {
		switch {
		case a.term < b.term:
			return -1
		case a.term > b.term:
			return 1
		}
		return 0
	})
	return out
}

func firstN(b *roaring.Bitmap, n int) []uint32 {
	var out []uint32
	b.Iterate(func(x uint32) bool {
		out = append(out, x)
		return len(out) < n
	})
	return out
}

// checkMemory verifies the in-memory invariants:
//
//  1. every dictionary entry maps to a live term of that text, and back;
//  2. a posting has one frequency per document, each > 0, and every
//     posting (term, doc, tf) appears in doc's term list, and vice versa;
//  3. the total length is the sum of the document lengths, and each length
//     is the sum of the document's frequencies;
//  4. a posting's pruning bounds hold: no frequency above maxTF, no document
//     shorter than minDL, and, where it keeps per-block bounds, the same
//     within each block (blocks sorted, one entry per block with postings).
func (ix *Index) checkMemory(f *findings) {
	for text, id := range ix.ids {
		if int(id) >= len(ix.terms) || ix.terms[id].text != text || ix.terms[id].len() == 0 {
			f.add("dictionary entry %q → %d is stale", text, id)
		}
	}
	var postings uint64
	for id := range ix.terms {
		t := &ix.terms[id]
		if t.len() == 0 {
			continue
		}
		if got, ok := ix.ids[t.text]; !ok || got != uint32(id) {
			f.add("term %d %q missing from the dictionary", id, t.text)
		}
		if (t.docs == nil && len(t.tfs) != 1) || (t.docs != nil && int(t.docs.GetCardinality()) != len(t.tfs)) {
			f.add("term %q: %d documents but %d frequencies", t.text, t.card(), len(t.tfs))
			continue
		}
		if !slices.IsSortedFunc(t.blocks, func(a, b blockBound) int { return cmpUint32(a.blk, b.blk) }) ||
			len(slices.CompactFunc(slices.Clone(t.blocks), func(a, b blockBound) bool { return a.blk == b.blk })) != len(t.blocks) {
			f.add("term %q: block bounds not sorted by block", t.text)
		}
		i := 0
		t.iterate(func(doc uint32) bool {
			tf := t.tfs[i]
			i++
			postings++
			if !ix.live.Contains(doc) {
				f.add("term %q lists deleted doc %d", t.text, doc)
				return true
			}
			refs := ix.docTerms(doc)
			j, ok := slices.BinarySearchFunc(refs, uint32(id), func(r termRef, id uint32) int { return cmpUint32(r.id, id) })
			if !ok || refs[j].tf != tf || tf == 0 {
				f.add("term %q, doc %d: posting tf %d disagrees with the document", t.text, doc, tf)
			}
			if dl := ix.docLen(doc); tf > t.maxTF || dl < t.minDL {
				f.add("term %q, doc %d: tf %d, length %d outside the bounds (%d, %d)", t.text, doc, tf, dl, t.maxTF, t.minDL)
			} else if t.blocks != nil {
				j, ok := slices.BinarySearchFunc(t.blocks, doc>>windowShift, func(b blockBound, blk uint32) int { return cmpUint32(b.blk, blk) })
				if !ok || tf > t.blocks[j].maxTF || dl < t.blocks[j].minDL {
					f.add("term %q, doc %d: tf %d, length %d outside its block's bounds", t.text, doc, tf, dl)
				}
			}
			return true
		})
	}
	var total, refs uint64
	ix.live.Iterate(func(doc uint32) bool {
		var sum uint64
		for _, r := range ix.docTerms(doc) {
			sum += uint64(r.tf)
			refs++
		}
		if sum != uint64(ix.docLen(doc)) {
			f.add("doc %d: length %d but frequencies sum to %d", doc, ix.docLen(doc), sum)
		}
		total += sum
		return true
	})
	if refs != postings {
		f.add("%d postings but documents list %d terms", postings, refs)
	}
	if total != ix.total {
		f.add("total length %d but documents sum to %d", ix.total, total)
	}
}
