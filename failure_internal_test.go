package memor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/memor-db/memor/embed"
)

// downForAtlantis is an embedder that fails for every text naming
// Atlantis.
type downForAtlantis struct{ embed.Embedder }

var errDown = errors.New("embedder down")

func (d downForAtlantis) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, text := range texts {
		if strings.Contains(strings.ToLower(text), "atlantis") {
			return nil, errDown
		}
	}
	return d.Embedder.Embed(ctx, texts)
}

// TestCatchUpRecordsFailure (issue 15.9): an inline write first applies
// the user's queued episodes; one whose application fails is recorded as
// failed (in the same commit), the others apply, and the write succeeds.
// Before the fix the queued episode's error failed the inline write, and
// every later one, for good.
func TestCatchUpRecordsFailure(t *testing.T) {
	t.Parallel()
	e, err := Open(t.TempDir(), Options{Embedder: downForAtlantis{embed.NewHash(0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	// Committed, not scheduled: only the inline write below applies them.
	for _, text := range []string{"I live in Atlantis.", "I play the cello.", "I work at Atlantis Corp."} {
		ep := Episode{Kind: EpisodeText, At: e.clock().UTC(), Text: text}
		if _, err := e.commitEpisode(ctx, "u", &ep); err != nil {
			t.Fatal(err)
		}
	}
	for i, obj := range []string{"tea", "coffee"} {
		if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "likes", Object: obj}); err != nil {
			t.Fatalf("inline write %d behind a failing queued episode: %v", i, err)
		}
	}
	f, err := e.Freshness(ctx, "u")
	if err != nil || f != (Freshness{Applied: 5, Latest: 5, Failed: 2}) {
		t.Fatalf("freshness %+v, %v; want 5 applied of which 2 failed", f, err)
	}
	fails, err := e.Failed(ctx, "u")
	if err != nil || len(fails) != 2 || fails[0].Seq != 1 || fails[1].Seq != 3 || !strings.Contains(fails[0].Error, errDown.Error()) {
		t.Fatalf("failed: %+v, %v", fails, err)
	}
	fs, err := e.State(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Predicate+"="+f.Object)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[likes=coffee likes=tea plays_instrument=cello]" {
		t.Fatalf("state %v", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFailEpisode: failEpisode, the path a recovered panic takes, records
// the next queued episode as failed and lets the user's later episodes
// apply; it does nothing to an episode applied meanwhile.
func TestFailEpisode(t *testing.T) {
	t.Parallel()
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, text := range []string{"I live in Oslo.", "I play the cello."} {
		ep := Episode{Kind: EpisodeText, At: e.clock().UTC(), Text: text}
		if _, err := e.commitEpisode(ctx, "u", &ep); err != nil {
			t.Fatal(err)
		}
	}
	cause := errors.New("panic: index upkeep")
	if n, err := e.failEpisode(ctx, "u", 1, cause); err != nil || n != 1 {
		t.Fatalf("failEpisode: %d, %v", n, err)
	}
	if n, err := e.failEpisode(ctx, "u", 1, cause); err != nil || n != 0 {
		t.Fatalf("failEpisode of an episode already failed: %d, %v", n, err)
	}
	if err := e.drain(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	f, err := e.Freshness(ctx, "u")
	if err != nil || f != (Freshness{Applied: 2, Latest: 2, Failed: 1}) {
		t.Fatalf("freshness %+v, %v", f, err)
	}
	if fails, _ := e.Failed(ctx, "u"); len(fails) != 1 || fails[0].Error != cause.Error() {
		t.Fatalf("failed %+v", fails)
	}
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d, %v", n, err)
	}
	fs, err := e.State(ctx, "u")
	if err != nil || len(fs) != 2 {
		t.Fatalf("state after retry: %v, %v", fs, err)
	}
}
