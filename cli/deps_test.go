package cli_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinariesDoNotLinkTesting: neither binary links package testing, which
// would bring its flags and init into every user's process (issue 18). The
// conformance client reaches the suite through memortest/suite and
// memortest/backend, never memortest itself. A failure names every package
// in the binary that imports testing, so the culprit (ours or a
// dependency's) is in the message.
func TestBinariesDoNotLinkTesting(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"../cmd/memor", "../cmd/memor-server"} {
		out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", bin, err, out)
		}
		var importers []string
		for line := range strings.Lines(string(out)) {
			pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
			for imp := range strings.FieldsSeq(imports) {
				if imp == "testing" {
					importers = append(importers, pkg)
				}
			}
		}
		if len(importers) > 0 {
			t.Errorf("%s links package testing, imported by %s", bin, strings.Join(importers, ", "))
		}
	}
}
