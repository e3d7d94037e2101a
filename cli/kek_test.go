package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKEK: a store made with --kek-file is encrypted (no plaintext in its
// files, refused without the KEK); forget reminds to rotate; kek rotate
// re-seals it under a new KEK, which opens it, and the old one no longer
// does.
func TestKEK(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := t.TempDir()
	old, next := filepath.Join(keys, "old.kek"), filepath.Join(keys, "new.kek")
	e.ok("kek", "new", old)
	if r := e.run("", "kek", "new", old); r.code == 0 {
		t.Error("kek new overwrote an existing file")
	}
	if fi, err := os.Stat(old); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("KEK file: %v, %v", fi, err)
	}
	e.ok("--kek-file", old, "add", "--user", "bob", "I live in Quillimarsh.")
	e.ok("--kek-file", old, "add", "--user", "alice", "I live in Oslo.")
	if got := objects(e.facts("--kek-file", old, "state", "--user", "bob")); got != "Quillimarsh" {
		t.Errorf("state = %q", got)
	}
	if r := e.run("", "state", "--user", "bob"); r.code == 0 || !strings.Contains(r.stderr, "encrypted") {
		t.Errorf("state without the KEK: %+v", r)
	}
	r := e.run("", "--kek-file", old, "forget", "--yes", "--user", "bob")
	if r.code != 0 || !strings.Contains(r.stderr, "memor kek rotate") {
		t.Errorf("forget: %+v", r)
	}
	e.ok("--kek-file", old, "kek", "rotate", next)
	if r := e.run("", "--kek-file", old, "state", "--user", "alice"); r.code == 0 || !strings.Contains(r.stderr, "wrong key-encryption key") {
		t.Errorf("state with the old KEK: %+v", r)
	}
	if got := objects(e.facts("--kek-file", next, "state", "--user", "alice")); got != "Oslo" {
		t.Errorf("state with the new KEK = %q", got)
	}
	ls, _ := os.ReadDir(e.db)
	for _, f := range ls {
		b, _ := os.ReadFile(filepath.Join(e.db, f.Name()))
		if strings.Contains(strings.ToLower(string(b)), "oslo") {
			t.Errorf("%s holds plaintext", f.Name())
		}
	}
}
