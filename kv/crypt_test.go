package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// skipEncryptedAll skips a test of plain files' bytes in a
// memor_encrypt_all build.
func skipEncryptedAll(t *testing.T, why string) {
	t.Helper()
	if encryptAll {
		t.Skip("plain files only: " + why)
	}
}

func testKEK(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// writeNeedles writes n keys and values holding needle, flushing half of
// them to tables and leaving the rest in the write-ahead log.
func writeNeedles(t *testing.T, db *DB, needle string, n int) {
	t.Helper()
	for round := range 2 {
		b := db.NewBatch()
		for i := range n / 2 {
			k := fmt.Appendf([]byte{TagUser}, "%s-key-%d-%d", needle, round, i)
			if err := b.Set(k, fmt.Appendf(nil, "%s-value-%d", needle, i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if round == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func countNeedles(t *testing.T, db *DB, needle string) int {
	t.Helper()
	n := 0
	err := db.Scan(context.Background(), []byte{TagUser}, func(k, v []byte) error {
		if bytes.Contains(k, []byte(needle)) && bytes.Contains(v, []byte(needle)) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEncryptedStoreHoldsNoPlaintext: an encrypted store's files (tables,
// logs, MANIFEST, everything) hold none of its keys or values, while a
// plain store's do (the scan can find them); it reopens with its KEK and
// refuses an Open without one or with another.
func TestEncryptedStoreHoldsNoPlaintext(t *testing.T) {
	skipEncryptedAll(t, "it compares with a plain store")
	const needle = "zebra-needle"
	plain := t.TempDir()
	db, err := Open(plain, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeNeedles(t, db, needle, 200)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(filesHolding(t, plain, []byte(needle))) == 0 {
		t.Fatal("the plain store holds no needle: the scan cannot fail")
	}

	dir := t.TempDir()
	enc := &Encryption{KEK: testKEK(1)}
	db, err = Open(dir, Options{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	writeNeedles(t, db, needle, 200)
	if hits := filesHolding(t, dir, []byte(needle)); len(hits) > 0 {
		t.Errorf("open encrypted store: %v hold the needle", hits)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, dir, []byte(needle)); len(hits) > 0 {
		t.Errorf("closed encrypted store: %v hold the needle", hits)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrEncrypted) {
		t.Errorf("plain Open of an encrypted store: %v, want ErrEncrypted", err)
	}
	if _, err := Open(dir, Options{Encryption: &Encryption{KEK: testKEK(2)}}); !errors.Is(err, ErrWrongKEK) {
		t.Errorf("Open with another KEK: %v, want ErrWrongKEK", err)
	}
	if _, err := Open(dir, Options{Encryption: &Encryption{KEK: testKEK(2)[:16]}}); !errors.Is(err, ErrWrongKEK) {
		t.Errorf("Open with a 16-byte KEK: %v, want ErrWrongKEK", err)
	}
	if _, err := Open(plain, Options{Encryption: enc}); !errors.Is(err, ErrNotEncrypted) {
		t.Errorf("encrypted Open of a plain store: %v, want ErrNotEncrypted", err)
	}
	db, err = Open(dir, Options{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	if n := countNeedles(t, db, needle); n != 200 {
		t.Errorf("reopened: %d keys, want 200", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, sidecarName)); err != nil || string(b) != fmt.Sprintf("memor format %d\nencrypted\n", FormatVersion) {
		t.Errorf("sidecar %q, %v", b, err)
	}
}

// TestRotateKEK: an Open with PreviousKEK re-seals every file under the
// new KEK; the old one opens nothing afterwards, and the data is intact.
func TestRotateKEK(t *testing.T) {
	dir := t.TempDir()
	old, next := testKEK(1), testKEK(2)
	db, err := Open(dir, Options{Encryption: &Encryption{KEK: old}})
	if err != nil {
		t.Fatal(err)
	}
	writeNeedles(t, db, "rotated", 100)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{Encryption: &Encryption{KEK: next, PreviousKEK: old}})
	if err != nil {
		t.Fatal(err)
	}
	writeNeedles(t, db, "after", 100)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ls, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	oldID := kekID(old)
	for _, e := range ls {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= cryptHeaderSize && string(b[:8]) == cryptMagic && bytes.Equal(b[16:24], oldID[:]) {
			t.Errorf("%s is still sealed under the old KEK", e.Name())
		}
	}
	if _, err := Open(dir, Options{Encryption: &Encryption{KEK: old}}); !errors.Is(err, ErrWrongKEK) {
		t.Errorf("Open with the old KEK: %v, want ErrWrongKEK", err)
	}
	db, err = Open(dir, Options{Encryption: &Encryption{KEK: next}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, m := countNeedles(t, db, "rotated"), countNeedles(t, db, "after"); n != 100 || m != 100 {
		t.Errorf("after rotation: %d and %d keys, want 100 and 100", n, m)
	}
}

// TestEncryptedIngest: a table committed as an ingested table is
// readable after a reopen and leaves no plaintext.
func TestEncryptedIngest(t *testing.T) {
	dir := t.TempDir()
	enc := &Encryption{KEK: testKEK(3)}
	db, err := Open(dir, Options{Encryption: enc, IngestMinBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte{TagUser, 'q'}
	b := db.NewTable(prefix, 0)
	for i := range 500 {
		if err := b.Set(fmt.Appendf(append([]byte(nil), prefix...), "ingested-needle-%04d", i), []byte("ingested-needle value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if db.ingested.Load() == 0 {
		t.Fatal("the batch was not ingested")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, dir, []byte("ingested-needle")); len(hits) > 0 {
		t.Errorf("%v hold the needle", hits)
	}
	db, err = Open(dir, Options{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.Scan(context.Background(), prefix, func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 500 {
		t.Errorf("%d keys, want 500", n)
	}
}

// TestCryptFileRandomAccess: writes of any size and reads at any offset
// and length return the plaintext, and Stat hides the header.
func TestCryptFileRandomAccess(t *testing.T) {
	mem := vfs.NewMem()
	fs, err := newCryptFS(mem, &Encryption{KEK: testKEK(4)})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 0, 1<<16)
	f, err := fs.Create("f", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	for len(want) < 60000 {
		p := make([]byte, rng.IntN(700))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		want = append(want, p...)
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := mem.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	rawBytes, err := io.ReadAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(rawBytes) != len(want)+cryptHeaderSize || bytes.Contains(rawBytes, want[1000:1032]) {
		t.Fatalf("raw file: %d bytes (want %d), or plaintext in it", len(rawBytes), len(want)+cryptHeaderSize)
	}
	g, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if st, err := g.Stat(); err != nil || st.Size() != int64(len(want)) {
		t.Fatalf("Stat: %v, %v; want size %d", st, err, len(want))
	}
	if st, err := fs.Stat("f"); err != nil || st.Size() != int64(len(want)) {
		t.Fatalf("FS.Stat: %v, %v; want size %d", st, err, len(want))
	}
	for range 500 {
		off := rng.IntN(len(want))
		n := rng.IntN(min(len(want)-off, 5000) + 1)
		p := make([]byte, n)
		if _, err := g.ReadAt(p, int64(off)); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(p, want[off:off+n]) {
			t.Fatalf("ReadAt(%d, %d) differs", off, n)
		}
	}
	all, err := io.ReadAll(g)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("Read: %d bytes, %v", len(all), err)
	}
}
