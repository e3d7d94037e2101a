package fuzz

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/kv"
)

// makeStore writes a small store to a fresh folder, closes it and makes
// sure its data sits in table files (not only in the write-ahead log).
func makeStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	clock := newTestClock()
	e, err := memor.Open(dir, memor.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		clock.Advance(time.Minute)
		u := fmt.Sprintf("user-%d", i%5)
		if _, err := e.Assert(ctx, u, memor.FactInput{Subject: "user", Predicate: "lives_in",
			Object: fmt.Sprintf("city %d with a longer name so that blocks fill", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	flushStore(t, dir)
	return dir
}

// dirSnapshot maps every file of dir to a hash of its bytes.
func dirSnapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// changedFiles lists the files of before that were modified or removed.
func changedFiles(before, after map[string][32]byte) []string {
	var out []string
	for name, h := range before {
		if name == "LOCK" {
			continue
		}
		if g, ok := after[name]; !ok {
			out = append(out, name+" (removed)")
		} else if g != h {
			out = append(out, name+" (modified)")
		}
	}
	sort.Strings(out)
	return out
}

// largestTable returns the path of the biggest .sst file in dir.
func largestTable(t *testing.T, dir string) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	best, size := "", int64(-1)
	for _, m := range ms {
		if st, err := os.Stat(m); err == nil && st.Size() > size {
			best, size = m, st.Size()
		}
	}
	if best == "" {
		t.Fatal("no table file: the store's data is not in tables")
	}
	return best
}

// openNoPanic opens dir, turning a panic into a test failure. (Regression:
// Pebble's default DataCorruption listener called the logger's Fatalf,
// which panicked.)
func openNoPanic(t *testing.T, dir string) (e *memor.Engine, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i]
			}
			t.Fatalf("Open panicked: %s", msg)
		}
	}()
	return memor.Open(dir, memor.Options{})
}

// useNoPanic reads everything through e and runs Check; it returns the
// first error. A damaged store must fail here if Open let it through.
func useNoPanic(t *testing.T, e *memor.Engine) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("reading a damaged store panicked: %v", r)
		}
	}()
	ctx := context.Background()
	for i := range 5 {
		u := fmt.Sprintf("user-%d", i)
		if _, err := e.History(ctx, u, "user", "lives_in"); err != nil {
			return err
		}
	}
	return e.Check(ctx)
}

// TestOpenBadStorage: a read-only folder, damaged table files and a store
// from a newer format make Open fail with a clear error, never panic, and
// overwrite nothing.
func TestOpenBadStorage(t *testing.T) {
	t.Run("read-only folder", func(t *testing.T) {
		dir := makeStore(t)
		makeReadOnly(t, dir)
		before := dirSnapshot(t, dir)
		e, err := openNoPanic(t, dir)
		if err == nil {
			_ = e.Close()
			t.Fatal("Open of a read-only folder succeeded")
		}
		if !errors.Is(err, memor.ErrReadOnly) {
			t.Errorf("Open: %v, want ErrReadOnly", err)
		}
		if ch := changedFiles(before, dirSnapshot(t, dir)); len(ch) > 0 {
			t.Errorf("files changed: %v", ch)
		}
	})

	t.Run("newer format version", func(t *testing.T) {
		dir := makeStore(t)
		db, err := kv.Open(dir, kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.SetFormatVersionForTest(dir, kv.FormatVersion+1); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil { // so that no log replay is due
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		before := dirSnapshot(t, dir)
		e, err := openNoPanic(t, dir)
		if err == nil {
			_ = e.Close()
			t.Fatal("Open of a newer format succeeded")
		}
		if !errors.Is(err, memor.ErrFormatTooNew) || !strings.Contains(err.Error(), "format") {
			t.Errorf("Open: %v, want ErrFormatTooNew", err)
		}
		// The data is all still there for the newer build.
		if tables := tableBytes(t, dir); tables == 0 {
			t.Error("no table data left")
		}
		if ch := changedFiles(before, dirSnapshot(t, dir)); len(ch) > 0 {
			t.Errorf("a failed Open of a newer store rewrote or removed files (kv invariant 3 says it writes nothing): %v", ch)
		}
	})

	for _, damage := range []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"truncated table", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"corrupted table", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Flip bytes through the data blocks, not the footer.
			for i := 16; i < len(b)*3/4; i += 97 {
				b[i] ^= 0x5a
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := makeStore(t)
			damage.do(t, largestTable(t, dir))
			before := dirSnapshot(t, dir)
			e, err := openNoPanic(t, dir)
			if err == nil {
				// Pebble opens tables lazily: the damage must then show up
				// as an error on first use, never as wrong data or a panic.
				uerr := useNoPanic(t, e)
				_ = e.Close()
				if uerr == nil {
					t.Fatal("a damaged store opened and read without any error")
				}
				t.Logf("Open succeeded (tables open lazily); first use failed: %v", uerr)
				if !errors.Is(uerr, memor.ErrCorrupt) {
					t.Errorf("first use: %v, want ErrCorrupt", uerr)
				}
				checkDamageNamed(t, uerr, damage.name)
			} else {
				t.Logf("Open: %v", err)
				if !errors.Is(err, memor.ErrCorrupt) {
					t.Errorf("Open: %v, want ErrCorrupt", err)
				}
				checkDamageNamed(t, err, damage.name)
				// A refused store is checked before Pebble may write.
				if ch := changedFiles(before, dirSnapshot(t, dir)); len(ch) > 0 {
					t.Errorf("a refused Open changed files: %v", ch)
				}
			}
			// Pebble's own recovery at open replays and retires write-ahead
			// logs and superseded manifests; what must not change is data:
			// the tables and memor's format sidecar.
			var data []string
			for _, c := range changedFiles(before, dirSnapshot(t, dir)) {
				if strings.Contains(c, ".sst") || strings.HasPrefix(c, "MEMOR_FORMAT") {
					data = append(data, c)
				}
			}
			if len(data) > 0 {
				t.Errorf("data files changed: %v", data)
			}
		})
	}
}

// checkDamageNamed: the error of a damaged table's block names the
// damaged file, in words a person can act on.
func checkDamageNamed(t *testing.T, err error, damage string) {
	t.Helper()
	if strings.Contains(err.Error(), "<corruption detail carrier>") {
		t.Errorf("the error shows Pebble's internal carrier text: %v", err)
	}
	if damage == "corrupted table" && !strings.Contains(err.Error(), ".sst is damaged") {
		t.Errorf("the error does not name the damaged table file: %v", err)
	}
}

func tableBytes(t *testing.T, dir string) int64 {
	ms, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var n int64
	for _, m := range ms {
		if st, err := os.Stat(m); err == nil {
			n += st.Size()
		}
	}
	return n
}

// makeReadOnly makes dir refuse new files. Root ignores permission bits, so
// as root the folder is made immutable instead (chattr +i), or the test is
// skipped where that is not allowed.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root and chattr +i is not available (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		name := f.Name()
		_ = f.Close()
		_ = os.Remove(name)
		t.Skip("cannot make the folder read-only here")
	}
}
