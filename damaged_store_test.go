package memor_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/memor-db/memor"
)

// storeFiles hashes every file of dir.
func storeFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string][32]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h[e.Name()] = sha256.Sum256(b)
	}
	return h
}

// usersStore makes a store of three users, closed, opened and closed
// again (as a store that is read more than written).
func usersStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "bob", "cat"} {
		if _, err := e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Paris", ValidFrom: day(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = memor.Open(dir, memor.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDamagedStoreRefused: the report. A store whose current
// MANIFEST lost its last byte opened with no users and a clean Check;
// a bit flipped in the middle of its last write-ahead log lost the writes
// after it. Now Open returns ErrCorrupt and changes no file.
func TestDamagedStoreRefused(t *testing.T) {
	t.Parallel()
	t.Run("MANIFEST one byte short", func(t *testing.T) {
		dir := usersStore(t)
		d, err := pebble.Peek(dir, vfs.Default)
		if err != nil || !d.Exists {
			t.Fatalf("peek: %v", err)
		}
		fi, err := os.Stat(d.ManifestFilename)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(d.ManifestFilename, fi.Size()-1); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, dir)
	})
	t.Run("bit flip in the last WAL", func(t *testing.T) {
		dir := usersStore(t)
		e, err := memor.Open(dir, memor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if _, err := e.Assert(context.Background(), "dan", memor.FactInput{Subject: "user", Predicate: "likes", Object: "tea" + string(rune('a'+i%26)) + string(rune('a'+i/26)), ValidFrom: day(1)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		slices.Sort(logs)
		b, err := os.ReadFile(logs[len(logs)-1])
		if err != nil || len(b) < 4096 {
			t.Fatalf("last log %d bytes, %v", len(b), err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(logs[len(logs)-1], b, 0o644); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, dir)
	})
}

func wantRefused(t *testing.T, dir string) {
	t.Helper()
	before := storeFiles(t, dir)
	e, err := memor.Open(dir, memor.Options{})
	if err == nil {
		users, _ := e.Users(context.Background())
		e.Close()
		t.Fatalf("Open succeeded; users %q", users)
	}
	if !errors.Is(err, memor.ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
	t.Logf("Open: %v", err)
	if after := storeFiles(t, dir); !maps.Equal(before, after) {
		t.Errorf("the failed Open changed the files: %d before, %d after", len(before), len(after))
	}
}
