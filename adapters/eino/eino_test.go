package memoreino_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components/indexer"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/memor-db/memor"
	memoreino "github.com/memor-db/memor/adapters/eino"
)

// The framework's interfaces, satisfied at compile time.
var (
	_ retriever.Retriever = (*memoreino.Retriever)(nil)
	_ indexer.Indexer     = (*memoreino.Indexer)(nil)
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

func components(t *testing.T, e *memor.Engine, user string) (*memoreino.Indexer, *memoreino.Retriever) {
	t.Helper()
	ctx := context.Background()
	ix, err := memoreino.NewIndexer(ctx, &memoreino.IndexerConfig{Engine: e, User: user})
	if err != nil {
		t.Fatal(err)
	}
	r, err := memoreino.NewRetriever(ctx, &memoreino.RetrieverConfig{Engine: e, User: user})
	if err != nil {
		t.Fatal(err)
	}
	return ix, r
}

// seed tells the story through the indexer: San Francisco on Jan 10
// (recorded then), Seattle on Jul 11 (recorded then).
func seed(t *testing.T, ix indexer.Indexer, c *clock) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []struct{ at, text string }{
		{"2026-01-10", "I live in San Francisco."},
		{"2026-07-11", "I just moved to Seattle."},
	} {
		c.Set(day(s.at).Add(time.Hour))
		ids, err := ix.Store(ctx, []*schema.Document{{Content: s.text, MetaData: map[string]any{memoreino.MetaAt: s.at}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || !strings.HasPrefix(ids[0], "episode-") {
			t.Fatalf("Store(%q) = %v, want one episode ID", s.text, ids)
		}
	}
	c.Set(day("2026-08-01"))
}

// chainIndexer stores through a compiled Eino chain holding the indexer.
type chainIndexer struct {
	r compose.Runnable[[]*schema.Document, []string]
}

func (c chainIndexer) Store(ctx context.Context, docs []*schema.Document, opts ...indexer.Option) ([]string, error) {
	return c.r.Invoke(ctx, docs, compose.WithIndexerOption(opts...))
}

// facts are the fact documents of docs, rendered "subject predicate object".
func facts(docs []*schema.Document) []string {
	var out []string
	for _, d := range docs {
		if d.MetaData[memoreino.MetaKind] == memoreino.KindFact {
			out = append(out, d.Content)
		}
	}
	return out
}

func contains(docs []*schema.Document, sub string) bool {
	for _, d := range docs {
		if strings.Contains(d.Content, sub) {
			return true
		}
	}
	return false
}

// The seed story through Eino's interfaces: the move is served as current,
// the superseded city is never served as current, and the two instants
// select the past.
//
// Both components run as nodes of Eino chains, the time-travel options
// passed as the graph's call options.
func TestSeedStory(t *testing.T) {
	e, c := open(t)
	ix, r := components(t, e, "alice")
	ctx := context.Background()
	store, err := compose.NewChain[[]*schema.Document, []string]().AppendIndexer(ix).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, chainIndexer{store}, c)
	chain, err := compose.NewChain[string, []*schema.Document]().AppendRetriever(r).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	retrieve := func(ctx context.Context, q string, opts ...retriever.Option) ([]*schema.Document, error) {
		return chain.Invoke(ctx, q, compose.WithRetrieverOption(opts...))
	}

	now, err := retrieve(ctx, "where do I live?")
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(now); len(got) == 0 || got[0] != "user lives_in Seattle" {
		t.Fatalf("now: facts %q, want user lives_in Seattle first", got)
	}
	if contains(now, "San Francisco") {
		t.Errorf("now: the superseded San Francisco is served: %q", facts(now))
	}
	top := now[0]
	if top.Score() <= 0 || top.MetaData[memoreino.MetaRule] != "supersede" || !top.MetaData[memoreino.MetaValidFrom].(time.Time).Equal(day("2026-07-11")) {
		t.Errorf("now: top document score %v, metadata %v", top.Score(), top.MetaData)
	}

	feb, err := retrieve(ctx, "where do I live?", memoreino.WithValidAt(day("2026-02-01")))
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(feb); len(got) == 0 || got[0] != "user lives_in San Francisco" || contains(feb, "Seattle") {
		t.Errorf("valid at 2026-02-01: facts %q, want San Francisco and nothing of Seattle", got)
	}

	// Known at June 1, before memor heard of the move: San Francisco was
	// what it believed was true now.
	june, err := retrieve(ctx, "where do I live?", memoreino.WithKnownAt(day("2026-06-01")))
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(june); len(got) == 0 || got[0] != "user lives_in San Francisco" || contains(june, "Seattle") {
		t.Errorf("known at 2026-06-01: facts %q, want San Francisco and nothing of Seattle", got)
	}

	// Known at Jan 5, before anything was said: nothing.
	jan5, err := retrieve(ctx, "where do I live?", memoreino.WithValidAt(day("2026-01-05")), memoreino.WithKnownAt(day("2026-01-05")))
	if err != nil {
		t.Fatal(err)
	}
	if len(jan5) != 0 {
		t.Errorf("valid and known at 2026-01-05: %d documents, want none", len(jan5))
	}
}

// A fact asserted through the indexer's metadata supersedes like one
// extracted, and is never served as current once superseded.
func TestIndexerAssertsFacts(t *testing.T) {
	e, c := open(t)
	c.Set(day("2026-08-01"))
	ix, r := components(t, e, "bob")
	ctx := context.Background()
	ids, err := ix.Store(ctx, []*schema.Document{
		{Content: "Bob works at Acme.", MetaData: map[string]any{
			memoreino.MetaSubject: "user", memoreino.MetaPredicate: "works_at", memoreino.MetaObject: "Acme",
			memoreino.MetaValidFrom: "2025-03-01"}},
		{Content: "Bob joined Globex.", MetaData: map[string]any{
			memoreino.MetaSubject: "user", memoreino.MetaPredicate: "works_at", memoreino.MetaObject: "Globex",
			memoreino.MetaValidFrom: day("2026-04-01"), memoreino.MetaConfidence: 0.9}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] == ids[1] || strings.HasPrefix(ids[0], "episode-") {
		t.Fatalf("Store = %v, want two fact IDs", ids)
	}
	docs, err := r.Retrieve(ctx, "where do I work?", retriever.WithTopK(3))
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(docs); len(got) == 0 || got[0] != "user works_at Globex" || contains(docs, "Acme") {
		t.Fatalf("now: %q, want Globex and never Acme", got)
	}
	if docs[0].ID != ids[1] {
		t.Errorf("the served fact's ID %q is not the one Store returned (%q)", docs[0].ID, ids[1])
	}
	past, err := r.Retrieve(ctx, "where do I work?", memoreino.WithValidAt(day("2025-12-01")))
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(past); len(got) == 0 || got[0] != "user works_at Acme" {
		t.Errorf("valid at 2025-12-01: %q, want Acme", got)
	}
	// A retrieved fact document stores again as it is: a restatement.
	again, err := ix.Store(ctx, docs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0] != docs[0].ID {
		t.Errorf("restating a retrieved fact: ids %v, want the restated fact's %s", again, docs[0].ID)
	}
	// Restated later (valid from now, another claim ID), it is still
	// folded into the fact in force, whose ID Store returns.
	later, err := ix.Store(ctx, []*schema.Document{{Content: "Still at Globex.", MetaData: map[string]any{
		memoreino.MetaSubject: "user", memoreino.MetaPredicate: "works_at", memoreino.MetaObject: "Globex"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0] != ids[1] {
		t.Errorf("a later restatement: ids %v, want the fact in force %s", later, ids[1])
	}

	_, err = ix.Store(ctx, []*schema.Document{{Content: "x", MetaData: map[string]any{
		memoreino.MetaSubject: "user", memoreino.MetaPredicate: "works_at", memoreino.MetaObject: "Initech", memoreino.MetaValidFrom: "last spring"}}})
	if !errors.Is(err, memoreino.ErrMetadata) {
		t.Errorf("an unreadable valid_from: %v, want ErrMetadata", err)
	}
}

// Two users through one engine: neither sees the other's memories, by
// configuration or by the per-call user options.
func TestUsersIsolated(t *testing.T) {
	e, c := open(t)
	ixA, rA := components(t, e, "alice")
	seed(t, ixA, c)
	ixB, rB := components(t, e, "bob")
	if _, err := ixB.Store(context.Background(), []*schema.Document{{Content: "I live in Lisbon."}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		r         *memoreino.Retriever
		opts      []retriever.Option
		want, not string
	}{
		{"alice", rA, nil, "Seattle", "Lisbon"},
		{"bob", rB, nil, "Lisbon", "Seattle"},
		{"alice's retriever asked for bob", rA, []retriever.Option{memoreino.WithUser("bob")}, "Lisbon", "Seattle"},
	} {
		docs, err := tc.r.Retrieve(ctx, "where do I live?", tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !contains(docs, tc.want) || contains(docs, tc.not) {
			t.Errorf("%s: %q, want %s and nothing of %s", tc.name, facts(docs), tc.want, tc.not)
		}
	}
	// The indexer's per-call user writes to that user only.
	if _, err := ixA.Store(ctx, []*schema.Document{{Content: "I have a cat named Miso."}}, memoreino.WithStoreUser("carol")); err != nil {
		t.Fatal(err)
	}
	docs, err := rA.Retrieve(ctx, "do I have a pet?", memoreino.WithUser("carol"))
	if err != nil {
		t.Fatal(err)
	}
	if !contains(docs, "Miso") {
		t.Errorf("carol: %q, want her cat", facts(docs))
	}
	docs, err = rA.Retrieve(ctx, "do I have a pet?")
	if err != nil {
		t.Fatal(err)
	}
	if contains(docs, "Miso") {
		t.Errorf("alice is served carol's cat")
	}
}

// Top-k and the score threshold are Eino's common options.
func TestCommonOptions(t *testing.T) {
	e, c := open(t)
	ix, r := components(t, e, "alice")
	seed(t, ix, c)
	ctx := context.Background()
	if _, err := ix.Store(ctx, []*schema.Document{
		{Content: "Seattle rains a lot, and I love the ferries to Bainbridge."},
		{Content: "I miss the Seattle coffee shop near my old office."},
		{Content: "My favorite Seattle hike is Rattlesnake Ledge."},
	}); err != nil {
		t.Fatal(err)
	}
	all, err := r.Retrieve(ctx, "what do I like about Seattle?", retriever.WithTopK(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("%d documents, want at least 2 to test top-k", len(all))
	}
	one, err := r.Retrieve(ctx, "what do I like about Seattle?", retriever.WithTopK(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].ID != all[0].ID {
		t.Errorf("top-1: %v, want the first of top-10 (%s)", one, all[0].ID)
	}
	// A threshold between the first and the last score keeps the first
	// and drops the last.
	cut := (all[0].Score() + all[len(all)-1].Score()) / 2
	if all[0].Score() == all[len(all)-1].Score() {
		t.Fatalf("all scores equal (%v): no threshold separates them", cut)
	}
	kept, err := r.Retrieve(ctx, "what do I like about Seattle?", retriever.WithTopK(10), retriever.WithScoreThreshold(cut))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) == 0 || len(kept) >= len(all) {
		t.Fatalf("threshold %v kept %d of %d", cut, len(kept), len(all))
	}
	for _, d := range kept {
		if d.Score() < cut {
			t.Errorf("kept %q scoring %v below %v", d.Content, d.Score(), cut)
		}
	}
}

// The components report to Eino's callbacks with the retriever's and the
// indexer's callback types, and errors reach OnError wrapped so that
// memor's sentinels still match.
func TestCallbacksAndErrors(t *testing.T) {
	e, c := open(t)
	ix, r := components(t, e, "alice")
	var mu sync.Mutex
	var events []string
	h := callbacks.NewHandlerBuilder().
		OnStartFn(func(ctx context.Context, info *callbacks.RunInfo, in callbacks.CallbackInput) context.Context {
			mu.Lock()
			defer mu.Unlock()
			switch v := in.(type) {
			case *retriever.CallbackInput:
				events = append(events, "start "+string(info.Component)+" "+v.Query)
			case *indexer.CallbackInput:
				events = append(events, "start "+string(info.Component)+" "+v.Docs[0].Content)
			default: // what a graph reports for a component that does not
				events = append(events, fmt.Sprintf("start %s %T", info.Component, v))
			}
			return ctx
		}).
		OnEndFn(func(ctx context.Context, info *callbacks.RunInfo, out callbacks.CallbackOutput) context.Context {
			mu.Lock()
			defer mu.Unlock()
			switch v := out.(type) {
			case *retriever.CallbackOutput:
				events = append(events, "end "+string(info.Component)+" "+v.Docs[0].Content)
			case *indexer.CallbackOutput:
				events = append(events, "end "+string(info.Component)+" "+strings.Join(v.IDs, ","))
			default:
				events = append(events, fmt.Sprintf("end %s %T", info.Component, v))
			}
			return ctx
		}).
		OnErrorFn(func(ctx context.Context, info *callbacks.RunInfo, err error) context.Context {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "error "+string(info.Component))
			return ctx
		}).Build()
	ctx := callbacks.InitCallbacks(context.Background(), nil, h)
	c.Set(day("2026-07-11"))
	if _, err := ix.Store(ctx, []*schema.Document{{Content: "I live in Seattle."}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Retrieve(ctx, "where do I live?", retriever.WithTopK(1)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Retrieve(ctx, "where do I live?", memoreino.WithUser(""))
	if !errors.Is(err, memor.ErrInvalidUser) {
		t.Errorf("an empty user: %v, want memor.ErrInvalidUser", err)
	}
	want := []string{
		"start Indexer I live in Seattle.", "end Indexer episode-1",
		"start Retriever where do I live?", "end Retriever user lives_in Seattle",
		"start Retriever where do I live?", "error Retriever",
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("callbacks:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}

	// In a graph the handlers hear the retriever once: the graph leaves
	// reporting to a component that says it reports itself.
	events = nil
	chain, err := compose.NewChain[string, []*schema.Document]().AppendRetriever(r).Compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chain.Invoke(context.Background(), "where do I live?", compose.WithCallbacks(h), compose.WithRetrieverOption(retriever.WithTopK(1))); err != nil {
		t.Fatal(err)
	}
	var heard []string
	for _, ev := range events {
		if strings.Contains(ev, "Retriever") {
			heard = append(heard, ev)
		}
	}
	if want := "start Retriever where do I live?\nend Retriever user lives_in Seattle"; strings.Join(heard, "\n") != want {
		t.Errorf("in a chain, the retriever's callbacks:\n%s\nwant:\n%s", strings.Join(heard, "\n"), want)
	}
	_, err = chain.Invoke(context.Background(), "where do I live?", compose.WithRetrieverOption(memoreino.WithUser("")))
	if !errors.Is(err, memor.ErrInvalidUser) {
		t.Errorf("an empty user in a chain: %v, want memor.ErrInvalidUser", err)
	}

	if _, err := memoreino.NewRetriever(ctx, &memoreino.RetrieverConfig{}); !errors.Is(err, memoreino.ErrNoEngine) {
		t.Errorf("NewRetriever without an engine: %v", err)
	}
	if _, err := memoreino.NewIndexer(ctx, nil); !errors.Is(err, memoreino.ErrNoEngine) {
		t.Errorf("NewIndexer(nil): %v", err)
	}
}

// The corpus's texts (long turns, code, emoji, CJK, RTL) store as episodes
// and come back whole: the adapter passes text through untouched.
func TestIndexerCorpus(t *testing.T) {
	e, _ := open(t)
	ix, r := components(t, e, "corpus")
	ctx := context.Background()
	for _, name := range []string{"cjk-zh.txt", "emoji.txt", "code-go.txt", "rtl-arabic-hebrew.txt", "chat-long-turn.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "texts", name))
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("%s: absent from the corpus", name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if len(text) > 2000 {
			text = text[:strings.LastIndex(text[:2000], "\n")+1]
		}
		ids, err := ix.Store(ctx, []*schema.Document{{Content: text}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs, err := r.Retrieve(ctx, firstWords(text), retriever.WithTopK(20))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		found := false
		for _, d := range docs {
			if d.ID == ids[0] {
				found = true
				if !strings.Contains(d.Content, strings.TrimSpace(text)) {
					t.Errorf("%s: the episode came back changed:\n%q\nwant it to hold\n%q", name, d.Content, text)
				}
			}
		}
		if !found {
			t.Errorf("%s: episode %s not retrieved by its own first words", name, ids[0])
		}
	}
}

func firstWords(s string) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(len(f), 12)], " ")
}
