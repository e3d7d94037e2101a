package memsize

import "sync/atomic"

// Account is the count of the heap a structure holds, kept by its writers
// and read by anyone without their lock (the engine's index cache reads
// every user's at every use). Between walks of the structure, which count
// it from what it holds, each write adds what it changed: exactly where it
// sees the change (Exact), by estimate where it does not (Note). Once the
// estimates since the last walk add up to more than a quarter of it,
// WalkDue says so, and the writer walks again (Walked): the count stays
// within about a fifth of the truth, and since a quarter of the
// structure's bytes must change to call for the next walk, an O(size)
// walk costs each change O(1) amortised.
//
// All but Bytes are the writer's: the caller holds the structure's write
// lock (or owns it, before it is shared).
type Account struct {
	// held is what Bytes reports: the only field read without the lock.
	held atomic.Int64
	// walked is the last walk's count, noted the changes since and drift
	// the sum of the estimated ones' sizes, either way.
	walked, noted, drift int64
}

// Bytes is the count as last published.
func (a *Account) Bytes() int { return int(a.held.Load()) }

// Note adds an estimated change of d bytes: it counts towards the next
// walk.
func (a *Account) Note(d int) {
	a.noted += int64(d)
	a.drift += int64(max(d, -d))
}

// Exact adds a change of d bytes known exactly (a capacity the writer
// saw grow): it moves the count and leaves the next walk where it was.
func (a *Account) Exact(d int) { a.noted += int64(d) }

// Resized notes that an array of elem-byte elements went from capacity
// was to now. Called where a structure appends, it costs a comparison
// unless the array grew.
func (a *Account) Resized(was, now, elem int) {
	if now != was {
		a.Note(Slice(now, elem) - Slice(was, elem))
	}
}

// Walked sets the count to n, what a walk of the structure found, and
// publishes it.
func (a *Account) Walked(n int) {
	a.walked, a.noted, a.drift = int64(n), 0, 0
	a.held.Store(int64(n))
}

// WalkDue reports whether the estimates since the last walk add up to
// more than a quarter of it: the writer should walk again rather than
// Publish.
func (a *Account) WalkDue() bool { return a.drift > a.walked/4 }

// Publish makes the count, the last walk plus the changes since, what
// Bytes reports.
func (a *Account) Publish() {
	if n := a.walked + a.noted; n != a.held.Load() {
		a.held.Store(n)
	}
}

// Count is the count as the writer sees it, published or not.
func (a *Account) Count() int { return int(a.walked + a.noted) }

// LastWalk is what the last walk counted.
func (a *Account) LastWalk() int { return int(a.walked) }

// Drift is the sum of the sizes of the estimates since the last walk.
func (a *Account) Drift() int { return int(a.drift) }
