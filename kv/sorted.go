package kv

import (
	"bytes"
	"sync"
)

// sortedWrites holds a Table's writes as an append-only log that is
// sorted once, when the table commits. A new user's import writes
// thousands of keys: one bucketed sort at the end costs a fraction of what
// Pebble's indexed batch spends inserting every key into its skiplist, and
// the sorted log is written to a table without a merging iterator.
//
// The same key may be written many times; the last write wins (entries
// sort by key, then by when they were written).
type sortedWrites struct {
	prefix []byte
	arena  []byte // every key, each followed by its value
	ents   []sortedEntry
}

type sortedEntry struct {
	off        int // key at arena[off:off+klen], then the value
	klen, vlen uint32
	del        bool
}

// maxPooledArena is the largest arena kept for reuse.
const maxPooledArena = 16 << 20

var sortedPool = sync.Pool{New: func() any { return new(sortedWrites) }}

func newSortedWrites(prefix []byte, sizeHint int) *sortedWrites {
	l := sortedPool.Get().(*sortedWrites)
	l.prefix = prefix
	if cap(l.arena) < sizeHint {
		l.arena = make([]byte, 0, sizeHint)
	}
	return l
}

// release returns l's buffers for reuse. Nothing may read them after.
func (l *sortedWrites) release() {
	if cap(l.arena) > maxPooledArena {
		return
	}
	l.prefix, l.arena, l.ents = nil, l.arena[:0], l.ents[:0]
	sortedPool.Put(l)
}

func (l *sortedWrites) add(key, value []byte, del bool) {
	off := len(l.arena)
	l.arena = append(append(l.arena, key...), value...)
	l.ents = append(l.ents, sortedEntry{off: off, klen: uint32(len(key)), vlen: uint32(len(value)), del: del})
}

func (l *sortedWrites) key(i int32) []byte {
	e := &l.ents[i]
	return l.arena[e.off : e.off+int(e.klen) : e.off+int(e.klen)]
}

func (l *sortedWrites) value(i int32) []byte {
	e := &l.ents[i]
	s := e.off + int(e.klen)
	return l.arena[s : s+int(e.vlen) : s+int(e.vlen)]
}

func (l *sortedWrites) bytes() int { return len(l.arena) }

// each calls fn with every key's last value in key order (a key whose
// last write is a deletion is left out), and reports how many it gave.
func (l *sortedWrites) each(fn func(k, v []byte) error) (int, error) {
	view := l.sortRange(0, len(l.ents))
	n := 0
	for i := 0; i < len(view); i++ {
		for i+1 < len(view) && bytes.Equal(l.key(view[i+1]), l.key(view[i])) {
			i++
		}
		if e := view[i]; !l.ents[e].del {
			n++
			if err := fn(l.key(e), l.value(e)); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// sortRange returns the indices lo..hi-1 in (key, index) order. Keys share
// the prefix, so it first distributes them by the byte after it (a
// stable counting sort: the engine's sub-keyspaces), then sorts only the
// buckets whose keys did not arrive in order (most arrive by increasing
// document or sequence number).
func (l *sortedWrites) sortRange(lo, hi int) []int32 {
	p := len(l.prefix)
	bucket := func(i int) int {
		if k := l.key(int32(i)); len(k) > p {
			return int(k[p]) + 1
		}
		return 0
	}
	var start [258]int
	for i := lo; i < hi; i++ {
		start[bucket(i)+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	out := make([]int32, hi-lo)
	next := start
	for i := lo; i < hi; i++ {
		b := bucket(i)
		out[next[b]] = int32(i)
		next[b]++
	}
	var tmp []int32
	for b := 1; b < 257; b++ {
		s := out[start[b]:start[b+1]]
		sorted := true
		for i := 1; i < len(s) && sorted; i++ {
			sorted = bytes.Compare(l.key(s[i-1]), l.key(s[i])) <= 0
		}
		if !sorted {
			if tmp == nil {
				tmp = make([]int32, hi-lo)
			}
			l.radixSort(s, tmp[:len(s)], p+1)
		}
	}
	return out
}

// radixSort sorts idx by key, keeping the given order of equal keys, from
// byte depth on (the keys agree before it): a most-significant-byte radix
// sort, which reads each byte of a long shared stretch (a slot's subject
// and predicate) once instead of comparing it in every pair. tmp has the
// length of idx.
func (l *sortedWrites) radixSort(idx, tmp []int32, depth int) {
	at := func(e int32) int {
		if k := l.key(e); len(k) > depth {
			return int(k[depth]) + 1
		}
		return 0 // the key ends: it sorts first
	}
	for {
		if len(idx) <= 24 {
			for i := 1; i < len(idx); i++ {
				for j := i; j > 0 && bytes.Compare(l.key(idx[j])[depth:], l.key(idx[j-1])[depth:]) < 0; j-- {
					idx[j], idx[j-1] = idx[j-1], idx[j]
				}
			}
			return
		}
		var count [257]int
		for _, e := range idx {
			count[at(e)]++
		}
		if first := at(idx[0]); count[first] == len(idx) {
			if first == 0 {
				return // every key ends here: all equal, in order
			}
			depth++ // one shared byte
			continue
		}
		var next [257]int
		for b := 1; b < 257; b++ {
			next[b] = next[b-1] + count[b-1]
		}
		for _, e := range idx {
			b := at(e)
			tmp[next[b]] = e
			next[b]++
		}
		copy(idx, tmp)
		// Bucket 0 holds equal keys (they all end here), in order.
		for b, lo := 1, count[0]; b < 257; b++ {
			if n := count[b]; n > 1 {
				l.radixSort(idx[lo:lo+n], tmp[lo:lo+n], depth+1)
			}
			lo += count[b]
		}
		return
	}
}
