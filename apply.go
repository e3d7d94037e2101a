package memor

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// appendEpisode gives ep the next sequence number and the transaction time
// and writes it to the log.
func (t *txn) appendEpisode(ep *Episode) error {
	t.meta.Seq++
	ep.User, ep.Seq, ep.RecordedAt = t.user, t.meta.Seq, fromNanos(t.now)
	return t.putEpisode(ep)
}

func episodeBytes(ep Episode) []byte {
	return appendEpisode(nil, &ep)
}

// txn is one write of one user: the batch it commits, the episode being
// applied, and the state the pipeline keeps along the way, in groups.
type txn struct {
	e    *Engine
	ctx  context.Context
	user string

	// The batch, the user's counters it commits and the transaction
	// time. derived: the write only applies an episode already durable
	// in the log, so its commit need not wait for a sync (recovery
	// re-applies it). outcomes counts the episodes applied and failed in
	// this write, added to the engine's counters once it commits.
	b        *kv.Batch
	meta     userMeta
	now      int64
	derived  bool
	outcomes episodeOutcomes
	// logged: the episodes this write adds, for Options.Log (nil
	// without one).
	logged []pendingEpisode

	episodeState

	scratch txnScratch
	cache   txnCache
	// idx is the user's index sink for this write.
	idx *indexWrite
}

// episodeState is the episode a txn is applying and what it decided.
type episodeState struct {
	ep        Episode
	decisions []Decision
	pre       *extracted // the next text episode's extraction, if done already
	// vetted: the ops of the episode being applied passed validOp with
	// their valid times set before the write (AssertBatch and End check
	// them to fail the call early), so vet need not check them again.
	// Episodes read back from the log (Rebuild, the queue) are checked.
	vetted bool
	claims int // ops accepted (not rejected) so far
	// stands: the facts (IDs) the claims of the episode being applied
	// stand on — what it asserted, the fact a restatement reinforced, the
	// value an end closed — for the rule that withholds stale episodes
	// (see userIndex.visibleEpisodes).
	stands  []string
	failure error // why the last text episode applied failed (see Retry), or nil
	// fails: episodes whose application failed in an earlier try of this
	// write; apply records them as failed instead (see failures).
	fails  failures
	caught int // queued episodes applied by catchUp
}

// txnScratch is a write's reused buffers. root is the user's key prefix;
// kb, vb and sb are scratch for the keys, values and key suffixes of set
// (the batch copies them), so suffix and value must not be kb; ck is
// scratch for a claim's key suffix (see applyOps and put).
type txnScratch struct {
	root, kb, vb, sb, ck []byte
	// rc is scratch for the claims handed to resolve.Fold, which keeps
	// nothing of its input.
	rc []resolve.Claim
	// fold resolves the slots of the write (its outcomes are valid until
	// the next slot's).
	fold resolve.Folder
}

// txnCache holds reads that a bulk batch would repeat.
type txnCache struct {
	ends     map[string][]claimRec        // see slotClaims
	contexts map[ctxGroup]map[string]bool // subject, predicate → context → other contexts exist
}

// set writes the user's key sub+suffix = v through the batch, building
// the key in scratch. suffix and v must not be t.scratch.kb.
func (t *txn) set(sub kv.Sub, suffix, v []byte) error {
	sc := &t.scratch
	sc.kb = append(append(append(sc.kb[:0], sc.root...), byte(sub)), suffix...)
	return t.b.Set(sc.kb, v)
}

// setDoc writes document doc's map value, in the store and through the
// index sink.
func (t *txn) setDoc(doc uint32, v []byte) error {
	t.scratch.sb = kv.AppendUint32(t.scratch.sb[:0], doc)
	if err := t.set(kv.SubDoc, t.scratch.sb, v); err != nil {
		return err
	}
	return t.idx.setDoc(doc, v)
}

// close releases the batch and the index sink.
func (t *txn) close() {
	t.b.Close()
	t.idx.close()
}

// bytesPerFact is about how many bytes of batch one asserted fact writes.
const bytesPerFact = 1800

// begin starts a transaction for user whose batch has room for about
// sizeHint bytes (0: grow as needed).
func (e *Engine) begin(ctx context.Context, user string, sizeHint int) (*txn, error) {
	// The batch is empty yet: the store answers for it.
	m, err := loadMeta(e.db, user)
	if err != nil {
		return nil, err
	}
	b := e.db.NewBatchSized(sizeHint)
	if m.empty() {
		// A user's first write: nothing of theirs is stored (Forget
		// deletes the counters with the rest), so its reads of the user's
		// keys need not look past the batch.
		b.SetLocal(kv.UserRoot(user))
	}
	t := &txn{e: e, ctx: ctx, b: b, user: user, meta: m, idx: e.idx.writer(ctx, b, user),
		cache:   txnCache{ends: map[string][]claimRec{}, contexts: map[ctxGroup]map[string]bool{}},
		scratch: txnScratch{root: kv.UserRoot(user)}}
	t.now = e.tick(m.Txn)
	return t, nil
}

func (t *txn) commit() error {
	if err := t.idx.flush(); err != nil {
		return err
	}
	t.meta.Txn = max(t.meta.Txn, t.now)
	if err := t.b.Set(kv.UserKey(t.user, kv.SubMeta), mustJSON(t.meta)); err != nil {
		return err
	}
	if len(t.logged) > 0 {
		if err := t.appendLogged(); err != nil {
			return err
		}
	}
	commit := t.b.Commit
	if t.derived {
		commit = t.b.CommitNoSync
	}
	// Counted before the commit: a Query that finds the count unchanged
	// after taking its snapshot knows the snapshot holds no commit its
	// index view missed (see queryView).
	t.e.commits[stripe(t.user)].Add(1)
	if err := commit(); err != nil {
		return err
	}
	t.e.counters.settle(t.outcomes)
	t.idx.done()
	return nil
}

// applyEpisode derives claims and versions from ep inside the batch, at
// transaction time t.now. An extraction failure is recorded on the episode
// (see Retry) and applies nothing.
func (t *txn) applyEpisode(ep Episode) (err error) {
	defer t.e.recovered(&err, fmt.Sprintf("applying episode %d", ep.Seq), t.user)
	t.ep = ep
	t.failure = nil
	t.stands = t.stands[:0]
	switch ep.Kind {
	case EpisodeText:
		pre := t.pre
		t.pre = nil
		if pre == nil {
			pre = t.e.extractEpisode(t.ctx, t, ep)
		}
		text := extract.StripFenced(ep.Text)
		failure := pre.err
		if failure == nil {
			// Ask the judge about every unknown predicate before anything
			// is written, so that a judge that fails (a model down past
			// its retries) fails the episode like its extractor would,
			// instead of stalling the user's queue behind it.
			if err := t.judgeOps(pre.ops, text); errors.Is(err, errJudge) {
				failure = err
			} else if err != nil {
				return err
			}
		}
		if failure != nil {
			if err := t.ctx.Err(); err != nil {
				return err
			}
			return t.fail(ep, failure)
		}
		claims := t.claims
		if err := t.applyOps(pre.ops, text); err != nil {
			return err
		}
		return t.indexEpisode(ep, text, t.claims > claims, t.saysMore(text, pre.ops))
	case EpisodeFacts:
		return t.applyOps(ep.Ops, "")
	case EpisodeCorrect:
		return t.applyCorrection(ep.Correct)
	case EpisodeAccept:
		return t.applyAcceptance(ep.Accept)
	}
	return fmt.Errorf("%w: episode %d has kind %d", ErrCorrupt, ep.Seq, ep.Kind)
}

// slotWork collects what one transaction changed in one slot.
type slotWork struct {
	slot                  []byte
	subjKey, pred, ctxKey string
	one                   bool
	fresh                 idSet // claims added by this transaction
	judged                bool
	// allObjects: an end without object of a Many predicate, which
	// re-resolves every object sub-slot.
	allObjects bool
	// endsTouched: an object sub-slot of a Many predicate whose ends
	// without object also got a claim in this batch.
	endsTouched bool
}

// idSet is a set of claim IDs that needs no map for one ID (most slots
// of an import get one claim).
type idSet struct {
	one  string
	many map[string]bool
}

func (s *idSet) add(id string) {
	switch {
	case s.many != nil:
		s.many[id] = true
	case s.one == "" || s.one == id:
		s.one = id
	default:
		s.many = map[string]bool{s.one: true, id: true}
	}
}

func (s *idSet) has(id string) bool {
	if s.many != nil {
		return s.many[id]
	}
	return s.one != "" && s.one == id
}

func (s *idSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	if s.one != "" {
		return 1
	}
	return 0
}

// applyOps turns ops into claims and re-resolves the slots they touch. text
// is the episode text that quotes must come from ("" for structured ops,
// whose quotes are the caller's).
func (t *txn) applyOps(ops []extract.Op, text string) error {
	touched := make(map[string]*slotWork, len(ops))
	// The slots in the order they were first touched; works holds them
	// (at most one per op, so it never grows and the pointers stay put).
	order := make([]*slotWork, 0, len(ops))
	works := make([]slotWork, 0, len(ops))
	// texts: what the new assertions' documents will say, embedded
	// together below.
	texts := make([]string, 0, len(ops))
	// Every op is decided at least once: grown once, not doubling.
	t.decisions = slices.Grow(t.decisions, len(ops))
	allObjects := false // an end without object of a Many predicate
	for _, op := range ops {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		if reason, why := t.vet(&op, text); why != "" {
			t.reject(op, reason, why)
			continue
		}
		t.claims++
		pred := t.e.preds.canonical(op.Predicate)
		one, judged, err := t.cardinality(pred)
		if err != nil {
			return err
		}
		if one && op.Additive && norm.Key(op.Context) == "" {
			// "I also live in Portland": a second value of a One predicate
			// stands beside the first instead of replacing it.
			op.Context = AdditionalContext
		}
		subjKey, objKey, ctxKey := norm.Key(op.Subject), norm.Key(op.Object), norm.Key(op.Context)
		vf := op.ValidFrom.UnixNano()
		var id [idLen]byte
		if op.Kind == extract.Assert {
			id = factID(t.user, subjKey, pred, objKey, ctxKey, vf)
		} else {
			id = endID(t.user, subjKey, pred, objKey, ctxKey, vf)
		}
		// The claim's key suffix is built in scratch (the batch copies
		// it); only a slot seen for the first time copies its key.
		t.scratch.ck = appendSlotKey(t.scratch.ck[:0], subjKey, pred, ctxKey, one, objKey)
		slotLen := len(t.scratch.ck)
		t.scratch.ck = appendClaimSuffix(t.scratch.ck, nil, vf, id)
		suf, slot := t.scratch.ck, t.scratch.ck[:slotLen]
		conf := op.Confidence
		if conf == 0 {
			conf = 1
		}
		c := claimRec{ID: hex.EncodeToString(id[:]), Kind: uint8(op.Kind), Subject: norm.Clean(op.Subject),
			Predicate: pred, Object: norm.Clean(op.Object), Context: norm.Clean(op.Context), ValidFrom: vf,
			Confidence: conf, Quote: op.Quote, Episode: t.ep.Seq, Recorded: t.now}
		if known, err := t.knownClaim(suf); err != nil {
			return err
		} else if known {
			// Replay of a known claim: first provenance kept. The episode
			// stands on that claim's fact, as the first telling does.
			t.decide(RuleNoop, &c, ReasonKnown, "", "claim already known")
			if op.Kind == extract.Assert {
				t.stands = append(t.stands, c.ID)
			}
			continue
		}
		w := touched[string(slot)]
		if w == nil {
			sk := string(slot)
			works = append(works, slotWork{slot: []byte(sk), subjKey: subjKey, pred: pred, ctxKey: ctxKey, one: one,
				allObjects: !one && op.Kind == extract.End && objKey == ""})
			w = &works[len(works)-1]
			allObjects = allObjects || w.allObjects
			touched[sk] = w
			order = append(order, w)
		}
		w.judged = w.judged || judged
		w.fresh.add(c.ID)
		t.scratch.vb = appendClaim(t.scratch.vb[:0], &c)
		if err := t.set(kv.SubClaim, suf, t.scratch.vb); err != nil {
			return err
		}
		if op.Kind == extract.Assert {
			texts = append(texts, t.e.preds.factText(&Fact{Subject: c.Subject, Predicate: c.Predicate, Object: c.Object, Context: c.Context}))
		}
		if op.Kind == extract.End {
			delete(t.cache.ends, string(slot))
		}
		if err := t.set(kv.SubFactIndex, id[:], suf); err != nil {
			return err
		}
	}
	if err := t.idx.prefetch(texts); err != nil {
		return err
	}
	if allObjects {
		// Only an end without object touches the sub-slot of a Many
		// predicate's ends without object (an assertion has an object).
		for _, w := range order {
			if !w.one && !w.allObjects {
				// An end without object of the same predicate in this batch
				// reaches this object's slot (see appended).
				t.scratch.ck = appendSlotKey(t.scratch.ck[:0], w.subjKey, w.pred, w.ctxKey, false, "")
				w.endsTouched = touched[string(t.scratch.ck)] != nil
			}
		}
	}
	for _, w := range order {
		if err := t.resolveSlot(w, ""); err != nil {
			return err
		}
	}
	return nil
}

// knownClaim reports whether the claim with key suffix suf is stored
// already. (Its ID hashes everything the suffix holds.)
func (t *txn) knownClaim(suf []byte) (bool, error) {
	_, err := t.b.Get(userKey(t.user, kv.SubClaim, suf))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// indexEpisode gives a text episode a document in the text and vector
// indexes, so that what no fact captured can still be recalled. Its
// document map value records what decides whether it may be served: if
// it had claims, if it says more than they quote, and the facts its
// claims stand on (t.stands).
func (t *txn) indexEpisode(ep Episode, text string, hasClaims, more bool) error {
	if len(bm25.Tokenize(text)) == 0 {
		return nil // nothing a query could match
	}
	t.meta.Doc++
	doc := t.meta.Doc
	d := &episodeDoc{seq: ep.Seq, at: nanos(ep.At), rec: nanos(ep.RecordedAt), hasClaims: hasClaims, more: more, standsKnown: true,
		speaker: ep.Speaker, voiced: true}
	slices.Sort(t.stands)
	d.stands = slices.Clone(slices.Compact(t.stands))
	if err := t.setDoc(doc, appendEpisodeDoc(nil, d)); err != nil {
		return err
	}
	return t.idx.putEpisode(&ep, doc, text, d)
}

// saysMore reports whether text says something besides what its claims
// state: whether more than half of its distinct index terms are none of
// the terms of its claims' propositions (subject, predicate with its
// gloss, object, context). An episode one of whose claims went stale is
// withheld only if it does not (see userIndex.visibleEpisodes). The
// propositions, not the quotes: an extractor may quote a whole sentence
// for one clause of it. Terms, not words: stop words and inflections
// neither say more nor less.
func (t *txn) saysMore(text string, ops []extract.Op) bool { return t.e.preds.saysMore(text, ops) }

// saysMore is txn.saysMore.
func (p *predicates) saysMore(text string, ops []extract.Op) bool {
	stated := map[string]bool{}
	for _, op := range ops {
		if op.Quote == "" || !strings.Contains(text, op.Quote) {
			continue // rejected: it quotes nothing of the text
		}
		pred := p.canonical(op.Predicate)
		for _, part := range [...]string{op.Subject, pred, p.gloss(pred), op.Object, op.Context} {
			for _, w := range bm25.Tokenize(part) {
				stated[w] = true
			}
		}
	}
	all := map[string]bool{}
	rest := 0
	for _, w := range bm25.Tokenize(text) {
		if all[w] {
			continue
		}
		all[w] = true
		if !stated[w] {
			rest++
		}
	}
	return 2*rest > len(all)
}

func (t *txn) reject(op extract.Op, reason Reason, why string) {
	t.decisions = append(t.decisions, Decision{Rule: RuleReject, Subject: op.Subject, Predicate: op.Predicate,
		Object: op.Object, Context: op.Context, Episode: t.ep.Seq, RecordedAt: fromNanos(t.now), Detail: why, Reason: reason})
	t.logDecision(&t.decisions[len(t.decisions)-1])
}

// decide logs rule r applied to claim c and returns the decision's index
// in t.decisions. into is the fact a restatement supports.
func (t *txn) decide(r Rule, c *claimRec, reason Reason, into, detail string) int {
	t.decisions = append(t.decisions, Decision{Rule: r, FactID: c.ID, Subject: c.Subject, Predicate: c.Predicate,
		Object: c.Object, Context: c.Context, Episode: t.ep.Seq, RecordedAt: fromNanos(t.now), Detail: detail,
		Reason: reason, Reinforces: into})
	t.logDecision(&t.decisions[len(t.decisions)-1])
	return len(t.decisions) - 1
}

func (t *txn) logDecision(d *Decision) {
	t.meta.Log++
	d.Seq = t.meta.Log
	t.writeDecision(d)
}

// writeDecision (re)writes a logged decision under its Seq: a decision
// whose Closed is known only once its slot is resolved is logged first,
// in order, and completed after.
func (t *txn) writeDecision(d *Decision) {
	// A failed Set surfaces at Commit (Pebble batches only fail on misuse).
	t.scratch.vb = appendDecision(t.scratch.vb[:0], d)
	t.scratch.sb = kv.AppendUint64(t.scratch.sb[:0], d.Seq)
	_ = t.set(kv.SubLog, t.scratch.sb, t.scratch.vb)
}

// vet defaults op's valid time to the episode's and says why the resolver
// rejects it ("" if it does not): an invalid op, or one extracted from
// text whose quote is not a verbatim span of it.
func (t *txn) vet(op *extract.Op, text string) (Reason, string) {
	return vetOp(op, t.ep.At, t.vetted, text)
}

// vetOp is txn.vet of an op of an episode said at at; vetted: op passed
// validOp already.
func vetOp(op *extract.Op, at time.Time, vetted bool, text string) (Reason, string) {
	if op.ValidFrom.IsZero() {
		op.ValidFrom = at
	}
	if !vetted {
		if err := validOp(*op); err != nil {
			return ReasonInvalidOp, err.Error()
		}
	}
	if text != "" && (op.Quote == "" || !strings.Contains(text, op.Quote)) {
		return ReasonQuoteNotInText, "quote is not a verbatim span of the episode text"
	}
	return ReasonNone, ""
}

// errJudge marks a judge that failed to give a verdict: the episode that
// needed it fails (see Retry), the store is not at fault.
var errJudge = errors.New("memor: judge")

// judgeOps obtains (and caches) the judge's verdict for the unknown
// predicate of every op that applyOps would accept from text.
func (t *txn) judgeOps(ops []extract.Op, text string) error {
	for _, op := range ops {
		if _, why := t.vet(&op, text); why != "" {
			continue // rejected later, never resolved
		}
		if _, _, err := t.cardinality(t.e.preds.canonical(op.Predicate)); err != nil {
			return err
		}
	}
	return nil
}

// cardinality returns whether pred is One, consulting (and caching) the
// judge for predicates memor does not know. The verdict is the user's
// (see judgeKey): the judge is asked once per user and predicate.
func (t *txn) cardinality(pred string) (one, judged bool, err error) {
	if t.e.opts.Ungoverned {
		return false, false, nil
	}
	c, known := t.e.preds.lookup(pred)
	if known || t.e.opts.Judge == nil {
		return c == One, false, nil
	}
	key := judgeKey(t.user, pred)
	if v, err := t.b.Get(key); err == nil && len(v) == 1 {
		return extract.Verdict(v[0]) == extract.Replace, true, nil
	} else if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return false, false, err
	}
	verdict, err := t.e.judge(t.ctx, pred)
	if err != nil {
		return false, false, err
	}
	if err := t.b.Set(key, []byte{byte(verdict)}); err != nil {
		return false, false, err
	}
	return verdict == extract.Replace, true, nil
}

// judge asks the judge for pred's verdict (Replace or Append); a failure
// wraps errJudge.
func (e *Engine) judge(ctx context.Context, pred string) (extract.Verdict, error) {
	verdict, err := e.opts.Judge.Judge(ctx, pred, []string{renderOp(extract.Op{Subject: "user", Predicate: pred})})
	if err != nil {
		return 0, fmt.Errorf("%w %q: %w", errJudge, pred, err)
	}
	if verdict != extract.Replace && verdict != extract.Append {
		return 0, fmt.Errorf("%w %q: invalid verdict %d", errJudge, pred, verdict)
	}
	return verdict, nil
}

func getClaim(r kv.Reader, user string, suf []byte) (claimRec, error) {
	v, err := r.Get(userKey(user, kv.SubClaim, suf))
	if err != nil {
		return claimRec{}, fmt.Errorf("%w: claim of fact index: %v", ErrCorrupt, err)
	}
	return decodeClaim(v)
}

// slotClaims returns every claim that resolves in slot: its own, and for
// an object sub-slot of a Many predicate the ends without object of the
// same subject, predicate and context.
// ends, if not nil, caches the ends-without-object sub-slots already read
// in this transaction (a bulk batch of new likes would otherwise re-read
// the same empty range once per like).
func (e *Engine) slotClaims(ctx context.Context, r kv.Reader, user string, slot []byte, ends map[string][]claimRec) ([]claimRec, error) {
	var out []claimRec
	scan := func(s []byte, endsOnly bool) error {
		return r.Scan(ctx, userKey(user, kv.SubClaim, s), func(_, v []byte) error {
			c, err := decodeClaim(v)
			if endsOnly && resolve.Kind(c.Kind) != resolve.End {
				return err
			}
			out = append(out, c)
			return err
		})
	}
	if err := scan(slot, false); err != nil {
		return nil, err
	}
	subj, pred, ctxKey, obj, many, err := slotParts(slot)
	if err != nil {
		return nil, err
	}
	if many && obj != "" {
		endSlot := slotKey(subj, pred, ctxKey, false, "")
		if cached, ok := ends[string(endSlot)]; ok {
			return append(out, cached...), nil
		}
		n := len(out)
		if err := scan(endSlot, true); err != nil {
			return nil, err
		}
		if ends != nil {
			ends[string(endSlot)] = append([]claimRec(nil), out[n:]...)
		}
	}
	return out, nil
}

func toResolve(cs []claimRec) []resolve.Claim {
	return appendResolve(make([]resolve.Claim, 0, len(cs)), cs)
}

// appendResolve appends the resolver's form of cs to out.
func appendResolve(out []resolve.Claim, cs []claimRec) []resolve.Claim {
	for i := range cs {
		c := &cs[i]
		out = append(out, resolve.Claim{ID: c.ID, Kind: resolve.Kind(c.Kind), ObjKey: norm.Key(c.Object),
			ValidFrom: c.ValidFrom, Confidence: c.Confidence, Retracted: c.Retracted, Accepted: c.Accepted})
	}
	return out
}

// applyCorrection retracts the claims a correction names and re-resolves
// their slot. Claims that no longer exist (a rebuild with another extractor)
// are skipped.
func (t *txn) applyCorrection(c *Correction) error {
	if c == nil {
		return fmt.Errorf("%w: correction episode %d without body", ErrCorrupt, t.ep.Seq)
	}
	var w *slotWork
	for _, idHex := range c.Claims {
		id, err := parseID(idHex)
		if err != nil {
			continue
		}
		suf, err := t.b.Get(userKey(t.user, kv.SubFactIndex, id[:]))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		cl, err := getClaim(t.b, t.user, suf)
		if err != nil {
			return err
		}
		if cl.Retracted {
			continue
		}
		cl.Retracted = true
		if err := t.b.Set(userKey(t.user, kv.SubClaim, suf), appendClaim(nil, &cl)); err != nil {
			return err
		}
		if w == nil {
			slot := suf[:len(suf)-8-idLen]
			_, _, _, _, many, err := slotParts(slot)
			if err != nil {
				return err
			}
			w = &slotWork{slot: slot, pred: cl.Predicate, one: !many}
		}
		if idHex == c.FactID {
			t.decide(RuleCorrect, &cl, ReasonRetracted, "", "retracted by the user")
		}
	}
	if w == nil {
		return nil
	}
	return t.resolveSlot(w, RuleCorrect)
}

// applyAcceptance marks the claim an acceptance names as accepted by the
// episode being applied and re-resolves its slot, where the fold then
// applies it (resolve rule 9). A claim that no longer exists (a rebuild
// with another extractor) or was retracted since is skipped, as
// applyCorrection skips it.
func (t *txn) applyAcceptance(a *Acceptance) error {
	if a == nil {
		return fmt.Errorf("%w: accept episode %d without body", ErrCorrupt, t.ep.Seq)
	}
	id, err := parseID(a.FactID)
	if err != nil {
		return nil
	}
	suf, err := t.b.Get(userKey(t.user, kv.SubFactIndex, id[:]))
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	cl, err := getClaim(t.b, t.user, suf)
	if err != nil {
		return err
	}
	if resolve.Kind(cl.Kind) != resolve.Assert || cl.Retracted {
		return nil
	}
	cl.Accepted = t.ep.Seq
	if err := t.b.Set(userKey(t.user, kv.SubClaim, suf), appendClaim(nil, &cl)); err != nil {
		return err
	}
	slot := suf[:len(suf)-8-idLen]
	_, _, _, _, many, err := slotParts(slot)
	if err != nil {
		return err
	}
	t.decide(RuleAccept, &cl, ReasonAccepted, "", "accepted by the user")
	return t.resolveSlot(&slotWork{slot: slot, pred: cl.Predicate, one: !many}, RuleAccept)
}
