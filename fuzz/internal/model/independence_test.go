package model

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestModelIsIndependent: the reference model shares no code with the
// engine. model.go may import the standard library only — not memor, not
// its resolver, not any package of the module — so that a bug in the
// engine's rules cannot be copied into the oracle that checks them.
func TestModelIsIndependent(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "model.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Imports) == 0 {
		t.Fatal("model.go imports nothing: is this the model?")
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		// Standard library paths have no dot in their first element.
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			t.Errorf("model.go imports %s: the model must use the standard library only", path)
		}
	}
}
