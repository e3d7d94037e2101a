package memor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/lang/en"
)

// Fusion selects how Query combines its signals.
type Fusion uint8

const (
	// MinMax scales each signal to [0, 1] over the candidates and sums
	// them with Weights (DESIGN §5): BM25 as a fraction of the best
	// candidate's, cosine above its noise floor as a fraction of the
	// best's (see scaleText, scaleVector), the graph signal min-max.
	MinMax Fusion = iota
	// RRF is reciprocal rank fusion (k = 60) over the signal rankings.
	RRF
)

// Weights of the fused signals; the zero value means 0.4 / 0.4 / 0.2.
type Weights struct {
	Vector, BM25, Entity float64
}

// QueryOptions configures Query. The zero value asks what is true now.
type QueryOptions struct {
	// K is how many results to return (default 10).
	K int
	// ValidAt and KnownAt select the bitemporal view (zero = now): only
	// versions visible at (ValidAt, KnownAt) are candidates.
	ValidAt, KnownAt time.Time
	// Depth bounds the graph walk from entities named in the query
	// (default 3).
	Depth   int
	Weights Weights
	Fusion  Fusion
	// NoEpisodes leaves raw episodes out of the candidates.
	NoEpisodes bool
	// Reranker, if set, reorders the top candidates in one batched call.
	Reranker extract.Reranker
	// TimeFromText, when ValidAt is zero, takes the valid time from a past
	// date the question names (see TimeInText): "where did I live in March
	// 2026?" or "on 2026-02-01" asks as of that date, a named day as of its
	// end so that day's own sessions are served. A question asking when
	// something happened ("When did I move to Boston in 2022?") asks for
	// an event, which is found by its words whatever holds now: its date
	// does not move the view.
	TimeFromText bool
	// Forgetting multiplies scores by a forgetting curve R = exp(−t/S),
	// with S growing with reinforcement (off by default).
	Forgetting bool
	// MinSupport is the support below which Query answers nothing known
	// (an empty result): the share of the question's term weight that
	// the best candidate explains (see README, "What Query serves"). A
	// question naming someone memor holds facts about is always
	// answered. Zero means DefaultMinSupport; a negative value turns
	// abstention off.
	MinSupport float64
	// Explain fills Result.Explanation: why each result ranked where it
	// did (off by default: it costs a BM25 explanation per result).
	Explain bool
}

// Signals is a result's score broken down by signal (after normalisation).
type Signals struct {
	BM25    float64 `json:"bm25"`
	Vector  float64 `json:"vector"`
	Entity  float64 `json:"entity"`
	Boost   float64 `json:"boost"`
	Recency float64 `json:"recency,omitempty"`
	Rerank  float64 `json:"rerank,omitempty"`
	// Source is the score a fact gained from the episode it came from,
	// ranked with it (see factsOverSources).
	Source float64 `json:"source,omitempty"`
	// Newer is the score a turn gained by being served above an earlier
	// turn of its speaker on the same matter; Stale the factor the
	// earlier one's score was multiplied by (see newestFirst).
	Newer float64 `json:"newer,omitempty"`
	Stale float64 `json:"stale,omitempty"`
	// Voice is the factor a turn gained for being said by whom the
	// question is about (see focus.voice).
	Voice float64 `json:"voice,omitempty"`
}

// Result is one ranked answer: a fact version or an episode.
type Result struct {
	Fact    *Fact    `json:"fact,omitempty"`
	Episode *Episode `json:"episode,omitempty"`
	Score   float64  `json:"score"`
	Signals Signals  `json:"signals"`
	// Path is the graph path that reached the fact, rendered
	// "user → brother → Alex → has_pet → golden retriever" (empty when
	// the fact was not reached through the graph).
	Path string `json:"path,omitempty"`
	// Explanation says why the result ranked where it did; set only with
	// QueryOptions.Explain.
	Explanation *Explanation `json:"explanation,omitempty"`
}

// Text renders the result for a prompt: the fact as "subject predicate
// object", or the episode text with its date and, when it has one, its
// speaker ("[2024-03-15] Caroline: I play guitar").
func (r Result) Text() string {
	switch {
	case r.Fact != nil:
		return r.Fact.String()
	case r.Episode != nil:
		s := "[" + r.Episode.At.Format("2006-01-02") + "] "
		if r.Episode.Speaker != "" {
			s += r.Episode.Speaker + ": "
		}
		return s + r.Episode.Text
	}
	return ""
}

// Query defaults (DESIGN §5).
const (
	DefaultK            = 10
	DefaultDepth        = 3
	candidatesPerSignal = 50
	rrfK                = 60
	// forgettingBase is the stability S of a fact said once: after S its
	// recency signal has fallen to 1/e. Each reinforcement adds one S.
	forgettingBase = 30 * 24 * time.Hour
)

// TimeInText finds a past date a question names ("in March 2026", "on
// 2026-02-01", "on 27 March, 2022") and resolves it against now to the
// instant a view of that date is taken at: for a named day its last
// instant, so what was said that day is inside the view; for a named month
// or year its middle, away from changes on its first day. The instant is
// never after now. TimeSpanInText gives the whole interval.
func TimeInText(text string, now time.Time) (time.Time, bool) {
	m, ok := en.InText(text, now)
	if !ok {
		return time.Time{}, false
	}
	start, end := m.Span()
	var t time.Time
	switch m.Grain {
	case en.Day:
		t = end.Add(-time.Nanosecond)
	case en.Month:
		t = start.AddDate(0, 0, 14) // mid-month
	case en.Year:
		t = start.AddDate(0, 6, 0) // mid-year
	default:
		t = m.At
	}
	if t.After(now) {
		t = now
	}
	return t.UTC(), true
}

// TimeSpanInText finds a past date a question names, as TimeInText does,
// and returns the interval [start, end) it names: a day from its midnight
// to the next, a month or a year likewise.
func TimeSpanInText(text string, now time.Time) (start, end time.Time, ok bool) {
	m, ok := en.InText(text, now)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	start, end = m.Span()
	return start.UTC(), end.UTC(), true
}

// minVector is the cosine similarity below which a vector hit is noise:
// feature-hashed vectors of unrelated sentences still share a few features.
const minVector = 0.15

// minVectorAlone is the similarity a candidate needs when no other signal
// supports it.
const minVectorAlone = 0.35

// maxBoost is the largest reinforcement boost β(r) = 1 + 0.05·min(r−1, 5).
const maxBoost = 1.25

// boost applies the reinforcement boost and, if asked, the forgetting curve.
func (e *Engine) boost(c *candidate, validAt time.Time, forgetting bool) {
	r := 1
	var last time.Time
	if c.fact != nil {
		r, last = c.fact.Reinforced, c.fact.LastSeen
	} else if c.episode != nil {
		last = c.episode.At
	}
	c.signals.Boost = 1 + 0.05*float64(min(max(r-1, 0), 5))
	c.score *= c.signals.Boost
	if forgetting {
		age := max(validAt.Sub(last), 0)
		stability := time.Duration(max(r, 1)) * forgettingBase
		c.signals.Recency = math.Exp(-float64(age) / float64(stability))
		c.score *= c.signals.Recency
	}
}

// candidate is one document under consideration.
type candidate struct {
	doc     uint32
	signals Signals
	path    string
	// walk, when path is empty, is the graph path that reached the
	// candidate, rendered into Result.Path only if it is served.
	walk  graph.Path
	score float64
	// rawVector is the cosine before normalisation.
	rawVector float64
	fact      *Fact
	episode   *Episode
}

// Query returns the facts and episodes most relevant to text, visible at
// (ValidAt, KnownAt): current beliefs by default. Candidates come from BM25,
// vector search and a graph walk from the entities the query names, each
// filtered by the temporal index inside candidate generation; they are
// fused, boosted by reinforcement and optionally reranked.
//
// A Query reads one committed state of the user's facts, and its indexes
// at the same commit (see queryView): a write committing meanwhile is
// seen whole or not at all, so no version is served twice and a One slot
// never serves two values at one instant. Every version visible in that
// state is a candidate; a write still in progress can only keep the
// versions it changes out of the graph walk (text and vector search
// still find them) and hold back the episodes whose facts it changes.
func (e *Engine) Query(ctx context.Context, user, text string, opts QueryOptions) (_ []Result, err error) {
	clock := newStageClock(e.opts.Observer)
	if clock.o != nil {
		// Deferred before recovered, so it runs after it and reports a
		// recovered panic's error too.
		defer func() { clock.done(err) }()
	}
	defer e.recovered(&err, "query", user)
	if err := e.validUser(user); err != nil {
		return nil, err
	}
	if err := e.validText(text); err != nil {
		return nil, err
	}
	var textAt time.Time
	if opts.ValidAt.IsZero() && opts.TimeFromText && !en.AsksWhen(text) {
		textAt, _ = TimeInText(text, e.now())
	}
	for _, t := range []struct {
		t    time.Time
		what string
	}{{opts.ValidAt, "validAt"}, {opts.KnownAt, "knownAt"}, {textAt, "validAt"}} {
		if !t.t.IsZero() {
			if err := checkTime(t.t, t.what); err != nil {
				return nil, err
			}
		}
	}
	k := opts.K
	if k <= 0 {
		k = DefaultK
	}
	depth := opts.Depth
	if depth <= 0 {
		depth = DefaultDepth
	}
	w := opts.Weights
	if w == (Weights{}) {
		w = Weights{Vector: 0.4, BM25: 0.4, Entity: 0.2}
	}
	release, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	qv, err := e.queryView(ctx, user, opts.ValidAt, opts.KnownAt, textAt)
	if err != nil {
		return nil, err
	}
	defer qv.snap.Close()
	ui, facts, validAt := qv.ui, qv.facts, qv.validAt
	ex := newExplainer(opts, opts.Reranker != nil || e.opts.Reranker != nil)
	ex.view(qv, opts, textAt)

	// allow: what text and vector search may return. It shares facts
	// unless episodes or pending documents are added (copying a large
	// tenant's view cost a tenth of a query): neither is ever modified.
	allow := facts
	var eps *roaring.Bitmap
	if !opts.NoEpisodes {
		eps = ui.visibleEpisodes(validAt.UnixNano(), qv.knownAt.UnixNano(), facts)
		if !eps.IsEmpty() {
			allow = roaring.Or(facts, eps)
		}
	}
	if qv.pending != nil {
		allow = roaring.Or(allow, qv.pending)
	}

	clock.skip()
	foc, err := e.queryFocus(ctx, ui, text, facts, allow)
	if err != nil {
		return nil, err
	}
	clock.lap(StageFocus)
	ex.focus(foc)
	if foc.nothing {
		return []Result{}, nil
	}
	text = foc.resolve(text)
	if foc.about != nil {
		// The focus is a filter like the view: applied inside candidate
		// generation, it gives the focus's facts the whole candidate pool
		// instead of what facts about others leave of it, and it bounds
		// the work by the focus's facts, not by the tenant's.
		allow = foc.candidates(ui, facts, eps)
		if qv.pending != nil {
			allow = roaring.Or(allow, qv.pending)
		}
	}
	cands := map[uint32]*candidate{}
	get := func(doc uint32) *candidate {
		c := cands[doc]
		if c == nil {
			c = &candidate{doc: doc}
			cands[doc] = c
		}
		return c
	}
	if !allow.IsEmpty() {
		clock.skip()
		hits, err := ui.bm.Search(ctx, text, candidatesPerSignal, allow)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if h.Score > 0 {
				get(h.Doc).signals.BM25 = h.Score
			}
		}
		clock.lap(StageBM25)
		q, err := e.queryVector(ctx, ui, text)
		if err != nil {
			return nil, err
		}
		clock.lap(StageEmbed)
		if !isZero(q) {
			vhits, err := ui.vec.Search(ctx, q, candidatesPerSignal, allow)
			if err != nil {
				return nil, err
			}
			for _, h := range vhits {
				if h.Score >= minVector {
					c := get(h.ID)
					c.signals.Vector, c.rawVector = float64(h.Score), float64(h.Score)
				}
			}
			clock.lap(StageVector)
		}
		if err := e.entityCandidates(ctx, ui, text, foc.seeds, depth, facts, get); err != nil {
			return nil, err
		}
		clock.lap(StageEntity)
		if err := e.outdatedCandidates(ctx, ui, text, facts, get); err != nil {
			return nil, err
		}
		clock.lap(StageOutdated)
		if err := completeSignals(ctx, ui, text, q, cands); err != nil {
			return nil, err
		}
		e.vectorLength(ui.bm, cands)
	}
	if minSupport := opts.MinSupport; minSupport >= 0 && !foc.named {
		if minSupport == 0 {
			minSupport = DefaultMinSupport
		}
		if e.support(ui, text, cands) < minSupport {
			return []Result{}, nil
		}
	}

	// Fuse, then resolve documents to facts and episodes in score order.
	// The reinforcement boost can lift a score by at most maxBoost, so
	// loading stops once the next candidate cannot reach the k-th score
	// (or the reranker's window). A document whose version is not (yet)
	// committed is skipped.
	clock.skip()
	list := make([]*candidate, 0, len(cands))
	for _, c := range cands {
		// Similarity alone, and weak, is noise: a candidate needs a word
		// or entity in common with the question or a close vector.
		if c.signals.BM25 == 0 && c.signals.Entity == 0 && c.rawVector < minVectorAlone {
			continue
		}
		list = append(list, c)
	}
	ex.beforeFuse(list, w)
	fuse(list, w, opts.Fusion)
	sortCandidates(list)
	want := k
	if opts.Reranker != nil || e.opts.Reranker != nil {
		want = candidatesPerSignal
	}
	loaded := list[:0]
	var kth float64
	for _, c := range list {
		if len(loaded) >= want && !opts.Forgetting && c.score*maxBoost*(1+voicePrior) < kth {
			break
		}
		if err := qv.loadDoc(user, c, foc.admitsSubject); err != nil {
			if errors.Is(err, kv.ErrNotFound) || errors.Is(err, errSkip) {
				continue
			}
			return nil, err
		}
		if !foc.admits(ui, c) {
			continue
		}
		e.boost(c, validAt, opts.Forgetting)
		foc.voice(c)
		loaded = append(loaded, c)
		if len(loaded) >= want {
			sortCandidates(loaded)
			kth = loaded[want-1].score
		}
	}
	list = loaded
	factsOverSources(list)
	sortCandidates(list)
	clock.lap(StageLoad)

	rr := opts.Reranker
	if rr == nil {
		rr = e.opts.Reranker
	}
	if rr != nil && len(list) > 0 {
		top := list[:min(len(list), candidatesPerSignal)]
		docs := make([]string, len(top))
		for i, c := range top {
			docs[i] = c.result().Text()
		}
		scores, err := rr.Rerank(ctx, text, docs)
		if err != nil {
			return nil, fmt.Errorf("memor: rerank: %w", err)
		}
		if len(scores) != len(top) {
			return nil, fmt.Errorf("memor: rerank: %d scores for %d candidates", len(scores), len(top))
		}
		for i, c := range top {
			c.signals.Rerank = scores[i]
		}
		sort.SliceStable(top, func(i, j int) bool { return top[i].signals.Rerank > top[j].signals.Rerank })
		clock.lap(StageRerank)
	}

	newestFirst(ui.bm, text, list[:min(k, len(list))])
	out := make([]Result, 0, min(k, len(list)))
	for _, c := range list[:min(k, len(list))] {
		out = append(out, c.result())
		ex.explain(ui, text, c, &out[len(out)-1])
	}
	return out, nil
}

func (c *candidate) result() Result {
	path := c.path
	if path == "" && len(c.walk.Hops) > 0 {
		path = c.walk.String()
	}
	return Result{Fact: c.fact, Episode: c.episode, Score: c.score, Signals: c.signals, Path: path}
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// entityCandidates walks the fact graph from the focus's seeds. A fact
// reached by a path scores by how many query words its path explains, per
// hop, so "what kind of dog does my brother have" prefers user → brother →
// Alex → has_pet → golden retriever over Alex's other facts.
func (e *Engine) entityCandidates(ctx context.Context, ui *userIndex, text string, seeds []string, depth int, facts *roaring.Bitmap, get func(uint32) *candidate) error {
	if len(seeds) == 0 {
		return nil
	}
	paths, err := ui.g.BFSLimit(ctx, seeds, depth, 4*candidatesPerSignal, facts)
	if err != nil {
		return err
	}
	words := map[string]bool{}
	for _, t := range bm25.Tokenize(text) {
		words[t] = true
	}
	tokens := map[string][]string{}
	for _, p := range paths {
		score := pathScore(p, words, tokens, e.preds.gloss)
		if score == 0 {
			continue
		}
		c := get(p.Doc())
		if score > c.signals.Entity {
			c.signals.Entity = score
			c.path, c.walk = "", p
		}
	}
	return nil
}

// outdatedCandidates answers questions phrased with an outdated value: "is
// my iPhone 13 still working?" names a value that no longer holds, so the
// value now in force in the same slot (user uses_device Android) becomes a
// candidate, reached through the old edge.
func (e *Engine) outdatedCandidates(ctx context.Context, ui *userIndex, text string, facts *roaring.Bitmap, get func(uint32) *candidate) error {
	type slot struct{ subject, label string }
	seen := map[slot]bool{}
	for _, name := range ui.g.Entities(text) {
		past, err := ui.g.BFSLimit(ctx, []string{name}, 1, candidatesPerSignal, nil)
		if err != nil {
			return err
		}
		for _, p := range past {
			h := p.Hops[0]
			if !h.Inverse || facts.Contains(h.Doc) {
				continue // not a value of someone's slot, or still in force
			}
			s := slot{norm.Key(h.To), h.Label}
			if seen[s] {
				continue // another old value of a slot already looked at
			}
			seen[s] = true
			for _, n := range ui.g.Out(h.To, h.Label, facts) {
				c := get(n.Doc)
				if c.signals.Entity < 1 {
					c.signals.Entity = 1
					c.path, c.walk = name+" → now → "+graph.Path{Hops: []graph.Hop{n}}.String(), graph.Path{}
				}
			}
		}
	}
	return nil
}

// errSkip: a document the caller's filter rejected before loading.
var errSkip = errors.New("skip")

// queryViewTries is how many times queryView builds its view without the
// user's lock before it takes the lock to build it.
const queryViewTries = 3

// qview is what one Query reads: the user's indexes and the documents
// visible in them, and one snapshot of the store that agrees with them.
type qview struct {
	ui   *userIndex
	snap *kv.Snapshot
	// facts: the versions visible at (validAt, knownAt) in the indexes,
	// less the pending ones: each is visible in snap too.
	facts *roaring.Bitmap
	// pending: documents a write in progress changed in the indexes and
	// has not committed (nil if none). They are candidates like facts,
	// and loadDoc reads them, and whether they are visible, from snap.
	pending               *roaring.Bitmap
	validAt, knownAt, now time.Time
}

// queryView takes the consistent view a Query reads. The indexes are
// changed by a write before it commits, and the store is not: read
// without care, a Query could pair the indexes after a write with the
// store before it and serve neither the version it expired nor the one
// it made, or the indexes before with the store after. So the view is
// built between two reads of the user's commit counter, and rebuilt if a
// commit came between: the indexes then differ from the snapshot at most
// by the pending documents of the write in progress, which are read from
// the snapshot. After queryViewTries commits in the way, the view is built
// under the user's lock, where no write is in progress.
//
// Zero validAt and knownAt mean now (textAt, if not zero, for validAt),
// now read after the counter: every version the snapshot holds was
// recorded at or before it.
func (e *Engine) queryView(ctx context.Context, user string, validAt, knownAt, textAt time.Time) (*qview, error) {
	commits := &e.commits[stripe(user)]
	for try := 1; ; try++ {
		locked := try > queryViewTries
		var unlock func()
		if locked {
			unlock = e.lockUser(user)
		}
		before := commits.Load()
		qv := &qview{validAt: validAt, knownAt: knownAt, now: e.now()}
		if qv.validAt.IsZero() {
			qv.validAt = textAt
		}
		if qv.validAt.IsZero() {
			qv.validAt = qv.now
		}
		if qv.knownAt.IsZero() {
			qv.knownAt = qv.now
		}
		var err error
		if locked {
			qv.ui, err = e.idx.get(ctx, e.db, user)
		} else {
			qv.ui, err = e.idx.view(ctx, user)
		}
		if err != nil {
			if unlock != nil {
				unlock()
			}
			return nil, err
		}
		// The view: fact versions visible at (validAt, knownAt). The
		// pending documents are read after it: a write marks a document
		// before it changes it, so every change the view reflects and the
		// store may not is among them.
		if qv.validAt.Equal(qv.now) && qv.knownAt.Equal(qv.now) {
			qv.facts = qv.ui.tmp.Current(qv.now)
		} else {
			qv.facts = qv.ui.tmp.Visible(qv.validAt, qv.knownAt)
		}
		qv.pending = qv.ui.pendingDocs()
		if e.hookQueryView != nil && !locked {
			e.hookQueryView(try)
		}
		qv.snap = e.db.Snapshot()
		if unlock != nil {
			unlock()
		}
		if locked || commits.Load() == before {
			if qv.pending != nil {
				// facts may be shared (temporal.Current caches it).
				qv.facts = roaring.AndNot(qv.facts, qv.pending)
			}
			return qv, nil
		}
		_ = qv.snap.Close()
	}
}

// loadDoc fills in the fact version or episode a document names, read
// from the view's snapshot. keep, if not nil, sees a version's normalised
// subject first (it is in the document map) and can reject it without the
// version being read. A version not visible at the view's instants in the
// snapshot (a pending one) is errSkip, one the snapshot does not hold
// kv.ErrNotFound.
func (qv *qview) loadDoc(user string, c *candidate, keep func(subjKey string) bool) error {
	var v []byte
	ok := false
	if qv.pending == nil || !qv.pending.Contains(c.doc) {
		v, ok = qv.ui.docValue(c.doc)
	}
	if !ok {
		var err error
		if v, err = qv.snap.Get(kv.AppendUint32(kv.UserKey(user, kv.SubDoc), c.doc)); err != nil {
			return err
		}
	}
	if len(v) < 9 {
		return fmt.Errorf("%w: document %d", ErrCorrupt, c.doc)
	}
	seq := kv.NewDecoder(v[1:9]).Uint64()
	switch v[0] {
	case docEpisode:
		ep, err := getEpisode(qv.snap, user, seq)
		if err != nil {
			return err
		}
		c.episode = &ep
		return nil
	case docVersion:
		suf := v[9:]
		if len(suf) < 8 {
			return fmt.Errorf("%w: document %d", ErrCorrupt, c.doc)
		}
		if keep != nil && !keep(kv.NewDecoder(suf).String()) {
			return errSkip
		}
		f, err := qv.version(user, suf)
		if err != nil {
			return err
		}
		if !f.VisibleAt(qv.validAt, qv.knownAt) {
			return errSkip
		}
		c.fact = &f
		return nil
	}
	return fmt.Errorf("%w: document %d has kind %q", ErrCorrupt, c.doc, v[0])
}

// version reads the version whose key suffix (slot vf id rec) is suf:
// live, in the history or in the archive.
func (qv *qview) version(user string, suf []byte) (Fact, error) {
	claimSuf, rec := suf[:len(suf)-8], kv.NewDecoder(suf[len(suf)-8:]).Int64()
	fv, err := qv.snap.Get(userKey(user, kv.SubLive, claimSuf))
	if err == nil {
		f, err := decodeFact(user, fv)
		if err != nil || nanos(f.RecordedAt) == rec {
			return f, err
		}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return Fact{}, err
	}
	for _, sub := range []kv.Sub{kv.SubHistory, kv.SubArchive} {
		fv, err := qv.snap.Get(userKey(user, sub, suf))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return Fact{}, err
		}
		return decodeFact(user, fv)
	}
	return Fact{}, kv.ErrNotFound
}

// fuse combines the signals into one score (DESIGN §5).
func fuse(list []*candidate, w Weights, how Fusion) {
	if how == RRF {
		for _, sig := range []func(*candidate) *float64{
			func(c *candidate) *float64 { return &c.signals.Vector },
			func(c *candidate) *float64 { return &c.signals.BM25 },
			func(c *candidate) *float64 { return &c.signals.Entity },
		} {
			ranked := make([]*candidate, 0, len(list))
			for _, c := range list {
				if *sig(c) > 0 {
					ranked = append(ranked, c)
				}
			}
			sort.SliceStable(ranked, func(i, j int) bool { return *sig(ranked[i]) > *sig(ranked[j]) })
			for i, c := range ranked {
				c.score += 1 / float64(rrfK+i+1)
			}
		}
		return
	}
	norm := func(sig func(*candidate) *float64) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range list {
			if v := *sig(c); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		for _, c := range list {
			p := sig(c)
			switch {
			case *p <= 0:
				*p = 0
			case hi == lo:
				*p = 1
			default:
				// Min-max over the candidates that have the signal; the
				// weakest still counts a little (it did match).
				*p = 0.1 + 0.9*(*p-lo)/(hi-lo)
			}
		}
	}
	scaleText(list)
	scaleVector(list)
	norm(func(c *candidate) *float64 { return &c.signals.Entity })
	for _, c := range list {
		c.score = w.Vector*c.signals.Vector + w.BM25*c.signals.BM25 + w.Entity*c.signals.Entity
	}
}

// sortCandidates orders by score, facts before episodes on ties, then by
// document for determinism.
func sortCandidates(list []*candidate) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if (a.fact != nil) != (b.fact != nil) {
			return a.fact != nil
		}
		return a.doc < b.doc
	})
}

// Context renders the top results for text as a fenced block for prompt
// injection. The fence markers make Add strip the block if an agent feeds
// it back, so recalled memories are never learned twice.
func (e *Engine) Context(ctx context.Context, user, text string) (string, error) {
	rs, err := e.Query(ctx, user, text, QueryOptions{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("Relevant memories (current as of " + e.clock().UTC().Format("2006-01-02") + "):\n")
	if len(rs) == 0 {
		b.WriteString("- nothing known\n")
	}
	for _, r := range rs {
		b.WriteString("- " + r.Text())
		if r.Fact != nil {
			b.WriteString(" (since " + r.Fact.ValidFrom.Format("2006-01-02") + ")")
		}
		if r.Path != "" {
			b.WriteString(" via " + r.Path)
		}
		b.WriteString("\n")
	}
	return extract.Fence(strings.TrimRight(b.String(), "\n")), nil
}
