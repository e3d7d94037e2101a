package memor

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// resolveSlot folds every claim of the slot and writes the differences from
// the live versions: new versions, expired versions, reinforcement. cause is
// RuleCorrect when a correction triggered it.
func (t *txn) resolveSlot(w *slotWork, cause Rule) error {
	if w.allObjects {
		return t.resolveAllObjects(w, cause)
	}
	_, _, err := t.resolveSub(w, cause, true)
	return err
}

// resolveAllObjects re-resolves every object sub-slot of a Many predicate
// after an end without object, logging each end once.
func (t *txn) resolveAllObjects(w *slotWork, cause Rule) error {
	subj, pred, ctxKey, _, _, err := slotParts(w.slot)
	if err != nil {
		return err
	}
	prefix := userKey(t.user, kv.SubClaim, slotPrefix(subj, pred, ctxKey))
	var subs [][]byte
	err = t.b.Scan(t.ctx, prefix, func(k, _ []byte) error {
		s := k[len(prefix)-len(slotPrefix(subj, pred, ctxKey)) : len(k)-8-idLen]
		if bytes.Equal(s, w.slot) || (len(subs) > 0 && bytes.Equal(subs[len(subs)-1], s)) {
			return nil
		}
		subs = append(subs, append([]byte(nil), s...))
		return nil
	})
	if err != nil {
		return err
	}
	applied := map[string]bool{}
	closed := map[string][]string{}
	for _, s := range subs {
		got, by, err := t.resolveSub(&slotWork{slot: s, pred: pred, fresh: w.fresh}, cause, false)
		if err != nil {
			return err
		}
		for id := range got {
			applied[id] = true
		}
		for id, facts := range by {
			closed[id] = append(closed[id], facts...)
		}
	}
	claims, err := t.e.slotClaims(t.ctx, t.b, t.user, w.slot, t.cache.ends)
	if err != nil {
		return err
	}
	for _, c := range claims {
		if w.fresh.has(c.ID) {
			reason, detail := ReasonNothingToEnd, "nothing open to end"
			if applied[c.ID] {
				reason, detail = ReasonClosedAll, "closed every open value"
			}
			i := t.decide(RuleEnd, &c, reason, "", detail)
			if ids := closed[c.ID]; len(ids) > 0 {
				slices.Sort(ids)
				t.decisions[i].Closed = slices.Compact(ids)
				t.writeDecision(&t.decisions[i])
			}
		}
	}
	return nil
}

// resolveSub resolves one slot and returns the ends that closed something.
// logEnds is false when the caller logs the ends itself: closed then holds
// the facts each end closed. The steps: fold the slot's claims
// (foldSlot), see what the fresh ones arrived to (arrivalOf), decide and
// log each fresh claim (decideClaims), write the versions the fold calls
// for (writeVersions), and complete the decisions that closed values.
func (t *txn) resolveSub(w *slotWork, cause Rule, logEnds bool) (applied map[string]bool, closed map[string][]string, err error) {
	sf, err := t.foldSlot(w)
	if err != nil {
		return nil, nil, err
	}
	a, err := t.arrivalOf(w, sf.claims)
	if err != nil {
		return nil, nil, err
	}
	d, err := t.decideClaims(w, &sf, a, cause, logEnds)
	if err != nil {
		return nil, nil, err
	}
	if len(d.pending) > 0 || !logEnds {
		closed = map[string][]string{}
	}
	if err := t.writeVersions(w, &sf, &d, closed); err != nil {
		return nil, nil, err
	}
	t.completeClosed(d.pending, closed)
	return d.applied, closed, nil
}

// slotFold is a slot's claims, the fold's outcomes of them, and the live
// versions of its facts.
type slotFold struct {
	claims []claimRec
	live   map[string]Fact
	out    slotOutcomes
}

// foldSlot reads w's claims and folds them: from the fact in force when
// the fresh claims are appended to it (see appended), else from the batch
// with the slot's live versions.
func (t *txn) foldSlot(w *slotWork) (slotFold, error) {
	var sf slotFold
	sc := &t.scratch
	ap, err := t.appended(w)
	if err != nil {
		return sf, err
	}
	if ap != nil {
		sf.claims, sf.live = ap.claims, ap.live
		sc.rc = appendResolve(sc.rc[:0], sf.claims[1:])
		sf.out.outs, sf.out.seeded = sc.fold.Fold(w.one, ap.seed, ap.seedOutcome, sc.rc), true
		return sf, nil
	}
	if sf.claims, err = t.e.slotClaims(t.ctx, t.b, t.user, w.slot, t.cache.ends); err != nil {
		return sf, err
	}
	sc.rc = appendResolve(sc.rc[:0], sf.claims)
	sf.out.outs = sc.fold.Fold(w.one, nil, resolve.Outcome{}, sc.rc)
	sf.live, err = liveVersions(t.ctx, t.b, t.user, w.slot)
	return sf, err
}

// arrival is what a slot's fresh claims found when they arrived.
// latestOld is the latest old assertion's valid time (none sorts before
// every instant); coexist: every claim of the slot is fresh and the
// subject and predicate have live values under another context.
type arrival struct {
	latestOld int64
	coexist   bool
}

func (t *txn) arrivalOf(w *slotWork, claims []claimRec) (arrival, error) {
	a := arrival{latestOld: math.MinInt64}
	allFresh := true
	for _, c := range claims {
		if !w.fresh.has(c.ID) {
			allFresh = false
			if resolve.Kind(c.Kind) == resolve.Assert && !c.Retracted && c.ValidFrom > a.latestOld {
				a.latestOld = c.ValidFrom
			}
		}
	}
	if allFresh && w.fresh.len() > 0 {
		var err error
		if a.coexist, err = t.otherContexts(w); err != nil {
			return a, err
		}
	}
	return a, nil
}

// slotDecisions is what deciding a slot's fresh claims leaves for writing
// its versions: the ends that closed something (applied, made for the
// first), the logged decisions that may close values (pending, completed
// with Closed once the versions are written), the slot's rule, and
// whether an end of the episode being applied closed a value of the slot
// (endedHere: the values it closed are what it stands on).
type slotDecisions struct {
	applied   map[string]bool
	pending   []pendingDecision
	rule      Rule
	endedHere bool
}

// decideClaims names and logs what happened to each fresh claim of the
// slot on arrival, and records what the episode being applied stands on.
// A claim whose rule the fold alone cannot tell later (late, coexist,
// judge) is rewritten with it.
func (t *txn) decideClaims(w *slotWork, sf *slotFold, a arrival, cause Rule, logEnds bool) (slotDecisions, error) {
	d := slotDecisions{rule: cause}
	for i := range sf.claims {
		c := &sf.claims[i]
		o := sf.out.of(i)
		fresh := w.fresh.has(c.ID)
		if resolve.Kind(c.Kind) == resolve.End {
			if o.Applied {
				if d.applied == nil {
					d.applied = map[string]bool{}
				}
				d.applied[c.ID] = true
			}
			if fresh && o.Applied && c.Episode == t.ep.Seq {
				d.endedHere = true
			}
			if fresh && logEnds {
				reason, detail := ReasonNothingToEnd, "nothing open to end"
				if o.Applied {
					reason, detail = ReasonClosedValue, "closed the open value"
				}
				i := t.decide(RuleEnd, c, reason, "", detail)
				if o.Applied {
					d.pending = append(d.pending, pendingDecision{c.ID, i})
				}
				d.rule = pick(d.rule, RuleEnd)
			}
			continue
		}
		if !fresh {
			continue
		}
		if c.Episode == t.ep.Seq {
			// What this claim of the episode being applied stands on.
			if o.Into != "" {
				t.stands = append(t.stands, o.Into)
			} else {
				t.stands = append(t.stands, c.ID)
			}
		}
		r := arrivalRule(o, w.judged, c.ValidFrom < a.latestOld && o.ValidTo != resolve.Open, a.coexist)
		d.rule = pick(d.rule, r)
		if r == RuleLate || r == RuleCoexist || r == RuleJudge {
			c.Rule = r
			suf := claimSuffix(w.slot, c.ValidFrom, mustID(c.ID))
			if err := t.b.Set(userKey(t.user, kv.SubClaim, suf), appendClaim(nil, c)); err != nil {
				return d, err
			}
		}
		reason, detail := ReasonNone, ""
		if o.Into != "" {
			reason, detail = ReasonReinforces, "reinforces "+o.Into
		}
		i := t.decide(r, c, reason, o.Into, detail)
		if r == RuleSupersede || r == RuleLate || r == RuleJudge {
			d.pending = append(d.pending, pendingDecision{c.ID, i})
		}
	}
	return d, nil
}

// writeVersions writes the differences between the versions the fold
// calls for and the live ones: new versions, expired ones, reinforcement.
// A change of a fact no fresh claim made is logged. closed, if not nil,
// collects the facts each end closed.
func (t *txn) writeVersions(w *slotWork, sf *slotFold, d *slotDecisions, closed map[string][]string) error {
	claims := sf.claims
	sup := supportOf(claims, &sf.out)
	for i, c := range claims {
		if resolve.Kind(c.Kind) != resolve.Assert {
			continue
		}
		o := sf.out.of(i)
		cur, has := sf.live[c.ID]
		if o.Status == resolve.None { // folded into another fact
			if has {
				if err := t.expire(w.slot, cur); err != nil {
					return err
				}
				if !w.fresh.has(c.ID) {
					t.decide(RuleDup, &c, ReasonFolded, o.Into, "folded into "+o.Into)
				}
			}
			continue
		}
		want := t.version(c, o)
		var prior []uint64
		if sf.out.seeded && i == 0 {
			prior = cur.Episodes // the fact in force: its claims were not read
		}
		want.Episodes = sup.episodes(c, prior)
		if closed != nil && o.Status == resolve.Active && o.ValidTo != resolve.Open && (!has || !cur.ValidTo.Equal(want.ValidTo)) {
			if by := closer(claims, &sf.out, o); by != "" {
				closed[by] = append(closed[by], c.ID)
			}
		}
		switch {
		case !has:
			want.Rule = versionRule(c, o)
			if err := t.put(w, want); err != nil {
				return err
			}
		case cur.ValidFrom.Equal(want.ValidFrom) && cur.ValidTo.Equal(want.ValidTo) && cur.Status == want.Status:
			if err := t.reinforce(w, &c, cur, &want); err != nil {
				return err
			}
		default:
			if d.endedHere && cur.ValidTo.IsZero() && !want.ValidTo.IsZero() {
				t.stands = append(t.stands, c.ID)
			}
			want.Rule = changeRule(cur, o, d.rule)
			if err := t.expire(w.slot, cur); err != nil {
				return err
			}
			if err := t.put(w, want); err != nil {
				return err
			}
			if !w.fresh.has(c.ID) {
				reason, detail := describeChange(cur, want)
				t.decide(want.Rule, &c, reason, "", detail)
			}
		}
	}
	return nil
}

// reinforce updates in place the live version cur of c whose validity
// want keeps: its reinforcement, last sighting, confidence and support.
func (t *txn) reinforce(w *slotWork, c *claimRec, cur Fact, want *Fact) error {
	if cur.Reinforced == want.Reinforced && cur.LastSeen.Equal(want.LastSeen) && cur.Confidence == want.Confidence && sameSupport(&cur, want) {
		return nil
	}
	cur.Reinforced, cur.LastSeen, cur.Confidence, cur.Episodes = want.Reinforced, want.LastSeen, want.Confidence, want.Episodes
	return t.b.Set(userKey(t.user, kv.SubLive, claimSuffix(w.slot, c.ValidFrom, mustID(c.ID))), appendFact(nil, &cur))
}

// completeClosed rewrites the pending decisions with the facts they
// closed.
func (t *txn) completeClosed(pending []pendingDecision, closed map[string][]string) {
	for _, p := range pending {
		if ids := closed[p.claim]; len(ids) > 0 {
			d := &t.decisions[p.index]
			slices.Sort(ids)
			d.Closed = slices.Compact(ids)
			t.writeDecision(d)
		}
	}
}

// pendingDecision is a logged decision of claim at t.decisions[index].
type pendingDecision struct {
	claim string
	index int
}

// slotOutcomes are the fold's outcomes of a slot's claims, by position
// (see resolve.Folder; a slot's claims have distinct IDs). seeded: the
// claims are the append path's, whose first is the fold's seed, and its
// outcome comes last.
type slotOutcomes struct {
	outs   []resolve.Outcome
	seeded bool
}

// of returns the outcome of the slot's i-th claim.
func (s *slotOutcomes) of(i int) *resolve.Outcome {
	if s.seeded {
		if i == 0 {
			return &s.outs[len(s.outs)-1]
		}
		return &s.outs[i-1]
	}
	return &s.outs[i]
}

func pick(cur, r Rule) Rule {
	if cur != "" {
		return cur
	}
	return r
}

func mustID(s string) [idLen]byte {
	id, _ := parseID(s)
	return id
}

// arrivalRule names what happened to a claim when it arrived.
func arrivalRule(o *resolve.Outcome, judged, late, coexist bool) Rule {
	switch {
	case o.Status == resolve.Contested:
		return RuleContest
	case o.Status == resolve.None:
		return RuleDup
	case judged:
		return RuleJudge
	case late:
		return RuleLate
	case coexist:
		return RuleCoexist
	case o.Opened == resolve.CauseSupersede:
		return RuleSupersede
	}
	return RuleAdd
}

// versionRule labels the first version of a claim.
func versionRule(c claimRec, o *resolve.Outcome) Rule {
	switch o.Status {
	case resolve.Contested:
		return RuleContest
	case resolve.Retracted:
		return RuleCorrect
	}
	if c.Rule != "" {
		return c.Rule
	}
	if o.Opened == resolve.CauseSupersede {
		return RuleSupersede
	}
	return RuleAdd
}

// changeRule labels a new version of an existing fact.
func changeRule(cur Fact, o *resolve.Outcome, slotRule Rule) Rule {
	switch {
	case slotRule == RuleCorrect || o.Status == resolve.Retracted:
		return RuleCorrect
	case slotRule == RuleAccept && o.Status == resolve.Active:
		// The accepted fact, the value it closed, and any fact whose
		// validity the accepted value changed.
		return RuleAccept
	case o.Status == resolve.Contested:
		return RuleContest
	case cur.ValidTo.IsZero() && o.ValidTo != resolve.Open && o.Closed == resolve.CauseEnd:
		return RuleEnd
	case cur.ValidTo.IsZero() && o.ValidTo != resolve.Open && slotRule != RuleLate:
		return RuleSupersede
	case slotRule != "":
		return slotRule
	}
	return RuleLate
}

func describeChange(cur, want Fact) (Reason, string) {
	switch {
	case want.Status != cur.Status:
		return ReasonStatusChanged, fmt.Sprintf("status %s → %s", cur.Status, want.Status)
	case want.ValidTo.IsZero():
		return ReasonReopened, "valid again (reopened)"
	default:
		return ReasonValidUntil, "valid until " + want.ValidTo.Format("2006-01-02T15:04:05Z07:00")
	}
}

// version builds the fact version a claim's outcome calls for.
func (t *txn) version(c claimRec, o *resolve.Outcome) Fact { return versionOf(t.user, c, o) }

// versionOf is txn.version for user.
func versionOf(user string, c claimRec, o *resolve.Outcome) Fact {
	st := Active
	switch o.Status {
	case resolve.Contested:
		st = Contested
	case resolve.Retracted:
		st = Retracted
	}
	return Fact{ID: c.ID, User: user, Subject: c.Subject, Predicate: c.Predicate, Object: c.Object,
		Context: c.Context, ValidFrom: fromNanos(c.ValidFrom), ValidTo: fromNanos(o.ValidTo),
		Status: st, Confidence: o.Confidence, Reinforced: o.Reinforced, LastSeen: fromNanos(o.LastSeen),
		Episode: c.Episode, Quote: c.Quote}
}

// put records f as the live version of its fact, with a new index document.
func (t *txn) put(w *slotWork, f Fact) error {
	slot := w.slot
	f.RecordedAt = fromNanos(t.now)
	t.meta.Doc++
	f.Doc = t.meta.Doc
	// In scratch: the batch copies keys and values, and the index sink
	// does not use them.
	sc := &t.scratch
	sc.ck = appendClaimSuffix(sc.ck[:0], slot, nanos(f.ValidFrom), mustID(f.ID))
	suf := sc.ck
	sc.vb = appendFact(sc.vb[:0], &f)
	if err := t.set(kv.SubLive, suf, sc.vb); err != nil {
		return err
	}
	t.sawContext(w)
	sc.vb = versionDoc(sc.vb[:0], f.Episode, suf, nanos(f.RecordedAt))
	if err := t.setDoc(f.Doc, sc.vb); err != nil {
		return err
	}
	return t.idx.putVersion(&f)
}

// versionDoc appends the document-map value of a version to b.
func versionDoc(b []byte, seq uint64, claimSuf []byte, rec int64) []byte {
	v := kv.AppendUint64(append(b, docVersion), seq)
	v = append(v, claimSuf...)
	return kv.AppendInt64(v, rec)
}

// expire ends belief in cur: the version moves to history with ExpiredAt
// set to the transaction time.
func (t *txn) expire(slot []byte, cur Fact) error {
	cur.ExpiredAt = fromNanos(t.now)
	suf := claimSuffix(slot, nanos(cur.ValidFrom), mustID(cur.ID))
	if err := t.b.Delete(userKey(t.user, kv.SubLive, suf)); err != nil {
		return err
	}
	if err := t.b.Set(userKey(t.user, kv.SubHistory, versionSuffix(suf, nanos(cur.RecordedAt))), appendFact(nil, &cur)); err != nil {
		return err
	}
	return t.idx.expireVersion(&cur)
}

// ctxGroup is a subject and predicate, whose contexts coexist.
type ctxGroup struct{ subj, pred string }

// slotNames returns w's normalised subject, predicate and context.
func slotNames(w *slotWork) (ctxGroup, string, error) {
	if w.subjKey != "" {
		return ctxGroup{w.subjKey, w.pred}, w.ctxKey, nil
	}
	subj, pred, ctxKey, _, _, err := slotParts(w.slot)
	return ctxGroup{subj, pred}, ctxKey, err
}

// sawContext updates the otherContexts cache after a live value was
// written in w's context: every other context of the same subject and
// predicate now has a neighbour.
func (t *txn) sawContext(w *slotWork) {
	if len(t.cache.contexts) == 0 {
		return
	}
	g, mine, err := slotNames(w)
	if err != nil {
		return
	}
	for c := range t.cache.contexts[g] {
		if c != mine {
			t.cache.contexts[g][c] = true
		}
	}
}

// otherContexts reports whether the slot's subject and predicate already
// have live values under another context (rule coexist). Contexts sort
// within (subject, predicate), so it looks only before and after this
// context's range and stops at the first key: never a scan of the slot.
func (t *txn) otherContexts(w *slotWork) (bool, error) {
	g, ctxKey, err := slotNames(w)
	if err != nil {
		return false, err
	}
	if v, ok := t.cache.contexts[g][ctxKey]; ok {
		return v, nil
	}
	prefix := userKey(t.user, kv.SubLive, kv.AppendString(kv.AppendString(nil, g.subj), g.pred))
	mine := kv.AppendString(append([]byte(nil), prefix...), ctxKey)
	found := false
	defer func() {
		if t.cache.contexts[g] == nil {
			t.cache.contexts[g] = map[string]bool{}
		}
		t.cache.contexts[g][ctxKey] = found
	}()
	stop := func(_, _ []byte) error { found = true; return errStop }
	for _, r := range [][2][]byte{{prefix, mine}, {kv.PrefixEnd(mine), kv.PrefixEnd(prefix)}} {
		if err := t.b.ScanRange(t.ctx, r[0], r[1], stop); err != nil && !errors.Is(err, errStop) {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// appendedClaims is what resolving claims appended to a slot's history
// needs: the fact in force and the new claims (claims[0] is the fact in
// force), and the live version of the fact in force.
type appendedClaims struct {
	claims      []claimRec
	live        map[string]Fact
	seed        *resolve.Claim
	seedOutcome resolve.Outcome
}

// maxStepsBack bounds how far appended looks back through the live
// versions for the fact in force (past contested and corrected ones).
const maxStepsBack = 16

// appended returns the fresh claims of w with the fact in force when they
// are assertions later than every earlier claim of the slot, and a fact is
// in force: the common write of a new value of a One slot, or a restated
// value of a Many slot. resolve.FoldFrom then resolves them from the fact
// in force alone, without reading the slot's history, which Fold would read
// whole (a value changed daily for years, or a like restated in every
// conversation, must not make each write slower). It returns nil when the
// full fold is needed.
func (t *txn) appended(w *slotWork) (*appendedClaims, error) {
	// A Many object's fold also reads the predicate's ends without object,
	// which this path does not. A stored one cannot reach the new claims:
	// one after the fact in force would have closed it. One in this batch
	// can (it is resolved after or before this slot), so the full fold
	// takes those. (The ends' own slot holds no assertion, so the scan
	// below sends it to the full fold too.)
	if !t.e.tune.appendPath || w.allObjects || w.endsTouched || w.fresh.len() == 0 {
		return nil, nil
	}
	var fresh []claimRec
	latestOld, hasOld, ok := int64(0), false, true
	err := t.b.ScanReverse(t.ctx, userKey(t.user, kv.SubClaim, w.slot), func(_, v []byte) error {
		c, err := decodeClaim(v)
		if err != nil {
			return err
		}
		if !w.fresh.has(c.ID) {
			latestOld, hasOld = c.ValidFrom, true
			return errStop
		}
		if resolve.Kind(c.Kind) != resolve.Assert || c.Retracted {
			ok = false
			return errStop
		}
		fresh = append(fresh, c)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if !ok || !hasOld || len(fresh) != w.fresh.len() || fresh[len(fresh)-1].ValidFrom <= latestOld {
		return nil, nil // fresh claims among the old ones, or nothing old
	}
	var seedVersion *Fact
	steps := 0
	err = t.b.ScanReverse(t.ctx, userKey(t.user, kv.SubLive, w.slot), func(_, v []byte) error {
		if steps++; steps > maxStepsBack {
			return errStop
		}
		f, err := decodeFact(t.user, v)
		if err != nil {
			return err
		}
		if f.Status != Active {
			return nil // contested or corrected: never in force
		}
		if f.ValidTo.IsZero() {
			seedVersion = &f
		}
		return errStop // the latest active fact: in force if open
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if seedVersion == nil {
		return nil, nil
	}
	v, err := t.b.Get(userKey(t.user, kv.SubClaim, claimSuffix(w.slot, nanos(seedVersion.ValidFrom), mustID(seedVersion.ID))))
	if err != nil {
		return nil, fmt.Errorf("%w: claim of live version %s: %v", ErrCorrupt, seedVersion.ID, err)
	}
	seedRec, err := decodeClaim(v)
	if err != nil {
		return nil, err
	}
	ap := &appendedClaims{claims: append(make([]claimRec, 0, len(fresh)+1), seedRec), live: map[string]Fact{seedRec.ID: *seedVersion}}
	for i := len(fresh) - 1; i >= 0; i-- { // back to key order
		ap.claims = append(ap.claims, fresh[i])
	}
	ap.seed = &toResolve(ap.claims[:1])[0]
	// The fold's outcome for the fact in force is what its version holds
	// (Opened is not read for a fact already stored).
	ap.seedOutcome = resolve.Outcome{Status: resolve.Active, ValidTo: resolve.Open, Opened: resolve.CauseAdd, Reinforced: seedVersion.Reinforced,
		LastSeen: nanos(seedVersion.LastSeen), Confidence: seedVersion.Confidence}
	return ap, nil
}
