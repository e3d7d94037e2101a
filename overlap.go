package memor

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// rect is where a served version is visible: valid time [vf, vt) ×
// transaction time [ra, ea), in Unix nanoseconds, an unset start −∞ and an
// unset end +∞ (as Fact.VisibleAt reads them).
type rect struct {
	vf, vt, ra, ea int64
	id             [idLen]byte // the fact's
}

func versionRect(f *Fact) rect {
	start := func(t time.Time) int64 {
		if t.IsZero() {
			return math.MinInt64
		}
		return t.UnixNano()
	}
	end := func(t time.Time) int64 {
		if t.IsZero() {
			return math.MaxInt64
		}
		return t.UnixNano()
	}
	return rect{vf: start(f.ValidFrom), vt: end(f.ValidTo), ra: start(f.RecordedAt), ea: end(f.ExpiredAt),
		id: mustID(f.ID)}
}

// doubleVisible returns two of rs that are visible at one (valid, known)
// instant, if any: what must never happen within a slot (a One slot holds
// one value at a time; a Many object's slot, one version of it). It
// sweeps transaction time, keeping the valid intervals believed at each
// instant sorted and disjoint, so that a new one can only overlap a
// neighbour: O(n log n) comparisons for n versions.
func doubleVisible(rs []rect) (rect, rect, bool) {
	type event struct {
		at  int64
		add bool
		i   int
	}
	evs := make([]event, 0, 2*len(rs))
	for i, r := range rs {
		if r.vf >= r.vt || r.ra >= r.ea {
			continue // visible nowhere
		}
		evs = append(evs, event{r.ra, true, i}, event{r.ea, false, i})
	}
	// At one instant, what stops being believed goes first: [ra, ea) is
	// half-open.
	slices.SortFunc(evs, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.add != b.add {
			if a.add {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.i, b.i)
	})
	var set []int // believed now, by vf; disjoint, so vf identifies one
	find := func(vf int64) int {
		j, _ := slices.BinarySearchFunc(set, vf, func(i int, vf int64) int { return cmp.Compare(rs[i].vf, vf) })
		return j
	}
	for _, ev := range evs {
		r := rs[ev.i]
		j := find(r.vf)
		if !ev.add {
			if j < len(set) && set[j] == ev.i {
				set = slices.Delete(set, j, j+1)
			}
			continue
		}
		if j > 0 && rs[set[j-1]].vt > r.vf {
			return rs[set[j-1]], r, true
		}
		if j < len(set) && rs[set[j]].vf < r.vt {
			return rs[set[j]], r, true
		}
		set = slices.Insert(set, j, ev.i)
	}
	return rect{}, rect{}, false
}

// describeOverlap renders where a and b are both visible.
func describeOverlap(a, b rect) string {
	v, k := max(a.vf, b.vf), max(a.ra, b.ra)
	return fmt.Sprintf("versions of %x and %x are visible together at valid %s, known %s",
		a.id, b.id, stampNanos(v), stampNanos(k))
}

func stampNanos(n int64) string {
	if n == math.MinInt64 {
		return "-inf"
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}
