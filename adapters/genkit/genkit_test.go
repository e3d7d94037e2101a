package memorgenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"

	"github.com/memor-db/memor"
	memorgenkit "github.com/memor-db/memor/adapters/genkit"
)

// The framework's interface, satisfied at compile time: DefineRetriever
// yields Genkit's ai.Retriever.
var _ func(*genkit.Genkit, *memor.Engine, string, memorgenkit.Config) ai.Retriever = memorgenkit.DefineRetriever

// clock is a test's engine clock: transaction time stands where the test
// sets it, so that "what memor believed at t" has a known answer.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// setup opens an engine, tells alice's story (San Francisco on Jan 10,
// Seattle on Jul 11, each recorded then) and defines the retriever in a
// fresh Genkit.
func setup(t *testing.T) (*genkit.Genkit, *memor.Engine, ai.Retriever) {
	t.Helper()
	c := &clock{now: day("2026-01-10")}
	e, err := memor.Open(t.TempDir(), memor.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	for _, s := range []struct{ at, text string }{
		{"2026-01-10", "I live in San Francisco."},
		{"2026-07-11", "I just moved to Seattle."},
	} {
		c.Set(day(s.at).Add(time.Hour))
		if _, err := e.Add(ctx, "alice", s.text, memor.At(day(s.at)), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	c.Set(day("2026-08-01"))
	g := genkit.Init(ctx)
	return g, e, memorgenkit.DefineRetriever(g, e, "alice", memorgenkit.Config{User: "alice"})
}

func retrieve(t *testing.T, g *genkit.Genkit, q string, opts ...ai.RetrieverOption) []*ai.Document {
	t.Helper()
	resp, err := genkit.Retrieve(context.Background(), g, append([]ai.RetrieverOption{ai.WithRetrieverName("memor/alice"), ai.WithTextDocs(q)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Documents
}

func text(d *ai.Document) string { return d.Content[0].Text }

func facts(docs []*ai.Document) []string {
	var out []string
	for _, d := range docs {
		if d.Metadata[memorgenkit.MetaKind] == memorgenkit.KindFact {
			out = append(out, text(d))
		}
	}
	return out
}

func contains(docs []*ai.Document, sub string) bool {
	for _, d := range docs {
		if strings.Contains(text(d), sub) {
			return true
		}
	}
	return false
}

// The seed story through genkit.Retrieve: the move is current, the
// superseded city never is, and the two instants in the request's config
// select the past.
func TestSeedStory(t *testing.T) {
	g, _, _ := setup(t)
	now := retrieve(t, g, "where do I live?")
	if got := facts(now); len(got) == 0 || got[0] != "user lives_in Seattle" || contains(now, "San Francisco") {
		t.Fatalf("now: %q, want Seattle and never San Francisco", got)
	}
	if m := now[0].Metadata; m[memorgenkit.MetaRule] != "supersede" || m[memorgenkit.MetaScore].(float64) <= 0 {
		t.Errorf("now: metadata %v", m)
	}
	for _, tc := range []struct {
		name string
		o    *memorgenkit.RetrieverOptions
		want string
	}{
		{"valid at 2026-02-01", &memorgenkit.RetrieverOptions{ValidAt: day("2026-02-01")}, "user lives_in San Francisco"},
		{"known at 2026-06-01", &memorgenkit.RetrieverOptions{KnownAt: day("2026-06-01")}, "user lives_in San Francisco"},
		{"valid at 2026-08-01", &memorgenkit.RetrieverOptions{ValidAt: day("2026-08-01")}, "user lives_in Seattle"},
	} {
		docs := retrieve(t, g, "where do I live?", ai.WithConfig(tc.o))
		if got := facts(docs); len(got) == 0 || got[0] != tc.want {
			t.Errorf("%s: %q, want %s first", tc.name, got, tc.want)
		}
	}
	before := retrieve(t, g, "where do I live?", ai.WithConfig(memorgenkit.RetrieverOptions{ValidAt: day("2026-01-05"), KnownAt: day("2026-01-05")}))
	if len(before) != 0 {
		t.Errorf("before anything was said: %d documents", len(before))
	}
}

// Options as JSON, the way a flow's input or the developer UI sends them,
// through the retriever Genkit looks up by name.
func TestJSONOptions(t *testing.T) {
	g, _, _ := setup(t)
	var o map[string]any
	if err := json.Unmarshal([]byte(`{"validAt": "2026-02-01T00:00:00Z", "k": 1}`), &o); err != nil {
		t.Fatal(err)
	}
	r := genkit.LookupRetriever(g, "memor/alice")
	if r == nil {
		t.Fatal("memor/alice is not defined in the registry")
	}
	resp, err := r.Retrieve(context.Background(), &ai.RetrieverRequest{Query: ai.DocumentFromText("where do I live?", nil), Options: o})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Documents) != 1 || text(resp.Documents[0]) != "user lives_in San Francisco" {
		t.Errorf("k=1 as of 2026-02-01: %v", facts(resp.Documents))
	}

	_, err = r.Retrieve(context.Background(), &ai.RetrieverRequest{Query: ai.DocumentFromText("where do I live?", nil), Options: map[string]any{"valid_at": "yesterday"}})
	var ge *core.GenkitError
	if !errors.As(err, &ge) || ge.Status != core.INVALID_ARGUMENT {
		t.Errorf("an unknown option: %v, want INVALID_ARGUMENT", err)
	}
}

// Two users through one engine: one retriever per user, or one retriever
// with the user in the request; neither sees the other's memories.
func TestUsersIsolated(t *testing.T) {
	g, e, _ := setup(t)
	ctx := context.Background()
	if _, err := e.Add(ctx, "bob", "I live in Lisbon.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	memorgenkit.DefineRetriever(g, e, "bob", memorgenkit.Config{User: "bob"})
	for _, tc := range []struct {
		name      string
		retriever string
		opts      []ai.RetrieverOption
		want, not string
	}{
		{"alice", "memor/alice", nil, "Seattle", "Lisbon"},
		{"bob", "memor/bob", nil, "Lisbon", "Seattle"},
		{"alice's retriever asked for bob", "memor/alice", []ai.RetrieverOption{ai.WithConfig(&memorgenkit.RetrieverOptions{User: "bob"})}, "Lisbon", "Seattle"},
	} {
		resp, err := genkit.Retrieve(ctx, g, append([]ai.RetrieverOption{ai.WithRetrieverName(tc.retriever), ai.WithTextDocs("where do I live?")}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if !contains(resp.Documents, tc.want) || contains(resp.Documents, tc.not) {
			t.Errorf("%s: %q, want %s and never %s", tc.name, facts(resp.Documents), tc.want, tc.not)
		}
	}
}

// Errors: Genkit's status for the caller's mistakes, memor's sentinel
// still matchable.
func TestErrors(t *testing.T) {
	g, _, r := setup(t)
	ctx := context.Background()
	_, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("where do I live?"),
		ai.WithConfig(&memorgenkit.RetrieverOptions{User: "bad\x00user"}))
	var ge *core.GenkitError
	if !errors.Is(err, memor.ErrInvalidUser) || !errors.As(err, &ge) || ge.Status != core.INVALID_ARGUMENT {
		t.Errorf("an invalid user: %v, want INVALID_ARGUMENT wrapping memor.ErrInvalidUser", err)
	}
	_, err = r.Retrieve(ctx, &ai.RetrieverRequest{Query: &ai.Document{}})
	if !errors.As(err, &ge) || ge.Status != core.INVALID_ARGUMENT {
		t.Errorf("a query without text: %v, want INVALID_ARGUMENT", err)
	}
	_, err = genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("where do I live?"),
		ai.WithConfig(&memorgenkit.RetrieverOptions{ValidAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}))
	if !errors.Is(err, memor.ErrInvalidTime) {
		t.Errorf("an instant out of range: %v, want memor.ErrInvalidTime", err)
	}
}
