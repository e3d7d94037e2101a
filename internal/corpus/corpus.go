// Package corpus serves the realistic texts in the repository's
// testdata/texts to every test that writes text: long chat turns,
// paragraphs, a document near the 64 KiB text limit, thousands of distinct
// terms, lists, code, emoji, CJK, RTL, combining marks, control bytes. A
// write path tested only with one-line templates once hid a crash on any
// sentence of more than 16 distinct words; these texts are what users
// write.
//
// The texts are read from the source tree (this file's folder, two levels
// up), so the package is for tests only.
package corpus

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Text is one text of the corpus.
type Text struct {
	Name string // the file's name, without .txt
	Body string
}

var load = sync.OnceValues(func() ([]Text, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("corpus: cannot locate the source tree")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "texts")
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("corpus: no texts in %s", dir)
	}
	sort.Strings(names)
	out := make([]Text, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Text{Name: strings.TrimSuffix(filepath.Base(n), ".txt"), Body: string(b)})
	}
	return out, nil
})

// Texts returns the corpus, sorted by name. The slice is shared: callers
// must not modify it.
func Texts() ([]Text, error) { return load() }

// MustTexts is Texts for tests: it panics if the corpus cannot be read.
func MustTexts() []Text {
	ts, err := Texts()
	if err != nil {
		panic(err)
	}
	return ts
}

var vocab = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range MustTexts() {
		for _, w := range strings.Fields(t.Body) {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	sort.Strings(out)
	return out
})

// Words returns a random sequence of n words drawn from every word of the
// corpus (tens of thousands of distinct ones, in many scripts), joined by
// single spaces.
func Words(r *rand.Rand, n int) string {
	v := vocab()
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v[r.IntN(len(v))])
	}
	return b.String()
}

// Pick returns a text for a test to write, chosen by r: a corpus text
// (half the time) or a random sequence of 1 to 500 words. name says which.
func Pick(r *rand.Rand) (name, text string) {
	ts := MustTexts()
	if r.IntN(2) == 0 {
		t := ts[r.IntN(len(ts))]
		return t.Name, t.Body
	}
	n := 1 + r.IntN(500)
	return fmt.Sprintf("words-%d", n), Words(r, n)
}
