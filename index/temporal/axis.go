package temporal

import (
	"cmp"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
)

// snapEvery is how many span events separate two stabbing-set snapshots. A
// stab replays at most about this many events (more only when one instant
// holds a longer run of events), so it trades memory (one bitmap per
// snapEvery events) against query time.
const snapEvery = 1024

type startEv struct {
	t, end int64
	doc    uint32
}

type endEv struct {
	t   int64
	doc uint32
}

// axis answers stabbing queries over a fixed set of half-open spans
// [lo, hi): which docs have lo ≤ t < hi. Immutable once built.
type axis struct {
	starts []startEv // sorted by t
	ends   []endEv   // sorted by t; open ends (math.MaxInt64) are omitted
	snapT  []int64   // snapshot instants, ascending
	snapS  []int     // snapS[j]: first index in starts with t > snapT[j]
	snapE  []int     // snapE[j]: first index in ends with t > snapT[j]
	snaps  []*roaring.Bitmap
}

// spanEvents appends the events of span [lo, hi) of doc. Empty spans
// (hi ≤ lo) give none: they are never stabbed.
func spanEvents(starts []startEv, ends []endEv, doc uint32, lo, hi int64) ([]startEv, []endEv) {
	if hi <= lo {
		return starts, ends
	}
	starts = append(starts, startEv{t: lo, end: hi, doc: doc})
	if hi != openEnd {
		ends = append(ends, endEv{t: hi, doc: doc})
	}
	return starts, ends
}

func cmpStart(x, y startEv) int { return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.doc, y.doc)) }
func cmpEnd(x, y endEv) int     { return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.doc, y.doc)) }

// merge returns the sorted union of the events of old (nil for none) whose
// doc is not in drop and the unsorted events add. It costs O(n + a log a)
// for n old and a added events, so a rebuild after a small delta does not
// re-sort the whole index.
func merge[E any](old []E, drop *roaring.Bitmap, doc func(E) uint32, add []E, less func(x, y E) int) []E {
	slices.SortFunc(add, less)
	if len(old) == 0 {
		return add // a load's: every event is new, and add is the caller's to give
	}
	out := make([]E, 0, len(old)+len(add))
	j := 0
	for _, e := range old {
		if drop.Contains(doc(e)) {
			continue
		}
		for ; j < len(add) && less(add[j], e) < 0; j++ {
			out = append(out, add[j])
		}
		out = append(out, e)
	}
	return append(out, add[j:]...)
}

// rebuildAxis returns the axis holding old's spans minus those of the docs
// in drop, plus the spans given as events in addS and addE, which it may
// keep.
func rebuildAxis(old *axis, drop *roaring.Bitmap, addS []startEv, addE []endEv) *axis {
	var oldS []startEv
	var oldE []endEv
	if old != nil {
		oldS, oldE = old.starts, old.ends
	}
	a := &axis{
		starts: merge(oldS, drop, func(e startEv) uint32 { return e.doc }, addS, cmpStart),
		ends:   merge(oldE, drop, func(e endEv) uint32 { return e.doc }, addE, cmpEnd),
	}
	// Sweep instants in order. Every doc's start precedes its end (lo < hi),
	// so applying all events of one instant in any order gives the stabbing
	// set at that instant.
	cur := roaring.New()
	i, j, since := 0, 0, 0
	for i < len(a.starts) || j < len(a.ends) {
		t := int64(openEnd)
		if i < len(a.starts) {
			t = a.starts[i].t
		}
		if j < len(a.ends) && a.ends[j].t < t {
			t = a.ends[j].t
		}
		for ; i < len(a.starts) && a.starts[i].t == t; i++ {
			cur.Add(a.starts[i].doc)
			since++
		}
		for ; j < len(a.ends) && a.ends[j].t == t; j++ {
			cur.Remove(a.ends[j].doc)
			since++
		}
		if since >= snapEvery {
			// Snapshots stay as bitmap containers: queries Add and Remove
			// single docs on clones of them, which run containers make slow.
			a.snapT = append(a.snapT, t)
			a.snapS = append(a.snapS, i)
			a.snapE = append(a.snapE, j)
			a.snaps = append(a.snaps, cur.Clone())
			since = 0
		}
	}
	return a
}

// stab returns the docs whose span contains t, intersected with filter when
// filter is not nil. The result is a fresh bitmap.
func (a *axis) stab(t int64, filter *roaring.Bitmap) *roaring.Bitmap {
	j := sort.Search(len(a.snapT), func(i int) bool { return a.snapT[i] > t }) - 1
	var out *roaring.Bitmap
	si, ei := 0, 0
	switch {
	case j >= 0 && filter != nil:
		out = roaring.And(a.snaps[j], filter)
		si, ei = a.snapS[j], a.snapE[j]
	case j >= 0:
		out = a.snaps[j].Clone()
		si, ei = a.snapS[j], a.snapE[j]
	default:
		out = roaring.New()
	}
	// Between the snapshot and t: a span starting in (snapT, t] is in iff it
	// has not ended by t; a span ending in (snapT, t] is out.
	for ; si < len(a.starts) && a.starts[si].t <= t; si++ {
		e := a.starts[si]
		if e.end > t && (filter == nil || filter.Contains(e.doc)) {
			out.Add(e.doc)
		}
	}
	for ; ei < len(a.ends) && a.ends[ei].t <= t; ei++ {
		out.Remove(a.ends[ei].doc)
	}
	return out
}
