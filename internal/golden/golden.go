// Package golden compares what a test produced with a file of expected
// output (a golden file), and rewrites the file instead when asked. The
// index packages use it to pin their persisted bytes and answers across
// optimisations: the files are captured from the code before a change.
package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
