package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// refSort is Sort as first written (sort.Slice), kept to check that the
// cheaper sort orders alike.
func refSort(cs []Claim) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := &cs[i], &cs[j]
		if a.ValidFrom != b.ValidFrom {
			return a.ValidFrom < b.ValidFrom
		}
		if a.Kind != b.Kind {
			return a.Kind == End
		}
		return a.ID < b.ID
	})
}

// TestSortEqualsReference: Sort orders claims exactly as the sort.Slice
// it replaced, including claims equal in the order (same valid time,
// kind and ID, told apart by their other fields), which a different sort
// algorithm could permute differently.
func TestSortEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 20_000 {
		n := r.IntN(40)
		if trial%100 == 0 {
			n = 200 + r.IntN(200) // past insertion sort, into pdqsort's partitioning
		}
		cs := make([]Claim, n)
		for i := range cs {
			cs[i] = Claim{ID: fmt.Sprintf("c%d", r.IntN(6)), Kind: Kind(1 + r.IntN(2)), ObjKey: fmt.Sprint(i),
				ValidFrom: int64(r.IntN(5)), Confidence: float64(i)}
			if r.IntN(50) == 0 {
				cs[i].Kind = Kind(r.IntN(4)) // not a kind the engine writes
			}
		}
		want := make([]Claim, n)
		copy(want, cs)
		refSort(want)
		Sort(cs)
		if !reflect.DeepEqual(cs, want) {
			t.Fatalf("trial %d: Sort gives\n%v\nsort.Slice gives\n%v", trial, cs, want)
		}
	}
}

// TestFoldOutcomesFixed: a fixed slot folds to fixed outcomes, so that
// a change to the fold's bookkeeping that alters a result is seen even
// where TestFoldFromEqualsFold's two paths would change alike.
func TestFoldOutcomesFixed(t *testing.T) {
	claims := []Claim{
		{ID: "a", Kind: Assert, ObjKey: "x", ValidFrom: 1, Confidence: 1},
		{ID: "b", Kind: Assert, ObjKey: "x", ValidFrom: 2, Confidence: 0.9},
		{ID: "c", Kind: Assert, ObjKey: "y", ValidFrom: 3, Confidence: 1},
		{ID: "d", Kind: End, ValidFrom: 4},
		{ID: "e", Kind: Assert, ObjKey: "z", ValidFrom: 5, Confidence: 0.3},
	}
	got := map[string]Outcome{}
	for id, o := range Fold(false, claims) {
		got[id] = *o
	}
	want := map[string]Outcome{
		"a": {Status: Active, ValidTo: 4, Opened: CauseAdd, Closed: CauseEnd, Reinforced: 2, LastSeen: 2, Confidence: 1},
		"b": {Status: None, Opened: CauseDup, Into: "a", Reinforced: 1, LastSeen: 2, Confidence: 0.9},
		"c": {Status: Active, ValidTo: 4, Opened: CauseAdd, Closed: CauseEnd, Reinforced: 1, LastSeen: 3, Confidence: 1},
		"d": {Applied: true},
		"e": {Status: Contested, Opened: CauseContest, Closed: CauseContest, Reinforced: 1, LastSeen: 5, Confidence: 0.3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fold =\n%+v\nwant\n%+v", got, want)
	}
}
