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
// [lo, hi): which docs have lo ≤ t < hi. Immutable after buildAxis.
type axis struct {
	starts []startEv // sorted by t
	ends   []endEv   // sorted by t; open ends (math.MaxInt64) are omitted
	snapT  []int64   // snapshot instants, ascending
	snapS  []int     // snapS[j]: first index in starts with t > snapT[j]
	snapE  []int     // snapE[j]: first index in ends with t > snapT[j]
	snaps  []*roaring.Bitmap
}

// buildAxis indexes one span per doc. Empty spans (hi ≤ lo) are left out:
// they are never stabbed.
func buildAxis(docs []uint32, lo, hi []int64) *axis {
	a := &axis{}
	for i, d := range docs {
		if hi[i] <= lo[i] {
			continue
		}
		a.starts = append(a.starts, startEv{t: lo[i], end: hi[i], doc: d})
		if hi[i] != openEnd {
			a.ends = append(a.ends, endEv{t: hi[i], doc: d})
		}
	}
	slices.SortFunc(a.starts, func(x, y startEv) int {
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.doc, y.doc))
	})
	slices.SortFunc(a.ends, func(x, y endEv) int {
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.doc, y.doc))
	})
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
			c := cur.Clone()
			c.RunOptimize()
			a.snapT = append(a.snapT, t)
			a.snapS = append(a.snapS, i)
			a.snapE = append(a.snapE, j)
			a.snaps = append(a.snaps, c)
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
