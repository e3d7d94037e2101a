package memor

import (
	"context"
	"errors"
	"github.com/memor-db/memor/embed"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/lang/en"
)

// stageEngine opens an engine at a fixed now whose user "u" said a few
// things, and returns the view a Query of now would read.
func stageEngine(t *testing.T, o Options) (*Engine, *qview) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	o.Clock = func() time.Time { return now }
	e, err := Open(filepath.Join(t.TempDir(), "db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, text := range []string{
		"I live in Oslo and I work at Acme.",
		"My brother Alex has a golden retriever called Rex.",
		"我喜欢在东京吃寿司。",
		"We shipped the parser: func Parse(b []byte) error { return nil }",
	} {
		if _, err := e.Add(ctx, "u", text, Sync()); err != nil {
			t.Fatal(err)
		}
	}
	qv, err := e.queryView(ctx, "u", time.Time{}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qv.snap.Close() })
	return e, qv
}

func TestPlanQuery(t *testing.T) {
	e, _ := stageEngine(t, Options{})
	p, err := e.planQuery("u", "where do I live?", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.k != DefaultK || p.depth != DefaultDepth || p.want != DefaultK || p.rr != nil ||
		p.w != (Weights{Vector: 0.3, BM25: 0.5, Entity: 0.2}) || !p.textAt.IsZero() {
		t.Errorf("defaults: %+v", p)
	}
	other, _ := stageEngine(t, Options{Embedder: downForAtlantis{embed.NewHash(0)}})
	if p, _ := other.planQuery("u", "where do I live?", QueryOptions{}); p.w != (Weights{Vector: 0.4, BM25: 0.4, Entity: 0.2}) {
		t.Errorf("defaults with another embedder: %+v, want the even split", p.w)
	}
	p, _ = e.planQuery("u", "where do I live?", QueryOptions{K: 3, Depth: 1, Weights: Weights{BM25: 1}, Reranker: constRR{}})
	if p.k != 3 || p.depth != 1 || p.w != (Weights{BM25: 1}) || p.want != candidatesPerSignal || p.rr == nil {
		t.Errorf("set: %+v", p)
	}
	p, _ = e.planQuery("u", "where did I live in March 2026?", QueryOptions{TimeFromText: true})
	if want := time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC); !p.textAt.Equal(want) {
		t.Errorf("time from text: %v, want %v", p.textAt, want)
	}
	p, _ = e.planQuery("u", "When did I move to Boston in 2022?", QueryOptions{TimeFromText: true})
	if !p.textAt.IsZero() {
		t.Errorf("a when-question moved the view to %v", p.textAt)
	}
	p, _ = e.planQuery("u", "where did I live in March 2026?", QueryOptions{})
	if !p.textAt.IsZero() {
		t.Errorf("without TimeFromText: %v", p.textAt)
	}
	if _, err := e.planQuery("", "where?", QueryOptions{}); !errors.Is(err, ErrInvalidUser) {
		t.Errorf("empty user: %v", err)
	}
	if _, err := e.planQuery("u", "where?", QueryOptions{ValidAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}); !errors.Is(err, ErrInvalidTime) {
		t.Errorf("year -5: %v", err)
	}
	e2, _ := stageEngine(t, Options{Reranker: constRR{}})
	if p, _ := e2.planQuery("u", "where?", QueryOptions{}); p.rr == nil || p.want != candidatesPerSignal {
		t.Errorf("engine reranker: %+v", p)
	}
}

type constRR struct{}

func (constRR) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for i := range out {
		out[i] = float64(i) // reverses the order
	}
	return out, nil
}

func TestVisibleDocsAndFocusFilter(t *testing.T) {
	e, qv := stageEngine(t, Options{})
	allow, eps := visibleDocs(qv, false)
	if eps.IsEmpty() || !roaring.And(allow, eps).Equals(eps) || !roaring.And(allow, qv.facts).Equals(qv.facts) {
		t.Errorf("allow %v does not hold facts %v and episodes %v", allow, qv.facts, eps)
	}
	if eps.GetCardinality() != 4 {
		t.Errorf("%d episodes visible, want 4", eps.GetCardinality())
	}
	only, none := visibleDocs(qv, true)
	if none != nil || only != qv.facts {
		t.Errorf("NoEpisodes: allow %v, eps %v; want the facts shared", only, none)
	}
	if focusFilter(focus{}, qv, eps, allow) != allow {
		t.Error("no focus: the filter changed allow")
	}
	foc, err := e.queryFocus(context.Background(), qv.ui, "what dog does Alex have?", qv.facts, allow)
	if err != nil {
		t.Fatal(err)
	}
	if foc.about == nil {
		t.Fatal("a question about Alex has no focus")
	}
	if got := focusFilter(foc, qv, eps, allow); got.IsEmpty() || got.GetCardinality() >= allow.GetCardinality() {
		t.Errorf("the focus on Alex did not narrow allow: %d of %d", got.GetCardinality(), allow.GetCardinality())
	}
}

func TestCandidateStages(t *testing.T) {
	ctx := context.Background()
	e, qv := stageEngine(t, Options{})
	allow, _ := visibleDocs(qv, false)
	cs := candidateSet{}
	n, err := bm25Candidates(ctx, qv.ui, "Oslo Acme", allow, cs)
	if err != nil || n == 0 || len(cs) != n {
		t.Fatalf("bm25: %d hits, %d candidates, %v", n, len(cs), err)
	}
	for doc, c := range cs {
		if !allow.Contains(doc) || c.signals.BM25 <= 0 || c.doc != doc {
			t.Errorf("bm25 candidate %d: %+v", doc, c.signals)
		}
	}
	// Outside allow nothing is found.
	if n, _ := bm25Candidates(ctx, qv.ui, "Oslo Acme", roaring.New(), candidateSet{}); n != 0 {
		t.Errorf("bm25 over an empty allow: %d", n)
	}
	q, err := e.queryVector(ctx, qv.ui, "golden retriever")
	if err != nil || isZero(q) {
		t.Fatal(err)
	}
	vs := candidateSet{}
	n, err = vectorCandidates(ctx, qv.ui, q, allow, vs)
	if err != nil || n == 0 {
		t.Fatalf("vector: %d, %v", n, err)
	}
	for doc, c := range vs {
		if !allow.Contains(doc) || c.rawVector < minVector || c.signals.Vector != c.rawVector {
			t.Errorf("vector candidate %d: %+v raw %v", doc, c.signals, c.rawVector)
		}
	}
	// One candidate per document: a second signal adds to the candidate
	// the first made.
	for doc, c := range cs {
		if cs.get(doc) != c {
			t.Errorf("get made a second candidate for document %d", doc)
		}
		break
	}
}

// TestPathTokensAreTheUsers: the tokens of the entities and labels a
// query's paths reach stay with the user's indexes, so a later query reads
// them instead of tokenising again, and what they explain is unchanged.
func TestPathTokensAreTheUsers(t *testing.T) {
	ctx := context.Background()
	e, qv := stageEngine(t, Options{})
	const q = "what kind of dog does my brother have?"
	first, err := e.Query(ctx, "u", q, QueryOptions{})
	if err != nil || len(first) == 0 {
		t.Fatalf("%d results, %v", len(first), err)
	}
	qv.ui.pathTokMu.RLock()
	held := maps.Clone(qv.ui.pathTok)
	qv.ui.pathTokMu.RUnlock()
	if len(held) == 0 {
		t.Fatal("the query's paths left no tokens with the user")
	}
	for s, ts := range held {
		if want := bm25.Tokenize(s); !slices.Equal(ts, want) {
			t.Errorf("tokens of %q: %q, want %q", s, ts, want)
		}
	}
	bytes := qv.ui.tokBytes.Load()
	again, err := e.Query(ctx, "u", q, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(first) {
		t.Fatalf("again: %d results, first %d", len(again), len(first))
	}
	for i := range first {
		if a, f := again[i], first[i]; a.Text() != f.Text() || a.Score != f.Score || a.Signals != f.Signals || a.Path != f.Path {
			t.Errorf("result %d: %q %v %+v, first %q %v %+v", i, a.Text(), a.Score, a.Signals, f.Text(), f.Score, f.Signals)
		}
	}
	if got := qv.ui.tokBytes.Load(); got != bytes {
		t.Errorf("the same query again grew the tokens' bytes %d -> %d: it tokenised again", bytes, got)
	}
	// Queries at once share the tokens (go test -race).
	var wg sync.WaitGroup
	for _, q := range []string{q, "where does Alex live?", "what is Rex?", "where do I work?"} {
		wg.Go(func() {
			if _, err := e.Query(ctx, "u", q, QueryOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// What explains a path is read from the user's tokens.
	qv.ui.pathTokMu.Lock()
	qv.ui.pathTok["Rex"] = []string{"zebra"}
	qv.ui.pathTokMu.Unlock()
	p := graph.Path{Hops: []graph.Hop{{From: "Alex", Label: "has_pet", To: "Rex"}}}
	if got := pathWords(p, newPathTokens(qv.ui, map[string]bool{"zebra": true}, e.preds.gloss, 1), nil); !slices.Equal(got, []string{"zebra"}) {
		t.Errorf("pathWords did not read the user's tokens: %q", got)
	}
}

func TestSignalled(t *testing.T) {
	cs := candidateSet{
		1: {doc: 1, signals: Signals{BM25: 2}},
		2: {doc: 2, signals: Signals{Entity: 1}},
		3: {doc: 3, signals: Signals{Vector: 0.5}, rawVector: 0.5},
		4: {doc: 4, signals: Signals{Vector: 0.2}, rawVector: 0.2}, // weak similarity alone: noise
	}
	var docs []uint32
	for _, c := range signalled(cs) {
		docs = append(docs, c.doc)
	}
	slices.Sort(docs)
	if !slices.Equal(docs, []uint32{1, 2, 3}) {
		t.Errorf("signalled %v, want [1 2 3]", docs)
	}
}

func TestFuseRRF(t *testing.T) {
	a := &candidate{doc: 1, signals: Signals{BM25: 3, Vector: 0.1}}
	b := &candidate{doc: 2, signals: Signals{BM25: 1, Vector: 0.9, Entity: 1}}
	list := []*candidate{a, b}
	fuse(list, Weights{}, RRF)
	r := func(rank int) float64 { return 1 / float64(rrfK+rank) }
	if math.Abs(a.score-(r(1)+r(2))) > 1e-12 || math.Abs(b.score-(r(2)+r(1)+r(1))) > 1e-12 {
		t.Errorf("RRF scores %v %v", a.score, b.score)
	}
	sortCandidates(list)
	if list[0] != b {
		t.Error("RRF: the candidate three signals rank is not first")
	}
}

func TestBoostStage(t *testing.T) {
	e, _ := stageEngine(t, Options{})
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c := &candidate{score: 1, fact: &Fact{Reinforced: 3, LastSeen: now.Add(-forgettingBase * 3)}}
	e.boost(c, now, false)
	if c.signals.Boost != 1.1 || c.score != 1.1 || c.signals.Recency != 0 {
		t.Errorf("reinforced 3: %+v score %v", c.signals, c.score)
	}
	c = &candidate{score: 1, fact: &Fact{Reinforced: 3, LastSeen: now.Add(-forgettingBase * 3)}}
	e.boost(c, now, true)
	if math.Abs(c.signals.Recency-math.Exp(-1)) > 1e-9 || math.Abs(c.score-1.1*math.Exp(-1)) > 1e-9 {
		t.Errorf("forgetting after S: %+v score %v", c.signals, c.score)
	}
	c = &candidate{score: 1, fact: &Fact{Reinforced: 40}}
	e.boost(c, now, false)
	if c.signals.Boost != maxBoost {
		t.Errorf("boost capped at %v, got %v", maxBoost, c.signals.Boost)
	}
}

func TestLoadAndBoostStage(t *testing.T) {
	e, qv := stageEngine(t, Options{})
	allow, _ := visibleDocs(qv, false)
	cs := candidateSet{}
	if _, err := bm25Candidates(context.Background(), qv.ui, "Oslo Acme Alex retriever", allow, cs); err != nil {
		t.Fatal(err)
	}
	list := signalled(cs)
	fuse(list, Weights{Vector: 0.4, BM25: 0.4, Entity: 0.2}, MinMax)
	sortCandidates(list)
	p, _ := e.planQuery("u", "x", QueryOptions{K: 2})
	got, err := e.loadAndBoost(qv, "u", p, focus{}, list)
	if err != nil || len(got) < 2 {
		t.Fatalf("%d loaded, %v", len(got), err)
	}
	for i, c := range got {
		if (c.fact == nil) == (c.episode == nil) || c.signals.Boost < 1 {
			t.Errorf("candidate %d not loaded or not boosted: %+v", i, c.signals)
		}
		if i > 0 && got[i-1].score < c.score {
			t.Errorf("not in score order at %d", i)
		}
	}
}

func TestRerankStage(t *testing.T) {
	ctx := context.Background()
	mk := func() []*candidate {
		return []*candidate{
			{doc: 1, fact: &Fact{Subject: "user", Predicate: "lives_in", Object: "Oslo"}},
			{doc: 2, episode: &Episode{Text: "I live in Oslo"}},
			{doc: 3, fact: &Fact{Subject: "user", Predicate: "works_at", Object: "Acme"}},
		}
	}
	list := mk()
	if err := rerank(ctx, constRR{}, "q", list); err != nil {
		t.Fatal(err)
	}
	if list[0].doc != 3 || list[2].doc != 1 || list[0].signals.Rerank != 2 {
		t.Errorf("reranked order %d %d %d", list[0].doc, list[1].doc, list[2].doc)
	}
	boom := errors.New("boom")
	if err := rerank(ctx, failRR{boom}, "q", mk()); !errors.Is(err, boom) {
		t.Errorf("reranker error: %v", err)
	}
	if err := rerank(ctx, shortRR{}, "q", mk()); err == nil {
		t.Error("a reranker returning too few scores: no error")
	}
}

type failRR struct{ err error }

func (f failRR) Rerank(context.Context, string, []string) ([]float64, error) { return nil, f.err }

type shortRR struct{}

func (shortRR) Rerank(context.Context, string, []string) ([]float64, error) { return []float64{1}, nil }

func TestAbstains(t *testing.T) {
	e, qv := stageEngine(t, Options{})
	empty := candidateSet{}
	if !e.abstains(QueryOptions{}, focus{}, qv.ui, "what is the airspeed of a swallow", empty, nil) {
		t.Error("no candidate: not abstained")
	}
	if e.abstains(QueryOptions{MinSupport: -1}, focus{}, qv.ui, "what is the airspeed of a swallow", empty, nil) {
		t.Error("abstention off: abstained")
	}
	if e.abstains(QueryOptions{}, focus{named: true}, qv.ui, "what is the airspeed of a swallow", empty, nil) {
		t.Error("a named person: abstained")
	}
}

// TestSupportSharesPathTokens: support reads the entity stage's matches
// when its terms are the question's words, and gets what it gets from its
// own; a question naming a date (left out of support's terms) gets its
// own. A hop is matched once per direction: walked from its object it
// reaches the subject, whose words are not the object's.
func TestSupportSharesPathTokens(t *testing.T) {
	ctx := context.Background()
	e, qv := stageEngine(t, Options{})
	ui := qv.ui
	for _, q := range []string{
		"what kind of dog does my brother have?",
		"where does Alex live?",
		"what kind of dog did my brother have on 2026-05-01?", // a date: support's terms differ
		"where do I work?",
	} {
		cands := candidateSet{}
		foc, err := e.queryFocus(ctx, ui, q, qv.facts, qv.facts)
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := e.entityCandidates(ctx, ui, q, foc.seeds, DefaultDepth, qv.facts, cands.get)
		if err != nil {
			t.Fatal(err)
		}
		if tokens == nil || len(cands) == 0 {
			t.Fatalf("%q: the walk found nothing (%d candidates, tokens %v)", q, len(cands), tokens != nil)
		}
		dated := strings.Contains(q, "2026")
		if terms := bm25.Tokenize(en.WithoutDates(q, e.now())); dated == (len(terms) == len(tokens.words)) {
			t.Fatalf("%q: support's terms %q, the walk's words %v", q, terms, tokens.words)
		}
		shared, own := e.support(ui, q, cands, tokens), e.support(ui, q, cands, nil)
		if shared != own || own == 0 {
			t.Errorf("%q: support %v with the entity stage's tokens, %v with its own", q, shared, own)
		}
		// Tokens are read only for the words they were made for: poisoned
		// to explain every term at every hop, those of the question's
		// words raise support to 1, those of other words are not read.
		terms := bm25.Tokenize(en.WithoutDates(q, e.now()))
		for _, words := range []map[string]bool{tokens.words, {"zebra": true}} {
			poison := newPathTokens(ui, words, e.preds.gloss, 1)
			for _, c := range cands {
				for _, h := range c.walk.Hops {
					poison.hop[hopKey(h)] = terms
				}
			}
			want := own
			if maps.Equal(words, tokens.words) && !dated {
				want = 1
			}
			if got := e.support(ui, q, cands, poison); got != want {
				t.Errorf("%q: support %v with poisoned tokens of %v, want %v", q, got, words, want)
			}
		}
		for _, c := range cands {
			if len(c.walk.Hops) == 0 {
				continue
			}
			fresh := newPathTokens(ui, tokens.words, e.preds.gloss, 1)
			for _, h := range c.walk.Hops {
				var want []string
				for _, w := range slices.Concat(fresh.wordsIn(h.Label), fresh.glossWords(h.Label), fresh.wordsIn(h.To)) {
					if !slices.Contains(want, w) {
						want = append(want, w)
					}
				}
				if got := tokens.hopWords(h); !slices.Equal(got, want) {
					t.Errorf("%q: hop %+v explains %q, want %q", q, h, got, want)
				}
			}
		}
	}
	// The same edge walked both ways: the entity reached differs.
	words := map[string]bool{"alex": true, "rex": true}
	pt := newPathTokens(ui, words, e.preds.gloss, 2)
	fwd := graph.Hop{From: "Alex", Label: "has_pet", To: "Rex", Doc: 7}
	inv := graph.Hop{From: "Rex", Label: "has_pet", To: "Alex", Doc: 7, Inverse: true}
	if got := pt.hopWords(fwd); !slices.Equal(got, []string{"rex"}) {
		t.Errorf("forward: %q", got)
	}
	if got := pt.hopWords(inv); !slices.Equal(got, []string{"alex"}) {
		t.Errorf("inverse: %q", got)
	}
}
