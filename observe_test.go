package memor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// recordingObserver keeps what an Engine reports.
type recordingObserver struct {
	mu      sync.Mutex
	stages  map[memor.QueryStage]int
	queries []error
}

func (o *recordingObserver) ObserveQueryStage(s memor.QueryStage, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d < 0 {
		panic("negative duration")
	}
	if o.stages == nil {
		o.stages = map[memor.QueryStage]int{}
	}
	o.stages[s]++
}

func (o *recordingObserver) ObserveQuery(d time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queries = append(o.queries, err)
}

type constReranker struct{}

func (constReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for i := range out {
		out[i] = float64(len(docs) - i)
	}
	return out, nil
}

// TestObserverQueryStages: with an Observer, every Query is reported once
// (with its error) and each stage it ran once; the reranker's stage only
// when there is one.
func TestObserverQueryStages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	obs := &recordingObserver{}
	e, _ := openTest(t, memor.Options{Observer: obs})
	if _, err := e.Add(ctx, "alice", "I live in Oslo and I work at Acme.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ctx, "alice", "where does alice live", memor.QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	for s := memor.StageFocus; s < memor.NumQueryStages; s++ {
		want := 1
		if s == memor.StageRerank {
			want = 0
		}
		if obs.stages[s] != want {
			t.Errorf("stage %v reported %d times, want %d (all: %v)", s, obs.stages[s], want, obs.stages)
		}
	}
	if len(obs.queries) != 1 || obs.queries[0] != nil {
		t.Fatalf("queries reported: %v, want one success", obs.queries)
	}
	if _, err := e.Query(ctx, "alice", "where does alice live", memor.QueryOptions{Reranker: constReranker{}}); err != nil {
		t.Fatal(err)
	}
	if obs.stages[memor.StageRerank] != 1 {
		t.Errorf("rerank stage reported %d times with a reranker, want 1", obs.stages[memor.StageRerank])
	}
	_, err := e.Query(ctx, "", "anything", memor.QueryOptions{})
	if err == nil {
		t.Fatal("query of an empty user: no error")
	}
	if len(obs.queries) != 3 || !errors.Is(obs.queries[2], err) {
		t.Errorf("a failed query was reported as %v, want its error %v", obs.queries, err)
	}
	if got := memor.StageBM25.String(); got != "bm25" {
		t.Errorf("StageBM25 = %q", got)
	}
}

// TestStatsEpisodeCounters: Stats counts queued, applied and failed
// episodes; a Rebuild's replay is not counted again.
func TestStatsEpisodeCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fail := extract.ExtractorFunc(func(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
		if text == "broken" {
			return nil, errors.New("the model is down")
		}
		return extract.NewRuleExtractor().Extract(ctx, text, at)
	})
	e, _ := openTest(t, memor.Options{Extractor: fail})
	for i := range 3 {
		if _, err := e.Add(ctx, "bob", fmt.Sprintf("I live in City%d.", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Add(ctx, "bob", "broken"); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "bob", "I work at Acme.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	s, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.EpisodesQueued != 4 || s.EpisodesApplied != 4 || s.EpisodesFailed != 1 {
		t.Fatalf("queued %d applied %d failed %d, want 4, 4, 1", s.EpisodesQueued, s.EpisodesApplied, s.EpisodesFailed)
	}
	if s.WALSyncs == 0 {
		t.Errorf("a durable store counted no WAL syncs")
	}
	if err := e.Rebuild(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	s2, _ := e.Stats(ctx)
	if s2.EpisodesApplied != s.EpisodesApplied || s2.EpisodesFailed != s.EpisodesFailed {
		t.Errorf("rebuild moved the counters: applied %d→%d failed %d→%d", s.EpisodesApplied, s2.EpisodesApplied, s.EpisodesFailed, s2.EpisodesFailed)
	}
}

// TestStatsIndexEvictions: a cache budget smaller than one user evicts
// the previous user on every load of another, and Stats counts it.
func TestStatsIndexEvictions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{IndexCacheBytes: 1})
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, err := e.Add(ctx, u, "I live in Oslo.", memor.Sync()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Query(ctx, u, "where do I live", memor.QueryOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.IndexEvictions < 2 || s.IndexedUsers != 1 {
		t.Errorf("evictions %d with %d users loaded, want at least 2 and 1", s.IndexEvictions, s.IndexedUsers)
	}
}

// TestWithProgress: Rebuild and Check report each unit of work to the
// context's callback, ending at Done == Total.
func TestWithProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	for i := range 4 {
		if _, err := e.Add(ctx, "carol", fmt.Sprintf("I live in City%d.", i), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Add(ctx, "dave", "I work at Acme.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	var got []memor.Progress
	pctx := memor.WithProgress(ctx, func(p memor.Progress) { got = append(got, p) })
	if err := e.Rebuild(pctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("rebuild reported %v, want 4 steps", got)
	}
	for i, p := range got {
		if p.Op != "rebuild" || p.User != "carol" || p.Unit != "episodes" || p.Done != i+1 || p.Total != 4 {
			t.Errorf("rebuild step %d: %+v", i, p)
		}
	}
	got = nil
	if err := e.Check(pctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != (memor.Progress{Op: "check", Done: 2, Total: 2, Unit: "users"}) {
		t.Errorf("check reported %+v, want 2 users", got)
	}
	got = nil
	if err := e.Rebuild(ctx, "carol"); err != nil || got != nil {
		t.Errorf("a context without progress reported %v (err %v)", got, err)
	}
}

type noopObserver struct{}

func (noopObserver) ObserveQueryStage(memor.QueryStage, time.Duration) {}
func (noopObserver) ObserveQuery(time.Duration, error)                 {}

// BenchmarkQueryObserver: what timing Query's stages costs, against no
// observer (which reads no clock).
func BenchmarkQueryObserver(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  memor.Observer
	}{{"observer=none", nil}, {"observer=noop", noopObserver{}}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			e, err := memor.Open(b.TempDir(), memor.Options{NoSync: true, Observer: c.obs})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for i := range 50 {
				if _, err := e.Add(ctx, "u", fmt.Sprintf("I visited City%d and met Person%d.", i, i), memor.Sync()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Query(ctx, "u", "where did I meet Person7", memor.QueryOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
