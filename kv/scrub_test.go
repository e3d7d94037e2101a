package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	skipEncryptedAll(t, "it finds the deleted keys in plain files")
	t.Parallel()
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
	skipEncryptedAll(t, "it finds the deleted keys in plain files")
	t.Parallel()
	dir := t.TempDir()
	secret := "secret-9a8b7c"
	db := scrubbedStore(t, dir, secret)
	defer db.p.Close()
	// What a crash right now leaves on disk (Scrub's writes are synced).
	// Pebble may still be compacting or deleting obsolete files in the
	// background: a copy counts only if the folder did not change while
	// it was taken, or it could hold a MANIFEST naming a table it lacks.
	var crashed string
	for attempt := 0; ; attempt++ {
		before := listing(t, dir)
		crashed = t.TempDir()
		for _, name := range slices.Sorted(maps.Keys(before)) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted meanwhile: the listing below differs
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if maps.Equal(before, listing(t, dir)) {
			break
		}
		if attempt == 50 {
			t.Fatal("the store's folder never stopped changing")
		}
		time.Sleep(20 * time.Millisecond)
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

// listing returns the size and modification time of every file in dir.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	}
	return out
}
