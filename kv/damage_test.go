package kv

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// hashDir returns the SHA-256 of every file in dir, by name.
func hashDir(t *testing.T, dir string) map[string][32]byte {
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

// sameFiles fails the test unless dir holds exactly the files of before,
// byte for byte.
func sameFiles(t *testing.T, dir string, before map[string][32]byte) {
	t.Helper()
	after := hashDir(t, dir)
	for name, h := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s was deleted", name)
		} else if a != h {
			t.Errorf("%s was changed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
}

// userKey is key i of user u.
func userKey(u, i int) []byte {
	return AppendUint32(AppendString([]byte{TagUser}, fmt.Sprintf("user%d", u)), uint32(i))
}

// writeUser commits n keys of user u, one synced commit each.
func writeUser(t *testing.T, db *DB, u, n int) {
	t.Helper()
	for i := range n {
		b := db.NewBatch()
		if err := b.Set(userKey(u, i), []byte(strings.Repeat("v", 20))); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
}

// userKeys counts the keys under TagUser.
func userKeys(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	if err := db.Scan(context.Background(), []byte{TagUser}, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

const (
	sessions    = 4
	keysPerUser = 50
)

// storeOfSessions builds a store that was opened and closed several
// times, one user written and flushed per session, then opened and closed
// once more (so that its current MANIFEST is the one snapshot record that
// open wrote, as a store that is opened and read often has).
func storeOfSessions(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for u := range sessions {
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		writeUser(t, db, u, keysPerUser)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// currentManifest is the path of the MANIFEST Pebble would read.
func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	d, err := pebble.Peek(dir, vfs.Default)
	if err != nil || !d.Exists {
		t.Fatalf("peek: %v, %+v", err, d)
	}
	return d.ManifestFilename
}

func flipBit(t *testing.T, path string, off func(size int) int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off(len(b))] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedManifest: a store that existed and whose MANIFEST (or its
// marker) is damaged is refused with ErrCorrupt, and the failed Open
// changes no file: with the damage undone the store opens with all its
// data. Before the fix a MANIFEST one byte short or with a flipped bit
// opened as an empty store, a deleted marker as a new one.
func TestDamagedManifest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"truncated by one byte", func(t *testing.T, dir string) {
			m := currentManifest(t, dir)
			fi, err := os.Stat(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(m, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
		}},
		{"last record cut off", func(t *testing.T, dir string) {
			skipEncryptedAll(t, "it reads the MANIFEST's records")
			m := currentManifest(t, dir)
			if err := os.Truncate(m, lastRecordOffset(t, m)); err != nil {
				t.Fatal(err)
			}
		}},
		{"bit flipped in the tail", func(t *testing.T, dir string) {
			flipBit(t, currentManifest(t, dir), func(n int) int { return n - 3 })
		}},
		{"bit flipped in the middle", func(t *testing.T, dir string) {
			flipBit(t, currentManifest(t, dir), func(n int) int { return n / 2 })
		}},
		{"bit flipped in the first header", func(t *testing.T, dir string) {
			flipBit(t, currentManifest(t, dir), func(int) int { return 0 })
		}},
		{"empty", func(t *testing.T, dir string) {
			if err := os.Truncate(currentManifest(t, dir), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(t *testing.T, dir string) {
			if err := os.Remove(currentManifest(t, dir)); err != nil {
				t.Fatal(err)
			}
		}},
		{"marker deleted", func(t *testing.T, dir string) {
			removeGlob(t, dir, "marker.manifest.*")
		}},
		{"marker and MANIFEST deleted", func(t *testing.T, dir string) {
			if err := os.Remove(currentManifest(t, dir)); err != nil {
				t.Fatal(err)
			}
			removeGlob(t, dir, "marker.manifest.*")
		}},
		{"format-version marker deleted", func(t *testing.T, dir string) {
			removeGlob(t, dir, "marker.format-version.*")
		}},
		{"truncated, and the format sidecar deleted", func(t *testing.T, dir string) {
			m := currentManifest(t, dir)
			fi, err := os.Stat(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(m, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
			removeGlob(t, dir, sidecarName)
		}},
		{"every Pebble file but the tables deleted", func(t *testing.T, dir string) {
			for _, g := range []string{"MANIFEST-*", "marker.*", "OPTIONS-*", "*.log"} {
				removeGlob(t, dir, g)
			}
		}},
		{"a table file deleted", func(t *testing.T, dir string) {
			ts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ts) == 0 {
				t.Fatal("no table files")
			}
			if err := os.Remove(ts[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{"format sidecar damaged", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, sidecarName), []byte("memor f\x00rmat 4\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := storeOfSessions(t)
			backup := t.TempDir()
			copyDir(t, dir, backup)
			c.damage(t, dir)
			before := hashDir(t, dir)
			db, err := Open(dir, Options{})
			if err == nil {
				n := userKeys(t, db)
				db.Close()
				t.Fatalf("Open succeeded, with %d of %d keys", n, sessions*keysPerUser)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
			t.Logf("Open: %v", err)
			sameFiles(t, dir, before)
			// Nothing was lost: the undamaged files open with all data.
			restore(t, backup, dir)
			db, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open after undoing the damage: %v", err)
			}
			defer db.Close()
			if n := userKeys(t, db); n != sessions*keysPerUser {
				t.Fatalf("%d keys after undoing the damage, want %d", n, sessions*keysPerUser)
			}
		})
	}
}

// TestManifestCutAtRecordBoundary: a MANIFEST that lost its last record
// whole reads to a clean end; the size Close recorded finds it. Here the
// lost record is the flush of the last session's user, and without the
// size check Open succeeds: the read-only open finds the format key and
// reaches the recorded sequence number (the flushed log is still there),
// but the writable open would delete the table the record named.
func TestManifestCutAtRecordBoundary(t *testing.T) {
	skipEncryptedAll(t, "it cuts the MANIFEST at Pebble's offsets")
	t.Parallel()
	dir := t.TempDir()
	for u := range 2 {
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		writeUser(t, db, u, keysPerUser)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m := currentManifest(t, dir)
	if err := os.Truncate(m, lastRecordOffset(t, m)); err != nil {
		t.Fatal(err)
	}
	before := hashDir(t, dir)
	db, err := Open(dir, Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "when the store was closed") {
		t.Fatalf("Open: %v, want ErrCorrupt for a short MANIFEST", err)
	}
	t.Logf("Open: %v", err)
	sameFiles(t, dir, before)
}

// TestUndamagedChanges: changes that lose nothing open with all data: the
// format sidecar deleted (it is rewritten from the store's format key),
// a stray empty CURRENT file (which this Pebble format does not read).
func TestUndamagedChanges(t *testing.T) {
	t.Parallel()
	for _, name := range []string{sidecarName, "CURRENT", syncedName} {
		t.Run(name, func(t *testing.T) {
			dir := storeOfSessions(t)
			if name == "CURRENT" {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				removeGlob(t, dir, name)
			}
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n := userKeys(t, db); n != sessions*keysPerUser {
				t.Errorf("%d keys, want %d", n, sessions*keysPerUser)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, sidecarName)); err != nil {
				t.Errorf("format sidecar: %v", err)
			}
		})
	}
}

func removeGlob(t *testing.T, dir, pattern string) {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// restore makes dir a copy of backup.
func restore(t *testing.T, backup, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	copyDir(t, backup, dir)
}

// lastRecordOffset is the offset of the last record of the MANIFEST at
// path, which must have at least two.
func lastRecordOffset(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rr := record.NewReader(f, 0)
	var offs []int64
	for {
		off := rr.Offset()
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	if len(offs) < 2 {
		t.Fatalf("%s has %d records", path, len(offs))
	}
	return offs[len(offs)-1]
}
