package kv

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesHolding lists the files under dir whose bytes contain needle.
func filesHolding(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// scrubbedStore writes keys holding secret into flushed tables of a new
// store in dir, deletes them, compacts and scrubs, and returns the open
// store. The secret is in the MANIFEST then, as a table bound.
func scrubbedStore(t *testing.T, dir string, secret string) *DB {
	t.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The deleted keys sort last, so that one is a table's largest key,
	// which the MANIFEST records.
	lo := []byte{TagUser, 'z'}
	b := db.NewBatch()
	for i := range 50 {
		if err := b.Set(append(append([]byte(nil), lo...), secret+strings.Repeat("z", i)...), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set([]byte{TagUser, 'y'}, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange(lo, PrefixEnd(lo)); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), lo, PrefixEnd(lo)); err != nil {
		t.Fatal(err)
	}
	if err := db.Scrub(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestScrubRewritesManifest: after a deletion, its compaction and Scrub,
// Close leaves no file naming a deleted key — Pebble's MANIFEST, which
// records every table's bounds, included — and the rest of the data stays.
func TestScrubRewritesManifest(t *testing.T) {
	dir := t.TempDir()
	secret := "secret-4f1d2c"
	db := scrubbedStore(t, dir, secret)
	// The test can fail: until the store is closed the MANIFEST names the
	// deleted table's bounds.
	if hits := filesHolding(t, dir, []byte(secret)); len(hits) == 0 {
		t.Fatal("no file holds the deleted keys before Close: the test proves nothing")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, dir, []byte(secret)); len(hits) > 0 {
		t.Fatalf("after Scrub and Close the deleted keys are in %v", hits)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte{TagUser, 'y'}); err != nil || string(v) != "kept" {
		t.Fatalf("kept key: %q, %v", v, err)
	}
	if _, err := db.Get(manifestKey); err == nil {
		t.Fatal("the rewrite mark survived the rewrite")
	}
}

// TestScrubRewritesManifestAfterCrash: a process that scrubbed and died
// before Close leaves the mark; the next Open rewrites the MANIFEST.
func TestScrubRewritesManifestAfterCrash(t *testing.T) {
	dir := t.TempDir()
	secret := "secret-9a8b7c"
	db := scrubbedStore(t, dir, secret)
	defer db.p.Close()
	// What a crash right now leaves on disk (Scrub's writes are synced).
	crashed := t.TempDir()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if hits := filesHolding(t, crashed, []byte(secret)); len(hits) == 0 {
		t.Fatal("no file holds the deleted keys: the test proves nothing")
	}
	db2, err := Open(crashed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if hits := filesHolding(t, crashed, []byte(secret)); len(hits) > 0 {
		t.Fatalf("after reopening a crashed scrubbed store the deleted keys are in %v", hits)
	}
	if v, err := db2.Get([]byte{TagUser, 'y'}); err != nil || string(v) != "kept" {
		t.Fatalf("kept key: %q, %v", v, err)
	}
}
