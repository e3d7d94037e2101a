package kv

import (
	"bytes"
	"context"
	"sort"
	"sync"
)

// localWrites holds a local batch's writes under its prefix (see
// [Batch.SetLocal]) as an append-only log that is sorted only when read or
// committed. A new user's import writes thousands of keys and reads back a
// handful: one bucketed sort at the end costs a fraction of what Pebble's
// indexed batch spends inserting every key into its skiplist, and the
// sorted log is written to a table without a merging iterator.
//
// The same key may be written many times; the last write wins (entries
// sort by key, then by when they were written).
type localWrites struct {
	prefix []byte
	arena  []byte // every key, each followed by its value
	ents   []localEntry
	// view: the indices of ents[:viewed] in (key, index) order. Each
	// read that finds newer entries builds a new slice (a scan in
	// progress keeps iterating the one it started with).
	view   []int32
	viewed int
	merges int
}

type localEntry struct {
	off        int // key at arena[off:off+klen], then the value
	klen, vlen uint32
	del        bool
}

// maxLocalMerges bounds how often reads interleaved with writes re-sort
// the log; past it the batch moves its writes to an indexed Pebble batch
// (a write pattern that reads after most writes).
const maxLocalMerges = 64

// maxPooledArena is the largest arena kept for reuse.
const maxPooledArena = 16 << 20

var localPool = sync.Pool{New: func() any { return new(localWrites) }}

func newLocalWrites(prefix []byte, sizeHint int) *localWrites {
	l := localPool.Get().(*localWrites)
	l.prefix = prefix
	if cap(l.arena) < sizeHint {
		l.arena = make([]byte, 0, sizeHint)
	}
	return l
}

// release returns l's buffers for reuse. Nothing may read them after.
func (l *localWrites) release() {
	if cap(l.arena) > maxPooledArena {
		return
	}
	l.prefix, l.arena, l.ents, l.view, l.viewed, l.merges = nil, l.arena[:0], l.ents[:0], l.view[:0], 0, 0
	localPool.Put(l)
}

func (l *localWrites) add(key, value []byte, del bool) {
	off := len(l.arena)
	l.arena = append(append(l.arena, key...), value...)
	l.ents = append(l.ents, localEntry{off: off, klen: uint32(len(key)), vlen: uint32(len(value)), del: del})
}

func (l *localWrites) key(i int32) []byte {
	e := &l.ents[i]
	return l.arena[e.off : e.off+int(e.klen) : e.off+int(e.klen)]
}

func (l *localWrites) value(i int32) []byte {
	e := &l.ents[i]
	s := e.off + int(e.klen)
	return l.arena[s : s+int(e.vlen) : s+int(e.vlen)]
}

func (l *localWrites) bytes() int { return len(l.arena) }

// sorted returns the entries in (key, index) order.
func (l *localWrites) sorted() []int32 {
	if l.viewed == len(l.ents) {
		return l.view
	}
	tail := l.sortRange(l.viewed, len(l.ents))
	if l.viewed == 0 {
		l.view = tail
	} else {
		l.merges++
		l.view = l.merge(l.view, tail)
	}
	l.viewed = len(l.ents)
	return l.view
}

// sortRange returns the indices lo..hi-1 in (key, index) order. Keys share
// the prefix, so it first distributes them by the byte after it (a
// stable counting sort: the engine's sub-keyspaces), then sorts only the
// buckets whose keys did not arrive in order (most arrive by increasing
// document or sequence number).
func (l *localWrites) sortRange(lo, hi int) []int32 {
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
func (l *localWrites) radixSort(idx, tmp []int32, depth int) {
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

// merge merges two (key, index)-sorted index lists into a new one; every
// index of b is greater than every index of a.
func (l *localWrites) merge(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if bytes.Compare(l.key(b[j]), l.key(a[i])) < 0 {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	return append(append(out, a[i:]...), b[j:]...)
}

// search returns the position in view of the first entry whose key is at
// least k.
func (l *localWrites) search(view []int32, k []byte) int {
	return sort.Search(len(view), func(i int) bool { return bytes.Compare(l.key(view[i]), k) >= 0 })
}

// get returns a copy of key's value.
func (l *localWrites) get(key []byte) ([]byte, error) {
	view := l.sorted()
	i := l.search(view, key)
	last := int32(-1)
	for ; i < len(view) && bytes.Equal(l.key(view[i]), key); i++ {
		last = view[i]
	}
	if last < 0 || l.ents[last].del {
		return nil, ErrNotFound
	}
	return append([]byte{}, l.value(last)...), nil
}

// scan calls fn with the live value of every key in [lo, hi) (hi nil: no
// upper bound), in key order or, reverse, last key first.
func (l *localWrites) scan(ctx context.Context, lo, hi []byte, reverse bool, fn func(k, v []byte) error) error {
	view := l.sorted()
	i, j := l.search(view, lo), len(view)
	if hi != nil {
		j = l.search(view, hi)
	}
	view = view[i:j]
	n := 0
	visit := func(e int32) error {
		if n++; n&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if l.ents[e].del {
			return nil
		}
		return fn(l.key(e), l.value(e))
	}
	if reverse {
		for i := len(view) - 1; i >= 0; i-- {
			// The last write of a key comes first going backwards.
			e := view[i]
			for i > 0 && bytes.Equal(l.key(view[i-1]), l.key(e)) {
				i--
			}
			if err := visit(e); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < len(view); i++ {
		for i+1 < len(view) && bytes.Equal(l.key(view[i+1]), l.key(view[i])) {
			i++
		}
		if err := visit(view[i]); err != nil {
			return err
		}
	}
	return nil
}

// replay writes every entry, in the order written, through set and del.
func (l *localWrites) replay(set func(k, v []byte) error, del func(k []byte) error) error {
	for i := range l.ents {
		var err error
		if l.ents[i].del {
			err = del(l.key(int32(i)))
		} else {
			err = set(l.key(int32(i)), l.value(int32(i)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
