// Package heaptest measures what building a value adds to Go's live
// heap, for the tests that hold the indexes' accounts of their memory
// (memsize) to the runtime's own figures.
package heaptest

import (
	"math"
	"runtime"
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
