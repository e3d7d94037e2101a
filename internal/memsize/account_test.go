package memsize

import (
	"sync"
	"testing"
)

func TestAccount(t *testing.T) {
	var a Account
	if a.Bytes() != 0 || a.WalkDue() {
		t.Fatalf("zero account: Bytes %d, WalkDue %v", a.Bytes(), a.WalkDue())
	}
	a.Walked(1000)
	if a.Bytes() != 1000 || a.LastWalk() != 1000 || a.Drift() != 0 {
		t.Fatalf("after a walk of 1000: Bytes %d, LastWalk %d, Drift %d", a.Bytes(), a.LastWalk(), a.Drift())
	}

	// Changes are not seen until published.
	a.Note(100)
	a.Exact(500)
	if a.Bytes() != 1000 || a.Count() != 1600 {
		t.Fatalf("unpublished: Bytes %d, Count %d", a.Bytes(), a.Count())
	}
	a.Publish()
	if a.Bytes() != 1600 {
		t.Fatalf("published: Bytes %d, want 1600", a.Bytes())
	}

	// Only estimates drift, by their size either way; exact changes, however
	// large, never call for a walk.
	a.Exact(-10_000)
	if a.Drift() != 100 || a.WalkDue() {
		t.Fatalf("exact changes drifted: Drift %d, WalkDue %v", a.Drift(), a.WalkDue())
	}
	a.Note(-100) // the count is back where it was, the drift is not
	if a.Drift() != 200 || a.WalkDue() {
		t.Fatalf("Drift %d, WalkDue %v, want 200, false", a.Drift(), a.WalkDue())
	}
	a.Note(50) // 250: a quarter of the walk, not past it
	if a.WalkDue() {
		t.Fatal("due at exactly a quarter of the walk")
	}
	a.Note(1)
	if !a.WalkDue() {
		t.Fatalf("not due at a drift of %d past a walk of %d", a.Drift(), a.LastWalk())
	}
	a.Walked(2000)
	if a.WalkDue() || a.Count() != 2000 || a.Bytes() != 2000 {
		t.Fatalf("a walk did not reset the account: WalkDue %v, Count %d, Bytes %d", a.WalkDue(), a.Count(), a.Bytes())
	}

	// Resized counts the allocations' size classes, and nothing when the
	// capacity did not change.
	a.Resized(8, 8, 24)
	if a.Count() != 2000 {
		t.Fatalf("an unchanged capacity moved the count to %d", a.Count())
	}
	a.Resized(3, 5, 24) // 72 B (class 80) to 120 B (class 128)
	if got, want := a.Count()-2000, Slice(5, 24)-Slice(3, 24); got != want || want != 48 {
		t.Fatalf("Resized(3, 5, 24) added %d, want %d (48)", got, want)
	}
}

// TestAccountConcurrentRead runs a writer against readers, for -race:
// Bytes is read without the writer's lock.
func TestAccountConcurrentRead(t *testing.T) {
	var a Account
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					if n := a.Bytes(); n < 0 || n%8 != 0 {
						t.Errorf("Bytes read %d, not a count the writer published", n)
						return
					}
				}
			}
		})
	}
	for i := range 10_000 {
		a.Note(8)
		if a.WalkDue() {
			a.Walked(a.Count())
		} else {
			a.Publish()
		}
		if i%1000 == 0 {
			a.Walked(8 * i)
		}
	}
	close(stop)
	wg.Wait()
}
