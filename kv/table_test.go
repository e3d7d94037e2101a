package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// dumpStore returns every key and value of db, one per line.
func dumpStore(t *testing.T, db *DB) string {
	t.Helper()
	var sb strings.Builder
	if err := db.Scan(context.Background(), nil, func(k, v []byte) error {
		fmt.Fprintf(&sb, "%q=%q\n", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// fillLocal writes n keys under user's root (overwriting and deleting some
// of them) into a batch under user's root (SetLocal), plus extra (outside the root) if non-nil.
func fillLocal(t *testing.T, db *DB, user string, n int, extra []byte) *Batch {
	t.Helper()
	b := db.NewBatch()
	b.SetLocal(UserRoot(user))
	for i := range n {
		k := AppendUint32(UserKey(user, SubClaim), uint32(i*7919%n))
		if err := b.Set(k, bytes.Repeat([]byte{byte(i)}, 1+i%50)); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if err := b.Set(k, []byte("second")); err != nil {
				t.Fatal(err)
			}
		}
		if i%9 == 0 {
			if err := b.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		// A delete of a key the store never held.
		if err := b.Delete(AppendUint32(UserKey(user, SubDoc), uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	if extra != nil {
		if err := b.Set(extra, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestIngestEqualsLog: a batch under an empty prefix committed as an ingested table leaves
// the store exactly as the same batch committed through the log, reopens
// with it (durable without a sync), and leaves no file of its own behind. A
// batch with a key outside the local prefix, a range deletion, or below
// the size threshold commits through the log instead.
func TestIngestEqualsLog(t *testing.T) {
	t.Parallel()
	other := storeWith(t, nil) // reference: never ingests
	other.ingestMin = -1
	b := fillLocal(t, other, "alice", 3000, nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	want := dumpStore(t, other)

	dir := t.TempDir()
	db, err := Open(dir, Options{NoSync: true, IngestMinBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Something else in the store, in the memtable and in a table.
	if err := db.p.Set(UserKey("bob", SubMeta), []byte("bob"), nil); err != nil {
		t.Fatal(err)
	}
	b = fillLocal(t, db, "alice", 3000, nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if db.IngestedTables() != 1 {
		t.Fatalf("%d tables ingested, want 1", db.IngestedTables())
	}
	got := strings.Replace(dumpStore(t, db), fmt.Sprintf("%q=%q\n", UserKey("bob", SubMeta), "bob"), "", 1)
	if got != want {
		t.Fatalf("ingested store differs from logged store:\n%.300s\nwant\n%.300s", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tablePrefix) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	db, err = Open(dir, Options{NoSync: true, IngestMinBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := strings.Replace(dumpStore(t, db), fmt.Sprintf("%q=%q\n", UserKey("bob", SubMeta), "bob"), "", 1); got != want {
		t.Fatal("ingested table lost at reopen")
	}

	// Not ingested: a key outside the prefix (after it, before it), a
	// range deletion, too small.
	for i, b := range []*Batch{
		fillLocal(t, db, "carol", 100, UserKey("dave", SubMeta)),
		fillLocal(t, db, "gina", 100, []byte{TagMeta, 'g'}),
		func() *Batch {
			b := fillLocal(t, db, "erin", 100, nil)
			if err := b.DeleteRange(UserKey("erin", SubHistory), UserKey("erin", SubLive)); err != nil {
				t.Fatal(err)
			}
			return b
		}(),
	} {
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if db.IngestedTables() != 0 {
			t.Fatalf("batch %d was ingested", i)
		}
	}
	for _, k := range [][]byte{UserKey("dave", SubMeta), {TagMeta, 'g'}} {
		if _, err := db.Get(k); err != nil {
			t.Fatalf("a batch that could not be ingested was not committed: %v", err)
		}
	}
	db.ingestMin = 1 << 30
	b = fillLocal(t, db, "frank", 100, nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if db.IngestedTables() != 0 {
		t.Fatal("a batch under the threshold was ingested")
	}
}

// TestStaleTablesRemoved: a table file a crash left between writing and
// ingesting it is removed at Open, and nothing else is.
func TestStaleTablesRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	stale := filepath.Join(dir, tablePrefix+"123-4.sst")
	keep := filepath.Join(dir, "notes.txt")
	for _, p := range []string{stale, keep} {
		if err := os.WriteFile(p, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale table still there: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a file that is not ours was removed: %v", err)
	}
}

// TestUsers: every user with a key is listed once, in key order, whatever
// bytes the names hold (prefixes of each other, NUL, 0xFF, escapes), and
// keys outside user keyspaces are not users.
func TestUsers(t *testing.T) {
	t.Parallel()
	names := []string{"a", "ab", "a\x00", "a\x00b", "\x00", "\xff", "\xff\xff", "a/b", "b", strings.Repeat("é", 3000)}
	db := storeWith(t, nil)
	b := db.NewBatch()
	for i, n := range names {
		for _, sub := range []Sub{SubMeta, SubEpisode, SubVector} {
			if i%2 == 0 || sub == SubVector {
				if err := b.Set(AppendUint32(UserKey(n, sub), 1), []byte(n)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, k := range [][]byte{{TagMeta, 'x'}, {TagUserList, 'a', 0, 1}, {TagJudge, 'z'}} {
		if err := b.Set(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := db.Users(context.Background(), func(u string) error {
		got = append(got, u)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	if len(got) != len(names) {
		t.Fatalf("got %d users %q, want %d", len(got), got, len(names))
	}
	for i, u := range got {
		if !want[u] {
			t.Errorf("unknown user %q", u)
		}
		delete(want, u)
		if i > 0 && bytes.Compare(UserRoot(got[i-1]), UserRoot(u)) >= 0 {
			t.Errorf("users out of key order: %q then %q", got[i-1], u)
		}
	}
}

// TestOpenLockedKeepsTables: a second Open of a store in use fails without
// touching the table files the owner may be about to ingest.
func TestOpenLockedKeepsTables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pending := filepath.Join(dir, tablePrefix+"1-1.sst")
	if err := os.WriteFile(pending, []byte("being written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(pending); err != nil {
		t.Fatalf("the owner's table file was removed: %v", err)
	}
}

// countingFile counts the writes and syncs that reach a file.
type countingFile struct {
	vfs.File
	writes, syncs int
}

func (f *countingFile) Write(p []byte) (int, error) { f.writes++; return f.File.Write(p) }
func (f *countingFile) Sync() error                 { f.syncs++; return f.File.Sync() }

// TestTableWritable: what goes through a tableWritable in writes of any
// size, smaller or larger than its buffer, is the file's content after
// Finish, synced once, in about one write call per buffer; an aborted one
// is closed without its buffered bytes.
func TestTableWritable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	for trial := range 20 {
		path := filepath.Join(dir, fmt.Sprint(trial))
		f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		cf := &countingFile{File: f}
		w := newTableWritable(cf)
		var want []byte
		for range r.IntN(200) {
			n := r.IntN(8 << 10)
			if r.IntN(40) == 0 {
				n = r.IntN(3 * tableBuffer)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			want = append(want, p...)
			if err := w.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if trial%5 == 4 {
			w.Abort()
			continue
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: file holds %d bytes, %d written", trial, len(got), len(want))
		}
		if cf.syncs != 1 || cf.writes > 2*len(want)/tableBuffer+2 {
			t.Fatalf("trial %d: %d bytes took %d writes and %d syncs", trial, len(want), cf.writes, cf.syncs)
		}
	}
}
