package bm25

import (
	"fmt"
	"testing"
)

// TestWriteDocEqualsAdd: WriteDoc writes, byte for byte, what Add writes for
// a new document, over texts with repeats, stop words, case, punctuation,
// non-ASCII and nothing to index.
func TestWriteDocEqualsAdd(t *testing.T) {
	prefix := []byte("u/b")
	texts := []string{"user likes like enjoy object-17", "The the THE cat, the hat!", "Ünïcode straße 東京 tokyo",
		"", "   ...   ", "a an and of", "Sarah lives in Austin (staging)"}
	for i := range 200 {
		texts = append(texts, fmt.Sprintf("user %s %s object-%d word%d", []string{"likes", "lives_in"}[i%2], "gloss words", i, i%7))
	}
	var got, want recorder
	ix := New(prefix, Options{})
	for i, text := range texts {
		doc := uint32(2*i + 1)
		if err := ix.Add(&want, doc, text); err != nil {
			t.Fatal(err)
		}
		if err := WriteDoc(&got, prefix, doc, text); err != nil {
			t.Fatal(err)
		}
	}
	if got.log.String() != want.log.String() {
		t.Fatalf("WriteDoc wrote\n%.400s\nAdd wrote\n%.400s", got.log.String(), want.log.String())
	}
}
