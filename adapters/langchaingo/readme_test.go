package memorlangchaingo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADME compiles this adapter's block of the README's "Use memor
// from your framework" section as written: wrapped in a main that declares
// what the section says is given (e, ctx, feb, ...), with every variable
// the block declares used.
func TestREADME(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n## Use memor from your framework\n")
	if i < 0 {
		t.Fatal(`README: no section "Use memor from your framework"`)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	i = strings.Index(s, "\n### LangChainGo")
	if i < 0 {
		t.Fatal("README: no subsection ### LangChainGo")
	}
	s = s[i+1:]
	if j := strings.Index(s[4:], "\n### "); j >= 0 {
		s = s[:j+4]
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(s)
	if m == nil {
		t.Fatal("README: no go block under ### LangChainGo")
	}
	block := m[1]
	var uses []string
	for _, d := range regexp.MustCompile(`(?m)^\s*([\w, ]+?) :=`).FindAllStringSubmatch(block, -1) {
		for _, name := range strings.Split(d[1], ",") {
			if name = strings.TrimSpace(name); name != "_" {
				uses = append(uses, "_ = "+name)
			}
		}
	}
	src := strings.Replace(readmeProgram, "BLOCK", block+"\n"+strings.Join(uses, "\n"), 1)
	// Inside the module, so that its imports resolve to this checkout.
	dir, err := os.MkdirTemp(".", ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
		t.Errorf("the README's block does not compile as written: %v\n%s\n%s", err, out, src)
	}
}

const readmeProgram = `package main

import (
	"time"

	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"

	"github.com/memor-db/memor"
	memorlangchaingo "github.com/memor-db/memor/adapters/langchaingo"
)

func main() {
	var e *memor.Engine
	var llm llms.Model
	var feb time.Time
BLOCK
}
`
