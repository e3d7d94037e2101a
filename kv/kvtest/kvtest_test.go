package kvtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

// store is what the index packages see of a store or batch.
type store interface {
	kv.Reader
	kv.Writer
}

// openBatch is the store Map stands in for: a kv batch on Pebble in memory.
func openBatch(tb testing.TB) *kv.Batch {
	tb.Helper()
	// kv writes its format sidecar through the operating system whatever
	// the FS (see kv.Options.FS): a temporary folder keeps it out of the
	// source tree.
	dir := tb.TempDir()
	fs := vfs.NewMem()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	db, err := kv.Open(dir, kv.Options{FS: fs})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	b := db.NewBatch()
	tb.Cleanup(func() { b.Close() })
	return b
}

// TestMapBehavesLikeABatch: the same writes give the same reads on a Map
// and on a kv batch over Pebble: copies on Set and Get, byte order and
// prefix bounds on Scan, ErrNotFound for a missing or deleted key.
func TestMapBehavesLikeABatch(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]store{"map": kvtest.Map{}, "pebble": openBatch(t)} {
		t.Run(name, func(t *testing.T) {
			buf := []byte("p/b")
			val := []byte("one")
			for _, kv := range [][2]string{{"p/b", "one"}, {"p/a", "two"}, {"p\xff", "out"}, {"p/c", "three"}, {"o/z", "out"}} {
				buf, val = append(buf[:0], kv[0]...), append(val[:0], kv[1]...)
				if err := s.Set(buf, val); err != nil {
					t.Fatal(err)
				}
			}
			// The caller reuses its buffers: the store must have copied.
			copy(val, "XXX")
			if err := s.Delete([]byte("p/c")); err != nil {
				t.Fatal(err)
			}
			var got []string
			err := s.Scan(context.Background(), []byte("p/"), func(k, v []byte) error {
				got = append(got, string(k)+"="+string(v))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"p/a=two", "p/b=one"}; !slices.Equal(got, want) {
				t.Errorf("Scan(p/) = %q, want %q", got, want)
			}
			v, err := s.Get([]byte("p/a"))
			if err != nil || string(v) != "two" {
				t.Fatalf("Get(p/a) = %q, %v", v, err)
			}
			v[0] = 'X' // Get hands out a copy
			if v, _ := s.Get([]byte("p/a")); string(v) != "two" {
				t.Errorf("a caller's edit of Get's value reached the store: %q", v)
			}
			for _, k := range []string{"p/c", "nope"} {
				if _, err := s.Get([]byte(k)); !errors.Is(err, kv.ErrNotFound) {
					t.Errorf("Get(%s) err = %v, want kv.ErrNotFound", k, err)
				}
			}
			stop := errors.New("stop")
			n := 0
			err = s.Scan(context.Background(), nil, func(k, v []byte) error { n++; return stop })
			if !errors.Is(err, stop) || n != 1 {
				t.Errorf("Scan did not stop at fn's error: %v after %d keys", err, n)
			}
		})
	}
}

// BenchmarkStore is the measurement behind kvtest being a map: the write
// and read pattern of an index test (set n records, read each back, scan
// them) on a Map and on a kv batch over Pebble's vfs.NewMem.
func BenchmarkStore(b *testing.B) {
	const n = 20000
	val := make([]byte, 200)
	for name, open := range map[string]func(testing.TB) store{
		"map":    func(testing.TB) store { return kvtest.Map{} },
		"pebble": func(tb testing.TB) store { return openBatch(tb) },
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s := open(b)
				key := make([]byte, 0, 16)
				for i := range n {
					key = fmt.Appendf(key[:0], "x/%08d", i)
					if err := s.Set(key, val); err != nil {
						b.Fatal(err)
					}
				}
				for i := range n {
					key = fmt.Appendf(key[:0], "x/%08d", i)
					if _, err := s.Get(key); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Scan(context.Background(), []byte("x/"), func(k, v []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFrozenReadsLikeTheMap: a Frozen copy answers every Get and prefix
// Scan as the Map it was made from, and does not see the Map's later
// writes.
func TestFrozenReadsLikeTheMap(t *testing.T) {
	ctx := context.Background()
	m := kvtest.Map{}
	for _, k := range []string{"a", "a/1", "a/2", "ab", "b/\x00", "b/\xff", "c"} {
		if err := m.Set([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	f := kvtest.Freeze(m)
	scan := func(r kv.Reader, prefix string) []string {
		var out []string
		if err := r.Scan(ctx, []byte(prefix), func(k, v []byte) error {
			out = append(out, string(k)+"="+string(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, p := range []string{"", "a", "a/", "b/", "bz", "c", "d"} {
		if got, want := scan(f, p), scan(m, p); !slices.Equal(got, want) {
			t.Errorf("Scan(%q): %q, want %q", p, got, want)
		}
	}
	for _, k := range []string{"a", "ab", "b/\xff", "zz", ""} {
		got, gerr := f.Get([]byte(k))
		want, werr := m.Get([]byte(k))
		if string(got) != string(want) || errors.Is(gerr, kv.ErrNotFound) != errors.Is(werr, kv.ErrNotFound) {
			t.Errorf("Get(%q): %q, %v; want %q, %v", k, got, gerr, want, werr)
		}
	}
	if err := m.Set([]byte("a/3"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got := scan(f, "a/"); len(got) != 2 {
		t.Errorf("a later write to the Map shows in the Frozen copy: %q", got)
	}
}
