// Package heaptest measures what building a value adds to Go's live
// heap, for the tests that hold the indexes' accounts of their memory
// (memsize) to the runtime's own figures.
package heaptest

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// Live is the heap's live bytes. Two collections: the first finishes
// sweeping what the last cycle freed, the second frees what became
// unreachable since, so that what is read is what is reachable now.
func Live() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Added builds a value attempts times (at least once) and returns the
// last build's result with the least the live heap grew by in a build:
// what else the process allocates meanwhile (the testing package, a
// pool, a timer) only ever adds to a measurement. Each build's result is
// kept until the heap after it has been read.
func Added[T any](attempts int, build func() T) (T, int64) {
	var v T
	least := int64(math.MaxInt64)
	for range max(attempts, 1) {
		var zero T
		v = zero // the last build's result is not the next one's heap
		before := Live()
		v = build()
		added := Live() - before
		runtime.KeepAlive(v)
		least = min(least, added)
	}
	return v, least
}

// ReadBeside reads bytes (an index's Bytes) over and over on a goroutine
// of its own, as the engine's cache reads an account beside the index's
// writers, failing t if it is ever not positive, until the returned stop
// is called, which waits for it. Run under -race: an account is read
// without the writers' lock.
func ReadBeside(t testing.TB, bytes func() int) (stop func()) {
	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if bytes() <= 0 {
				t.Error("Bytes is not positive")
				return
			}
		}
	})
	return func() {
		close(done)
		reader.Wait()
	}
}
