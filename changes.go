package memor

// Decisions makes Add apply the episode before it returns, as Sync does,
// and stores in *dst the rule decisions the resolver took for it (none
// when nothing was extracted), so that a caller can tell the user what
// the episode changed. See Summarize.
func Decisions(dst *[]Decision) AddOption { return func(c *addConfig) { c.decisions = dst } }

// Changes is what one write changed, counted from its decisions: the
// report the CLI, the HTTP API and the MCP tool give for every add. Each
// count is of claims; a claim restated or replayed changes no fact.
type Changes struct {
	// Added counts new facts: the first value of a slot, another value of
	// a Many slot, a value in another context, a late arrival inserted
	// into the past, a value whose cardinality a Judge decided.
	Added int `json:"added"`
	// Superseded counts values in force that a newer value replaced.
	Superseded int `json:"superseded"`
	// Ended counts values an end closed.
	Ended int `json:"ended"`
	// Contested counts claims held for review (Conflicts), not applied.
	Contested int `json:"contested"`
	// Reinforced counts restatements of a value already known.
	Reinforced int `json:"reinforced"`
	// Rejected counts invalid claims, never applied.
	Rejected int `json:"rejected"`
	// Nothing is true when the episode yielded no claim: it is kept in the
	// log and is searchable, but no fact changed.
	Nothing bool `json:"nothing_extracted"`
}

// Summarize counts what decisions changed.
func Summarize(ds []Decision) Changes {
	var c Changes
	for _, d := range ds {
		switch d.Reason {
		case ReasonValidUntil, ReasonStatusChanged, ReasonReopened, ReasonFolded:
			// A consequence for a version already stored (the value a
			// claim closed, a status flipped), not a claim: counted with
			// the claim that caused it.
			continue
		}
		switch d.Rule {
		case RuleAdd, RuleCoexist, RuleLate, RuleJudge:
			c.Added++
			c.Superseded += len(d.Closed)
		case RuleSupersede:
			c.Added++
			c.Superseded += max(1, len(d.Closed))
		case RuleEnd:
			c.Ended += len(d.Closed)
		case RuleContest:
			c.Contested++
		case RuleDup, RuleNoop:
			c.Reinforced++
		case RuleReject:
			c.Rejected++
		}
	}
	c.Nothing = len(ds) == 0
	return c
}

// Change says in one word what the decision did to the memory: "added",
// "superseded" (a value in force closed by a newer one), "ended",
// "contested" (held for review), "reinforced", "rejected", "revised" (a
// stored version's status or interval changed) or "unchanged".
func (d Decision) Change() string {
	switch d.Reason {
	case ReasonValidUntil:
		return "superseded"
	case ReasonStatusChanged, ReasonReopened, ReasonFolded:
		return "revised"
	case ReasonNothingToEnd:
		return "unchanged"
	}
	switch d.Rule {
	case RuleAdd, RuleCoexist, RuleLate, RuleJudge, RuleSupersede:
		return "added"
	case RuleEnd:
		return "ended"
	case RuleContest:
		return "contested"
	case RuleDup, RuleNoop:
		return "reinforced"
	case RuleReject:
		return "rejected"
	}
	return string(d.Rule)
}
