package memsize

import (
	"fmt"
	"runtime"
	"testing"
)

// heapOf returns the heap bytes build's result holds, per copy: it builds
// copies of it (enough that a measurement's noise is small) and measures
// the heap before and after.
func heapOf(copies int, build func() any) float64 {
	keep := make([]any, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = build()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	// The keep slice itself and each interface's boxed header are not
	// the value's: subtract them.
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(copies)
}

func TestAllocMatchesRuntime(t *testing.T) {
	for _, n := range []int{1, 9, 16, 17, 33, 100, 1000, 4000, 20000, 40000, 100000} {
		// Copies enough for 8 MB: the test runner's own allocations
		// meanwhile are then a fraction of a byte a copy.
		got := heapOf(max(8<<20/(n+24), 8), func() any { return make([]byte, n) })
		want := Alloc(n) + 24 // the slice header boxed in the interface
		if r := got / float64(want); r < 0.97 || r > 1.03 {
			t.Errorf("make([]byte, %d): heap %.0f B, Alloc says %d (with the boxed header)", n, got, want)
		}
	}
}

func TestMapMatchesRuntime(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 50, 200, 896, 1000, 5000, 30000, 100000} {
		copies := max(200000/max(n, 1), 4)
		got := heapOf(copies, func() any {
			m := map[uint32]uint64{}
			for i := range n {
				m[uint32(i)*2654435761] = uint64(i)
			}
			return m
		})
		want := Map(n, 16) // a uint32 key and uint64 value: 16 with alignment
		if r := got / float64(want); r < 0.9 || r > 1.1 {
			t.Errorf("map of %d entries: heap %.0f B, Map says %d (%.2f×)", n, got, want, r)
		}
	}
}

func TestStringMapMatchesRuntime(t *testing.T) {
	for _, n := range []int{5, 300, 20000} {
		got := heapOf(max(100000/n, 4), func() any {
			m := map[string]bool{}
			for i := range n {
				m[fmt.Sprintf("word-%07d", i*7919)] = true
			}
			return m
		})
		want := Map(n, 24) + n*String(len("word-0000000")) // a string and a bool: 24 with alignment
		if r := got / float64(want); r < 0.9 || r > 1.1 {
			t.Errorf("map of %d strings: heap %.0f B, Map and String say %d (%.2f×)", n, got, want, r)
		}
	}
}

func TestMapSizedMatchesRuntime(t *testing.T) {
	for _, c := range []struct{ hint, n int }{{100, 10}, {100, 100}, {1000, 500}, {25000, 20000}, {25000, 25000}, {2000, 9000}} {
		got := heapOf(max(200000/c.hint, 4), func() any {
			m := make(map[uint32]uint64, c.hint)
			for i := range c.n {
				m[uint32(i)*2654435761] = uint64(i)
			}
			return m
		})
		want := MapSized(c.hint, c.n, 16)
		if r := got / float64(want); r < 0.9 || r > 1.1 {
			t.Errorf("map sized %d of %d entries: heap %.0f B, MapSized says %d (%.2f×)", c.hint, c.n, got, want, r)
		}
	}
}

// TestAllocClasses: Alloc's tables give, for every size up to the largest
// class and a page past it, the least class that holds it.
func TestAllocClasses(t *testing.T) {
	for n := -1; n <= 32768+2*pageBytes; n++ {
		want := max(n, 0)
		switch {
		case n > 32768:
			want = (n + pageBytes - 1) / pageBytes * pageBytes
		case n > 8:
			for _, c := range classes {
				if int(c) >= n {
					want = int(c)
					break
				}
			}
		}
		if got := Alloc(n); got != want {
			t.Fatalf("Alloc(%d) = %d, want %d", n, got, want)
		}
	}
}
