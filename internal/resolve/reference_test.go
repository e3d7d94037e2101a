package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
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
		"b": {Status: None, ValidTo: Open, Opened: CauseDup, Into: "a", Reinforced: 1, LastSeen: 2, Confidence: 0.9},
		"c": {Status: Active, ValidTo: 4, Opened: CauseAdd, Closed: CauseEnd, Reinforced: 1, LastSeen: 3, Confidence: 1},
		"d": {ValidTo: Open, Applied: true},
		"e": {Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest, Reinforced: 1, LastSeen: 5, Confidence: 0.3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fold =\n%+v\nwant\n%+v", got, want)
	}
}

// refFoldFrom and the ref* functions below are FoldFrom as first written
// (a map of the facts in force without a size, each outcome allocated
// alone, sort.Slice), kept to check that the cheaper bookkeeping changes
// no outcome.
func refFoldFrom(one bool, seed *Claim, seedOutcome Outcome, claims []Claim) map[string]*Outcome {
	refSort(claims)
	out := make(map[string]*Outcome, len(claims)+1)
	inForce := map[string]*Claim{} // ObjKey → open fact (One uses key "")
	if seed != nil {
		o := seedOutcome
		out[seed.ID] = &o
		key := seed.ObjKey
		if one {
			key = ""
		}
		inForce[key] = seed
	}
	for i := 0; i < len(claims); {
		j := i
		for j < len(claims) && claims[j].ValidFrom == claims[i].ValidFrom {
			j++
		}
		group := claims[i:j]
		i = j
		// Ends first.
		for k := range group {
			c := &group[k]
			if c.Kind != End {
				continue
			}
			o := &Outcome{ValidTo: Open}
			out[c.ID] = o
			for key, f := range inForce {
				if f.ValidFrom >= c.ValidFrom {
					continue
				}
				if c.ObjKey != "" && f.ObjKey != c.ObjKey {
					continue
				}
				fo := out[f.ID]
				fo.ValidTo, fo.Closed = c.ValidFrom, CauseEnd
				delete(inForce, key)
				o.Applied = true
			}
		}
		// Then assertions.
		var live []*Claim
		for k := range group {
			c := &group[k]
			if c.Kind != Assert {
				continue
			}
			if c.Retracted {
				out[c.ID] = &Outcome{Status: Retracted, ValidTo: Open, Opened: CauseRetract, Closed: CauseRetract,
					Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
				continue
			}
			live = append(live, c)
		}
		if one {
			refFoldOne(live, inForce, out)
		} else {
			refFoldMany(live, inForce, out)
		}
	}
	return out
}

func refContested(c *Claim) *Outcome {
	return &Outcome{Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest,
		Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
}

func refNewFact(c *Claim, opened Cause) *Outcome {
	return &Outcome{Status: Active, ValidTo: Open, Opened: opened, Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
}

func refReinforce(c *Claim, into *Claim, out map[string]*Outcome) {
	f := out[into.ID]
	f.Reinforced++
	if c.ValidFrom > f.LastSeen {
		f.LastSeen = c.ValidFrom
	}
	if c.Confidence > f.Confidence {
		f.Confidence = c.Confidence
	}
	out[c.ID] = &Outcome{Status: None, ValidTo: Open, Opened: CauseDup, Into: into.ID, Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
}

func refFoldOne(live []*Claim, inForce map[string]*Claim, out map[string]*Outcome) {
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		// Same-instant disagreement (distinct IDs at one instant in one slot
		// mean distinct objects): contest them all, leave the value in force.
		for _, c := range live {
			out[c.ID] = &Outcome{Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest,
				Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
		}
		return
	}
	c := live[0]
	cur := inForce[""]
	switch {
	case c.Confidence < MinConfidence:
		out[c.ID] = refContested(c)
	case cur != nil && cur.ObjKey == c.ObjKey:
		refReinforce(c, cur, out)
	case cur != nil && c.Confidence < out[cur.ID].Confidence-ConfidenceMargin-1e-9:
		out[c.ID] = &Outcome{Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest,
			Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
	case cur != nil:
		co := out[cur.ID]
		co.ValidTo, co.Closed = c.ValidFrom, CauseSupersede
		out[c.ID] = refNewFact(c, CauseSupersede)
		inForce[""] = c
	default:
		out[c.ID] = refNewFact(c, CauseAdd)
		inForce[""] = c
	}
}

func refFoldMany(live []*Claim, inForce map[string]*Claim, out map[string]*Outcome) {
	for _, c := range live {
		if c.Confidence < MinConfidence {
			out[c.ID] = refContested(c)
			continue
		}
		if cur := inForce[c.ObjKey]; cur != nil {
			refReinforce(c, cur, out)
			continue
		}
		out[c.ID] = refNewFact(c, CauseAdd)
		inForce[c.ObjKey] = c
	}
}

// randSlot returns n random claims of a slot named by id: assertions of
// three objects and ends with and without object, at eight instants
// around 0 (the Unix epoch, an instant like the others), some retracted,
// some below MinConfidence.
func randSlot(r *rand.Rand, n int, id func(i int) string) []Claim {
	claims := make([]Claim, n)
	for i := range claims {
		c := Claim{ID: id(i), Kind: Assert, ObjKey: []string{"a", "b", "c"}[r.IntN(3)],
			ValidFrom: int64(r.IntN(8) - 4), Confidence: []float64{1, 0.95, 0.85, 0.4}[r.IntN(4)], Retracted: r.IntN(10) == 0}
		if r.IntN(5) == 0 {
			c.Kind = End
			if r.IntN(2) == 0 {
				c.ObjKey = ""
			}
		}
		claims[i] = c
	}
	return claims
}

// randSeed returns no seed half of the time, else an established fact
// in force before the slot's claims and its outcome.
func randSeed(r *rand.Rand) (*Claim, Outcome) {
	if r.IntN(2) == 0 {
		return nil, Outcome{}
	}
	return &Claim{ID: "seed", Kind: Assert, ObjKey: "a", ValidFrom: -5, Confidence: 0.9},
		Outcome{Status: Active, ValidTo: Open, Opened: CauseAdd, Reinforced: 1 + r.IntN(3), Confidence: 0.9}
}

// TestFoldEqualsReference: FoldFrom gives exactly the outcomes of the
// fold as first written, over random One and Many slots (several objects,
// ends with and without object, retracted, low-confidence and same-instant
// claims, duplicate IDs), with and without a seed.
func TestFoldEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 20_000 {
		one := trial%2 == 0
		claims := randSlot(r, r.IntN(14), func(i int) string { return fmt.Sprintf("c%02d", i) })
		for i := range claims {
			if i > 0 && r.IntN(30) == 0 {
				claims[i].ID = claims[r.IntN(i)].ID // a duplicate ID: the map keeps one outcome
			}
		}
		seed, seedOutcome := randSeed(r)
		a, b := slices.Clone(claims), slices.Clone(claims)
		got, want := FoldFrom(one, seed, seedOutcome, a), refFoldFrom(one, seed, seedOutcome, b)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d outcomes, want %d", trial, len(got), len(want))
		}
		for id, w := range want {
			if g := got[id]; g == nil || *g != *w {
				t.Fatalf("trial %d: claim %s: %+v, want %+v\n%+v", trial, id, g, w, claims)
			}
		}
	}
}

// TestFolderEqualsFoldFrom: Folder.Fold gives each claim (by position)
// and the seed the outcome FoldFrom gives its ID, over random slots with
// distinct IDs, one Folder reused across them all, claims given in any
// order.
func TestFolderEqualsFoldFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var f Folder
	for trial := range 20_000 {
		one := trial%2 == 0
		n := r.IntN(14)
		if trial%500 == 0 {
			n = 100 + r.IntN(100)
		}
		claims := randSlot(r, n, func(i int) string { return fmt.Sprintf("c%03d", r.IntN(1000)*1000+i) })
		seed, seedOutcome := randSeed(r)
		given := slices.Clone(claims)
		got := f.Fold(one, seed, seedOutcome, claims)
		if !slices.Equal(claims, given) {
			t.Fatalf("trial %d: Fold reordered its input", trial)
		}
		want := FoldFrom(one, seed, seedOutcome, slices.Clone(claims))
		wantLen := n
		if seed != nil {
			wantLen++
			if w := want[seed.ID]; *w != got[n] {
				t.Fatalf("trial %d: seed: %+v, want %+v", trial, got[n], *w)
			}
		}
		if len(got) != wantLen || len(want) != wantLen {
			t.Fatalf("trial %d: %d and %d outcomes, want %d", trial, len(got), len(want), wantLen)
		}
		for i, c := range claims {
			if w := want[c.ID]; *w != got[i] {
				t.Fatalf("trial %d: claim %d (%s): %+v, want %+v", trial, i, c.ID, got[i], *w)
			}
		}
	}
}
