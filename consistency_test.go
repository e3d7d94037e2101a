package memor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestConcurrentReadsServeEachVersionOnce runs one writer superseding the
// same One slot in a loop and Prune moving the expired versions to the
// archive, while readers call State, AsOf, History, Query and Check. Every
// read answers from one state of the store: the slot has exactly one value
// at any instant (none twice, none missing), History never serves a
// version twice nor loses one it served before, and Check passes.
func TestConcurrentReadsServeEachVersionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{NoSync: true})
	const user = "u"
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	assert := func(i int) error {
		_, err := e.Assert(ctx, user, memor.FactInput{Subject: "user", Predicate: "lives_in",
			Object: fmt.Sprintf("city%d", i), ValidFrom: base.Add(time.Duration(i) * time.Minute)})
		return err
	}
	if err := assert(0); err != nil {
		t.Fatal(err)
	}
	run := 5 * time.Second
	if testing.Short() {
		run = 2 * time.Second
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	loop := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for {
				select {
				case <-stop:
					if n == 0 {
						fail("%s never ran", name)
					}
					return
				default:
				}
				if err := fn(); err != nil {
					fail("%s: %v", name, err)
					return
				}
				n++
			}
		}()
	}
	writes := 1
	loop("writer", func() error {
		err := assert(writes)
		writes++
		return err
	})
	loop("prune", func() error {
		_, err := e.Prune(ctx, time.Now().Add(time.Hour))
		return err
	})
	livesIn := func(fs []memor.Fact) []memor.Fact {
		var out []memor.Fact
		for _, f := range fs {
			if f.Predicate == "lives_in" {
				out = append(out, f)
			}
		}
		return out
	}
	one := func(what string, fs []memor.Fact, want string) error {
		fs = livesIn(fs)
		if len(fs) != 1 || (want != "" && fs[0].Object != want) {
			var objs []string
			for _, f := range fs {
				objs = append(objs, fmt.Sprintf("%s (recorded %v, expired %v)", f.Object, f.RecordedAt, f.ExpiredAt))
			}
			return fmt.Errorf("%s: %d values of lives_in %v, want one %s", what, len(fs), objs, want)
		}
		return nil
	}
	loop("State", func() error {
		fs, err := e.State(ctx, user)
		if err != nil {
			return err
		}
		return one("State", fs, "")
	})
	loop("AsOf now", func() error {
		fs, err := e.AsOf(ctx, user, time.Now(), time.Now())
		if err != nil {
			return err
		}
		return one("AsOf(now, now)", fs, "")
	})
	loop("AsOf past", func() error {
		fs, err := e.AsOf(ctx, user, base.Add(30*time.Second), time.Now())
		if err != nil {
			return err
		}
		return one("AsOf(first minute, now)", fs, "city0")
	})
	loop("History", func() func() error {
		type version struct {
			id  string
			rec time.Time
		}
		seen := map[version]bool{}
		return func() error {
			fs, err := e.History(ctx, user, "user", "lives_in")
			if err != nil {
				return err
			}
			got := map[version]bool{}
			for _, f := range fs {
				v := version{f.ID, f.RecordedAt}
				if got[v] {
					return fmt.Errorf("History serves version %s (%s, recorded %v) twice", f.ID, f.Object, f.RecordedAt)
				}
				got[v] = true
			}
			for v := range seen {
				if !got[v] {
					return fmt.Errorf("History lost version %s recorded %v that an earlier call served", v.id, v.rec)
				}
			}
			seen = got
			return nil
		}
	}())
	loop("Query", func() error {
		rs, err := e.Query(ctx, user, "where do I live", memor.QueryOptions{NoEpisodes: true})
		if err != nil {
			return err
		}
		var fs []memor.Fact
		for _, r := range rs {
			if r.Fact != nil {
				fs = append(fs, *r.Fact)
			}
		}
		return one("Query", fs, "")
	})
	loop("Check", func() error { return e.Check(ctx) })
	time.Sleep(run)
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("after %d writes", writes)
	}
}
