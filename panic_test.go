package memor_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/extract"
)

// panicEmbedder is the default embedder but for texts that say KABOOM:
// a stand-in for an index or embedder that panics on input the engine
// accepted (a 17-word sentence once did, in BM25's upkeep).
type panicEmbedder struct{ *embed.Hash }

func (p panicEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "KABOOM") {
			panic("embedder: KABOOM")
		}
	}
	return p.Hash.Embed(ctx, texts)
}

// panicExtractor is the rule extractor but for texts that say SPLAT.
type panicExtractor struct{ rules *extract.RuleExtractor }

func (p panicExtractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	if strings.Contains(text, "SPLAT") {
		var xs []string
		_ = xs[len(text)] // index out of range: a runtime panic
	}
	return p.rules.Extract(ctx, text, at)
}

// TestPanicFailsTheEpisode: a panic in index upkeep (here the embedder's)
// or in extraction fails the episode it met, with ErrInternal; the
// process lives, the user's later episodes still apply, reopening the
// store does not panic again, and a structured write that panics stores
// nothing.
func TestPanicFailsTheEpisode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "db")
	opts := memor.Options{NoSync: true, Embedder: panicEmbedder{embed.NewHash(0)}, Extractor: panicExtractor{extract.NewRuleExtractor()}}
	e, err := memor.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	const u = "alice"
	for _, text := range []string{"I live in Paris.", "KABOOM I live in Rome.", "SPLAT I work at Initech.", "I like green tea."} {
		if _, err := e.Add(ctx, u, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, u); err != nil {
		t.Fatal(err)
	}
	// The reference: the same texts but the panicking ones, on a store
	// that never saw them.
	ref, err := memor.Open(filepath.Join(t.TempDir(), "ref"), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	stateOf := func(e *memor.Engine) string {
		t.Helper()
		st, err := e.State(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range st {
			got = append(got, f.Predicate+" "+f.Object)
		}
		return strings.Join(got, ", ")
	}
	refAdd := func(text string) {
		t.Helper()
		if _, err := ref.Add(ctx, u, text, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	refAdd("I live in Paris.")
	refAdd("I like green tea.")
	wantState := func(stage string) {
		t.Helper()
		if got, want := stateOf(e), stateOf(ref); got != want || want == "" {
			t.Fatalf("%s: state %q, want %q", stage, got, want)
		}
	}
	wantFailed := func(stage string, n int) {
		t.Helper()
		f, err := e.Freshness(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if f.Failed != n || f.Pending != 0 || f.Applied != f.Latest {
			t.Fatalf("%s: freshness %+v, want %d failed and nothing pending", stage, f, n)
		}
		fails, err := e.Failed(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for _, fe := range fails {
			if !strings.Contains(fe.Error, memor.ErrInternal.Error()) || !strings.Contains(fe.Error, "panicked") {
				t.Fatalf("%s: episode %d failed with %q, want an internal error naming the panic", stage, fe.Episode.Seq, fe.Error)
			}
		}
	}
	wantState("queued")
	wantFailed("queued", 2)

	// Inline: the episode is stored and recorded as failed.
	if _, err := e.Add(ctx, u, "KABOOM again", memor.Sync()); !errors.Is(err, memor.ErrInternal) {
		t.Fatalf("Sync Add that panics: %v, want ErrInternal", err)
	}
	if _, err := e.Add(ctx, u, "I like jazz.", memor.Sync()); err != nil {
		t.Fatalf("Sync Add after a panic: %v", err)
	}
	wantFailed("inline", 3)
	// A structured write that panics stores nothing.
	eps, _ := e.Episodes(ctx, u)
	if _, err := e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "likes", Object: "KABOOM"}); !errors.Is(err, memor.ErrInternal) {
		t.Fatalf("Assert that panics: %v, want ErrInternal", err)
	}
	if after, _ := e.Episodes(ctx, u); len(after) != len(eps) {
		t.Fatalf("a failed Assert left an episode: %d, then %d", len(eps), len(after))
	}
	// A query that panics is an error; the next one works.
	if _, err := e.Query(ctx, u, "KABOOM", memor.QueryOptions{}); !errors.Is(err, memor.ErrInternal) {
		t.Fatalf("Query that panics: %v, want ErrInternal", err)
	}
	if res, err := e.Query(ctx, u, "where do I live", memor.QueryOptions{}); err != nil || len(res) == 0 {
		t.Fatalf("Query after a panic: %d results, %v", len(res), err)
	}
	refAdd("I like jazz.")
	wantState("inline")
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Rebuild(ctx, u); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	wantState("rebuilt")
	wantFailed("rebuilt", 3)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = memor.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, u); err != nil {
		t.Fatal(err)
	}
	wantState("reopened")
	wantFailed("reopened", 3)
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
