package memor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// gatedExtractor blocks every extraction until the gate opens, then
// delegates to the rule extractor.
type gatedExtractor struct {
	gate  chan struct{}
	calls atomic.Int64
}

func (g *gatedExtractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	g.calls.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return extract.NewRuleExtractor().Extract(ctx, text, at)
}

func objects(t *testing.T, e *memor.Engine, user string) []string {
	t.Helper()
	fs, err := e.State(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Predicate+"="+f.Object)
	}
	return out
}

// TestAddIsAsync: Add returns once the episode is durable, before
// extraction; Freshness shows it pending; WaitFor returns once applied.
func TestAddIsAsync(t *testing.T) {
	t.Parallel()
	g := &gatedExtractor{gate: make(chan struct{})}
	e, _ := openTest(t, memor.Options{Extractor: g})
	ctx := context.Background()
	ep, err := e.Add(ctx, "u", "I live in Lisbon.")
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Freshness(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if f.Latest != ep.Seq || f.Pending != 1 || f.Applied != 0 {
		t.Fatalf("freshness before apply: %+v", f)
	}
	if got := objects(t, e, "u"); len(got) != 0 {
		t.Fatalf("applied before extraction finished: %v", got)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := e.WaitFor(short, "u", ep.Seq); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor while gated: %v", err)
	}
	close(g.gate)
	if err := e.WaitFor(ctx, "u", ep.Seq); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, e, "u"); fmt.Sprint(got) != "[lives_in=Lisbon]" {
		t.Fatalf("after WaitFor: %v", got)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Pending != 0 || f.Applied != 1 {
		t.Fatalf("freshness after apply: %+v", f)
	}
	if err := e.WaitFor(ctx, "u", 99); !errors.Is(err, memor.ErrNotFound) {
		t.Fatalf("WaitFor a future episode: %v", err)
	}
}

// TestIngestionOrder: one user's episodes apply in sequence order while
// many users ingest in parallel.
func TestIngestionOrder(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{NoSync: true, Workers: 4})
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for u := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				// Same At for all: only sequence order decides the winner
				// if the engine misorders (it would then contest).
				if _, err := e.Add(ctx, fmt.Sprintf("user-%d", u), fmt.Sprintf("I live in City%d.", i), memor.At(base.Add(time.Duration(i)*time.Hour))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for u := range 8 {
		user := fmt.Sprintf("user-%d", u)
		if err := e.Flush(ctx, user); err != nil {
			t.Fatal(err)
		}
		fs, err := e.History(ctx, user, "user", "lives_in")
		if err != nil {
			t.Fatal(err)
		}
		// Applied in order, every value arrives as a supersede (never late)
		// and the history grows by exactly one expiry per episode.
		for _, f := range fs {
			if f.Rule == memor.RuleLate {
				t.Fatalf("%s: %s applied out of order", user, f)
			}
		}
		if got := objects(t, e, user); fmt.Sprint(got) != "[lives_in=City39]" {
			t.Fatalf("%s: %v", user, got)
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBackpressure: when the queue is full, Add waits (respecting its
// context) instead of dropping the turn.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	g := &gatedExtractor{gate: make(chan struct{})}
	e, _ := openTest(t, memor.Options{Extractor: g, Workers: 1, QueueSize: 2})
	ctx := context.Background()
	for i := range 2 {
		if _, err := e.Add(ctx, "u", fmt.Sprintf("I like thing%d.", i)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := e.Add(short, "u", "I like thing2."); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Add into a full queue: %v", err)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Latest != 2 {
		t.Fatalf("the refused Add left an episode: %+v", f)
	}
	done := make(chan error, 1)
	go func() { _, err := e.Add(ctx, "u", "I like thing3."); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("Add returned while the queue was full: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, e, "u"); len(got) != 3 {
		t.Fatalf("want 3 likes, got %v", got)
	}
}

// TestRestartAppliesPending: episodes committed but not applied when the
// engine stopped are applied after the next Open.
func TestRestartAppliesPending(t *testing.T) {
	t.Parallel()
	g := &gatedExtractor{gate: make(chan struct{})}
	dir := t.TempDir()
	e, err := memor.Open(dir, memor.Options{Extractor: g})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []string{"I live in Oslo.", "I speak Norwegian.", "I moved to Bergen."} {
		if _, err := e.Add(ctx, "u", s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = memor.Open(dir, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[lives_in=Bergen speaks_language=Norwegian]" {
		t.Fatalf("after restart: %s", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// flakyExtractor fails until healed.
type flakyExtractor struct{ healed atomic.Bool }

var errModelDown = errors.New("model down")

func (f *flakyExtractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	if !f.healed.Load() {
		return nil, errModelDown
	}
	return extract.NewRuleExtractor().Extract(ctx, text, at)
}

// TestFailureAndRetry: an extraction failure is recorded on the episode
// (never a crash, never partial state) and Retry applies it later.
func TestFailureAndRetry(t *testing.T) {
	t.Parallel()
	x := &flakyExtractor{}
	e, _ := openTest(t, memor.Options{Extractor: x})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", "I work at Initech."); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	f, _ := e.Freshness(ctx, "u")
	if f.Failed != 1 || f.Pending != 0 {
		t.Fatalf("freshness: %+v", f)
	}
	fails, err := e.Failed(ctx, "u")
	if err != nil || len(fails) != 1 || fails[0].Error != errModelDown.Error() {
		t.Fatalf("failed: %+v %v", fails, err)
	}
	if n, err := e.Retry(ctx, "u"); err != nil || n != 1 {
		t.Fatalf("retry while still down: %d %v", n, err)
	}
	x.healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[works_at=Initech]" {
		t.Fatalf("after retry: %s", got)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Failed != 0 {
		t.Fatalf("freshness after retry: %+v", f)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestInventedQuote: an op whose quote is not in the text is rejected and
// logged, never applied.
func TestInventedQuote(t *testing.T) {
	t.Parallel()
	liar := extract.ExtractorFunc(func(_ context.Context, text string, _ time.Time) ([]extract.Op, error) {
		return []extract.Op{
			{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Atlantis", Quote: "I live in Atlantis"},
			{Kind: extract.Assert, Subject: "user", Predicate: "likes", Object: "tea", Quote: "tea"},
		}, nil
	})
	e, _ := openTest(t, memor.Options{Extractor: liar})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", "Some tea, please.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[likes=tea]" {
		t.Fatalf("state: %s", got)
	}
	log, _ := e.Log(ctx, "u")
	if len(log) != 2 || log[0].Rule != memor.RuleReject || log[0].Object != "Atlantis" {
		t.Fatalf("log: %+v", log)
	}
}

// TestSyncAdd: memor.Sync() applies before Add returns, after any episodes
// still queued.
func TestSyncAdd(t *testing.T) {
	t.Parallel()
	g := &gatedExtractor{gate: make(chan struct{})}
	e, _ := openTest(t, memor.Options{Extractor: g, Workers: 1})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", "I live in Rome."); err != nil {
		t.Fatal(err)
	}
	close(g.gate)
	if _, err := e.Add(ctx, "u", "I moved to Milan.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[lives_in=Milan]" {
		t.Fatalf("state right after Sync add: %s", got)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	fs, _ := e.History(ctx, "u", "user", "lives_in")
	if len(fs) != 3 {
		t.Fatalf("history: %v", fs)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildProgress: Rebuild replays every episode through the current
// extractor, reports progress, keeps corrections and reproduces the state.
func TestRebuildProgress(t *testing.T) {
	t.Parallel()
	var calls []int
	e, _ := openTest(t, memor.Options{RebuildProgress: func(user string, done, total int) {
		if user == "u" {
			calls = append(calls, done*100+total)
		}
	}})
	ctx := context.Background()
	for _, s := range []string{"I live in Oslo.", "I moved to Bergen.", "I speak Norwegian."} {
		if _, err := e.Add(ctx, "u", s, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	fs, _ := e.History(ctx, "u", "user", "lives_in")
	var bergen string
	for _, f := range fs {
		if f.Object == "Bergen" {
			bergen = f.ID
		}
	}
	if err := e.Correct(ctx, "u", bergen); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(objects(t, e, "u"))
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(objects(t, e, "u")); after != before || before != "[lives_in=Oslo speaks_language=Norwegian]" {
		t.Fatalf("rebuild: %s → %s", before, after)
	}
	if fmt.Sprint(calls) != "[104 204 304 404]" {
		t.Fatalf("progress calls %v", calls)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// countingJudge answers replace for every predicate and counts its calls.
type countingJudge struct{ calls atomic.Int64 }

func (j *countingJudge) Judge(_ context.Context, predicate string, _ []string) (extract.Verdict, error) {
	j.calls.Add(1)
	if predicate == "hobby" {
		return extract.Append, nil
	}
	return extract.Replace, nil
}

// TestJudge: an unknown predicate's cardinality comes from the Judge once;
// the verdict is cached durably, so Rebuild and a reopen never ask again
// and give the same state.
func TestJudge(t *testing.T) {
	t.Parallel()
	j := &countingJudge{}
	dir := t.TempDir()
	e, err := memor.Open(dir, memor.Options{Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range []memor.FactInput{
		{Subject: "user", Predicate: "team", Object: "Red", ValidFrom: day(1)},
		{Subject: "user", Predicate: "team", Object: "Blue", ValidFrom: day(2)},
		{Subject: "user", Predicate: "hobby", Object: "chess", ValidFrom: day(1)},
		{Subject: "user", Predicate: "hobby", Object: "go", ValidFrom: day(2)},
	} {
		if _, err := e.Assert(ctx, "u", f); err != nil {
			t.Fatal(err)
		}
	}
	want := "[hobby=chess hobby=go team=Blue]"
	if got := fmt.Sprint(objects(t, e, "u")); got != want {
		t.Fatalf("state %s, want %s", got, want)
	}
	log, _ := e.Log(ctx, "u")
	if log[0].Rule != memor.RuleJudge {
		t.Fatalf("first decision %s, want judge", log[0].Rule)
	}
	if n := j.calls.Load(); n != 2 {
		t.Fatalf("judge called %d times, want 2 (once per predicate)", n)
	}
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = memor.Open(dir, memor.Options{Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != want || j.calls.Load() != 2 {
		t.Fatalf("after rebuild and reopen: %s, %d judge calls", got, j.calls.Load())
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// blockingExtractor blocks the episodes whose text starts with "slow:"
// until gate opens (and "later:" until later opens); every other episode
// goes straight to the rule extractor.
type blockingExtractor struct{ gate, later chan struct{} }

func (b *blockingExtractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	var wait chan struct{}
	switch {
	case strings.HasPrefix(text, "slow:"):
		wait = b.gate
	case strings.HasPrefix(text, "later:"):
		wait = b.later
	}
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return extract.NewRuleExtractor().Extract(ctx, text, at)
}

// TestUsersInParallel: with two workers, a user whose extraction hangs
// does not hold up another user; with one worker it does (the option is
// what provides the parallelism).
func TestUsersInParallel(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			x := &blockingExtractor{gate: make(chan struct{})}
			e, _ := openTest(t, memor.Options{Extractor: x, Workers: workers})
			ctx := context.Background()
			if _, err := e.Add(ctx, "slow", "slow: I live in Oslo."); err != nil {
				t.Fatal(err)
			}
			// Users are served in the order they became ready, so a
			// worker takes the slow user first.
			if _, err := e.Add(ctx, "fast", "I live in Rome."); err != nil {
				t.Fatal(err)
			}
			// One worker: the fast user cannot be served, a short wait
			// shows it. Two: it is served; the long bound only absorbs a
			// loaded machine.
			bound := 300 * time.Millisecond
			if workers > 1 {
				bound = 10 * time.Second
			}
			wait, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			err := e.Flush(wait, "fast")
			switch {
			case workers == 2 && err != nil:
				t.Fatalf("fast user waited behind the slow one: %v", err)
			case workers == 1 && !errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("one worker served two users at once: %v", err)
			}
			if f, _ := e.Freshness(ctx, "slow"); f.Pending != 1 {
				t.Fatalf("slow user: %+v", f)
			}
			close(x.gate)
			for _, u := range []string{"slow", "fast"} {
				if err := e.Flush(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			if got := fmt.Sprint(objects(t, e, "slow"), objects(t, e, "fast")); got != "[lives_in=Oslo] [lives_in=Rome]" {
				t.Fatalf("state: %s", got)
			}
		})
	}
}

// TestSyncAddFailure: an inline Add whose extraction fails still commits
// the episode, records the failure on it, applies nothing, and says so
// (ErrExtractionFailed, with the episode).
func TestSyncAddFailure(t *testing.T) {
	t.Parallel()
	x := &flakyExtractor{}
	e, _ := openTest(t, memor.Options{Extractor: x})
	ctx := context.Background()
	ep, err := e.Add(ctx, "u", "I work at Initech.", memor.Sync())
	if !errors.Is(err, memor.ErrExtractionFailed) || ep.Seq == 0 {
		t.Fatalf("inline Add with a failing extractor: episode %d, err %v; want the stored episode and ErrExtractionFailed", ep.Seq, err)
	}
	if f, _ := e.Freshness(ctx, "u"); f != (memor.Freshness{Applied: ep.Seq, Latest: ep.Seq, Failed: 1}) {
		t.Fatalf("freshness: %+v", f)
	}
	if got := objects(t, e, "u"); len(got) != 0 {
		t.Fatalf("state: %v", got)
	}
	x.healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[works_at=Initech]" {
		t.Fatalf("after retry: %s", got)
	}
}

// partialExtractor returns ops together with an error: the episode must
// fail as a whole, none of the ops applied.
func partialExtractor(_ context.Context, text string, at time.Time) ([]extract.Op, error) {
	ops, _ := extract.NewRuleExtractor().Extract(context.Background(), text, at)
	return ops, errors.New("model stopped half-way")
}

func TestNoPartialState(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{Extractor: extract.ExtractorFunc(partialExtractor)})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", "I live in Oslo and I speak Norwegian."); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, e, "u"); len(got) != 0 {
		t.Fatalf("partial state: %v", got)
	}
	if log, _ := e.Log(ctx, "u"); len(log) != 0 {
		t.Fatalf("partial log: %v", log)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Failed != 1 {
		t.Fatalf("freshness: %+v", f)
	}
}

// TestContextFedBack: an agent pastes what Context returned (facts and
// the verbatim episodes it recalls, "I just moved to Seattle." among them)
// into its next turn. Through the default asynchronous Add, nothing of it
// is learned again: not a new claim, not a reinforcement, not a log entry,
// and the fenced words do not make the new episode recallable. The same
// text without its markers does change the state, so the test can fail.
func TestContextFedBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	turns := []string{
		"I live in San Francisco.",
		"I work at Google as a software engineer.",
		"My brother Alex adopted a golden retriever named Buddy last month.",
		"I just moved to Seattle.",
		"I play the violin and I speak Spanish.",
	}
	setup := func() *memor.Engine {
		e, _ := openTest(t, memor.Options{})
		for i, s := range turns {
			if _, err := e.Add(ctx, "me", s, memor.At(day(i*10))); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Flush(ctx, "me"); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := setup()
	var blocks []string
	for _, q := range []string{"where do I live?", "I just moved to Seattle", "what instruments do I play", "Alex dog Buddy"} {
		b, err := e.Context(ctx, "me", q)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	all := strings.Join(blocks, "\n")
	if !strings.Contains(all, "I just moved to Seattle.") || !strings.Contains(all, "violin") {
		t.Fatalf("Context did not recall the episodes this test needs:\n%s", all)
	}
	before := fullDump(t, e, "me")
	for _, b := range blocks {
		if _, err := e.Add(ctx, "me", "Here is what you know:\n"+b+"\nThanks, what should I do this weekend?", memor.At(day(100))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	if after := fullDump(t, e, "me"); after != before {
		t.Fatalf("fenced recall was re-learned:\n%s\n---\n%s", before, after)
	}
	rs, err := e.Query(ctx, "me", "violin golden retriever", memor.QueryOptions{K: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Episode != nil && r.Episode.Seq > uint64(len(turns)) {
			t.Fatalf("the fed-back episode is recalled by its fenced words: %q", r.Text())
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}

	// Control: without the markers the same text teaches something.
	bare := strings.NewReplacer(extract.FenceOpen, "", extract.FenceClose, "").Replace(strings.Join(blocks, "\n"))
	c := setup()
	before = fullDump(t, c, "me")
	if _, err := c.Add(ctx, "me", bare, memor.At(day(100)), memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if fullDump(t, c, "me") == before {
		t.Fatal("control: the unfenced recall changed nothing, so the test proves nothing")
	}
}

// TestRebuildSameAsFirstPass: a conversation ingested by the asynchronous
// workers (relations named in one episode and used in later ones, ends,
// additive values, a failure-free extractor) is rebuilt into exactly the
// same versions and log, corrections kept, with progress reported per
// episode.
func TestRebuildSameAsFirstPass(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var progress []string
	e, _ := openTest(t, memor.Options{Workers: 3, RebuildProgress: func(user string, done, total int) {
		mu.Lock()
		progress = append(progress, fmt.Sprintf("%s:%d/%d", user, done, total))
		mu.Unlock()
	}})
	ctx := context.Background()
	conv := []string{
		"I live in Austin and I work at Dell.",
		"My brother Alex lives in Denver.",
		"Alex moved to Dallas.",
		"I adopted a cat called Luna last weekend.",
		"I also work at Starbucks on weekends.",
		"I quit my job at Dell.",
		"I moved to Seattle in January.",
		"My friend Sarah lives in Austin. She is vegan.",
		"I no longer live in Seattle.",
		"I speak English and Spanish.",
	}
	for _, u := range []string{"a", "b"} {
		for i, s := range conv {
			if _, err := e.Add(ctx, u, s, memor.At(time.Date(2026, 3, 1+i, 12, 0, 0, 0, time.UTC))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range []string{"a", "b"} {
		if err := e.Flush(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(objects(t, e, "a")); got != fmt.Sprint(objects(t, e, "b")) || !strings.Contains(got, "lives_in=Dallas") {
		t.Fatalf("first pass: %s", got)
	}
	// A correction: Luna was never the user's cat.
	fs, _ := e.History(ctx, "a", "user", "has_pet")
	if len(fs) != 1 {
		t.Fatalf("has_pet history: %v", fs)
	}
	if err := e.Correct(ctx, "a", fs[0].ID); err != nil {
		t.Fatal(err)
	}
	first := fullDump(t, e, "a")
	if strings.Contains(fmt.Sprint(objects(t, e, "a")), "has_pet") {
		t.Fatal("correction not applied")
	}
	if err := e.Rebuild(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if again := fullDump(t, e, "a"); again != first {
		t.Fatalf("rebuild differs from the first pass:\n%s\n---\n%s", first, again)
	}
	want := make([]string, 0, len(conv)+1)
	for i := range len(conv) + 1 {
		want = append(want, fmt.Sprintf("a:%d/%d", i+1, len(conv)+1))
	}
	if fmt.Sprint(progress) != fmt.Sprint(want) {
		t.Fatalf("progress %v, want %v", progress, want)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQuoteFromFenceRejected: the quote check runs against the text the
// extractor was given, fenced recall removed, so an extractor that reads
// the raw episode and quotes the recalled span is rejected too.
func TestQuoteFromFenceRejected(t *testing.T) {
	t.Parallel()
	raw := extract.ExtractorFunc(func(_ context.Context, _ string, _ time.Time) ([]extract.Op, error) {
		return []extract.Op{
			{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Paris", Quote: "I live in Paris"},
			{Kind: extract.Assert, Subject: "user", Predicate: "likes", Object: "tea", Quote: "I like tea"},
		}, nil
	})
	e, _ := openTest(t, memor.Options{Extractor: raw})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", extract.Fence("I live in Paris.")+" I like tea."); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[likes=tea]" {
		t.Fatalf("state: %s", got)
	}
	log, _ := e.Log(ctx, "u")
	if len(log) != 2 || log[0].Rule != memor.RuleReject || log[0].Object != "Paris" || !strings.Contains(log[0].Detail, "quote") {
		t.Fatalf("log: %+v", log)
	}
}

// TestRebuildOfPendingReleasesQueue: Rebuild applies a user's queued
// episodes too; the queue slots they held are released, so the bounded
// queue does not shrink for good.
func TestRebuildOfPendingReleasesQueue(t *testing.T) {
	t.Parallel()
	x := &blockingExtractor{gate: make(chan struct{}), later: make(chan struct{})}
	e, _ := openTest(t, memor.Options{Extractor: x, Workers: 1, QueueSize: 2})
	ctx := context.Background()
	if _, err := e.Add(ctx, "a", "slow: I live in Oslo."); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "b", "I live in Rome."); err != nil {
		t.Fatal(err)
	}
	if err := e.Rebuild(ctx, "b"); err != nil { // applies b's queued episode
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "b")); got != "[lives_in=Rome]" {
		t.Fatalf("b after rebuild: %s", got)
	}
	close(x.gate)
	if err := e.Flush(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// Both slots must be free again: two Adds fit without waiting, while
	// the worker is held on a slow episode.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for i := range 2 {
		if _, err := e.Add(short, "c", fmt.Sprintf("later: I like thing%d.", i)); err != nil {
			t.Fatalf("add %d: a queue slot leaked: %v", i, err)
		}
	}
	close(x.later)
	if err := e.Flush(ctx, "c"); err != nil {
		t.Fatal(err)
	}
}

// TestRejectedOpNotJudged: an op the resolver rejects (its quote is not in
// the text) never reaches the judge, so it cannot fix a predicate's
// cardinality for good.
func TestRejectedOpNotJudged(t *testing.T) {
	t.Parallel()
	liar := extract.ExtractorFunc(func(_ context.Context, _ string, _ time.Time) ([]extract.Op, error) {
		return []extract.Op{{Kind: extract.Assert, Subject: "user", Predicate: "current_car", Object: "Tesla", Quote: "I drive a Tesla"}}, nil
	})
	j := &countingJudge{}
	e, _ := openTest(t, memor.Options{Extractor: liar, Judge: j})
	ctx := context.Background()
	if _, err := e.Add(ctx, "u", "Nice weather today.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	log, _ := e.Log(ctx, "u")
	if j.calls.Load() != 0 || len(log) != 1 || log[0].Rule != memor.RuleReject {
		t.Fatalf("judge calls %d, log %+v", j.calls.Load(), log)
	}
}
