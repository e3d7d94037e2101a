package memor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t.Add(9 * time.Hour)
}

// story plays the San Francisco → Seattle story with the brother's dog,
// told in English, and returns an engine whose clock stands on 2026-08-01.
func story(t *testing.T) (*memor.Engine, *fakeClock) {
	t.Helper()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	ctx := context.Background()
	for _, turn := range []struct{ when, text string }{
		{"2026-01-10", "I live in San Francisco."},
		{"2026-03-15", "I work at Google as a software engineer."},
		{"2026-06-20", "My brother Alex adopted a golden retriever named Buddy last month."},
		{"2026-07-11", "I just moved to Seattle."},
		{"2026-07-20", "What a week, the weather is lovely and the coffee here is great."},
	} {
		clock.Set(at(turn.when))
		if _, err := e.Add(ctx, "me", turn.text, memor.At(at(turn.when)), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(at("2026-08-01"))
	return e, clock
}

func texts(rs []memor.Result) string {
	var b strings.Builder
	for i, r := range rs {
		fmt.Fprintf(&b, "%d. %s (%.3f bm25=%.2f vec=%.2f ent=%.2f)", i+1, r.Text(), r.Score, r.Signals.BM25, r.Signals.Vector, r.Signals.Entity)
		if r.Path != "" {
			b.WriteString(" path: " + r.Path)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func served(rs []memor.Result, s string) bool {
	for _, r := range rs {
		if strings.Contains(strings.ToLower(r.Text()), strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// TestQuerySeattle: the current answer comes first and the superseded one
// is never served, neither as a fact nor as the raw episode; time travel
// flips it.
func TestQuerySeattle(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	ctx := context.Background()
	rs, err := e.Query(ctx, "me", "where do I live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "Seattle" {
		t.Fatalf("want Seattle first:\n%s", texts(rs))
	}
	if served(rs, "San Francisco") {
		t.Fatalf("served the superseded San Francisco:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "me", "where do I live?", memor.QueryOptions{ValidAt: at("2026-02-01")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "San Francisco" {
		t.Fatalf("want San Francisco first in February:\n%s", texts(rs))
	}
	if served(rs, "Seattle") {
		t.Fatalf("served Seattle in February:\n%s", texts(rs))
	}
	// Audit: on Feb 1 we knew nothing of Alex's dog.
	rs, err = e.Query(ctx, "me", "golden retriever", memor.QueryOptions{ValidAt: at("2026-02-01"), KnownAt: at("2026-02-01")})
	if err != nil {
		t.Fatal(err)
	}
	if served(rs, "golden retriever") {
		t.Fatalf("served a fact not yet known:\n%s", texts(rs))
	}
}

// TestQueryMultiHop: the dog is found through the brother, with the path.
func TestQueryMultiHop(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	rs, err := e.Query(context.Background(), "me", "What kind of dog does my brother have?", memor.QueryOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "golden retriever" {
		t.Fatalf("want golden retriever first:\n%s", texts(rs))
	}
	if want := "user → brother → Alex → has_pet → golden retriever"; rs[0].Path != want {
		t.Fatalf("path %q, want %q", rs[0].Path, want)
	}
}

// TestQueryOutdatedPhrasing: asking with the old value's words does not
// bring the old value back as current.
func TestQueryOutdatedPhrasing(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	if err := e.RegisterPredicate("beta_region", memor.One); err != nil {
		t.Fatal(err)
	}
	for _, f := range []memor.FactInput{
		{Subject: "beta", Predicate: "beta_region", Object: "us-east", ValidFrom: at("2026-03-01")},
		{Subject: "beta", Predicate: "beta_region", Object: "us-west", ValidFrom: at("2026-04-01")},
	} {
		if _, err := e.Assert(ctx, "u", f); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := e.Query(ctx, "u", "beta region us-east", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Fact != nil && r.Fact.Object == "us-east" {
			t.Fatalf("served us-east as current:\n%s", texts(rs))
		}
	}
	if !served(rs, "us-west") {
		t.Fatalf("want us-west:\n%s", texts(rs))
	}
}

// TestQueryTenancy: whatever the query, a user never receives another
// user's facts or episodes.
func TestQueryTenancy(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	for _, u := range []string{"a", "ab", "a/"} {
		for i := range 5 {
			if _, err := e.Add(ctx, u, fmt.Sprintf("I like secret-%s-%d. Nothing else to say about %s.", strings.ReplaceAll(u, "/", "slash"), i, "weather"), memor.Sync()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range []string{"a", "ab", "a/"} {
		for _, q := range []string{"secret", "what do I like?", "weather", "a ab slash secret-a-1 secret-ab-1 secret-aslash-1"} {
			rs, err := e.Query(ctx, u, q, memor.QueryOptions{K: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				owner := ""
				if r.Fact != nil {
					owner = r.Fact.User
				} else {
					owner = r.Episode.User
				}
				mine := strings.Contains(r.Text(), "secret-"+strings.ReplaceAll(u, "/", "slash")+"-") || !strings.Contains(r.Text(), "secret-")
				if owner != u || !mine {
					t.Fatalf("user %q got %q (owner %q)", u, r.Text(), owner)
				}
			}
		}
	}
}

// TestQueryEpisodes: an episode nothing was extracted from is served (with
// its date); an episode whose facts were all superseded is not.
func TestQueryEpisodes(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	ctx := context.Background()
	rs, err := e.Query(ctx, "me", "how is the coffee?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Episode == nil || !strings.Contains(rs[0].Text(), "[2026-07-20]") {
		t.Fatalf("want the coffee episode first:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "me", "San Francisco", memor.QueryOptions{K: 20})
	if err != nil {
		t.Fatal(err)
	}
	if served(rs, "San Francisco") {
		t.Fatalf("the San Francisco episode smuggled the old fact back:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "me", "San Francisco", memor.QueryOptions{K: 20, ValidAt: at("2026-02-01"), NoEpisodes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("NoEpisodes served nothing: the check below proves nothing")
	}
	for _, r := range rs {
		if r.Episode != nil {
			t.Fatalf("NoEpisodes served %q", r.Text())
		}
	}
}

// TestContextFence: Context output fed back into Add teaches nothing.
func TestContextFence(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	ctx := context.Background()
	block, err := e.Context(ctx, "me", "where do I live?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(block, "Seattle") || !strings.HasPrefix(block, "<memor-recall>") {
		t.Fatalf("context block:\n%s", block)
	}
	before, err := e.State(ctx, "me")
	if err != nil || len(before) == 0 {
		t.Fatalf("state before: %v, %v", before, err)
	}
	// The agent pastes recalled memories into its next turn, with a
	// recalled first-person sentence that would otherwise be learned.
	prompt := block + "\n<memor-recall>I live in Paris.</memor-recall>\nThanks! What should I do this weekend?"
	if _, err := e.Add(ctx, "me", prompt, memor.Sync()); err != nil {
		t.Fatal(err)
	}
	after, err := e.State(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("fenced recall was re-learned: %v → %v", before, after)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// reverseReranker scores candidates in reverse order of arrival.
type reverseReranker struct{ calls int }

func (r *reverseReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	r.calls++
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = float64(i)
	}
	return out, nil
}

// TestQueryOptions: RRF fusion, a reranker (one batched call) and the
// forgetting curve all work and keep the view's filter.
func TestQueryOptions(t *testing.T) {
	t.Parallel()
	e, _ := story(t)
	ctx := context.Background()
	base, err := e.Query(ctx, "me", "where do I live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rrf, err := e.Query(ctx, "me", "where do I live?", memor.QueryOptions{Fusion: memor.RRF})
	if err != nil || len(rrf) == 0 || rrf[0].Fact == nil || rrf[0].Fact.Object != "Seattle" {
		t.Fatalf("RRF: %v\n%s", err, texts(rrf))
	}
	rr := &reverseReranker{}
	re, err := e.Query(ctx, "me", "where do I live?", memor.QueryOptions{Reranker: rr, K: 3})
	if err != nil || rr.calls != 1 {
		t.Fatalf("rerank: %v calls=%d", err, rr.calls)
	}
	if len(base) > 1 && re[0].Text() == base[0].Text() {
		t.Fatalf("reranker ignored:\n%s", texts(re))
	}
	fg, err := e.Query(ctx, "me", "where do I live?", memor.QueryOptions{Forgetting: true})
	if err != nil || len(fg) == 0 || fg[0].Signals.Recency <= 0 || fg[0].Signals.Recency > 1 {
		t.Fatalf("forgetting: %v\n%s", err, texts(fg))
	}
	if served(fg, "San Francisco") || served(re, "San Francisco") || served(rrf, "San Francisco") {
		t.Fatal("an option bypassed the temporal filter")
	}
}

// TestQueryFocusInsideCandidates: the question's focus filters inside
// candidate generation, like the view. In a tenant holding many facts
// about others that match a first-person question as well as the user's
// own, the answer is the user's fact and only facts about the user.
func TestQueryFocusInsideCandidates(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	var batch []memor.FactInput
	for i := range 120 {
		batch = append(batch, memor.FactInput{Subject: fmt.Sprintf("Fan %d", i), Predicate: "likes", Object: "jazz"})
	}
	batch = append(batch, memor.FactInput{Subject: "user", Predicate: "likes", Object: "jazz"})
	if _, err := e.AssertBatch(ctx, "u", batch); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Query(ctx, "u", "do I like jazz?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Subject != "user" {
		t.Fatalf("got %s, want the user's own fact first", texts(rs))
	}
	for _, r := range rs {
		if r.Fact != nil && r.Fact.Subject != "user" {
			t.Fatalf("served a fact about someone else: %s", texts(rs))
		}
	}
}
