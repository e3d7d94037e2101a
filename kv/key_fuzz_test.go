package kv_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/memor-db/memor/kv"
)

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// FuzzKeyCodec: the component encoding round-trips, preserves order, is
// prefix-free (one user's keyspace never contains another's, for any
// bytes), and the decoder never panics on arbitrary keys.
func FuzzKeyCodec(f *testing.F) {
	f.Add([]byte("a"), []byte("ab"), int64(0), uint64(0))
	f.Add([]byte(""), []byte("\x00"), int64(-1), uint64(1))
	f.Add([]byte("a\x00"), []byte("a\x00\xff"), int64(math.MinInt64), uint64(math.MaxUint64))
	f.Add([]byte("a/"), []byte("a\x00\x01"), int64(math.MaxInt64), uint64(1<<63))
	f.Add([]byte("\xff\xff"), []byte("\x00\x01"), int64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b []byte, n int64, u uint64) {
		ea, eb := kv.AppendBytes(nil, a), kv.AppendBytes(nil, b)
		if !bytes.Equal(ea, kv.AppendString(nil, string(a))) {
			t.Fatalf("AppendBytes and AppendString disagree on %q", a)
		}
		// Order preserving: comparing encodings compares the values.
		if got, want := sign(bytes.Compare(ea, eb)), sign(bytes.Compare(a, b)); got != want {
			t.Fatalf("order of %q, %q: encoded %d, raw %d", a, b, got, want)
		}
		// Prefix-free: distinct components never prefix one another, so
		// neither do the user keyspaces built from them.
		if !bytes.Equal(a, b) {
			if bytes.HasPrefix(eb, ea) || bytes.HasPrefix(ea, eb) {
				t.Fatalf("encoding of %q and %q: one is a prefix of the other", a, b)
			}
			ra, kb := kv.UserRoot(string(a)), kv.UserKey(string(b), kv.SubEpisode)
			if bytes.HasPrefix(kb, ra) {
				t.Fatalf("user %q's key lies inside user %q's root", b, a)
			}
		}
		// A user's keys lie in [root, PrefixEnd(root)).
		root := kv.UserRoot(string(a))
		k := kv.AppendUint64(kv.UserKey(string(a), kv.SubLive), u)
		if end := kv.PrefixEnd(root); !bytes.HasPrefix(k, root) || (end != nil && bytes.Compare(k, end) >= 0) {
			t.Fatalf("key %x outside [%x, %x)", k, root, end)
		}
		// Round trip of a composite key.
		key := kv.AppendInt64(kv.AppendUint32(kv.AppendUint64(kv.AppendBytes(kv.AppendString([]byte{kv.TagUser}, string(a)), b), u), uint32(u)), n)
		key = kv.AppendTime(key, time.Unix(0, n))
		d := kv.NewDecoder(key)
		if tag := d.Byte(); tag != kv.TagUser {
			t.Fatalf("tag %x", tag)
		}
		if got := d.String(); got != string(a) {
			t.Fatalf("string: got %q want %q", got, a)
		}
		if got := d.Bytes(); !bytes.Equal(got, b) {
			t.Fatalf("bytes: got %q want %q", got, b)
		}
		// AppendBytes reads the same components after what dst holds.
		ad := kv.NewDecoder(key[1:])
		if got := ad.AppendBytes([]byte("x")); string(got) != "x"+string(a) {
			t.Fatalf("append string: got %q want %q", got, "x"+string(a))
		}
		if got := ad.AppendBytes(nil); !bytes.Equal(got, b) || ad.Err != nil {
			t.Fatalf("append bytes: got %q want %q (%v)", got, b, ad.Err)
		}
		if got := kv.NewDecoder([]byte{0}).AppendBytes([]byte("x")); string(got) != "x" {
			t.Fatalf("append of an unterminated component: got %q want %q", got, "x")
		}
		if got := d.Uint64(); got != u {
			t.Fatalf("uint64: got %d want %d", got, u)
		}
		if got := d.Uint32(); got != uint32(u) {
			t.Fatalf("uint32: got %d want %d", got, uint32(u))
		}
		if got := d.Int64(); got != n {
			t.Fatalf("int64: got %d want %d", got, n)
		}
		if got := d.Time(); n != math.MaxInt64 && !got.Equal(time.Unix(0, n)) {
			t.Fatalf("time: got %v want %v", got, time.Unix(0, n))
		}
		if d.Err != nil || len(d.Rest()) != 0 {
			t.Fatalf("decoder: err %v, %d bytes left", d.Err, len(d.Rest()))
		}
		// Integers sort numerically.
		if got, want := sign(bytes.Compare(kv.AppendInt64(nil, n), kv.AppendInt64(nil, int64(u)))), sign(cmp64(n, int64(u))); got != want {
			t.Fatalf("int64 order of %d, %d: %d, want %d", n, int64(u), got, want)
		}
		// Arbitrary bytes: the decoder reports errors, never panics, and
		// reads nothing after the first error.
		d = kv.NewDecoder(append(append([]byte(nil), a...), b...))
		_ = d.Byte()
		_ = d.Bytes()
		_ = d.Uint64()
		_ = d.Time()
		if d.Err != nil && d.Uint32() != 0 {
			t.Fatal("decoder returned data after an error")
		}
	})
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
