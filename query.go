package memor

import (
	"context"
	"github.com/memor-db/memor/embed"
	"strings"
	"time"

	"github.com/memor-db/memor/extract"
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

// Weights of the fused signals; the zero value means 0.3 vector, 0.5
// BM25, 0.2 graph with the default (feature-hashing) embedder, whose
// vector is a fuzzier measure of the same word overlap BM25 measures, and
// 0.4 / 0.4 / 0.2 with any other embedder (see defaultWeights).
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
	// Newer is the score a result gained by being served above an
	// earlier statement of the same matter (a turn of its speaker, a fact
	// of its subject, or the turn that stated the value a fact
	// superseded); Stale the factor the earlier one's score was
	// multiplied by (see newestFirst and supersedersFirst).
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
//
// The stages, in order, each a function of its own and a span of its own
// under Options.TracerProvider: plan (planQuery, queryView), filter
// (visibleDocs, queryFocus, focusFilter), the candidates of each signal
// (bm25Candidates, the question's embedding, vectorCandidates,
// entityCandidates, outdatedCandidates), fuse (abstains, signalled, fuse),
// boost (loadAndBoost) and rerank.
func (e *Engine) Query(ctx context.Context, user, text string, opts QueryOptions) (_ []Result, err error) {
	clock := newStageClock(e.opts.Observer)
	if clock.o != nil {
		// Deferred before recovered, so it runs after it and reports a
		// recovered panic's error too.
		defer func() { clock.done(err) }()
	}
	ctx, qs := e.tel.startOp(ctx, spanQuery, e.tel.queryLatency)
	defer func() { qs.end(ctx, err) }() // after recovered, as clock.done
	defer e.recovered(&err, "query", user)
	if qs.on() {
		qs.set(attrUser.String(userHash(user)), attrFusion.String(fusionName(opts.Fusion)),
			attrAsOf.Bool(!opts.ValidAt.IsZero() || !opts.KnownAt.IsZero()))
	}

	_, ps := e.tel.start(ctx, spanQueryPlan)
	p, err := e.planQuery(user, text, opts)
	if err != nil {
		ps.end(err)
		return nil, err
	}
	release, err := e.enter(ctx)
	if err != nil {
		ps.end(err)
		return nil, err
	}
	defer release()
	qv, err := e.queryView(ctx, user, opts.ValidAt, opts.KnownAt, p.textAt)
	ps.end(err)
	if err != nil {
		return nil, err
	}
	defer qv.snap.Close()
	ui, facts := qv.ui, qv.facts
	// A query grows the user's indexes too (the tokens of the graph
	// paths it reached): counted once it is done.
	defer func() {
		if ui.grown.Swap(false) {
			e.idx.grew(user, ui)
		}
	}()
	qs.setInt(attrK, p.k)
	ex := newExplainer(opts, p.rr != nil)
	ex.view(qv, opts, p.textAt)

	fctx, fs := e.tel.start(ctx, spanQueryFilter)
	allow, eps := visibleDocs(qv, opts.NoEpisodes)
	clock.skip()
	_, focs := e.tel.start(fctx, spanQueryFocus)
	foc, err := e.queryFocus(ctx, ui, text, facts, allow)
	focs.end(err)
	if err != nil {
		fs.end(err)
		return nil, err
	}
	clock.lap(StageFocus)
	ex.focus(foc)
	var tokens *pathTokens // what the entity stage's paths explain, for support
	if foc.nothing {
		fs.end(nil)
		if qs.on() {
			qs.set(attrResults.Int(0), attrAbstained.Bool(true))
		}
		return []Result{}, nil
	}
	text = foc.resolve(text)
	allow = focusFilter(foc, qv, eps, allow)
	fs.end(nil)

	cands := candidateSet{}
	if !allow.IsEmpty() {
		clock.skip()
		_, s := e.tel.start(ctx, spanQueryBM25)
		n, err := bm25Candidates(ctx, ui, text, allow, cands)
		s.setInt(attrCandidates, n)
		s.end(err)
		if err != nil {
			return nil, err
		}
		clock.lap(StageBM25)
		ectx, s := e.tel.start(ctx, spanQueryEmbed)
		q, err := e.queryVector(ectx, ui, text)
		s.end(err)
		if err != nil {
			return nil, err
		}
		clock.lap(StageEmbed)
		if !isZero(q) {
			_, s := e.tel.start(ctx, spanQueryVector)
			n, err := vectorCandidates(ctx, ui, q, allow, cands)
			s.setInt(attrCandidates, n)
			s.end(err)
			if err != nil {
				return nil, err
			}
			clock.lap(StageVector)
		}
		_, s = e.tel.start(ctx, spanQueryEntity)
		tokens, err = e.entityCandidates(ctx, ui, text, foc.seeds, p.depth, facts, cands.get)
		s.end(err)
		if err != nil {
			return nil, err
		}
		clock.lap(StageEntity)
		_, s = e.tel.start(ctx, spanQueryOutdated)
		err = e.outdatedCandidates(ctx, ui, text, facts, cands.get)
		s.end(err)
		if err != nil {
			return nil, err
		}
		clock.lap(StageOutdated)
		if err := completeSignals(ctx, ui, text, q, cands); err != nil {
			return nil, err
		}
		e.vectorLength(ui.bm, cands)
	}

	_, s := e.tel.start(ctx, spanQueryFuse)
	if e.abstains(opts, foc, ui, text, cands, tokens) {
		s.end(nil)
		if qs.on() {
			qs.set(attrResults.Int(0), attrAbstained.Bool(true))
		}
		return []Result{}, nil
	}
	clock.skip()
	list := signalled(cands)
	s.setInt(attrCandidates, len(list))
	ex.beforeFuse(list, p.w)
	fuse(list, p.w, opts.Fusion)
	sortCandidates(list)
	s.end(nil)

	_, s = e.tel.start(ctx, spanQueryBoost)
	list, err = e.loadAndBoost(qv, user, p, foc, list)
	s.setInt(attrCandidates, len(list))
	s.end(err)
	if err != nil {
		return nil, err
	}
	clock.lap(StageLoad)

	if p.rr != nil && len(list) > 0 {
		rctx, s := e.tel.start(ctx, spanQueryRerank)
		s.setInt(attrCandidates, min(len(list), candidatesPerSignal))
		err := rerank(rctx, p.rr, text, list)
		s.end(err)
		if err != nil {
			return nil, err
		}
		clock.lap(StageRerank)
	}

	newestFirst(ui.bm, text, list[:min(p.k, len(list))])
	if err := supersedersFirst(ctx, qv, user, list[:min(p.k, len(list))]); err != nil {
		return nil, err
	}
	out := make([]Result, 0, min(p.k, len(list)))
	for _, c := range list[:min(p.k, len(list))] {
		out = append(out, c.result())
		ex.explain(ui, text, c, &out[len(out)-1])
	}
	qs.setInt(attrResults, len(out))
	return out, nil
}

// defaultWeights are the fusion weights of a Query that sets none. With
// the default embedder the vector signal is weighted below BM25: its
// feature-hashed cosine measures the same word overlap more fuzzily, and
// with its length normalisation (vectorLength) 0.3 / 0.5 beat 0.4 / 0.4
// on both halves of the development benchmark (README, Retrieval on real
// conversations). Another embedder keeps the even split, which was not
// measured against it.
func (e *Engine) defaultWeights() Weights {
	if _, ok := e.idx.emb.(*embed.Hash); ok {
		return Weights{Vector: 0.3, BM25: 0.5, Entity: 0.2}
	}
	return Weights{Vector: 0.4, BM25: 0.4, Entity: 0.2}
}

// queryPlan is what one Query asks, its defaults applied (DESIGN §5).
type queryPlan struct {
	opts     QueryOptions
	k, depth int
	w        Weights
	// textAt is the valid time the question names, with TimeFromText
	// and no ValidAt (zero if none).
	textAt time.Time
	// rr is the reranker: the query's, else the engine's (nil if none).
	rr extract.Reranker
	// want is how many candidates are loaded: k, or the reranker's
	// window.
	want int
}

// planQuery is the plan stage: it checks the question and the instants
// and applies the defaults.
func (e *Engine) planQuery(user, text string, opts QueryOptions) (queryPlan, error) {
	if err := e.validUser(user); err != nil {
		return queryPlan{}, err
	}
	if err := e.validText(text); err != nil {
		return queryPlan{}, err
	}
	p := queryPlan{opts: opts, k: opts.K, depth: opts.Depth, w: opts.Weights, rr: opts.Reranker}
	if opts.ValidAt.IsZero() && opts.TimeFromText && !en.AsksWhen(text) {
		p.textAt, _ = TimeInText(text, e.now())
	}
	for _, t := range []struct {
		t    time.Time
		what string
	}{{opts.ValidAt, "validAt"}, {opts.KnownAt, "knownAt"}, {p.textAt, "validAt"}} {
		if !t.t.IsZero() {
			if err := checkTime(t.t, t.what); err != nil {
				return queryPlan{}, err
			}
		}
	}
	if p.k <= 0 {
		p.k = DefaultK
	}
	if p.depth <= 0 {
		p.depth = DefaultDepth
	}
	if p.w == (Weights{}) {
		p.w = e.defaultWeights()
	}
	if p.rr == nil {
		p.rr = e.opts.Reranker
	}
	p.want = p.k
	if p.rr != nil {
		p.want = candidatesPerSignal
	}
	return p, nil
}

// fusionName names a fusion as telemetry labels it: "minmax" or "rrf".
func fusionName(f Fusion) string {
	if f == RRF {
		return "rrf"
	}
	return "minmax"
}

func (c *candidate) result() Result {
	path := c.path
	if path == "" && len(c.walk.Hops) > 0 {
		path = c.walk.String()
	}
	return Result{Fact: c.fact, Episode: c.episode, Score: c.score, Signals: c.signals, Path: path}
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
