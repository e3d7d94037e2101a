package studio_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// clock is the seed's transaction time: each write is recorded at the
// instant the story sets.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// failing is the built-in extractor, except that it fails while down is
// set: the seed's failed episode, which Retry then applies.
type failing struct {
	next extract.Extractor
	down *atomic.Bool
}

var errExtractor = errors.New("extractor unavailable (seed)")

func (f failing) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	if f.down.Load() {
		return nil, errExtractor
	}
	return f.next.Extract(ctx, text, at)
}

// seedStory is San Francisco → Seattle, a late fact, a contest and a
// correction, each recorded on its own day:
//
//	2026-01-10  I live in San Francisco.                 add
//	2026-03-02  my brother Alex, his dog Buddy           add (graph: user → brother → Alex → has_pet)
//	2026-07-11  I just moved to Seattle.                 supersede
//	2026-08-01  lived in Oakland from 2026-04-15         late (structured, recorded after Seattle)
//	2026-09-01  I might move to Austin.                  contest
//	2026-09-15  I work at Initech.  (2026-10-01 retracted: correct)
//	2026-10-05  I play the violin.  (extraction failed: Retry applies it)
type seedStory struct {
	e     *memor.Engine
	clock *clock
	down  *atomic.Bool
	user  string
	// Recorded are the story's transaction days, in order.
	Recorded []time.Time
	Now      time.Time
}

func seed(t testing.TB, user string) *seedStory {
	t.Helper()
	ctx := context.Background()
	c := &clock{t: date("2026-01-10")}
	down := new(atomic.Bool)
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), memor.Options{Clock: c.now, NoSync: true,
		Extractor: failing{extract.NewRuleExtractor(), down}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := &seedStory{e: e, clock: c, down: down, user: user, Now: date("2026-11-01")}
	add := func(rec, at, text string) {
		t.Helper()
		c.set(date(rec).Add(9 * time.Hour))
		s.Recorded = append(s.Recorded, c.now())
		_, err := e.Add(ctx, user, text, memor.At(date(at)), memor.Sync())
		if err != nil && !errors.Is(err, memor.ErrExtractionFailed) {
			t.Fatal(err)
		}
	}
	add("2026-01-10", "2026-01-10", "I live in San Francisco.")
	add("2026-03-02", "2026-03-02", "My brother Alex adopted a golden retriever named Buddy last month.")
	add("2026-07-11", "2026-07-11", "I just moved to Seattle.")
	c.set(date("2026-08-01").Add(9 * time.Hour))
	s.Recorded = append(s.Recorded, c.now())
	if _, err := e.Assert(ctx, user, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Oakland",
		ValidFrom: date("2026-04-15"), Confidence: 0.9, Quote: "I lived in Oakland from mid-April."}); err != nil {
		t.Fatal(err)
	}
	add("2026-09-01", "2026-09-01", "I might move to Austin.")
	add("2026-09-15", "2026-09-15", "I work at Initech.")
	st, err := e.State(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	c.set(date("2026-10-01").Add(9 * time.Hour))
	s.Recorded = append(s.Recorded, c.now())
	for _, f := range st {
		if f.Predicate == "works_at" {
			if err := e.Correct(ctx, user, f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	down.Store(true)
	add("2026-10-05", "2026-10-05", "I play the violin.")
	down.Store(false)
	c.set(s.Now)
	return s
}

func TestSeedStory(t *testing.T) {
	s := seed(t, "alice")
	vs, err := s.e.Versions(context.Background(), s.user)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range vs {
		t.Logf("%-40s %-9s %-9s v[%s,%s) tx[%s,%s) %.2f", f.String(), f.Rule, f.Status, f.ValidFrom.Format("01-02"), f.ValidTo.Format("01-02"), f.RecordedAt.Format("01-02"), f.ExpiredAt.Format("01-02"), f.Confidence)
	}
}
