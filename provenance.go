package memor

import (
	"slices"

	"github.com/memor-db/memor/internal/resolve"
)

// A fact's provenance is the set of episodes that support it: the episode
// of its own claim and those of the claims the resolver folded into it
// (restatements, rule dup). It is stored with each version (Fact.Episodes)
// rather than derived from the resolution log when read: the resolver
// already has it when it writes the version, a version said once costs no
// byte more, and every read (State, History, Query) gets it for free. A
// version is rewritten when a restatement reinforces it anyway, so the
// list is kept current by the write that changes it; Rebuild recomputes it
// from the claims, and Forget erases it with the user's versions.

// support is what a slot's fold says about provenance: for each fact, the
// episodes of the claims folded into it.
type support struct {
	folded map[string][]uint64
}

// supportOf gathers the folded claims of a slot's fold (no map when none
// was folded: most slots).
func supportOf(claims []claimRec, out *slotOutcomes) support {
	var s support
	for i := range claims {
		c := &claims[i]
		if resolve.Kind(c.Kind) != resolve.Assert {
			continue
		}
		if o := out.of(i); o.Status == resolve.None && o.Into != "" {
			if s.folded == nil {
				s.folded = map[string][]uint64{}
			}
			s.folded[o.Into] = append(s.folded[o.Into], c.Episode)
		}
	}
	return s
}

// episodes returns the episodes supporting the fact of claim c, ascending
// and each once, or nil for c's own episode alone (what a version said
// once stores, and the common case of a write: no allocation). prior
// holds those of a fact in force whose folded claims the fold did not
// read (the append path).
func (s support) episodes(c claimRec, prior []uint64) []uint64 {
	extra := s.folded[c.ID]
	if len(extra) == 0 && (len(prior) == 0 || (len(prior) == 1 && prior[0] == c.Episode)) {
		return nil
	}
	eps := make([]uint64, 0, 1+len(prior)+len(extra))
	eps = append(append(append(eps, c.Episode), prior...), extra...)
	slices.Sort(eps)
	return slices.Compact(eps)
}

// closer returns the claim that closed the fact whose outcome is o: the
// end applied, or the assertion that superseded it, at the instant the
// fact stopped holding ("" if none of claims did).
func closer(claims []claimRec, out *slotOutcomes, o *resolve.Outcome) string {
	for j := range claims {
		c := &claims[j]
		if c.ValidFrom != o.ValidTo {
			continue
		}
		oj := out.of(j)
		switch {
		case o.Closed == resolve.CauseEnd && resolve.Kind(c.Kind) == resolve.End && oj.Applied,
			o.Closed == resolve.CauseSupersede && resolve.Kind(c.Kind) == resolve.Assert && oj.Opened == resolve.CauseSupersede:
			return c.ID
		}
	}
	return ""
}

// sameSupport reports whether two versions of a fact list the same
// episodes (nil is the fact's own episode alone).
func sameSupport(a, b *Fact) bool {
	if onlyEpisode(a) && onlyEpisode(b) {
		return a.Episode == b.Episode
	}
	return slices.Equal(a.Episodes, b.Episodes)
}
