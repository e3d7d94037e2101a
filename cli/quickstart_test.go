package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestREADMEQuickstart compiles the README's library quickstart as a user
// pastes it: a main package of its own, in a folder of the module.
func TestREADMEQuickstart(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := readmeSection(t, "Library quickstart")
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatalf("README: no go block in the Library quickstart (%d bytes read)", len(data))
	}
	// Inside the module, so that its import resolves to this checkout.
	dir, err := os.MkdirTemp("..", ".quickstart-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./"+filepath.Base(dir))
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the README's quickstart does not compile as pasted: %v\n%s", err, out)
	}
}
