package resolve

import (
	"fmt"
	"math/rand/v2"
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
