// Package resolve is memor's resolver: a pure function from the set of
// claims in one slot to the valid-time state of every claim.
//
// The engine stores every assertion and end it accepts as a claim, and after
// each change recomputes the slot with [Fold]. Because Fold sees the claims
// sorted by (ValidFrom, kind, ID) and nothing else, the valid-time state of a
// slot depends only on the set of claims, never on the order they arrived
// in: importing a history shuffled gives the same state as importing it in
// order (DESIGN §3, "Order independence").
//
// Rules applied by the fold, in time order (ends before assertions at the
// same instant, so "I quit X and joined Y" on one day closes X first):
//
//  1. Retracted claims are skipped; the value they displaced stays in force.
//  2. One slot: several different objects asserted at the same instant are
//     all contested and the value in force is untouched.
//  3. One slot: the object in force restated is a dup: the fact in force is
//     reinforced, no new fact.
//  4. One slot: a claim more than 0.1 less confident than the value in force
//     is contested and not applied.
//  5. One slot: otherwise the claim supersedes: the value in force closes at
//     the claim's ValidFrom and the claim is in force.
//  6. Any claim below MinConfidence is contested, in force or not.
//  7. Many slot: each object has its own timeline; an open object restated
//     is a dup; a new object is added.
//  8. An end at t closes the matching open value (all open values for an end
//     without object) whose ValidFrom is before t.
//  9. An accepted claim (the user took a contested value, Claim.Accepted)
//     is exempt from rules 2, 4 and 6: it is applied as rule 3, 5 or 7
//     would apply it. Of several accepted at one instant of a One slot,
//     the latest accepted (highest Accepted) is; the others stay
//     contested.
//
// The package is not safe for concurrent use on the same slice; Fold itself
// keeps no state.
package resolve

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memor-db/memor/internal/instant"
)

// Kind of a claim.
type Kind uint8

const (
	// Assert claims that an object holds from ValidFrom on.
	Assert Kind = 1
	// End claims that the object (every object when ObjKey is empty)
	// stopped holding at ValidFrom.
	End Kind = 2
)

// Status of a claim's fact after the fold.
type Status uint8

const (
	// None: the claim is not a fact of its own (an end, or a dup folded
	// into another fact).
	None Status = iota
	// Active: an accepted fact.
	Active
	// Contested: flagged for review, never in force.
	Contested
	// Retracted: corrected by the user, never in force.
	Retracted
)

// Cause names what gave a fact its state. The engine maps it to a rule.
type Cause uint8

const (
	CauseNone      Cause = iota
	CauseAdd             // opened with nothing in force
	CauseSupersede       // opened by replacing a value, or closed by a newer value
	CauseEnd             // closed by an end
	CauseContest         // contested
	CauseRetract         // retracted
	CauseDup             // folded into another fact
)

// MinConfidence is the confidence below which a claim is never applied, even
// with nothing in force to contest it: "I might move to Boston" (an
// extractor's hedge) is held for review, not served as where the user
// lives.
const MinConfidence = 0.5

// ConfidenceMargin is how much less confident than the value in force a
// claim may be and still replace it (DESIGN §3, rule R3).
const ConfidenceMargin = 0.1

// Claim is one assertion or end in a slot.
type Claim struct {
	ID         string
	Kind       Kind
	ObjKey     string // normalised object; empty for an end of every value
	ValidFrom  int64  // Unix nanoseconds
	Confidence float64
	Retracted  bool
	// Accepted is 0, or the sequence number of the episode in which the
	// user accepted the claim (Engine.Accept): a later acceptance wins a
	// same-instant tie, so the fold still reads the set of claims only.
	Accepted uint64
}

// Open is the ValidTo of a value still true: instant.None, which no
// accepted instant can take (0 ns is 1970-01-01, an instant like any
// other).
const Open = instant.None

// Outcome is the valid-time state Fold derives for one claim.
type Outcome struct {
	Status  Status
	ValidTo int64 // Open = still true
	// Opened is why the fact holds (add or supersede), Closed why it stopped
	// (supersede or end); for a contested or retracted fact both name that.
	Opened, Closed Cause
	// Into is the fact a dup was folded into.
	Into string
	// Reinforced counts the claims supporting a fact, itself included.
	Reinforced int
	// LastSeen is the latest ValidFrom among those claims.
	LastSeen int64
	// Confidence is the highest confidence among those claims.
	Confidence float64
	// Applied is set on an end that closed at least one value.
	Applied bool
}

// Sort orders claims the way Fold reads them: by ValidFrom, ends before
// assertions at the same instant, then by ID.
func Sort(cs []Claim) {
	// slices.SortFunc: sort.Slice costs an allocation per call, and Fold
	// sorts once per slot resolved (mostly one claim: nothing to sort).
	if len(cs) < 2 {
		return
	}
	slices.SortFunc(cs, compare)
}

// compare is Sort's order: -1 if a sorts before b.
func compare(a, b Claim) int {
	if a.ValidFrom != b.ValidFrom {
		return cmp.Compare(a.ValidFrom, b.ValidFrom)
	}
	if a.Kind != b.Kind {
		if a.Kind == End {
			return -1
		}
		if b.Kind == End {
			return 1
		}
		return 0
	}
	return strings.Compare(a.ID, b.ID)
}

// Fold computes the outcome of every claim of one slot. one selects
// cardinality One; otherwise the slot is Many. The input is sorted in place.
func Fold(one bool, claims []Claim) map[string]*Outcome {
	return FoldFrom(one, nil, Outcome{}, claims)
}

// FoldFrom continues a fold: seed (if not nil) is the fact in force after
// the slot's earlier claims, with the outcome the fold gave it (ValidTo
// Open, as it is in force), and every
// claim is later than every earlier claim. It returns the outcomes of
// claims and of seed; the earlier claims' outcomes are what they were, as
// nothing later reaches back past the fact in force. This is how a new
// value of a long history resolves without rereading the history.
func FoldFrom(one bool, seed *Claim, seedOutcome Outcome, claims []Claim) map[string]*Outcome {
	Sort(claims)
	out := outcomes{m: make(map[string]*Outcome, len(claims)+1), slab: make([]Outcome, 0, len(claims)+1)}
	fold(one, seed, seedOutcome, claims, nil, &out, nil)
	return out.m
}

// Folder folds like FoldFrom, reusing its memory from one fold to the next
// and giving the outcomes by position instead of in a map: what resolving
// a slot at a time (mostly of one claim) costs is otherwise mostly the
// map and the allocations. The zero Folder is ready to use; it is not
// safe for concurrent use.
type Folder struct {
	out  outcomes
	perm []int32
	live []int32
}

// Fold is FoldFrom(one, seed, seedOutcome, claims), except that claims
// are not reordered and the outcomes come by position: the result's i-th
// is claims[i]'s, and with a seed one more, last, is the seed's. The IDs
// of claims and seed must be distinct (one slot's are), as FoldFrom's map
// would keep one outcome for an ID. The result is valid until the next
// call.
func (f *Folder) Fold(one bool, seed *Claim, seedOutcome Outcome, claims []Claim) []Outcome {
	n := len(claims)
	f.perm = f.perm[:0]
	for i := range n {
		f.perm = append(f.perm, int32(i))
	}
	if n > 1 {
		// The same sort as Sort's, of positions: the same order.
		slices.SortFunc(f.perm, func(a, b int32) int { return compare(claims[a], claims[b]) })
	}
	m := n
	if seed != nil {
		m++
	}
	f.out.slab = slices.Grow(f.out.slab[:0], m)[:m]
	clear(f.out.slab)
	f.live = fold(one, seed, seedOutcome, claims, f.perm, &f.out, f.live)
	return f.out.slab
}

// outcomes records a fold's outcomes: by ID in m, each outcome allocated
// in slab (a claim gets at most one, the seed one), for FoldFrom; or, when
// m is nil, by the claim's index in slab (the seed's is len(claims)), for
// Folder.
type outcomes struct {
	m    map[string]*Outcome
	slab []Outcome
}

// set records o as the outcome of claim i, whose ID is id, and returns it.
func (out *outcomes) set(i int32, id string, o Outcome) *Outcome {
	if out.m == nil {
		out.slab[i] = o
		return &out.slab[i]
	}
	out.slab = append(out.slab, o)
	p := &out.slab[len(out.slab)-1]
	out.m[id] = p
	return p
}

// get returns the outcome of claim i, whose ID is id.
func (out *outcomes) get(i int32, id string) *Outcome {
	if out.m == nil {
		return &out.slab[i]
	}
	return out.m[id]
}

// folding is the state of one fold. Claims are named by their index in
// claims; len(claims) is the seed.
type folding struct {
	claims []Claim
	seed   *Claim
	out    *outcomes
	// ObjKey → open fact (One uses key ""). Sized so that a slot's
	// usual few live in the stack.
	inForce map[string]int32
}

func (s *folding) claim(i int32) *Claim {
	if int(i) == len(s.claims) {
		return s.seed
	}
	return &s.claims[i]
}

// fold folds claims in the order perm gives (nil: as they are, sorted),
// recording the outcomes in out. live is scratch, returned for reuse.
func fold(one bool, seed *Claim, seedOutcome Outcome, claims []Claim, perm []int32, out *outcomes, live []int32) []int32 {
	n := len(claims)
	s := folding{claims: claims, seed: seed, out: out, inForce: make(map[string]int32, 8)}
	at := func(p int) int32 {
		if perm == nil {
			return int32(p)
		}
		return perm[p]
	}
	if seed != nil {
		out.set(int32(n), seed.ID, seedOutcome)
		key := seed.ObjKey
		if one {
			key = ""
		}
		s.inForce[key] = int32(n)
	}
	for p := 0; p < n; {
		q := p
		for vf := claims[at(p)].ValidFrom; q < n && claims[at(q)].ValidFrom == vf; {
			q++
		}
		// Ends first.
		for k := p; k < q; k++ {
			i := at(k)
			c := &claims[i]
			if c.Kind != End {
				continue
			}
			o := out.set(i, c.ID, Outcome{ValidTo: Open})
			for key, fi := range s.inForce {
				f := s.claim(fi)
				if f.ValidFrom >= c.ValidFrom {
					continue
				}
				if c.ObjKey != "" && f.ObjKey != c.ObjKey {
					continue
				}
				fo := out.get(fi, f.ID)
				fo.ValidTo, fo.Closed = c.ValidFrom, CauseEnd
				delete(s.inForce, key)
				o.Applied = true
			}
		}
		// Then assertions.
		live = live[:0]
		for k := p; k < q; k++ {
			i := at(k)
			c := &claims[i]
			if c.Kind != Assert {
				continue
			}
			if c.Retracted {
				out.set(i, c.ID, Outcome{Status: Retracted, ValidTo: Open, Opened: CauseRetract, Closed: CauseRetract,
					Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence})
				continue
			}
			live = append(live, i)
		}
		if one {
			s.foldOne(live)
		} else {
			s.foldMany(live)
		}
		p = q
	}
	return live
}

func contested(c *Claim) Outcome {
	return Outcome{Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest,
		Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
}

func newFact(c *Claim, opened Cause) Outcome {
	return Outcome{Status: Active, ValidTo: Open, Opened: opened, Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence}
}

// reinforce folds claim i into the fact into.
func (s *folding) reinforce(i, into int32) {
	c, ic := &s.claims[i], s.claim(into)
	f := s.out.get(into, ic.ID)
	f.Reinforced++
	if c.ValidFrom > f.LastSeen {
		f.LastSeen = c.ValidFrom
	}
	if c.Confidence > f.Confidence {
		f.Confidence = c.Confidence
	}
	s.out.set(i, c.ID, Outcome{Status: None, ValidTo: Open, Opened: CauseDup, Into: ic.ID, Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence})
}

func (s *folding) foldOne(live []int32) {
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		// Same-instant disagreement (distinct IDs at one instant in one slot
		// mean distinct objects): contest them all, leave the value in
		// force; unless the user accepted one of them (the latest
		// acceptance wins), which is then applied alone.
		win := int32(-1)
		for _, i := range live {
			if c := &s.claims[i]; c.Accepted > 0 && (win < 0 || c.Accepted > s.claims[win].Accepted) {
				win = i
			}
		}
		for _, i := range live {
			if i != win {
				s.out.set(i, s.claims[i].ID, contested(&s.claims[i]))
			}
		}
		if win < 0 {
			return
		}
		live = live[:1]
		live[0] = win
	}
	i := live[0]
	c := &s.claims[i]
	accepted := c.Accepted > 0
	ci, has := s.inForce[""]
	var cur *Claim
	if has {
		cur = s.claim(ci)
	}
	switch {
	case c.Confidence < MinConfidence && !accepted:
		s.out.set(i, c.ID, contested(c))
	case has && cur.ObjKey == c.ObjKey:
		s.reinforce(i, ci)
	case has && !accepted && c.Confidence < s.out.get(ci, cur.ID).Confidence-ConfidenceMargin-1e-9:
		s.out.set(i, c.ID, Outcome{Status: Contested, ValidTo: Open, Opened: CauseContest, Closed: CauseContest,
			Reinforced: 1, LastSeen: c.ValidFrom, Confidence: c.Confidence})
	case has:
		co := s.out.get(ci, cur.ID)
		co.ValidTo, co.Closed = c.ValidFrom, CauseSupersede
		s.out.set(i, c.ID, newFact(c, CauseSupersede))
		s.inForce[""] = i
	default:
		s.out.set(i, c.ID, newFact(c, CauseAdd))
		s.inForce[""] = i
	}
}

func (s *folding) foldMany(live []int32) {
	for _, i := range live {
		c := &s.claims[i]
		if c.Confidence < MinConfidence && c.Accepted == 0 {
			s.out.set(i, c.ID, contested(c))
			continue
		}
		if cur, ok := s.inForce[c.ObjKey]; ok {
			s.reinforce(i, cur)
			continue
		}
		s.out.set(i, c.ID, newFact(c, CauseAdd))
		s.inForce[c.ObjKey] = i
	}
}
