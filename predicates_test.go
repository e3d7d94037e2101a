package memor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/embed"
)

// badPredicateNames are declarations that normalise to nothing, are not
// valid UTF-8 or are too long.
var badPredicateNames = []string{"", "  ", "\x00", "\xff", "\t\n", "__", "-", "a\xff", strings.Repeat("p", memor.MaxPredicateBytes+1)}

// TestRegisterPredicateRefusesGarbage (issue 15.9): RegisterPredicate("  ",
// One, "lives_in") used to make every later lives_in claim one with an
// empty predicate, which the graph refuses: every lives_in write failed
// with an untyped error and an asynchronous user stalled at Pending 2,
// Failed 0. Each bad name or alias is now refused with
// ErrInvalidPredicate and registers nothing, and lives_in still applies.
func TestRegisterPredicateRefusesGarbage(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	for _, bad := range badPredicateNames {
		if err := e.RegisterPredicate(bad, memor.One, "lives_in"); !errors.Is(err, memor.ErrInvalidPredicate) {
			t.Errorf("RegisterPredicate(%q, One, lives_in) = %v, want ErrInvalidPredicate", bad, err)
		}
		// A bad alias refuses the whole declaration: home_town stays
		// unknown (Many), lives_in stays lives_in.
		if err := e.RegisterPredicate("home_town", memor.One, "lives_in", bad); !errors.Is(err, memor.ErrInvalidPredicate) {
			t.Errorf("RegisterPredicate(home_town, One, lives_in, %q) = %v, want ErrInvalidPredicate", bad, err)
		}
	}
	if err := e.RegisterPredicate("rank", memor.Cardinality(7)); !errors.Is(err, memor.ErrInvalidPredicate) {
		t.Errorf("cardinality 7: %v, want ErrInvalidPredicate", err)
	}
	for _, text := range []string{"I live in Oslo.", "I moved to Rome."} {
		if _, err := e.Add(ctx, "async", text, memor.At(day(len(text)))); err != nil {
			t.Fatal(err)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.Flush(flushCtx, "async"); err != nil {
		t.Fatalf("ingestion stalled: %v", err)
	}
	if f, _ := e.Freshness(ctx, "async"); f != (memor.Freshness{Applied: 2, Latest: 2}) {
		t.Errorf("freshness %+v, want both episodes applied", f)
	}
	if _, err := e.Add(ctx, "sync", "I live in Oslo.", memor.Sync()); err != nil {
		t.Errorf("sync Add: %v", err)
	}
	if _, err := e.Assert(ctx, "sync", memor.FactInput{Subject: "user", Predicate: "home_town", Object: "Bergen"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(ctx, "sync", memor.FactInput{Subject: "user", Predicate: "home_town", Object: "Tromso"}); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]string{"async": "[lives_in=Rome]", "sync": "[home_town=Bergen home_town=Tromso lives_in=Oslo]"} {
		if got := fmt.Sprint(objects(t, e, user)); got != want {
			t.Errorf("%s: %s, want %s (a refused declaration registered something)", user, got, want)
		}
	}

	// A good declaration is normalised like every predicate.
	if err := e.RegisterPredicate(" Birth Place ", memor.One, "Born-In"); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{"Paris", "Lyon"} {
		if _, err := e.Assert(ctx, "n", memor.FactInput{Subject: "user", Predicate: "born in", Object: obj}); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(objects(t, e, "n")); got != "[birth_place=Lyon]" {
		t.Errorf("normalised declaration: %s, want [birth_place=Lyon]", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesBadPredicates: a bad Options.Predicates entry makes Open
// fail with ErrInvalidPredicate before the store is touched.
func TestOpenRefusesBadPredicates(t *testing.T) {
	t.Parallel()
	var decls []memor.Predicate
	for _, bad := range badPredicateNames {
		decls = append(decls, memor.Predicate{Name: bad, Cardinality: memor.One, Aliases: []string{"lives_in"}},
			memor.Predicate{Name: "home_town", Cardinality: memor.One, Aliases: []string{bad}})
	}
	decls = append(decls, memor.Predicate{Name: "rank", Cardinality: memor.Cardinality(2)})
	for _, d := range decls {
		dir := filepath.Join(t.TempDir(), "db")
		e, err := memor.Open(dir, memor.Options{Predicates: []memor.Predicate{{Name: "rank", Cardinality: memor.One}, d}})
		if !errors.Is(err, memor.ErrInvalidPredicate) {
			if err == nil {
				e.Close()
			}
			t.Errorf("Open with %#v: %v, want ErrInvalidPredicate", d, err)
			continue
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Open with %#v created the store folder (%v)", d, err)
		}
	}
	e, _ := openTest(t, memor.Options{Predicates: []memor.Predicate{{Name: "Home Town", Cardinality: memor.One, Aliases: []string{"hometown"}}}})
	ctx := context.Background()
	for _, obj := range []string{"Bergen", "Tromso"} {
		if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "hometown", Object: obj}); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[home_town=Tromso]" {
		t.Errorf("declared in Options: %s, want [home_town=Tromso]", got)
	}
}

// poisonEmbedder fails for texts naming Atlantis (an embedder down) and
// returns zero vectors, which the vector index refuses, for texts naming
// Lemuria, until healed.
type poisonEmbedder struct {
	embed.Embedder
	healed atomic.Bool
}

var errEmbedderDown = errors.New("embedder down")

func (p *poisonEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := p.Embedder.Embed(ctx, texts)
	if err != nil || p.healed.Load() {
		return vs, err
	}
	for i, text := range texts {
		switch lower := strings.ToLower(text); {
		case strings.Contains(lower, "atlantis"):
			return nil, errEmbedderDown
		case strings.Contains(lower, "lemuria"):
			vs[i] = make([]float32, len(vs[i]))
		}
	}
	return vs, nil
}

// TestApplicationFailureIsRecorded (issue 15.9): an episode whose
// extraction succeeds but whose application fails (the embedder errs,
// the vector index refuses its vector) is recorded as failed with its
// error, never left pending: the user's later episodes apply, Freshness
// counts it Failed, a Sync Add returns ErrExtractionFailed wrapping the
// cause, Rebuild records it again, and Retry applies it once the cause
// is gone. Before the fix the asynchronous user stalled at Pending > 0
// and every later inline write failed on the queued episode.
func TestApplicationFailureIsRecorded(t *testing.T) {
	t.Parallel()
	emb := &poisonEmbedder{Embedder: embed.NewHash(0)}
	e, _ := openTest(t, memor.Options{Embedder: emb})
	ctx := context.Background()
	for i, text := range []string{"I live in Atlantis.", "I like tea.", "I speak Lemurian. I live in Lemuria.", "I play the cello."} {
		if _, err := e.Add(ctx, "u", text, memor.At(day(i))); err != nil {
			t.Fatal(err)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.Flush(flushCtx, "u"); err != nil {
		t.Fatalf("ingestion stalled behind a failing episode: %v", err)
	}
	if f, _ := e.Freshness(ctx, "u"); f != (memor.Freshness{Applied: 4, Latest: 4, Failed: 2}) {
		t.Fatalf("freshness %+v, want 4 applied of which 2 failed", f)
	}
	checkFailed := func(want ...string) {
		t.Helper()
		fails, err := e.Failed(ctx, "u")
		if err != nil || len(fails) != len(want) {
			t.Fatalf("failed: %+v, %v; want %d", fails, err, len(want))
		}
		for i, w := range want {
			if !strings.Contains(fails[i].Error, w) {
				t.Errorf("failure of episode %d: %q, want it to say %q", fails[i].Seq, fails[i].Error, w)
			}
		}
	}
	checkFailed(errEmbedderDown.Error(), "zero")
	if got := fmt.Sprint(objects(t, e, "u")); got != "[likes_food=tea plays_instrument=cello]" {
		t.Fatalf("state: %s", got)
	}

	// Inline: the episode is stored and recorded as failed, the call
	// says why.
	ep, err := e.Add(ctx, "u", "I work at Atlantis Corp.", memor.Sync())
	if !errors.Is(err, memor.ErrExtractionFailed) || !errors.Is(err, errEmbedderDown) || ep.Seq != 5 {
		t.Fatalf("sync Add: episode %d, %v; want episode 5 and ErrExtractionFailed wrapping the embedder's error", ep.Seq, err)
	}
	// A structured write fails as a call and stores nothing.
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "visited", Object: "Atlantis"}); !errors.Is(err, errEmbedderDown) {
		t.Fatalf("Assert: %v, want the embedder's error", err)
	}
	if f, _ := e.Freshness(ctx, "u"); f != (memor.Freshness{Applied: 5, Latest: 5, Failed: 3}) {
		t.Fatalf("freshness %+v", f)
	}
	if n, err := e.Retry(ctx, "u"); err != nil || n != 3 {
		t.Fatalf("retry while the embedder is down: %d still failing, %v; want 3, nil", n, err)
	}
	checkFailed(errEmbedderDown.Error(), "zero", errEmbedderDown.Error())
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatalf("rebuild with failing episodes: %v", err)
	}
	if f, _ := e.Freshness(ctx, "u"); f != (memor.Freshness{Applied: 5, Latest: 5, Failed: 3}) {
		t.Fatalf("freshness after rebuild %+v", f)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}

	emb.healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d still failing, %v", n, err)
	}
	want := "[likes_food=tea lives_in=Lemuria plays_instrument=cello works_at=Atlantis Corp]"
	if got := fmt.Sprint(objects(t, e, "u")); got != want {
		t.Fatalf("after retry: %s, want %s", got, want)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Failed != 0 || f.Pending != 0 {
		t.Fatalf("freshness after retry %+v", f)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
