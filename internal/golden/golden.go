// Package golden compares what a test produced with a file of expected
// output (a golden file), and rewrites the file instead when asked. The
// index packages use it to pin their persisted bytes and answers across
// optimisations: the files are captured from the code before a change.
package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memor-db/memor/kv"
)

// Check fails t at the first line where got differs from the file at path,
// or, if update is set, writes got to path (creating its folder).
func Check(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("differs from %s at line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("differs from %s: %d lines, want %d", path, len(gl), len(wl))
}

// Recorder is a kv.Writer that logs every write, in order, as text (keys
// and values in hex), and passes it on to W.
type Recorder struct {
	W   kv.Writer
	log strings.Builder
}

// Set logs and passes on a write.
func (r *Recorder) Set(k, v []byte) error {
	fmt.Fprintf(&r.log, "set %x %x\n", k, v)
	return r.W.Set(k, v)
}

// Delete logs and passes on a deletion.
func (r *Recorder) Delete(k []byte) error {
	fmt.Fprintf(&r.log, "del %x\n", k)
	return r.W.Delete(k)
}

// Log returns every write so far, one per line.
func (r *Recorder) Log() string { return r.log.String() }
