// Package kvtest is the one in-memory [kv.Reader] and [kv.Writer] the
// index packages' tests and benchmarks share, in place of a copy per
// package.
//
// It is a map rather than Pebble on vfs.NewMem, not for speed (on an index
// test's pattern of writes, point reads and a scan the two cost about the
// same: BenchmarkStore) but because the index tests look at the records
// they wrote (range over them, count them, corrupt one, compare two
// stores), which a map does directly. TestMapBehavesLikeABatch holds it to
// the semantics of a kv.Batch read through as a
// Reader: Set copies what it is given (writers reuse their buffers), Get
// returns a copy, Scan visits keys in byte order, and a missing key is
// kv.ErrNotFound. Like a batch it is not safe for concurrent use.
// Frozen, a copy of a Map sorted once, serves the benchmarks of a load.
package kvtest

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/memor-db/memor/kv"
)

// Map is an in-memory store: key (as a string) to value. The zero value
// is not usable; make one with Map{}.
type Map map[string][]byte

var (
	_ kv.Reader = Map{}
	_ kv.Writer = Map{}
)

// Set stores a copy of value at key.
func (m Map) Set(key, value []byte) error {
	m[string(key)] = bytes.Clone(value)
	return nil
}

// Delete removes key; deleting a missing key is not an error.
func (m Map) Delete(key []byte) error {
	delete(m, string(key))
	return nil
}

// Get returns a copy of the value at key, or kv.ErrNotFound.
func (m Map) Get(key []byte) ([]byte, error) {
	v, ok := m[string(key)]
	if !ok {
		return nil, kv.ErrNotFound
	}
	return bytes.Clone(v), nil
}

// Scan calls fn on every key with prefix, in byte order, and stops at the
// first error fn returns or when ctx ends.
func (m Map) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn([]byte(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// Size is the bytes of every live key and value: what the store would
// persist.
func (m Map) Size() int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// Frozen is a read-only copy of a Map with its keys sorted once, for
// benchmarks of a load: its Scan costs next to nothing, where Map's sorts
// the keys on every call.
type Frozen struct {
	keys   [][]byte
	values [][]byte
}

var _ kv.Reader = (*Frozen)(nil)

// Freeze returns a Frozen copy of m.
func Freeze(m Map) *Frozen {
	f := &Frozen{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f.keys = append(f.keys, []byte(k))
		f.values = append(f.values, bytes.Clone(m[k]))
	}
	return f
}

// Get returns the value at key (not a copy: callers must not modify
// it), or kv.ErrNotFound.
func (f *Frozen) Get(key []byte) ([]byte, error) {
	i, ok := slices.BinarySearchFunc(f.keys, key, bytes.Compare)
	if !ok {
		return nil, kv.ErrNotFound
	}
	return f.values[i], nil
}

// Scan calls fn on every key with prefix, in byte order, and stops at the
// first error fn returns or when ctx ends.
func (f *Frozen) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	i, _ := slices.BinarySearchFunc(f.keys, prefix, bytes.Compare)
	for ; i < len(f.keys) && bytes.HasPrefix(f.keys[i], prefix); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(f.keys[i], f.values[i]); err != nil {
			return err
		}
	}
	return nil
}
