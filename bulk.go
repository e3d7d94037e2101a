package memor

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// The bulk loader: a new user's large first write, built apart from the
// online transaction (apply.go, slot.go, indexsink.go). The store holds
// nothing of the user, so every answer the online path would read back
// from its batch — is this claim known, what are the slot's claims, which
// contexts have live values, what did the judge say — is one this write
// made, and the loader keeps it in memory: it groups the ops by slot,
// folds each slot once with internal/resolve, and emits the claim, fact
// index, version, document, decision log, judge verdict, episode and index
// records into one kv.Table, which commits them in key order (one
// ingested table when large). It reads nothing back.
//
// Its contract is the online path's bytes: a store the loader wrote is
// byte for byte the store the online path writes for the same write
// (TestBulkEqualsOnline, TestRefusedBulkEqualsOnline,
// TestBulkJudgedEqualsOnline, the fuzz model).
// So it numbers documents and decisions as the online path does: slots
// in the order they were first touched, a slot's claims in key order.
//
// It also takes a text episode added inline (Add with Sync) as a new
// user's first write, extracted already: its claims, then its own
// document.
//
// A write the loader does not take (see bulkable) goes the online way:
// one whose fold would re-resolve slots (an end without object of a Many
// predicate closes every object's slot), a structured one too small, one
// with more documents than the vector index's records take without its
// graph, and a text episode whose extraction failed or whose predicates
// the judge would be asked about (a judge that fails fails the episode,
// which the online path records).

// bulkable reports whether the bulk loader may take ep, with extraction
// pre (nil for a structured episode), as the first write of a user whose
// store is empty.
func (e *Engine) bulkable(ep *Episode, pre *extracted) bool {
	if !e.tune.bulk || ep.Key != "" {
		return false // a keyed episode's key is written by the txn (putEpisode)
	}
	ops := ep.Ops
	switch ep.Kind {
	case EpisodeFacts:
		if len(ops) < e.tune.bulkMinOps {
			return false
		}
	case EpisodeText:
		if pre == nil || pre.err != nil {
			return false
		}
		ops = pre.ops
	default:
		return false
	}
	// (A lookup copies the predicate's definition: done only for the ops
	// that need it.)
	judge := !e.opts.Ungoverned && e.opts.Judge != nil && ep.Kind == EpisodeText
	for i := range ops {
		op := &ops[i]
		end := op.Kind == extract.End && norm.Key(op.Object) == ""
		if !end && !judge {
			continue
		}
		c, known := e.preds.lookup(e.preds.canonical(op.Predicate))
		if !known && judge {
			return false // the judge would be asked
		}
		if end && (e.opts.Ungoverned || !known || c != One) {
			return false // a Many predicate, or one the judge may find Many
		}
	}
	// Every op a version, and the episode its own document.
	return hnsw.NewWriter(e.idx.emb.Dim(), nil, e.idx.hnswO).Room() > len(ops)+1
}

// bulkLoad is one run of the bulk loader.
type bulkLoad struct {
	e    *Engine
	ctx  context.Context
	user string
	now  int64
	meta userMeta
	ep   *Episode
	// vetted: the ops passed validOp already (see txn.vetted).
	vetted bool
	// ops are the episode's, or a text episode's extracted ones; text is
	// a text episode's, the quotes' source ("" for a structured one).
	ops  []extract.Op
	text string
	// claimed counts the ops accepted (not rejected); stands holds the
	// facts the episode's claims stand on (see episodeState.stands).
	claimed int
	stands  []string
	tab     *kv.Table
	root    []byte

	decisions []Decision
	verdicts  map[string]bool   // the judge's verdicts asked in this write: One?
	glosses   map[string]string // predicates.gloss, by predicate (see factText)

	// The claims, by slot: slots in the order first touched, recs in the
	// order they came, each slot's linked through next.
	slots map[string]*bulkSlot
	order []*bulkSlot
	recs  []claimRec
	next  []int32
	ids   map[[idLen]byte]bool        // IDs of the claims in recs
	live  map[ctxGroup]map[string]int // live versions written, by context

	// The index records (see bulkIndex) and the vectors of the facts'
	// texts, embedded together.
	idx bulkIndex

	// Scratch: kb for keys (see set), so vb, ck and sb must not be it.
	kb, vb, ck, sb []byte
	buf            []claimRec
	rc             []resolve.Claim
	fold           resolve.Folder
}

// bulkSlot is one slot of a bulk load: its key and names, and its claims,
// linked through bulkLoad.recs.
type bulkSlot struct {
	slot                  []byte
	subjKey, pred, ctxKey string
	one, judged           bool
	head, tail, n         int32
}

// bulkWrite commits ep, a new user's first write that bulkable accepts,
// through the bulk loader. m is the user's (empty) counters.
// pre and vetted are writeOnce's (see txn.pre, txn.vetted).
func (e *Engine) bulkWrite(ctx context.Context, user string, ep *Episode, pre *extracted, m userMeta, vetted bool) (_ []Decision, err error) {
	ops, text := ep.Ops, ""
	if ep.Kind == EpisodeText {
		ops, text = pre.ops, extract.StripFenced(ep.Text)
	}
	n := len(ops)
	l := &bulkLoad{e: e, ctx: ctx, user: user, meta: m, ep: ep, vetted: vetted, ops: ops, text: text, root: kv.UserRoot(user),
		tab:   e.db.NewTable(kv.UserRoot(user), n*bytesPerFact+2*len(ep.Text)),
		slots: make(map[string]*bulkSlot, n), ids: make(map[[idLen]byte]bool, n),
		recs: make([]claimRec, 0, n), next: make([]int32, 0, n)}
	defer l.tab.Close()
	defer l.idx.close()
	l.now = e.tick(m.Txn)
	l.meta.Seq++
	ep.User, ep.Seq, ep.RecordedAt = user, l.meta.Seq, fromNanos(l.now)
	rec := episodeBytes(*ep)
	if err := l.tab.Set(seqKey(user, kv.SubEpisode, ep.Seq), rec); err != nil {
		return nil, err
	}
	if err := l.load(); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &applyError{seq: ep.Seq, err: err}
	}
	l.meta.Applied = ep.Seq
	l.meta.Txn = max(l.meta.Txn, l.now)
	if err := l.tab.Set(kv.UserKey(user, kv.SubMeta), mustJSON(l.meta)); err != nil {
		return nil, err
	}
	// As txn.commit does: the episode is in the store only once an
	// EpisodeLog holds it.
	if e.opts.Log != nil {
		if err := e.opts.Log.Append(ctx, user, ep.Seq, rec); err != nil {
			return nil, fmt.Errorf("memor: episode log: %w", err)
		}
	}
	// Counted before the commit, as txn.commit counts (see queryView).
	e.commits[stripe(user)].Add(1)
	if err := l.tab.Commit(); err != nil {
		return nil, err
	}
	e.counters.settle(episodeOutcomes{applied: 1})
	e.bulkLoads.Add(1)
	// A reader may have cached the user's empty indexes before this write
	// (the user's lock is held: none can load meanwhile).
	e.idx.dropUser(user)
	e.noteImport(user)
	return l.decisions, nil
}

// load applies the episode's ops: claims by slot, then each slot folded
// and its versions written, then the log and the vector index's records.
func (l *bulkLoad) load() (err error) {
	defer l.e.recovered(&err, fmt.Sprintf("applying episode %d", l.ep.Seq), l.user)
	texts, err := l.claims()
	if err != nil {
		return err
	}
	if err := l.idx.start(l, texts); err != nil {
		return err
	}
	for _, s := range l.order {
		if err := l.resolve(s); err != nil {
			return err
		}
	}
	if l.ep.Kind == EpisodeText {
		if err := l.episodeDoc(); err != nil {
			return err
		}
	}
	for i := range l.decisions {
		d := &l.decisions[i]
		l.vb = appendDecision(l.vb[:0], d)
		l.sb = kv.AppendUint64(l.sb[:0], d.Seq)
		if err := l.set(kv.SubLog, l.sb, l.vb); err != nil {
			return err
		}
	}
	return l.idx.vec.Finish(l.tab)
}

// set writes the user's key sub+suffix = v (the table copies both).
func (l *bulkLoad) set(sub kv.Sub, suffix, v []byte) error {
	l.kb = append(append(append(l.kb[:0], l.root...), byte(sub)), suffix...)
	return l.tab.Set(l.kb, v)
}

// claims turns the ops into claims grouped by slot, as txn.applyOps does,
// and writes the fact index. It returns the texts of the assertions' facts.
func (l *bulkLoad) claims() ([]string, error) {
	ops := l.ops
	texts := make([]string, 0, len(ops))
	l.decisions = make([]Decision, 0, len(ops))
	for _, op := range ops {
		if err := l.ctx.Err(); err != nil {
			return nil, err
		}
		if reason, why := vetOp(&op, l.ep.At, l.vetted, l.text); why != "" {
			l.reject(op, reason, why)
			continue
		}
		l.claimed++
		pred := l.e.preds.canonical(op.Predicate)
		one, judged, err := l.cardinality(pred)
		if err != nil {
			return nil, err
		}
		if one && op.Additive && norm.Key(op.Context) == "" {
			op.Context = AdditionalContext
		}
		subjKey, objKey, ctxKey := norm.Key(op.Subject), norm.Key(op.Object), norm.Key(op.Context)
		if !one && op.Kind == extract.End && objKey == "" {
			// bulkable sends such a write the online way.
			return nil, fmt.Errorf("%w: bulk load of an end without object of a Many predicate", ErrInternal)
		}
		vf := op.ValidFrom.UnixNano()
		var id [idLen]byte
		if op.Kind == extract.Assert {
			id = factID(l.user, subjKey, pred, objKey, ctxKey, vf)
		} else {
			id = endID(l.user, subjKey, pred, objKey, ctxKey, vf)
		}
		conf := op.Confidence
		if conf == 0 {
			conf = 1
		}
		c := claimRec{ID: hex.EncodeToString(id[:]), Kind: uint8(op.Kind), Subject: norm.Clean(op.Subject),
			Predicate: pred, Object: norm.Clean(op.Object), Context: norm.Clean(op.Context), ValidFrom: vf,
			Confidence: conf, Quote: op.Quote, Episode: l.ep.Seq, Recorded: l.now}
		if l.ids[id] {
			l.decide(RuleNoop, &c, ReasonKnown, "", "claim already known")
			if op.Kind == extract.Assert && l.text != "" {
				l.stands = append(l.stands, c.ID)
			}
			continue
		}
		l.ids[id] = true
		l.ck = appendSlotKey(l.ck[:0], subjKey, pred, ctxKey, one, objKey)
		s := l.slots[string(l.ck)]
		if s == nil {
			s = &bulkSlot{slot: slices.Clone(l.ck), subjKey: subjKey, pred: pred, ctxKey: ctxKey, one: one}
			l.slots[string(s.slot)] = s
			l.order = append(l.order, s)
		}
		s.judged = s.judged || judged
		l.add(s, &c)
		l.ck = appendClaimSuffix(l.ck[:0], s.slot, vf, id)
		if err := l.set(kv.SubFactIndex, id[:], l.ck); err != nil {
			return nil, err
		}
		if op.Kind == extract.Assert {
			texts = append(texts, l.factText(c.Subject, c.Predicate, c.Object, c.Context))
		}
	}
	return texts, nil
}

// factText is predicates.factText of a fact with these names, the
// predicate's gloss looked up once per load (a lookup copies the
// predicate's definition).
func (l *bulkLoad) factText(subject, pred, object, context string) string {
	g, ok := l.glosses[pred]
	if !ok {
		g = l.e.preds.gloss(pred)
		if l.glosses == nil {
			l.glosses = map[string]string{}
		}
		l.glosses[pred] = g
	}
	if context == "" {
		return subject + " " + g + " " + object
	}
	return subject + " " + g + " " + object + " " + context
}

// add appends c to the claims of s.
func (l *bulkLoad) add(s *bulkSlot, c *claimRec) {
	i := int32(len(l.recs))
	l.recs = append(l.recs, *c)
	l.next = append(l.next, -1)
	if s.n == 0 {
		s.head = i
	} else {
		l.next[s.tail] = i
	}
	s.tail = i
	s.n++
}

// slotClaims returns the claims of s in key order (valid time, then ID):
// scratch, valid until the next call, or for a slot of one claim the
// claim in place.
func (l *bulkLoad) slotClaims(s *bulkSlot) []claimRec {
	if s.n == 1 {
		return l.recs[s.head : s.head+1 : s.head+1]
	}
	out := l.buf[:0]
	for i, k := s.head, int32(0); k < s.n; i, k = l.next[i], k+1 {
		out = append(out, l.recs[i])
	}
	slices.SortFunc(out, func(a, b claimRec) int {
		if c := cmp.Compare(a.ValidFrom, b.ValidFrom); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	l.buf = out
	return out
}

// cardinality is txn.cardinality answered from memory: the store holds no
// verdict of the user, so a verdict is one asked in this write.
func (l *bulkLoad) cardinality(pred string) (one, judged bool, err error) {
	if l.e.opts.Ungoverned {
		return false, false, nil
	}
	c, known := l.e.preds.lookup(pred)
	if known || l.e.opts.Judge == nil {
		return c == One, false, nil
	}
	if one, ok := l.verdicts[pred]; ok {
		return one, true, nil
	}
	verdict, err := l.e.judge(l.ctx, pred)
	if err != nil {
		return false, false, err
	}
	if l.verdicts == nil {
		l.verdicts = map[string]bool{}
	}
	l.verdicts[pred] = verdict == extract.Replace
	if err := l.tab.Set(judgeKey(l.user, pred), []byte{byte(verdict)}); err != nil {
		return false, false, err
	}
	return verdict == extract.Replace, true, nil
}

// resolve folds the claims of slot s, all of them this write's and none
// with a version yet, and writes the claims, the versions and the
// decisions, as txn.resolveSub does for such a slot.
func (l *bulkLoad) resolve(s *bulkSlot) error {
	claims := l.slotClaims(s)
	l.rc = appendResolve(l.rc[:0], claims)
	out := slotOutcomes{outs: l.fold.Fold(s.one, nil, resolve.Outcome{}, l.rc)}
	coexist := l.otherContexts(s)
	var pending []pendingDecision
	rule := Rule("")
	for i := range claims {
		c := &claims[i]
		o := out.of(i)
		if resolve.Kind(c.Kind) == resolve.End {
			reason, detail := ReasonNothingToEnd, "nothing open to end"
			if o.Applied {
				reason, detail = ReasonClosedValue, "closed the open value"
			}
			j := l.decide(RuleEnd, c, reason, "", detail)
			if o.Applied {
				pending = append(pending, pendingDecision{c.ID, j})
			}
			rule = pick(rule, RuleEnd)
		} else {
			if l.text != "" {
				// What the text episode's claim stands on.
				if o.Into != "" {
					l.stands = append(l.stands, o.Into)
				} else {
					l.stands = append(l.stands, c.ID)
				}
			}
			r := arrivalRule(o, s.judged, false, coexist)
			rule = pick(rule, r)
			if r == RuleLate || r == RuleCoexist || r == RuleJudge {
				c.Rule = r
			}
			reason, detail := ReasonNone, ""
			if o.Into != "" {
				reason, detail = ReasonReinforces, "reinforces "+o.Into
			}
			j := l.decide(r, c, reason, o.Into, detail)
			if r == RuleSupersede || r == RuleLate || r == RuleJudge {
				pending = append(pending, pendingDecision{c.ID, j})
			}
		}
		l.ck = appendClaimSuffix(l.ck[:0], s.slot, c.ValidFrom, mustID(c.ID))
		l.vb = appendClaim(l.vb[:0], c)
		if err := l.set(kv.SubClaim, l.ck, l.vb); err != nil {
			return err
		}
	}
	var closed map[string][]string
	if len(pending) > 0 {
		closed = map[string][]string{}
	}
	sup := supportOf(claims, &out)
	for i, c := range claims {
		if resolve.Kind(c.Kind) != resolve.Assert {
			continue
		}
		o := out.of(i)
		if o.Status == resolve.None {
			continue // folded into another fact
		}
		want := versionOf(l.user, c, o)
		want.Episodes = sup.episodes(c, nil)
		if closed != nil && o.Status == resolve.Active && o.ValidTo != resolve.Open {
			if by := closer(claims, &out, o); by != "" {
				closed[by] = append(closed[by], c.ID)
			}
		}
		want.Rule = versionRule(c, o)
		if err := l.put(s, want); err != nil {
			return err
		}
	}
	for _, p := range pending {
		if ids := closed[p.claim]; len(ids) > 0 {
			d := &l.decisions[p.index]
			slices.Sort(ids)
			d.Closed = slices.Compact(ids)
		}
	}
	return nil
}

// episodeDoc gives a text episode its document, as txn.indexEpisode
// does: its map value and its postings and vector records.
func (l *bulkLoad) episodeDoc() error {
	if len(bm25.Tokenize(l.text)) == 0 {
		return nil // nothing a query could match
	}
	ep := l.ep
	l.meta.Doc++
	doc := l.meta.Doc
	d := &episodeDoc{seq: ep.Seq, at: nanos(ep.At), rec: nanos(ep.RecordedAt), hasClaims: l.claimed > 0,
		more: l.e.preds.saysMore(l.text, l.ops), standsKnown: true, speaker: ep.Speaker, voiced: true}
	slices.Sort(l.stands)
	d.stands = slices.Clone(slices.Compact(l.stands))
	l.sb = kv.AppendUint32(l.sb[:0], doc)
	if err := l.set(kv.SubDoc, l.sb, appendEpisodeDoc(nil, d)); err != nil {
		return err
	}
	if err := bm25.WriteDoc(l.tab, l.idx.bmPrefix, doc, spokenText(ep, l.text)); err != nil {
		return err
	}
	v, err := l.e.idx.embedOne(l.ctx, l.text)
	if err != nil {
		return err
	}
	return l.idx.vec.Add(l.tab, doc, v)
}

// otherContexts is txn.otherContexts answered from memory: whether the
// subject and predicate of s have live versions under another context.
func (l *bulkLoad) otherContexts(s *bulkSlot) bool {
	for c, n := range l.live[ctxGroup{s.subjKey, s.pred}] {
		if c != s.ctxKey && n > 0 {
			return true
		}
	}
	return false
}

// put writes f as the live version of its fact, with its document and
// index records, as txn.put does.
func (l *bulkLoad) put(s *bulkSlot, f Fact) error {
	f.RecordedAt = fromNanos(l.now)
	l.meta.Doc++
	f.Doc = l.meta.Doc
	l.ck = appendClaimSuffix(l.ck[:0], s.slot, nanos(f.ValidFrom), mustID(f.ID))
	l.vb = appendFact(l.vb[:0], &f)
	if err := l.set(kv.SubLive, l.ck, l.vb); err != nil {
		return err
	}
	g := ctxGroup{s.subjKey, s.pred}
	if l.live == nil {
		l.live = map[ctxGroup]map[string]int{}
	}
	if l.live[g] == nil {
		l.live[g] = map[string]int{}
	}
	l.live[g][s.ctxKey]++
	l.vb = versionDoc(l.vb[:0], f.Episode, l.ck, nanos(f.RecordedAt))
	l.sb = kv.AppendUint32(l.sb[:0], f.Doc)
	if err := l.set(kv.SubDoc, l.sb, l.vb); err != nil {
		return err
	}
	return l.idx.putVersion(l, &f)
}

func (l *bulkLoad) reject(op extract.Op, reason Reason, why string) {
	l.decisions = append(l.decisions, Decision{Rule: RuleReject, Subject: op.Subject, Predicate: op.Predicate,
		Object: op.Object, Context: op.Context, Episode: l.ep.Seq, RecordedAt: fromNanos(l.now), Detail: why, Reason: reason})
	l.logDecision()
}

// decide is txn.decide: the decision is logged when the load ends, with
// what it closed.
func (l *bulkLoad) decide(r Rule, c *claimRec, reason Reason, into, detail string) int {
	l.decisions = append(l.decisions, Decision{Rule: r, FactID: c.ID, Subject: c.Subject, Predicate: c.Predicate,
		Object: c.Object, Context: c.Context, Episode: l.ep.Seq, RecordedAt: fromNanos(l.now), Detail: detail,
		Reason: reason, Reinforces: into})
	l.logDecision()
	return len(l.decisions) - 1
}

func (l *bulkLoad) logDecision() {
	l.meta.Log++
	l.decisions[len(l.decisions)-1].Seq = l.meta.Log
}

// bulkIndex writes a bulk load's index records, the ones the user's
// indexes would write, without building the indexes in memory: they load
// from the store when the user is first queried, like after a restart. An
// import of many users would otherwise build indexes that the cache mostly
// evicts before anyone reads them, and keep the rest from users who are.
// The vectors of the facts' texts are embedded in one call: sparse (only
// their non-zero components) when the embedder can.
type bulkIndex struct {
	bmPrefix, tmpPrefix []byte
	vec                 *hnsw.Writer
	g                   *graph.Writer
	vectors             map[string][]float32
	sparse              *embed.Sparse
	sparseOf            map[string]int
	buf                 *vectorBuf
}

// start readies the index records of l and embeds texts.
func (x *bulkIndex) start(l *bulkLoad, all []string) error {
	s := l.e.idx
	x.bmPrefix, x.tmpPrefix = kv.UserKey(l.user, kv.SubBM25), kv.UserKey(l.user, kv.SubTemporal)
	x.vec = hnsw.NewWriter(s.emb.Dim(), kv.UserKey(l.user, kv.SubVector), s.hnswO)
	x.g = graph.NewWriter(kv.UserKey(l.user, kv.SubGraph))
	texts := distinctTexts(all)
	if len(texts) < 2 {
		return nil // embedded when indexed
	}
	x.buf = vectorPool.Get().(*vectorBuf)
	if sp, ok := s.emb.(embed.SparseEmbedder); ok {
		if err := sp.EmbedSparse(l.ctx, texts, &x.buf.sparse); err != nil {
			return fmt.Errorf("memor: embed: %w", err)
		}
		if n := x.buf.sparse.Len(); n != len(texts) {
			return fmt.Errorf("memor: embed: %d vectors for %d texts", n, len(texts))
		}
		if x.buf.sparseOf == nil {
			x.buf.sparseOf = make(map[string]int, len(texts))
		}
		x.sparse, x.sparseOf = &x.buf.sparse, x.buf.sparseOf
		for i, text := range texts {
			x.sparseOf[text] = i
		}
		return nil
	}
	vs, err := s.embedTexts(l.ctx, texts, x.buf.slices)
	if err != nil {
		return err
	}
	x.vectors = make(map[string][]float32, len(texts))
	for i, text := range texts {
		x.vectors[text] = vs[i]
	}
	return nil
}

// putVersion writes the index records of a new version f: its interval,
// postings, vector and graph edge. Only active versions are indexed, as
// indexWrite.putVersion indexes them.
func (x *bulkIndex) putVersion(l *bulkLoad, f *Fact) error {
	if f.Status != Active {
		return nil
	}
	text := l.factText(f.Subject, f.Predicate, f.Object, f.Context)
	if err := temporal.WriteInterval(l.tab, x.tmpPrefix, f.Doc, interval(f)); err != nil {
		return err
	}
	if err := bm25.WriteDoc(l.tab, x.bmPrefix, f.Doc, text); err != nil {
		return err
	}
	if i, ok := x.sparseOf[text]; ok {
		idx, val := x.sparse.Vector(i)
		if err := x.vec.AddSparse(l.tab, f.Doc, idx, val); err != nil {
			return err
		}
	} else {
		v, ok := x.vectors[text]
		if !ok {
			var err error
			if v, err = l.e.idx.embedOne(l.ctx, text); err != nil {
				return err
			}
		}
		if err := x.vec.Add(l.tab, f.Doc, v); err != nil {
			return err
		}
	}
	return x.g.AddEdge(l.tab, f.Doc, f.Subject, f.Predicate, f.Object)
}

// close returns the pooled vectors.
func (x *bulkIndex) close() {
	if x.buf != nil {
		x.buf.release()
		x.buf = nil
	}
}
