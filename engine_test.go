package memor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/internal/enginetest"
	"github.com/memor-db/memor/kv"
)

// openTest opens an engine on a new folder; its cleanup runs Check (see
// internal/enginetest).
func openTest(t *testing.T, o memor.Options) (*memor.Engine, string) {
	t.Helper()
	return enginetest.Open(t, o)
}

func day(d int) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d) }

// randomOp is one structured write of the order-independence property.
type randomOp struct {
	end                            bool
	subject, predicate, obj, ctxID string
	at                             time.Time
	conf                           float64
}

func (o randomOp) apply(ctx context.Context, e *memor.Engine, user string) error {
	if o.end {
		_, err := e.End(ctx, user, memor.EndInput{Subject: o.subject, Predicate: o.predicate, Object: o.obj, Context: o.ctxID, At: o.at})
		return err
	}
	_, err := e.Assert(ctx, user, memor.FactInput{Subject: o.subject, Predicate: o.predicate, Object: o.obj,
		Context: o.ctxID, ValidFrom: o.at, Confidence: o.conf})
	return err
}

func genOps(r *rand.Rand, n int) []randomOp {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	ops := make([]randomOp, n)
	for i := range ops {
		o := randomOp{subject: pick("user", "Alex"), predicate: pick("lives_in", "plays_instrument"),
			obj: pick("A", "B", "C"), ctxID: pick("", "", "work"), at: day(r.IntN(6)),
			conf: []float64{0, 1, 0.95, 0.85, 0.5}[r.IntN(5)]}
		if r.IntN(5) == 0 {
			o.end = true
			o.conf = 0
			if r.IntN(2) == 0 {
				o.obj = ""
			}
		}
		ops[i] = o
	}
	return ops
}

// validState renders the current belief about valid time: every live
// version's object, context, interval, status and reinforcement, without
// IDs (which include the user) or transaction times.
func validState(t *testing.T, e *memor.Engine, user string) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for _, s := range []string{"user", "Alex"} {
		for _, p := range []string{"lives_in", "plays_instrument"} {
			fs, err := e.History(ctx, user, s, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if f.Open() {
					lines = append(lines, fmt.Sprintf("%s %s %s/%s [%s,%s) %s ×%d", f.Subject, f.Predicate, f.Object, f.Context,
						fmtTime(f.ValidFrom), fmtTime(f.ValidTo), f.Status, f.Reinforced))
				}
			}
		}
	}
	for d := range 8 {
		fs, err := e.AsOf(ctx, user, day(d), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			lines = append(lines, fmt.Sprintf("asof %d: %s", d, f))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestOrderIndependence is DESIGN §3's law: the valid-time state of a slot
// is a function of the set of assertions and ends, not of their order.
// Random histories with colliding times, contexts, low-confidence claims
// and ends are applied in order and shuffled; the states must match.
func TestOrderIndependence(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{NoSync: true})
	ctx := context.Background()
	trials := 60
	if testing.Short() {
		trials = 15
	}
	for trial := range trials {
		r := rand.New(rand.NewPCG(uint64(trial), 7))
		ops := genOps(r, 4+r.IntN(14))
		users := []string{fmt.Sprintf("in-order-%d", trial), fmt.Sprintf("shuffled-%d", trial), fmt.Sprintf("reversed-%d", trial)}
		orders := [][]randomOp{ops, slices.Clone(ops), slices.Clone(ops)}
		r.Shuffle(len(orders[1]), func(i, j int) { orders[1][i], orders[1][j] = orders[1][j], orders[1][i] })
		slices.Reverse(orders[2])
		for i, u := range users {
			for _, o := range orders[i] {
				if err := o.apply(ctx, e, u); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := validState(t, e, users[0])
		for _, u := range users[1:] {
			if got := validState(t, e, u); got != want {
				t.Fatalf("trial %d: %s differs from in-order\nops: %+v\nin order:\n%s\n\n%s:\n%s", trial, u, ops, want, u, got)
			}
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// dump returns every key and value under a user's keyspace, for
// byte-level comparisons.
func dump(t *testing.T, dir string, e *memor.Engine, user string) string {
	t.Helper()
	fs, err := e.History(context.Background(), user, "user", "lives_in")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%+v\n", f)
	}
	return b.String()
}

// TestIdempotence: replaying an assertion changes nothing, and Rebuild
// (which replays every episode) reproduces the same facts byte for byte.
func TestIdempotence(t *testing.T) {
	t.Parallel()
	e, dir := openTest(t, memor.Options{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	ops := genOps(r, 40)
	for _, o := range ops {
		if err := o.apply(ctx, e, "u"); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Z", ValidFrom: day(9)})
	if err != nil || ds[0].Rule != memor.RuleSupersede {
		t.Fatalf("first assert: %v %v", ds, err)
	}
	before := validState(t, e, "u")
	ds, err = e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Z", ValidFrom: day(9)})
	if err != nil || len(ds) != 1 || ds[0].Rule != memor.RuleNoop {
		t.Fatalf("replayed assert: %v %v", ds, err)
	}
	if after := validState(t, e, "u"); after != before {
		t.Fatalf("replay changed state:\n%s\n---\n%s", before, after)
	}
	hist := dump(t, dir, e, "u")
	log1, err := e.Log(ctx, "u")
	if err != nil || len(log1) == 0 {
		t.Fatalf("log: %v, %v", log1, err)
	}
	for range 2 {
		if err := e.Rebuild(ctx, "u"); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, dir, e, "u"); got != hist {
			t.Fatalf("rebuild changed versions:\n%s\n---\n%s", hist, got)
		}
		log2, err := e.Log(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(log1) != fmt.Sprint(log2) {
			t.Fatalf("rebuild changed the resolution log")
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTenancy: adversarial user IDs whose encodings could collide if keys
// were naively concatenated never see each other's data, and a raw scan of
// the store shows every key under exactly its owner's prefix.
func TestTenancy(t *testing.T) {
	t.Parallel()
	e, dir := openTest(t, memor.Options{})
	ctx := context.Background()
	long := strings.Repeat("é日本", 10<<10/7)
	// (IDs with NUL and other control characters are refused: users_test.go.)
	users := []string{"a", "ab", "a/", "/", "a ", " a", "a b", "\xff"[:0] + "ÿ", long, long + "x"}
	for i, u := range users {
		if _, err := e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: fmt.Sprintf("city-%d", i), ValidFrom: day(1)}); err != nil {
			t.Fatalf("user %q: %v", u, err)
		}
		if _, err := e.Add(ctx, u, fmt.Sprintf("episode of user %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, u := range users {
		fs, err := e.State(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Object != fmt.Sprintf("city-%d", i) || fs[0].User != u {
			t.Fatalf("user %d sees %v", i, fs)
		}
		eps, err := e.Episodes(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) != 2 || eps[1].Text != fmt.Sprintf("episode of user %d", i) {
			t.Fatalf("user %d sees episodes %v", i, eps)
		}
	}
	if _, err := e.State(ctx, ""); !errors.Is(err, memor.ErrInvalidUser) {
		t.Fatalf("empty user: %v", err)
	}
	// Forget one user whose ID prefixes others: only it goes.
	if err := e.Forget(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		fs, err := e.State(ctx, u)
		if err != nil {
			t.Fatalf("after Forget(a), user %d: %v", i, err)
		}
		if (u == "a") != (len(fs) == 0) {
			t.Fatalf("after Forget(a), user %d has %v", i, fs)
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Raw scan: every 'u' key decodes to a known user, and the user's data
	// lies under exactly that user's root.
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	known := map[string]bool{}
	for _, u := range users[1:] {
		known[u] = true
	}
	seen := map[string]int{}
	err = db.Scan(ctx, []byte{kv.TagUser}, func(k, _ []byte) error {
		d := kv.NewDecoder(k[1:])
		u := d.String()
		if d.Err != nil || !known[u] {
			return fmt.Errorf("key %q belongs to no known user (%q, %v)", k, u, d.Err)
		}
		for other := range known {
			if other != u && bytes.HasPrefix(k, kv.UserRoot(other)) {
				return fmt.Errorf("key of %q lies under the root of %q", u, other)
			}
		}
		seen[u]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(known) {
		t.Fatalf("keys for %d users, want %d", len(seen), len(known))
	}
}

// TestBadInput: invalid input gets a typed error, never a panic and never
// partial state.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{MaxTextBytes: 1000})
	ctx := context.Background()
	valid := memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Paris"}
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"empty user", func() error { _, err := e.Add(ctx, "", "hi"); return err }, memor.ErrInvalidUser},
		{"invalid UTF-8 user", func() error { _, err := e.Add(ctx, "\xff", "hi"); return err }, memor.ErrInvalidUser},
		{"huge user", func() error { _, err := e.Add(ctx, strings.Repeat("x", memor.MaxUserBytes+1), "hi"); return err }, memor.ErrInvalidUser},
		{"invalid UTF-8 text", func() error { _, err := e.Add(ctx, "u", "I live in \xff"); return err }, memor.ErrInvalidText},
		{"empty text", func() error { _, err := e.Add(ctx, "u", ""); return err }, memor.ErrInvalidText},
		{"blank text", func() error { _, err := e.Add(ctx, "u", " \n\t", memor.Sync()); return err }, memor.ErrInvalidText},
		{"text over limit", func() error { _, err := e.Add(ctx, "u", strings.Repeat("a", 1001)); return err }, memor.ErrTooLarge},
		{"episode time out of range", func() error {
			_, err := e.Add(ctx, "u", "hi", memor.At(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)))
			return err
		}, memor.ErrInvalidTime},
		{"empty object", func() error { f := valid; f.Object = " "; _, err := e.Assert(ctx, "u", f); return err }, memor.ErrInvalidFact},
		{"empty predicate", func() error { f := valid; f.Predicate = "--"; _, err := e.Assert(ctx, "u", f); return err }, memor.ErrInvalidFact},
		{"confidence above 1", func() error { f := valid; f.Confidence = 1.5; _, err := e.Assert(ctx, "u", f); return err }, memor.ErrInvalidFact},
		{"negative confidence", func() error { f := valid; f.Confidence = -0.1; _, err := e.Assert(ctx, "u", f); return err }, memor.ErrInvalidFact},
		{"invalid UTF-8 object", func() error { f := valid; f.Object = "\xc3"; _, err := e.Assert(ctx, "u", f); return err }, memor.ErrInvalidFact},
		{"valid time out of range", func() error {
			f := valid
			f.ValidFrom = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
			_, err := e.Assert(ctx, "u", f)
			return err
		}, memor.ErrInvalidTime},
		{"asof out of range", func() error { _, err := e.AsOf(ctx, "u", time.Time{}, time.Now()); return err }, memor.ErrInvalidTime},
		{"unknown fact ID", func() error { return e.Correct(ctx, "u", strings.Repeat("ab", 16)) }, memor.ErrNotFound},
		{"malformed fact ID", func() error { return e.Correct(ctx, "u", "nope") }, memor.ErrNotFound},
		{"cancelled context", func() error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			_, err := e.Assert(c, "u", valid)
			return err
		}, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	// None of the rejected writes left anything behind.
	eps, err := e.Episodes(ctx, "u")
	if err != nil || len(eps) != 0 {
		t.Fatalf("rejected input left episodes: %v %v", eps, err)
	}
	// Another user's fact ID is not found for this user.
	ds, err := e.Assert(ctx, "other", valid)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Correct(ctx, "u", ds[0].FactID); !errors.Is(err, memor.ErrNotFound) {
		t.Fatalf("correcting another user's fact: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.State(ctx, "u"); !errors.Is(err, memor.ErrClosed) {
		t.Fatalf("closed engine: %v", err)
	}
	if _, err := e.Add(ctx, "u", "hi"); !errors.Is(err, memor.ErrClosed) {
		t.Fatalf("closed engine: %v", err)
	}
}

// TestFormatVersion: a store written by a newer format fails to open
// clearly, and nothing is overwritten.
func TestFormatVersion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(context.Background(), "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo"}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetFormatVersionForTest(dir, kv.FormatVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := memor.Open(dir, memor.Options{}); !errors.Is(err, memor.ErrFormatTooNew) {
		t.Fatalf("open newer format: %v", err)
	}
	db, err = kv.Open(dir, kv.Options{})
	if !errors.Is(err, kv.ErrFormatTooNew) {
		t.Fatalf("kv open newer format: %v", err)
	}
	_ = db
}

// TestConcurrency: many goroutines over many users, mixing writes, reads,
// corrections and forgets; run under -race in CI.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{NoSync: true})
	ctx := context.Background()
	raceOps(t, e, 8, 60, 1, func(r *rand.Rand, i int) error {
		u := fmt.Sprintf("user-%d", r.IntN(12))
		var err error
		switch r.IntN(10) {
		case 0:
			_, err = e.State(ctx, u)
		case 1:
			_, err = e.AsOf(ctx, u, day(r.IntN(9)), time.Now())
		case 2:
			var fs []memor.Fact
			fs, err = e.History(ctx, u, "user", "lives_in")
			if err == nil && len(fs) > 0 {
				err = e.Correct(ctx, u, fs[r.IntN(len(fs))].ID)
				if errors.Is(err, memor.ErrNotFound) {
					err = nil // forgotten meanwhile
				}
			}
		case 3:
			if i%20 == 0 {
				err = e.Forget(ctx, u)
			}
		default:
			o := genOps(r, 1)[0]
			err = o.apply(ctx, e, u)
		}
		return err
	})
}

// raceOps runs op steps times in each of n goroutines (rand seeded by
// the goroutine and seed), fails the test on any error, and then requires
// Check to pass.
func raceOps(t *testing.T, e *memor.Engine, n, steps int, seed uint64, op func(r *rand.Rand, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), seed))
			for i := range steps {
				if err := op(r, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := e.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLocked: a second Open of a store in use fails with ErrLocked, not a
// corruption error.
func TestLocked(t *testing.T) {
	t.Parallel()
	_, dir := openTest(t, memor.Options{})
	if _, err := memor.Open(dir, memor.Options{}); !errors.Is(err, memor.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
}

// TestClockBackAcrossRestart: facts applied before a restart stay current
// when the clock comes back behind their transaction time.
func TestClockBackAcrossRestart(t *testing.T) {
	t.Parallel()
	clock := newClock()
	clock.Set(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo", ValidFrom: day(1)}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	clock.Advance(-time.Hour)
	e, err = memor.Open(dir, memor.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if fs, err := e.State(ctx, "u"); err != nil || len(fs) != 1 {
		t.Fatalf("state after the clock went back: %v, %v", fs, err)
	}
	if err := e.Rebuild(ctx, "nobody"); err != nil {
		t.Fatal(err)
	}
	if us, err := e.Users(ctx); err != nil || len(us) != 1 {
		t.Fatalf("Rebuild of an unknown user created %v (%v)", us, err)
	}
}

// failingEmbedder fails on any text containing poison.
type failingEmbedder struct {
	embed.Embedder
	poison string
}

func (f failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, s := range texts {
		if strings.Contains(s, f.poison) {
			return nil, errors.New("embedder down")
		}
	}
	return f.Embedder.Embed(ctx, texts)
}

// TestFailedWriteLeavesNoIndexState: a batch that fails halfway, after
// its first facts went into the cached indexes, commits nothing; the
// writes after it must not build on the indexes it touched.
func TestFailedWriteLeavesNoIndexState(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{NoSync: true, Embedder: failingEmbedder{embed.NewHash(64), "Atlantis"}})
	ctx := context.Background()
	firstFact := func(q string) string {
		t.Helper()
		rs, err := e.Query(ctx, "u", q, memor.QueryOptions{K: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Fact != nil {
				return r.Fact.Object
			}
		}
		return ""
	}
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Paris", ValidFrom: day(0)}); err != nil {
		t.Fatal(err)
	}
	// The facts' vectors are fetched first (in one call) and go into the
	// indexes; the episode's own text, embedded last, fails.
	_, err := e.Add(ctx, "u", "I moved to Oslo and I like jazz. Atlantis is a myth.", memor.At(day(1)), memor.Sync())
	if err == nil {
		t.Fatal("episode with a failing embedding succeeded")
	}
	// Query reads the cached indexes: it must serve what was committed.
	if got := firstFact("where do I live"); got != "Paris" {
		t.Errorf("after the failed batch, where do I live = %q, want Paris", got)
	}
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "likes", Object: "tea", ValidFrom: day(2)}); err != nil {
		t.Fatal(err)
	}
	if got := firstFact("what do I like"); got != "tea" {
		t.Errorf("what do I like = %q, want tea", got)
	}
	if got := firstFact("where do I live"); got != "Paris" {
		t.Errorf("where do I live = %q, want Paris", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDurableWriteSyncs counts the write-ahead log syncs of durable
// writes: one per Assert, one per Add (its episode), none for applying an
// added episode (recovery re-applies it from the durable log).
func TestDurableWriteSyncs(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	walSyncs := func() uint64 {
		t.Helper()
		s, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.WALSyncs
	}
	// Warm up: the first write of a user registers it.
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "likes", Object: "tea"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		before := walSyncs()
		if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d", i)}); err != nil {
			t.Fatal(err)
		}
		if got := walSyncs() - before; got != 1 {
			t.Errorf("Assert %d: %d log syncs, want 1", i, got)
		}
	}
	for i := range 5 {
		before := walSyncs()
		if _, err := e.Add(ctx, "u", fmt.Sprintf("I live in city %d.", i)); err != nil {
			t.Fatal(err)
		}
		if err := e.Flush(ctx, "u"); err != nil {
			t.Fatal(err)
		}
		if got := walSyncs() - before; got != 1 {
			t.Errorf("Add+Flush %d: %d log syncs, want 1", i, got)
		}
	}
	nosync, _ := openTest(t, memor.Options{NoSync: true})
	before, _ := nosync.Stats(ctx) // Open writes the format version durably
	for i := range 5 {
		if _, err := nosync.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := nosync.Stats(ctx); err != nil || s.WALSyncs != before.WALSyncs {
		t.Errorf("NoSync store: %+v after %+v, %v; want no log syncs", s, before, err)
	}
}

// TestIndexCacheBudget: with Options.IndexCacheBytes the loaded indexes
// stay within the budget, evicted users are reloaded on their next read
// and answer exactly as before, and writes, reads, corrections and
// forgetting racing with evictions leave a store that checks clean.
func TestIndexCacheBudget(t *testing.T) {
	t.Parallel()
	const budget = 400 << 10 // about three 40-fact users
	e, _ := openTest(t, memor.Options{NoSync: true, IndexCacheBytes: budget})
	ctx := context.Background()
	users := 12
	answers := map[string]string{}
	render := func(rs []memor.Result) string {
		var b strings.Builder
		for _, r := range rs {
			fmt.Fprintf(&b, "%s %.9f|", r.Text(), r.Score)
		}
		return b.String()
	}
	for u := range users {
		user := fmt.Sprintf("user-%d", u)
		var batch []memor.FactInput
		for i := range 40 {
			in := memor.FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("hobby %d-%d", u, i), ValidFrom: day(i)}
			if i%10 == 0 {
				in.Predicate, in.Object = "lives_in", fmt.Sprintf("city %d-%d", u, i)
			}
			batch = append(batch, in)
		}
		if _, err := e.AssertBatch(ctx, user, batch); err != nil {
			t.Fatal(err)
		}
		rs, err := e.Query(ctx, user, "where do I live and what do I like?", memor.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		answers[user] = render(rs)
	}
	for u := range users {
		user := fmt.Sprintf("user-%d", u)
		rs, err := e.Query(ctx, user, "where do I live and what do I like?", memor.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := render(rs); got != answers[user] {
			t.Fatalf("%s after eviction and reload:\n%s\nwant\n%s", user, got, answers[user])
		}
		s, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.IndexBytes > budget || s.IndexedUsers >= users || s.IndexedUsers < 1 {
			t.Fatalf("after reading %s: %d users, %d bytes loaded; budget %d", user, s.IndexedUsers, s.IndexBytes, budget)
		}
	}

	// Racing evictions: a budget below one user keeps every read a load.
	tiny, _ := openTest(t, memor.Options{NoSync: true, IndexCacheBytes: 1})
	raceOps(t, tiny, 4, 60, 5, func(r *rand.Rand, i int) error {
		u := fmt.Sprintf("user-%d", r.IntN(5))
		var err error
		switch k := r.IntN(10); {
		case k < 4:
			_, err = tiny.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: fmt.Sprintf("city %d", r.IntN(4)), ValidFrom: day(r.IntN(20))})
		case k < 8:
			_, err = tiny.Query(ctx, u, "where do I live", memor.QueryOptions{})
		case k < 9:
			var fs []memor.Fact
			if fs, err = tiny.History(ctx, u, "user", "lives_in"); err == nil && len(fs) > 0 {
				err = tiny.Correct(ctx, u, fs[r.IntN(len(fs))].ID)
			}
		default:
			if i%15 == 0 {
				err = tiny.Forget(ctx, u)
			}
		}
		if errors.Is(err, memor.ErrNotFound) {
			err = nil // forgotten meanwhile
		}
		return err
	})
}

// countingEmbedder counts Embed calls.
type countingEmbedder struct {
	embed.Embedder
	calls, texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

// TestBatchEmbedsOnce: a batch of facts costs the embedder one call (an
// HTTP embedder one request per its batch size), not one per fact, and
// serves the same answers.
func TestBatchEmbedsOnce(t *testing.T) {
	t.Parallel()
	emb := &countingEmbedder{Embedder: embed.NewHash(64)}
	e, _ := openTest(t, memor.Options{NoSync: true, Embedder: emb})
	ctx := context.Background()
	var batch []memor.FactInput
	for i := range 40 {
		batch = append(batch, memor.FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprint("dish ", i), ValidFrom: day(1)})
	}
	batch = append(batch, batch[3]) // restated: one text, one vector
	if _, err := e.AssertBatch(ctx, "u", batch); err != nil {
		t.Fatal(err)
	}
	if c, n := emb.calls.Load(), emb.texts.Load(); c != 1 || n != 40 {
		t.Fatalf("a batch of 41 facts (40 texts) cost %d embedder calls over %d texts", c, n)
	}
	rs, err := e.Query(ctx, "u", "dish 17", memor.QueryOptions{K: 1})
	if err != nil || len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "dish 17" {
		t.Fatalf("query after the batch: %v %v", rs, err)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
