package resolve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFoldFromEqualsFold: folding a slot's later claims from the fact in
// force after its earlier claims gives the same outcomes, for the later
// claims and the fact in force, as folding every claim.
func TestFoldFromEqualsFold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 5000 {
		one := trial%2 == 0
		objects := []string{"a", "b", "c"}
		if !one {
			objects = objects[:1] // a Many slot holds one object
		}
		n := 1 + r.IntN(12)
		claims := make([]Claim, n)
		for i := range claims {
			c := Claim{ID: fmt.Sprintf("c%02d", i), Kind: Assert, ObjKey: objects[r.IntN(len(objects))],
				ValidFrom: int64(r.IntN(8) - 4), Confidence: []float64{1, 0.95, 0.85, 0.4}[r.IntN(4)], Retracted: r.IntN(10) == 0}
			if r.IntN(6) == 0 {
				c.Kind = End
				if r.IntN(2) == 0 {
					c.ObjKey = ""
				}
			}
			claims[i] = c
		}
		split := int64(r.IntN(9) - 4)
		var earlier, later []Claim
		for _, c := range claims {
			if c.ValidFrom < split {
				earlier = append(earlier, c)
			} else {
				later = append(later, c)
			}
		}
		all := Fold(one, append([]Claim(nil), claims...))
		before := Fold(one, append([]Claim(nil), earlier...))
		var seed *Claim
		for i := range earlier {
			if o := before[earlier[i].ID]; o.Status == Active && o.ValidTo == Open {
				if seed != nil {
					t.Fatalf("trial %d: two facts in force in %+v", trial, earlier)
				}
				seed = &earlier[i]
			}
		}
		var seedOutcome Outcome
		if seed != nil {
			seedOutcome = *before[seed.ID]
		}
		got := FoldFrom(one, seed, seedOutcome, append([]Claim(nil), later...))
		check := later
		if seed != nil {
			check = append(check, *seed)
		}
		for _, c := range check {
			if *got[c.ID] != *all[c.ID] {
				t.Fatalf("trial %d (one=%v, split %d): claim %s: FoldFrom %+v, Fold %+v\nclaims %+v", trial, one, split, c.ID, *got[c.ID], *all[c.ID], claims)
			}
		}
		for _, c := range earlier {
			if (seed == nil || c.ID != seed.ID) && *before[c.ID] != *all[c.ID] {
				t.Fatalf("trial %d: earlier claim %s changed: %+v before, %+v after", trial, c.ID, *before[c.ID], *all[c.ID])
			}
		}
	}
}

// TestEpochIsAnInstant: 0 ns (1970-01-01) closes and opens values like
// any instant; only Open means "still true".
func TestEpochIsAnInstant(t *testing.T) {
	out := Fold(true, []Claim{
		{ID: "a", Kind: Assert, ObjKey: "a", ValidFrom: -1, Confidence: 1},
		{ID: "b", Kind: Assert, ObjKey: "b", ValidFrom: 0, Confidence: 1},
	})
	if out["a"].ValidTo != 0 || out["a"].Closed != CauseSupersede || out["b"].ValidTo != Open || out["b"].LastSeen != 0 {
		t.Errorf("One: a %+v, b %+v", *out["a"], *out["b"])
	}
	out = Fold(false, []Claim{
		{ID: "a", Kind: Assert, ObjKey: "a", ValidFrom: -5, Confidence: 1},
		{ID: "e", Kind: End, ValidFrom: 0},
	})
	if out["a"].ValidTo != 0 || out["a"].Closed != CauseEnd || !out["e"].Applied {
		t.Errorf("Many: a %+v, end %+v", *out["a"], *out["e"])
	}
}

// TestFoldAccepted: rule 9. An accepted claim escapes the contest rules
// (same-instant rivals, the confidence margin, MinConfidence); of rivals
// accepted at one instant the latest acceptance is applied; and the
// outcome depends on the claims only, whatever their order (Folder and
// Fold agree on shuffled input).
func TestFoldAccepted(t *testing.T) {
	base := []Claim{
		{ID: "a", Kind: Assert, ObjKey: "x", ValidFrom: 1, Confidence: 1},
		{ID: "b", Kind: Assert, ObjKey: "y", ValidFrom: 5, Confidence: 1},
		{ID: "c", Kind: Assert, ObjKey: "z", ValidFrom: 5, Confidence: 1},
		{ID: "d", Kind: Assert, ObjKey: "w", ValidFrom: 7, Confidence: 0.3},
	}
	for _, c := range []struct {
		name     string
		accepted map[string]uint64
		want     map[string]Status // and the fact in force at the end
		inForce  string
	}{
		{"none", nil, map[string]Status{"a": Active, "b": Contested, "c": Contested, "d": Contested}, "a"},
		{"one rival", map[string]uint64{"c": 3}, map[string]Status{"a": Active, "b": Contested, "c": Active, "d": Contested}, "c"},
		{"the later acceptance wins", map[string]uint64{"c": 3, "b": 4}, map[string]Status{"a": Active, "b": Active, "c": Contested, "d": Contested}, "b"},
		{"below MinConfidence", map[string]uint64{"d": 9}, map[string]Status{"a": Active, "b": Contested, "c": Contested, "d": Active}, "d"},
	} {
		claims := slices.Clone(base)
		for i := range claims {
			claims[i].Accepted = c.accepted[claims[i].ID]
		}
		out := Fold(true, slices.Clone(claims))
		for id, st := range c.want {
			if out[id].Status != st {
				t.Errorf("%s: %s is %d, want %d", c.name, id, out[id].Status, st)
			}
		}
		for id, o := range out {
			if open := o.Status == Active && o.ValidTo == Open; open != (id == c.inForce) {
				t.Errorf("%s: %s open=%t, want in force %s (%+v)", c.name, id, open, c.inForce, o)
			}
		}
		var f Folder
		slices.Reverse(claims)
		for i, o := range f.Fold(true, nil, Outcome{}, claims) {
			if *out[claims[i].ID] != o {
				t.Errorf("%s: Folder on reversed input: %s %+v, want %+v", c.name, claims[i].ID, o, *out[claims[i].ID])
			}
		}
	}
	// A Many slot: an accepted low-confidence value is added.
	many := Fold(false, []Claim{{ID: "e", Kind: Assert, ObjKey: "v", ValidFrom: 1, Confidence: 0.2, Accepted: 2}})
	if many["e"].Status != Active {
		t.Errorf("accepted Many value: %+v", many["e"])
	}
}
