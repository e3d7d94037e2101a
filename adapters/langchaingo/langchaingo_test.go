package memorlangchaingo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"

	"github.com/memor-db/memor"
	memorlangchaingo "github.com/memor-db/memor/adapters/langchaingo"
)

// The framework's interfaces, satisfied at compile time.
var (
	_ schema.Retriever = memorlangchaingo.Retriever{}
	_ schema.Memory    = (*memorlangchaingo.Memory)(nil)
)

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

func open(t *testing.T) (*memor.Engine, *clock) {
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
	return e, c
}

// model is an LLM that records the prompts it is given and answers "ok".
type model struct {
	mu      sync.Mutex
	prompts []string
}

func (m *model) GenerateContent(_ context.Context, ms []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, msg := range ms {
		for _, p := range msg.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	m.mu.Lock()
	m.prompts = append(m.prompts, b.String())
	m.mu.Unlock()
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "ok"}}}, nil
}

func (m *model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *model) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prompts[len(m.prompts)-1]
}

// seed tells the story through a LangChainGo conversation chain, so the
// memory is saved by the chain itself: San Francisco on Jan 10, Seattle on
// Jul 11, each recorded then.
func seed(t *testing.T, e *memor.Engine, c *clock, user string) *model {
	t.Helper()
	llm := &model{}
	conv := chains.NewConversation(llm, memorlangchaingo.NewMemory(e, user))
	for _, s := range []struct{ at, text string }{
		{"2026-01-10", "I live in San Francisco."},
		{"2026-07-11", "I just moved to Seattle."},
	} {
		c.Set(day(s.at).Add(time.Hour))
		if _, err := chains.Run(context.Background(), conv, s.text); err != nil {
			t.Fatal(err)
		}
	}
	c.Set(day("2026-08-01"))
	return llm
}

func facts(docs []schema.Document) []string {
	var out []string
	for _, d := range docs {
		if d.Metadata[memorlangchaingo.MetaKind] == memorlangchaingo.KindFact {
			out = append(out, d.PageContent)
		}
	}
	return out
}

func contains(docs []schema.Document, sub string) bool {
	for _, d := range docs {
		if strings.Contains(d.PageContent, sub) {
			return true
		}
	}
	return false
}

// The conversation chain's prompt carries memor's fenced block, which
// holds the move and not the superseded city; the chain's own saves are
// what memor learned from.
func TestConversationMemory(t *testing.T) {
	e, c := open(t)
	llm := seed(t, e, c, "alice")
	conv := chains.NewConversation(llm, memorlangchaingo.NewMemory(e, "alice"))
	// What memor recalls before the turn is saved.
	block, err := e.Context(context.Background(), "alice", "Where do I live?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chains.Run(context.Background(), conv, "Where do I live?"); err != nil {
		t.Fatal(err)
	}
	prompt := llm.last()
	if !strings.Contains(prompt, block) {
		t.Fatalf("the prompt does not hold memor's context block:\n%s\nblock:\n%s", prompt, block)
	}
	if !strings.Contains(block, "user lives_in Seattle") || strings.Contains(block, "San Francisco") {
		t.Errorf("the block serves the superseded city or misses the move:\n%s", block)
	}
	// The question was saved as an episode too, and the assistant's "ok"
	// was not (no WithAssistantSpeaker).
	eps, err := e.Episodes(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, ep := range eps {
		said = append(said, ep.Text)
	}
	if strings.Join(said, "|") != "I live in San Francisco.|I just moved to Seattle.|Where do I live?" {
		t.Errorf("episodes %q", said)
	}
}

// The retriever serves the move as current and the past through its
// instants; run inside LangChainGo's RetrievalQA chain, its documents reach
// the prompt.
func TestRetriever(t *testing.T) {
	e, c := open(t)
	seed(t, e, c, "alice")
	ctx := context.Background()

	now, err := memorlangchaingo.NewRetriever(e, "alice").GetRelevantDocuments(ctx, "where do I live?")
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(now); len(got) == 0 || got[0] != "user lives_in Seattle" || contains(now, "San Francisco") {
		t.Fatalf("now: %q, want Seattle and never San Francisco", got)
	}
	if d := now[0]; d.Score <= 0 || d.Metadata[memorlangchaingo.MetaRule] != "supersede" || d.Metadata[memorlangchaingo.MetaValidTo] != nil {
		t.Errorf("now: score %v metadata %v", d.Score, d.Metadata)
	}
	for _, tc := range []struct {
		name string
		opts []memorlangchaingo.RetrieverOption
		want string
	}{
		{"valid at 2026-02-01", []memorlangchaingo.RetrieverOption{memorlangchaingo.WithValidAt(day("2026-02-01"))}, "user lives_in San Francisco"},
		{"known at 2026-06-01", []memorlangchaingo.RetrieverOption{memorlangchaingo.WithKnownAt(day("2026-06-01"))}, "user lives_in San Francisco"},
		{"valid 2026-08-01, known now", []memorlangchaingo.RetrieverOption{memorlangchaingo.WithValidAt(day("2026-08-01"))}, "user lives_in Seattle"},
	} {
		docs, err := memorlangchaingo.NewRetriever(e, "alice", tc.opts...).GetRelevantDocuments(ctx, "where do I live?")
		if err != nil {
			t.Fatal(err)
		}
		if got := facts(docs); len(got) == 0 || got[0] != tc.want {
			t.Errorf("%s: %q, want %s first", tc.name, got, tc.want)
		}
	}
	before, err := memorlangchaingo.NewRetriever(e, "alice",
		memorlangchaingo.WithValidAt(day("2026-01-05")), memorlangchaingo.WithKnownAt(day("2026-01-05"))).GetRelevantDocuments(ctx, "where do I live?")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Errorf("before anything was said: %d documents", len(before))
	}

	llm := &model{}
	qa := chains.NewRetrievalQAFromLLM(llm, memorlangchaingo.NewRetriever(e, "alice", memorlangchaingo.WithValidAt(day("2026-02-01"))))
	if _, err := chains.Run(ctx, qa, "where do I live?"); err != nil {
		t.Fatal(err)
	}
	if p := llm.last(); !strings.Contains(p, "user lives_in San Francisco") || strings.Contains(p, "Seattle") {
		t.Errorf("RetrievalQA as of 2026-02-01: the prompt is\n%s", p)
	}
}

// Top-k, the score threshold and the callbacks handler.
func TestRetrieverOptions(t *testing.T) {
	e, c := open(t)
	seed(t, e, c, "alice")
	ctx := context.Background()
	mem := memorlangchaingo.NewMemory(e, "alice")
	for _, s := range []string{
		"Seattle rains a lot, and I love the ferries to Bainbridge.",
		"I miss the Seattle coffee shop near my old office.",
		"My favorite Seattle hike is Rattlesnake Ledge.",
	} {
		if err := mem.SaveContext(ctx, map[string]any{"input": s}, map[string]any{"text": "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	q := "what do I like about Seattle?"
	all, err := memorlangchaingo.NewRetriever(e, "alice").GetRelevantDocuments(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 3 || all[0].Score == all[len(all)-1].Score {
		t.Fatalf("%d documents: too few to test top-k and the threshold", len(all))
	}
	one, err := memorlangchaingo.NewRetriever(e, "alice", memorlangchaingo.WithK(1)).GetRelevantDocuments(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].PageContent != all[0].PageContent {
		t.Errorf("k=1: %v", one)
	}
	cut := (all[0].Score + all[len(all)-1].Score) / 2
	r := memorlangchaingo.NewRetriever(e, "alice", memorlangchaingo.WithScoreThreshold(cut))
	h := &handler{}
	r.CallbacksHandler = h
	kept, err := r.GetRelevantDocuments(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) == 0 || len(kept) >= len(all) {
		t.Errorf("threshold %v kept %d of %d", cut, len(kept), len(all))
	}
	for _, d := range kept {
		if d.Score < cut {
			t.Errorf("kept %q at %v < %v", d.PageContent, d.Score, cut)
		}
	}
	if h.start != q || h.end != len(kept) {
		t.Errorf("callbacks: start %q, end %d documents; want %q, %d", h.start, h.end, q, len(kept))
	}
}

type handler struct {
	callbacks.SimpleHandler
	start string
	end   int
}

func (h *handler) HandleRetrieverStart(_ context.Context, q string) { h.start = q }
func (h *handler) HandleRetrieverEnd(_ context.Context, _ string, docs []schema.Document) {
	h.end = len(docs)
}

// Two users through one engine: neither's chain recalls the other's
// memories, and clearing one forgets only that one.
func TestUsersIsolated(t *testing.T) {
	e, c := open(t)
	seed(t, e, c, "alice")
	ctx := context.Background()
	bob := memorlangchaingo.NewMemory(e, "bob")
	if err := bob.SaveContext(ctx, map[string]any{"input": "I live in Lisbon."}, map[string]any{"text": "ok"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ user, want, not string }{
		{"alice", "Seattle", "Lisbon"},
		{"bob", "Lisbon", "Seattle"},
	} {
		vars, err := memorlangchaingo.NewMemory(e, tc.user).LoadMemoryVariables(ctx, map[string]any{"input": "where do I live?"})
		if err != nil {
			t.Fatal(err)
		}
		block := vars["history"].(string)
		if !strings.Contains(block, tc.want) || strings.Contains(block, tc.not) {
			t.Errorf("%s:\n%s\nwant %s, never %s", tc.user, block, tc.want, tc.not)
		}
		docs, err := memorlangchaingo.NewRetriever(e, tc.user).GetRelevantDocuments(ctx, "where do I live?")
		if err != nil {
			t.Fatal(err)
		}
		if !contains(docs, tc.want) || contains(docs, tc.not) {
			t.Errorf("%s retriever: %q", tc.user, facts(docs))
		}
	}
	if err := bob.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if eps, err := e.Episodes(ctx, "bob"); err != nil || len(eps) != 0 {
		t.Errorf("bob after Clear: %d episodes, %v", len(eps), err)
	}
	if eps, err := e.Episodes(ctx, "alice"); err != nil || len(eps) != 2 {
		t.Errorf("alice after bob's Clear: %d episodes, %v", len(eps), err)
	}
}

// Keys, the assistant's replies, and errors LangChainGo's way.
func TestMemoryKeysAndErrors(t *testing.T) {
	e, _ := open(t)
	ctx := context.Background()
	m := memorlangchaingo.NewMemory(e, "carol",
		memorlangchaingo.WithMemoryKey("memories"), memorlangchaingo.WithInputKey("question"),
		memorlangchaingo.WithOutputKey("answer"), memorlangchaingo.WithAssistantSpeaker("Assistant"))
	if got := m.MemoryVariables(ctx); len(got) != 1 || got[0] != "memories" || m.GetMemoryKey(ctx) != "memories" {
		t.Errorf("memory variables %v, key %q", got, m.GetMemoryKey(ctx))
	}
	err := m.SaveContext(ctx,
		map[string]any{"question": "I have a cat named Miso.", "lang": "en"},
		map[string]any{"answer": "I live in Oslo.", "tokens": 4})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := m.LoadMemoryVariables(ctx, map[string]any{"question": "where do I live, and do I have a pet?", "lang": "en"})
	if err != nil {
		t.Fatal(err)
	}
	block := vars["memories"].(string)
	if !strings.Contains(block, "Miso") {
		t.Errorf("the block misses the cat:\n%s", block)
	}
	if strings.Contains(block, "user lives_in Oslo") {
		t.Errorf("the assistant's first person was taken as the user's:\n%s", block)
	}
	eps, err := e.Episodes(ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || eps[0].Text != "I have a cat named Miso." || eps[0].Speaker != "" ||
		eps[1].Text != "I live in Oslo." || eps[1].Speaker != "Assistant" {
		t.Errorf("episodes %+v, want the question (the user's) and the answer (Assistant's)", eps)
	}

	if _, err := m.LoadMemoryVariables(ctx, map[string]any{"lang": "en"}); !errors.Is(err, memory.ErrInvalidInputValues) {
		t.Errorf("no input key: %v, want memory.ErrInvalidInputValues", err)
	}
	if _, err := memorlangchaingo.NewMemory(e, "").LoadMemoryVariables(ctx, map[string]any{"input": "hi"}); !errors.Is(err, memor.ErrInvalidUser) {
		t.Errorf("an empty user: %v, want memor.ErrInvalidUser", err)
	}
	if _, err := (memorlangchaingo.Retriever{}).GetRelevantDocuments(ctx, "hi"); !errors.Is(err, memorlangchaingo.ErrNoEngine) {
		t.Errorf("a zero Retriever: %v, want ErrNoEngine", err)
	}
}
