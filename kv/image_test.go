package kv

import (
	"bytes"
	"errors"
	"testing"
)

// TestWritesDropImageHead: a write under any imaged keyspace of a user —
// Set, Delete, DeleteRange, through a batch or the store — deletes that
// user's image head in the same commit, and no other user's; writes
// elsewhere (the episode log, the meta record, the image itself) keep it.
// User IDs holding 0x00 and 0x01 bytes are parsed past their escapes.
func TestWritesDropImageHead(t *testing.T) {
	t.Parallel()
	users := []string{"alice", "a\x00b", "a\x00\x01b", "bob"}
	type write struct {
		name string
		do   func(b *Batch, user string) error
		// drops: the user whose head the write deletes ("" none).
		drops bool
	}
	key := func(user string, sub Sub, rest string) []byte { return append(UserKey(user, sub), rest...) }
	writes := []write{
		{"set doc", func(b *Batch, u string) error { return b.Set(key(u, SubDoc, "\x00\x00\x00\x01"), []byte("v")) }, true},
		{"set bm25", func(b *Batch, u string) error { return b.Set(key(u, SubBM25, "d1"), []byte("v")) }, true},
		{"delete vector", func(b *Batch, u string) error { return b.Delete(key(u, SubVector, "v1")) }, true},
		{"set temporal", func(b *Batch, u string) error { return b.Set(key(u, SubTemporal, "t"), nil) }, true},
		{"set graph", func(b *Batch, u string) error { return b.Set(key(u, SubGraph, "e"), nil) }, true},
		{"range graph", func(b *Batch, u string) error {
			p := UserKey(u, SubGraph)
			return b.DeleteRange(p, PrefixEnd(p))
		}, true},
		{"range user", func(b *Batch, u string) error {
			p := UserRoot(u)
			return b.DeleteRange(p, PrefixEnd(p))
		}, true},
		{"set episode", func(b *Batch, u string) error { return b.Set(key(u, SubEpisode, "e1"), []byte("v")) }, false},
		{"set meta", func(b *Batch, u string) error { return b.Set(UserKey(u, SubMeta), []byte("{}")) }, false},
		{"set claim", func(b *Batch, u string) error { return b.Set(key(u, SubClaim, "c"), []byte("v")) }, false},
		{"set chunk", func(b *Batch, u string) error { return b.Set(append(ImageChunks(u), 'b', 0, 0, 0, 0), []byte("v")) }, false},
		{"range chunks", func(b *Batch, u string) error {
			p := ImageChunks(u)
			return b.DeleteRange(p, PrefixEnd(p))
		}, false},
		{"set global", func(b *Batch, u string) error { return b.Set([]byte("Mformat"), []byte("v")) }, false},
	}
	for _, w := range writes {
		for _, user := range users {
			db := storeWith(t, nil)
			b := db.NewBatch()
			for _, u := range users {
				if err := b.Set(ImageHead(u), []byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b.Close()
			b = db.NewBatch()
			if err := w.do(b, user); err != nil {
				t.Fatal(err)
			}
			// The deletion is in the batch at once: a load through it
			// (a write's, of a user not cached) reads no image.
			_, err := b.Get(ImageHead(user))
			if got := errors.Is(err, ErrNotFound); got != w.drops {
				t.Errorf("%s of %q: head gone from the batch = %v, want %v", w.name, user, got, w.drops)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b.Close()
			for _, u := range users {
				_, err := db.Get(ImageHead(u))
				gone := errors.Is(err, ErrNotFound)
				if want := w.drops && u == user; gone != want {
					t.Errorf("%s of %q: %q's head gone = %v, want %v", w.name, user, u, gone, want)
				}
			}
		}
	}
	// The store's own range deletion too.
	db := storeWith(t, map[string]string{string(ImageHead("alice")): "\x01"})
	p := UserKey("alice", SubDoc)
	if err := db.DeleteRange(p, PrefixEnd(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ImageHead("alice")); !errors.Is(err, ErrNotFound) {
		t.Errorf("DB.DeleteRange of the documents kept the head: %v", err)
	}
}

func TestSplitUserKey(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"u", "a\x00b", "\x00", "\x00\x01", "東京"} {
		root := UserRoot(user)
		k := append(UserKey(user, SubBM25), 'x', 0, 1)
		if n, sub, ok := splitUserKey(k); !ok || n != len(root) || sub != SubBM25 {
			t.Errorf("%q: splitUserKey = %d %c %v, want %d b true", user, n, sub, ok, len(root))
		}
		if n, _, ok := splitUserKey(root); ok || n != len(root) {
			t.Errorf("%q root: splitUserKey = %d %v, want %d false", user, n, ok, len(root))
		}
	}
	for _, k := range []string{"", "u", "M\x00\x01b", "uab"} {
		if n, _, ok := splitUserKey([]byte(k)); ok || n != 0 {
			t.Errorf("%q: splitUserKey = %d %v, want not a user key", k, n, ok)
		}
	}
}

// TestImagedBytes: a batch counts the keys and values it sets under
// users' imaged keyspaces, under a SetLocal prefix too (a new user's
// first write), and nothing it sets elsewhere or deletes.
func TestImagedBytes(t *testing.T) {
	t.Parallel()
	db := storeWith(t, nil)
	for _, local := range []bool{false, true} {
		b := db.NewBatch()
		if local {
			b.SetLocal(UserRoot("new"))
		}
		want := 0
		for i, sub := range append(ImagedSubs(), SubEpisode, SubMeta, SubClaim, SubImage) {
			for _, u := range []string{"new", "a\x00b"} {
				k := append(UserKey(u, sub), byte(i), 'k')
				v := bytes.Repeat([]byte{'v'}, 10*i+1)
				if err := b.Set(k, v); err != nil {
					t.Fatal(err)
				}
				if err := b.Delete(append(k, 'x')); err != nil {
					t.Fatal(err)
				}
				if imaged(sub) {
					want += len(k) + len(v)
				}
			}
		}
		if err := b.Set([]byte("Mformat"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if got := b.ImagedBytes(); got != want || want == 0 {
			t.Errorf("local %v: %d imaged bytes, want %d", local, got, want)
		}
		b.Close()
	}
}
