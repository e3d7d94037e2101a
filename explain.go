package memor

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/memor-db/memor/index/bm25"
)

// Explanation says why a Result ranked where it did (QueryOptions.Explain).
// Its numbers add up to the score it explains:
//
//	Score = (Fused × Π Multipliers[i].Value + Σ Lifts[i].Value) × Π Demotions[i].Value
//	Fused = Σ Signals[i].Contribution
//
// where a contribution is Weight × Normalised under MinMax fusion, and
// 1/(60 + Rank) under RRF. A reranker, if any, reorders the results by its
// own score (Rerank) without changing Score.
type Explanation struct {
	Score  float64 `json:"score"`
	Fusion string  `json:"fusion"` // "minmax" or "rrf"
	// Signals holds every fused signal, also those the result lacks.
	Signals     []SignalExplanation `json:"signals"`
	Fused       float64             `json:"fused"`
	Multipliers []Multiplier        `json:"multipliers,omitempty"`
	// Lifts are added after the multipliers: "source", what a fact gained
	// from the episode it came from (a fact ranks at least as high as its
	// source), and "newer", what a later statement of the same matter
	// gained from an earlier one.
	Lifts []Lift `json:"lifts,omitempty"`
	// Demotions multiply last: "stale", for a result a later one says
	// the same matter as.
	Demotions []Multiplier `json:"demotions,omitempty"`
	// BM25 breaks the raw BM25 score down by query term (nil when the
	// result shares no term with the question).
	BM25 *bm25.Explanation `json:"bm25_terms,omitempty"`
	// Path is the graph path that reached a fact (as Result.Path).
	Path   string   `json:"path,omitempty"`
	Rerank *float64 `json:"rerank,omitempty"`
	// Query holds what the query decided once for all its results: one
	// value shared by every result of the query.
	Query *QueryExplanation `json:"query"`
}

// SignalExplanation is one signal's share of a score.
type SignalExplanation struct {
	Name string `json:"name"` // "bm25", "vector" or "entity"
	// Raw is the signal before fusion: the BM25 score, the cosine
	// similarity (with the default embedder, normalised for the text's
	// length: see vectorLength), or the share of question words a graph path explains
	// per hop (1 for the value now in force of a slot the question names
	// by an outdated value).
	Raw float64 `json:"raw"`
	// Normalised is Raw on the fused scale (MinMax): BM25 as a fraction
	// of the best candidate's, the cosine's height above its noise floor
	// relative to the best's, the graph signal min-max over the
	// candidates (see fuse).
	Normalised float64 `json:"normalised"`
	// Rank is the 1-based rank among the candidates with the signal (RRF;
	// 0 without the signal).
	Rank         int     `json:"rank,omitempty"`
	Weight       float64 `json:"weight"`
	Contribution float64 `json:"contribution"`
}

// Multiplier is a factor applied after fusion.
type Multiplier struct {
	Name  string  `json:"name"` // "boost", "voice" or "recency"
	Value float64 `json:"value"`
	Why   string  `json:"why"`
}

// Lift is a score added after the multipliers.
type Lift struct {
	Name  string  `json:"name"` // "source" or "newer"
	Value float64 `json:"value"`
	Why   string  `json:"why"`
}

// QueryExplanation is what a query decided before ranking: the instants of
// its view and whom the question was taken to be about.
type QueryExplanation struct {
	ValidAt time.Time `json:"valid_at"`
	KnownAt time.Time `json:"known_at"`
	// ValidAtSource is "option" (QueryOptions.ValidAt), "text" (a date the
	// question names, with TimeFromText) or "now"; KnownAtSource "option"
	// or "now". ValidAtWhy says it in words.
	ValidAtSource string `json:"valid_at_source"`
	ValidAtWhy    string `json:"valid_at_why"`
	KnownAtSource string `json:"known_at_source"`
	// Episodes says whether raw episodes were candidates.
	Episodes bool          `json:"episodes"`
	Focus    FocusDecision `json:"focus"`
	// Candidates is how many documents were fused.
	Candidates int `json:"candidates"`
}

// FocusDecision is whom a question was taken to be about.
type FocusDecision struct {
	// By is how: "named" (the question names them), "relation" (a
	// relation word: "my brother"), "first person" (the user), or
	// "anyone" (no focus).
	By string `json:"by"`
	// About holds the normalised names of the entities in focus.
	About    []string `json:"about,omitempty"`
	Relation string   `json:"relation,omitempty"`
	// Mention is a relation word no relation fact resolves: episodes that
	// say it are about them.
	Mention string `json:"mention,omitempty"`
	// Context, when the question names one ("at work"), excludes facts of
	// other contexts.
	Context string   `json:"context,omitempty"`
	Seeds   []string `json:"seeds,omitempty"`
	// Asked is the question as the signals read it, when a relation
	// phrase was replaced by the names it resolved to ("Where does
	// Caroline's brother live?" asked as "Where does Alex live?").
	Asked string `json:"asked,omitempty"`
}

// explainer collects the explanations of one query; nil when the query
// does not explain, and every method of a nil explainer does nothing, so
// the hooks in Query cost a nil check.
type explainer struct {
	q   QueryExplanation
	raw map[uint32]Signals
	// rank holds each candidate's RRF rank per signal.
	rank       map[uint32][3]int
	w          Weights
	fusion     Fusion
	forgetting bool
	reranked   bool
}

// newExplainer returns the explainer of a query with opts (nil without
// Explain); reranked says a reranker orders its results.
func newExplainer(opts QueryOptions, reranked bool) *explainer {
	if !opts.Explain {
		return nil
	}
	return &explainer{fusion: opts.Fusion, forgetting: opts.Forgetting, reranked: reranked}
}

// view records the instants of the view and where they came from.
func (x *explainer) view(qv *qview, opts QueryOptions, textAt time.Time) {
	if x == nil {
		return
	}
	x.q.ValidAt, x.q.KnownAt, x.q.Episodes = qv.validAt, qv.knownAt, !opts.NoEpisodes
	switch {
	case !opts.ValidAt.IsZero():
		x.q.ValidAtSource, x.q.ValidAtWhy = "option", "asked for by the caller"
	case !textAt.IsZero():
		x.q.ValidAtSource, x.q.ValidAtWhy = "text", "a past date the question names, read as "+textAt.UTC().Format(time.DateOnly)
	case opts.TimeFromText:
		x.q.ValidAtSource, x.q.ValidAtWhy = "now", "the question names no past date"
	default:
		x.q.ValidAtSource, x.q.ValidAtWhy = "now", "what is true now"
	}
	x.q.KnownAtSource = "now"
	if !opts.KnownAt.IsZero() {
		x.q.KnownAtSource = "option"
	}
}

// focus records whom the question was taken to be about.
func (x *explainer) focus(f focus) {
	if x == nil {
		return
	}
	d := FocusDecision{Relation: f.relation, Mention: f.mention, Context: f.context, Seeds: slices.Clone(f.seeds), Asked: f.asked}
	for k := range f.about {
		d.About = append(d.About, k)
	}
	sort.Strings(d.About)
	switch {
	case f.about == nil:
		d.By = "anyone"
	case f.relation != "":
		d.By = "relation"
	case len(f.about) == 1 && f.about["user"]:
		d.By = "first person"
	default:
		d.By = "named"
	}
	x.q.Focus = d
}

// beforeFuse records the raw signals of the candidates to be fused.
func (x *explainer) beforeFuse(list []*candidate, w Weights) {
	if x == nil {
		return
	}
	x.w, x.q.Candidates = w, len(list)
	x.raw = make(map[uint32]Signals, len(list))
	for _, c := range list {
		x.raw[c.doc] = c.signals
	}
	if x.fusion != RRF {
		return
	}
	// RRF's ranks, as fuse computes them: by raw signal, stable over the
	// list's order, which fuse does not change.
	x.rank = make(map[uint32][3]int, len(list))
	for i, sig := range []func(Signals) float64{
		func(s Signals) float64 { return s.Vector },
		func(s Signals) float64 { return s.BM25 },
		func(s Signals) float64 { return s.Entity },
	} {
		ranked := make([]*candidate, 0, len(list))
		for _, c := range list {
			if sig(c.signals) > 0 {
				ranked = append(ranked, c)
			}
		}
		sort.SliceStable(ranked, func(a, b int) bool { return sig(ranked[a].signals) > sig(ranked[b].signals) })
		for r, c := range ranked {
			rk := x.rank[c.doc]
			rk[i] = r + 1
			x.rank[c.doc] = rk
		}
	}
}

// explain builds the explanation of a served candidate.
func (x *explainer) explain(ui *userIndex, text string, c *candidate, r *Result) {
	if x == nil {
		return
	}
	raw := x.raw[c.doc]
	ex := &Explanation{Score: c.score, Path: r.Path, Query: &x.q}
	rank := x.rank[c.doc]
	for i, s := range []struct {
		name        string
		raw, normed float64
		weight      float64
	}{
		{"vector", raw.Vector, c.signals.Vector, x.w.Vector},
		{"bm25", raw.BM25, c.signals.BM25, x.w.BM25},
		{"entity", raw.Entity, c.signals.Entity, x.w.Entity},
	} {
		se := SignalExplanation{Name: s.name, Raw: s.raw}
		if x.fusion == RRF {
			ex.Fusion = "rrf"
			se.Rank = rank[i]
			if se.Rank > 0 {
				se.Weight, se.Contribution = 1, 1/float64(rrfK+se.Rank)
			}
		} else {
			ex.Fusion = "minmax"
			se.Normalised, se.Weight = s.normed, s.weight
			se.Contribution = s.weight * s.normed
		}
		ex.Fused += se.Contribution
		ex.Signals = append(ex.Signals, se)
	}
	if c.signals.Boost != 0 {
		why := "said once"
		if c.fact != nil && c.fact.Reinforced > 1 {
			why = fmt.Sprintf("reinforced %d times: 1 + 0.05·min(r−1, 5)", c.fact.Reinforced)
		}
		ex.Multipliers = append(ex.Multipliers, Multiplier{Name: "boost", Value: c.signals.Boost, Why: why})
	}
	if c.signals.Voice != 0 {
		ex.Multipliers = append(ex.Multipliers, Multiplier{Name: "voice", Value: c.signals.Voice,
			Why: "said by whom the question is about"})
	}
	if x.forgetting {
		last := "said"
		if c.fact != nil {
			last = "last seen"
		}
		ex.Multipliers = append(ex.Multipliers, Multiplier{Name: "recency", Value: c.signals.Recency,
			Why: fmt.Sprintf("forgetting curve exp(−age/S), %s %s before the view", last, roundAge(x.q.ValidAt.Sub(lastSeen(c))))})
	}
	if c.signals.Source > 0 {
		ex.Lifts = append(ex.Lifts, Lift{Name: "source", Value: c.signals.Source,
			Why: "a fact ranks at least as high as the episode it came from"})
	}
	if c.signals.Newer > 0 {
		ex.Lifts = append(ex.Lifts, Lift{Name: "newer", Value: c.signals.Newer,
			Why: "a later statement of the same matter ranks above an earlier one"})
	}
	if c.signals.Stale > 0 && c.signals.Stale < 1 {
		ex.Demotions = append(ex.Demotions, Multiplier{Name: "stale", Value: c.signals.Stale,
			Why: "a later result says the same matter"})
	}
	if raw.BM25 > 0 {
		b := ui.bm.Explain(text, c.doc)
		ex.BM25 = &b
	}
	if x.reranked {
		v := c.signals.Rerank
		ex.Rerank = &v
	}
	r.Explanation = ex
}

func lastSeen(c *candidate) time.Time {
	switch {
	case c.fact != nil:
		return c.fact.LastSeen
	case c.episode != nil:
		return c.episode.At
	}
	return time.Time{}
}

func roundAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	days := d.Hours() / 24
	if days >= 1 {
		return fmt.Sprintf("%.0f days", math.Round(days))
	}
	return d.Round(time.Minute).String()
}

// String renders the explanation for a person, one line per part.
func (x *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "score %.4f = fused %.4f", x.Score, x.Fused)
	for _, m := range x.Multipliers {
		fmt.Fprintf(&b, " × %s %.4f", m.Name, m.Value)
	}
	for _, l := range x.Lifts {
		fmt.Fprintf(&b, " + %s %.4f", l.Name, l.Value)
	}
	for _, m := range x.Demotions {
		fmt.Fprintf(&b, " × %s %.4f", m.Name, m.Value)
	}
	fmt.Fprintf(&b, " (%s)\n", x.Fusion)
	for _, s := range x.Signals {
		if s.Raw == 0 && s.Contribution == 0 {
			continue
		}
		if x.Fusion == "rrf" {
			fmt.Fprintf(&b, "  %-7s raw %.4f  rank %d  → 1/(60+%d) = %.4f\n", s.Name, s.Raw, s.Rank, s.Rank, s.Contribution)
		} else {
			fmt.Fprintf(&b, "  %-7s raw %.4f  normalised %.4f × weight %.2f = %.4f\n", s.Name, s.Raw, s.Normalised, s.Weight, s.Contribution)
		}
	}
	for _, m := range x.Multipliers {
		if m.Value != 1 {
			fmt.Fprintf(&b, "  %-7s × %.4f: %s\n", m.Name, m.Value, m.Why)
		}
	}
	for _, l := range x.Lifts {
		fmt.Fprintf(&b, "  %-7s + %.4f: %s\n", l.Name, l.Value, l.Why)
	}
	for _, m := range x.Demotions {
		fmt.Fprintf(&b, "  %-7s × %.4f: %s\n", m.Name, m.Value, m.Why)
	}
	if x.BM25 != nil {
		var terms []string
		for _, t := range x.BM25.Terms {
			if t.TF > 0 {
				terms = append(terms, fmt.Sprintf("%q %.3f (tf %d, df %d, idf %.3f)", t.Term, t.Score, t.TF, t.DF, t.IDF))
			}
		}
		fmt.Fprintf(&b, "  terms   %s\n", strings.Join(terms, ", "))
	}
	if x.Path != "" {
		fmt.Fprintf(&b, "  path    %s\n", x.Path)
	}
	if x.Rerank != nil {
		fmt.Fprintf(&b, "  rerank  %.4f (orders the results)\n", *x.Rerank)
	}
	return b.String()
}

// String renders the query's decisions for a person.
func (q *QueryExplanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "view: valid at %s (%s: %s), known at %s (%s)", q.ValidAt.UTC().Format(time.RFC3339),
		q.ValidAtSource, q.ValidAtWhy, q.KnownAt.UTC().Format(time.RFC3339), q.KnownAtSource)
	if !q.Episodes {
		b.WriteString(", facts only")
	}
	b.WriteString("\n")
	f := q.Focus
	fmt.Fprintf(&b, "focus: %s", f.By)
	if len(f.About) > 0 {
		fmt.Fprintf(&b, ", about %s", strings.Join(f.About, ", "))
	}
	if f.Relation != "" {
		fmt.Fprintf(&b, " (through relation %s)", f.Relation)
	}
	if f.Mention != "" {
		fmt.Fprintf(&b, ", episodes saying %q", f.Mention)
	}
	if f.Context != "" {
		fmt.Fprintf(&b, ", context %s", f.Context)
	}
	if f.Asked != "" {
		fmt.Fprintf(&b, ", asked as %q", f.Asked)
	}
	fmt.Fprintf(&b, "; %d candidates fused\n", q.Candidates)
	return b.String()
}
