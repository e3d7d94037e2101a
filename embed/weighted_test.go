package embed

import (
	"context"
	"slices"
	"testing"
)

// TestEmbedWeightedOnesIsEmbed: weighting every word by 1 is the plain
// vector, bit for bit, so a query weighted by IDF differs from the stored
// vectors only by its weights.
func TestEmbedWeightedOnesIsEmbed(t *testing.T) {
	ctx := context.Background()
	h := NewHash(0)
	for _, text := range []string{"I have uploaded 25 documents", "Où est la gare? Straße", "a", ""} {
		want, err := h.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.EmbedWeighted(ctx, text, func(string) float32 { return 1 })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[0]) {
			t.Errorf("%q: weighted by 1 differs from Embed", text)
		}
	}
}

// TestEmbedWeightedZeroDropsWord: a word of weight 0 leaves no trace (its
// unigram, trigrams and the bigrams it is part of), so "what yoga" with
// "what" at 0 is the vector of "yoga"; a text whose words all weigh 0
// is the zero vector.
func TestEmbedWeightedZeroDropsWord(t *testing.T) {
	ctx := context.Background()
	h := NewHash(0)
	got, err := h.EmbedWeighted(ctx, "What yoga", func(w string) float32 {
		if w == "what" {
			return 0
		}
		return 2
	})
	if err != nil {
		t.Fatal(err)
	}
	want := h.embed("yoga")
	for i := range want {
		if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("bucket %d: %g, want %g", i, got[i], want[i])
		}
	}
	zero, err := h.EmbedWeighted(ctx, "what did", func(string) float32 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range zero {
		if x != 0 {
			t.Fatal("all words at weight 0: vector not zero")
		}
	}
}

// TestEmbedWeightedShiftsCosine: weighting a query's rare word up makes
// it closer to a text sharing that word than to one sharing only the
// common words.
func TestEmbedWeightedShiftsCosine(t *testing.T) {
	ctx := context.Background()
	h := NewHash(0)
	q := "what did Gina do"
	common, rare := h.embed("what did you do"), h.embed("Gina went hiking")
	cos := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	plain := h.embed(q)
	if cos(plain, common) <= cos(plain, rare) {
		t.Fatalf("unweighted: the common-word text is not closer (%g vs %g): the test shows nothing", cos(plain, common), cos(plain, rare))
	}
	w, err := h.EmbedWeighted(ctx, q, func(word string) float32 {
		if word == "gina" {
			return 3
		}
		return 0.5
	})
	if err != nil {
		t.Fatal(err)
	}
	if cos(w, common) >= cos(w, rare) {
		t.Errorf("weighted: cos to the common-word text %g ≥ to the rare-word text %g", cos(w, common), cos(w, rare))
	}
	if _, err := h.EmbedWeighted(canceled(), q, func(string) float32 { return 1 }); err == nil {
		t.Error("EmbedWeighted on a done context: no error")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
