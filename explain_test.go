package memor_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// checkAddsUp asserts that an explanation's numbers make the score it
// explains: the contributions sum to Fused, Fused times the multipliers
// is the score, and the normalised signals are the Result's.
func checkAddsUp(t *testing.T, r memor.Result) {
	t.Helper()
	x := r.Explanation
	if x == nil {
		t.Fatalf("%s: no explanation", r.Text())
	}
	const eps = 1e-9
	sum := 0.0
	for _, s := range x.Signals {
		sum += s.Contribution
		var got float64
		switch s.Name {
		case "bm25":
			got = r.Signals.BM25
		case "vector":
			got = r.Signals.Vector
		case "entity":
			got = r.Signals.Entity
		default:
			t.Fatalf("%s: unknown signal %q", r.Text(), s.Name)
		}
		if x.Fusion == "minmax" {
			if math.Abs(got-s.Normalised) > eps {
				t.Errorf("%s: %s normalised %v, result says %v", r.Text(), s.Name, s.Normalised, got)
			}
			if math.Abs(s.Contribution-s.Weight*s.Normalised) > eps {
				t.Errorf("%s: %s contributes %v, not weight %v × %v", r.Text(), s.Name, s.Contribution, s.Weight, s.Normalised)
			}
		}
		if x.Fusion == "rrf" && (s.Raw > 0) != (s.Rank > 0) {
			t.Errorf("%s: %s raw %v but rank %d", r.Text(), s.Name, s.Raw, s.Rank)
		}
		if (s.Raw > 0 && s.Weight > 0) != (s.Contribution > 0) {
			t.Errorf("%s: %s raw %v, weight %v, but contributes %v", r.Text(), s.Name, s.Raw, s.Weight, s.Contribution)
		}
	}
	if math.Abs(sum-x.Fused) > eps {
		t.Errorf("%s: contributions sum to %v, fused %v", r.Text(), sum, x.Fused)
	}
	score := x.Fused
	for _, m := range x.Multipliers {
		score *= m.Value
	}
	for _, l := range x.Lifts {
		score += l.Value
	}
	for _, m := range x.Demotions {
		score *= m.Value
	}
	if math.Abs(score-r.Score) > eps || math.Abs(x.Score-r.Score) > eps {
		t.Errorf("%s: explanation gives %v (says %v), result scores %v", r.Text(), score, x.Score, r.Score)
	}
	for _, s := range x.Signals {
		if s.Name == "bm25" && s.Raw > 0 {
			if x.BM25 == nil {
				t.Fatalf("%s: a BM25 score and no term explanation", r.Text())
			}
			if math.Abs(x.BM25.Score-s.Raw) > eps {
				t.Errorf("%s: BM25 terms sum to %v, raw BM25 %v", r.Text(), x.BM25.Score, s.Raw)
			}
		}
	}
	if x.Path != r.Path {
		t.Errorf("%s: explanation path %q, result path %q", r.Text(), x.Path, r.Path)
	}
}

// TestExplainAddsUp: with Explain, every result's explanation adds up to
// its score under both fusions, with the forgetting curve and without.
func TestExplainAddsUp(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	ctx := context.Background()
	for _, o := range []memor.QueryOptions{
		{Explain: true},
		{Explain: true, Forgetting: true},
		{Explain: true, Fusion: memor.RRF},
		{Explain: true, Weights: memor.Weights{Vector: 0, BM25: 1, Entity: 0.5}},
		{Explain: true, Reranker: &reverseReranker{}},
	} {
		for _, q := range []string{"What kind of dog does my brother have?", "where do I live?", "Seattle coffee weather", "Google"} {
			rs, err := e.Query(ctx, "me", q, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 {
				t.Fatalf("%q: no results", q)
			}
			for _, r := range rs {
				checkAddsUp(t, r)
				if o.Forgetting && !hasMultiplier(r.Explanation, "recency") {
					t.Errorf("%q %s: forgetting on and no recency multiplier", q, r.Text())
				}
				if o.Reranker != nil && (r.Explanation.Rerank == nil || *r.Explanation.Rerank != r.Signals.Rerank) {
					t.Errorf("%q %s: rerank score %v, explanation says %v", q, r.Text(), r.Signals.Rerank, r.Explanation.Rerank)
				}
			}
		}
	}
}

func hasMultiplier(x *memor.Explanation, name string) bool {
	for _, m := range x.Multipliers {
		if m.Name == name {
			return true
		}
	}
	return false
}

// TestExplainOffByDefault: without Explain, results carry none.
func TestExplainOffByDefault(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	rs, err := e.Query(context.Background(), "me", "where do I live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Explanation != nil {
			t.Fatalf("%s: explanation without Explain", r.Text())
		}
	}
	b, _ := json.Marshal(rs)
	if strings.Contains(string(b), "explanation") {
		t.Fatalf("JSON carries an explanation: %s", b)
	}
}

// TestExplainFocusAndPath: the brother's dog is reached through the
// relation; the explanation says whom the question was taken to be about
// and by which path the fact was reached.
func TestExplainFocusAndPath(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	rs, err := e.Query(context.Background(), "me", "What kind of dog does my brother have?", memor.QueryOptions{Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	q := rs[0].Explanation.Query
	if q == nil {
		t.Fatal("no query explanation")
	}
	if q.Focus.By != "relation" || q.Focus.Relation != "brother" || len(q.Focus.About) != 1 || q.Focus.About[0] != "alex" {
		t.Fatalf("focus %+v, want relation brother about alex", q.Focus)
	}
	var path string
	for _, r := range rs {
		if r.Fact != nil && r.Fact.Object == "golden retriever" {
			path = r.Explanation.Path
		}
	}
	if !strings.Contains(path, "brother") || !strings.Contains(path, "golden retriever") {
		t.Fatalf("golden retriever path %q:\n%s", path, texts(rs))
	}
	if s := rs[0].Explanation.Query.String() + rs[0].Explanation.String(); !strings.Contains(s, "about alex") || !strings.Contains(s, "bm25") {
		t.Fatalf("rendered explanation lacks focus or signals:\n%s", s)
	}
}

// TestExplainTime: the explanation says which instants the view used and
// where they came from: the options, a date read from the question, or now.
func TestExplainTime(t *testing.T) {
	t.Parallel()
	e, clock := story(t)
	ctx := context.Background()
	now := clock.Now()
	for _, c := range []struct {
		name        string
		q           string
		o           memor.QueryOptions
		validSource string
		validAt     time.Time
	}{
		{"now", "where do I live?", memor.QueryOptions{}, "now", now},
		{"option", "where do I live?", memor.QueryOptions{ValidAt: at("2026-02-01")}, "option", at("2026-02-01")},
		{"text", "where did I live in March 2026?", memor.QueryOptions{TimeFromText: true}, "text", time.Time{}},
		{"no date in text", "where do I live?", memor.QueryOptions{TimeFromText: true}, "now", now},
	} {
		c.o.Explain = true
		rs, err := e.Query(ctx, "me", c.q, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Fatalf("%s: no results", c.name)
		}
		q := rs[0].Explanation.Query
		if q.ValidAtSource != c.validSource {
			t.Errorf("%s: valid time from %q, want %q (%s)", c.name, q.ValidAtSource, c.validSource, q.ValidAtWhy)
		}
		if !c.validAt.IsZero() && !q.ValidAt.Equal(c.validAt) {
			t.Errorf("%s: valid at %v, want %v", c.name, q.ValidAt, c.validAt)
		}
		if c.validSource == "text" && (q.ValidAt.Month() != time.March || q.ValidAt.Year() != 2026) {
			t.Errorf("%s: valid at %v, want in March 2026", c.name, q.ValidAt)
		}
		if q.KnownAtSource != "now" || !q.KnownAt.Equal(now) {
			t.Errorf("%s: known at %v from %q, want now", c.name, q.KnownAt, q.KnownAtSource)
		}
	}
}
