package kv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

const walKeys = 400

// storeWithWAL builds a store whose user 0 is in flushed tables and whose
// user 1 (walKeys keys, one synced commit each, all acknowledged) is only
// in the last write-ahead log, and returns it open with o. before, if not
// nil, runs before user 1 is written.
func storeWithWAL(t *testing.T, dir string, o Options, before func(*DB)) *DB {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	writeUser(t, db, 0, keysPerUser)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(db)
	}
	writeUser(t, db, 1, walKeys)
	return db
}

// lastWAL is the path of the newest write-ahead log in dir.
func lastWAL(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log in %s", dir)
	}
	slices.Sort(logs)
	return logs[len(logs)-1]
}

// flipWALMiddle flips a bit in the middle of the last write-ahead log,
// which must hold user 1's writes.
func flipWALMiddle(t *testing.T, dir string) {
	t.Helper()
	w := lastWAL(t, dir)
	fi, err := os.Stat(w)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < walKeys*20 {
		t.Fatalf("%s is %d bytes: user 1's writes are not in it", w, fi.Size())
	}
	flipBit(t, w, func(n int) int { return n / 2 })
}

// wantLostWrites fails the test unless opening dir fails with ErrCorrupt
// for lost writes and changes no file.
func wantLostWrites(t *testing.T, dir string) {
	t.Helper()
	before := hashDir(t, dir)
	db, err := Open(dir, Options{})
	if err == nil {
		n := userKeys(t, db)
		db.Close()
		t.Fatalf("Open succeeded with %d of %d keys", n, keysPerUser+walKeys)
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "writes were lost") {
		t.Fatalf("Open: %v, want ErrCorrupt for lost writes", err)
	}
	t.Logf("Open: %v", err)
	sameFiles(t, dir, before)
}

// TestWALBitFlipAfterClose: a bit flipped in the middle of the last
// write-ahead log of a store closed cleanly is found by Open, which
// returns ErrCorrupt naming how many acknowledged writes recovery would
// lose, and changes no file; with the bit restored every write is there.
// Before the check Open succeeded without half of user 1's keys
// (TestWALBitFlipPebble shows what Pebble alone recovers).
func TestWALBitFlipAfterClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := storeWithWAL(t, dir, Options{}, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	backup := t.TempDir()
	copyDir(t, dir, backup)
	flipWALMiddle(t, dir)
	wantLostWrites(t, dir)
	restore(t, backup, dir)
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := userKeys(t, db); n != keysPerUser+walKeys {
		t.Fatalf("%d keys with the bit restored, want %d", n, keysPerUser+walKeys)
	}
}

// TestWALBitFlipPebble measures what Pebble itself does with a bit
// flipped in the middle of the last write-ahead log: it takes the bad
// chunk for the torn end of the log, opens without an error and drops
// every record from the flip on, acknowledged and synced as they were.
// (In the Pebble format memor uses, FormatFlushableIngest, log chunks
// carry no synced offset that would tell a flip from a torn write.)
func TestWALBitFlipPebble(t *testing.T) {
	skipEncryptedAll(t, "it flips a bit at Pebble's offsets")
	t.Parallel()
	dir := t.TempDir()
	db := storeWithWAL(t, dir, Options{}, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	flipWALMiddle(t, dir)
	p, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("Pebble refused the log: %v", err)
	}
	defer p.Close()
	count := func(u int) int {
		prefix := userKey(u, 0)
		prefix = prefix[:len(prefix)-4]
		it, err := p.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: PrefixEnd(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.Equal(it.Key(), userKey(u, n)) {
				t.Fatalf("user %d: key %d is %x; want the first keys written", u, n, it.Key())
			}
			n++
		}
		return n
	}
	u0, u1 := count(0), count(1)
	t.Logf("Pebble recovered %d of %d keys of the flushed user, %d of %d of the logged one", u0, keysPerUser, u1, walKeys)
	if u0 != keysPerUser || u1 == 0 || u1 >= walKeys {
		t.Fatalf("recovered %d/%d flushed and %d/%d logged keys; want all flushed, a proper prefix of the logged", u0, keysPerUser, u1, walKeys)
	}
}

// waitSynced waits until db has recorded its current sequence number as
// synced (see syncedName).
func waitSynced(t *testing.T, db *DB) {
	t.Helper()
	want := visibleSeq(db.p)
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, _, err := readSynced(db.fs, db.dir)
		got := d.seq
		if err != nil {
			t.Fatal(err)
		}
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d after 10s, want %d", syncedName, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWALBitFlipAfterCrash: an open store records its synced sequence
// number, so a flip in the last log of a store that crashed (its files
// copied while it is open) is found too, once the writes it loses were
// recorded as durable.
func TestWALBitFlipAfterCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := storeWithWAL(t, dir, Options{syncedEvery: 10 * time.Millisecond}, nil)
	defer db.Close()
	waitSynced(t, db)
	crashed := t.TempDir()
	copyDir(t, dir, crashed) // the files as a crash would leave them
	flipWALMiddle(t, crashed)
	wantLostWrites(t, crashed)
}

// TestWALBitFlipAfterCrashUnrecorded documents the limit of the check:
// writes acknowledged after the last recording of the synced sequence
// number (at most syncedEvery before a crash) are not covered; a flip in
// the log that loses them is taken for a torn end, Open succeeds and those
// writes are gone.
func TestWALBitFlipAfterCrashUnrecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := storeWithWAL(t, dir, Options{syncedEvery: time.Hour}, func(db *DB) {
		writeUser(t, db, 2, 1)
		waitSynced(t, db) // the next recording is an hour away
	})
	defer db.Close()
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	flipWALMiddle(t, crashed)
	db2, err := Open(crashed, Options{})
	if err != nil {
		t.Fatalf("Open: %v (if this now detects the flip, update this test and the README)", err)
	}
	defer db2.Close()
	n := userKeys(t, db2)
	t.Logf("after a crash and a flip: %d of %d keys", n, keysPerUser+walKeys+1)
	if n <= keysPerUser+1 || n >= keysPerUser+walKeys+1 {
		t.Fatalf("%d keys, want the flushed %d, user 2's one and a proper prefix of the %d logged", n, keysPerUser, walKeys)
	}
}
