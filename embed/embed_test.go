package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func TestHash(t *testing.T) {
	ctx := context.Background()
	h := NewHash(0)
	if h.Dim() != DefaultHashDim {
		t.Fatalf("Dim = %d", h.Dim())
	}
	texts := []string{"I live in Seattle", "where do I live", "my favourite colour is blue", "", "LIVES in seattle!"}
	v, err := h.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range v {
		if len(x) != DefaultHashDim {
			t.Fatalf("vector %d has %d dims", i, len(x))
		}
		var ss float64
		for _, f := range x {
			ss += float64(f) * float64(f)
		}
		if want := 1.0; texts[i] == "" {
			if ss != 0 {
				t.Errorf("empty text: norm² %v, want 0", ss)
			}
		} else if math.Abs(ss-want) > 1e-5 {
			t.Errorf("vector %d: norm² %v, want 1", i, ss)
		}
	}
	related, unrelated := cosine(v[0], v[1]), cosine(v[1], v[2])
	t.Logf("live/where-live %.3f, where-live/colour %.3f", related, unrelated)
	if related <= unrelated+0.1 {
		t.Errorf("related texts %.3f not clearly above unrelated %.3f", related, unrelated)
	}
	// Case and punctuation do not matter; inflections still overlap.
	if c := cosine(v[0], v[4]); c < 0.5 {
		t.Errorf("'I live in Seattle' vs 'LIVES in seattle!': %.3f", c)
	}
	// Deterministic, and independent of batch composition.
	again, _ := NewHash(0).Embed(ctx, texts[1:2])
	if !slices.Equal(again[0], v[1]) {
		t.Error("same text embedded differently")
	}
	small, _ := NewHash(64).Embed(ctx, []string{"x"})
	if len(small[0]) != 64 {
		t.Errorf("NewHash(64) gave %d dims", len(small[0]))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.Embed(cctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// embedReference is the first implementation of Hash.embed, kept verbatim
// with the helpers it called (refAdd, refFnv, refMix): stored vectors were
// made by it, so the embedder must keep producing the same bits.
func embedReference(dim int, text string) []float32 {
	v := make([]float32, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for i, w := range words {
		refAdd(dim, v, refFnv(kindWord, w, ""), weightWord)
		if i > 0 {
			refAdd(dim, v, refFnv(kindBigram, words[i-1], w), weightBigram)
		}
		r := []rune("<" + w + ">")
		n := len(r) - 2
		if n < 1 {
			continue
		}
		wt := float32(weightTrigram / math.Sqrt(float64(n)))
		for j := 0; j+3 <= len(r); j++ {
			refAdd(dim, v, refFnv(kindTrigram, string(r[j:j+3]), ""), wt)
		}
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss > 0 {
		inv := float32(1 / math.Sqrt(ss))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

func refAdd(dim int, v []float32, f uint64, w float32) {
	i := (f & (1<<63 - 1)) % uint64(dim)
	if f>>63 == 1 {
		w = -w
	}
	v[i] += w
}

func refFnv(kind byte, a, b string) uint64 {
	x := uint64(14695981039346656037)
	x = (x ^ uint64(kind)) * 1099511628211
	for i := 0; i < len(a); i++ {
		x = (x ^ uint64(a[i])) * 1099511628211
	}
	if b != "" {
		x = (x ^ ' ') * 1099511628211
		for i := 0; i < len(b); i++ {
			x = (x ^ uint64(b[i])) * 1099511628211
		}
	}
	return refMix(x)
}

func refMix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// TestHashStable: the embedder's output is bit for bit what the reference
// implementation gives, on random texts mixing ASCII, accents, CJK, emoji,
// digits, punctuation and invalid UTF-8.
func TestHashStable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"a", "b", "e", "z", "A", "Q", "é", "ß", "Ж", "水", "😀", "7", " ", " ", ",", "'", "\xff", "\xc3", "-", "\u0301"}
	for _, dim := range []int{8, 384} {
		h := NewHash(dim)
		for range 3000 {
			var sb strings.Builder
			for range r.IntN(60) {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			text := sb.String()
			got, want := h.embed(text), embedReference(dim, text)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("dim %d, %q: component %d is %v, reference %v", dim, text, i, got[i], want[i])
				}
			}
		}
	}
}

// TestHashMatchesReference: Embed (one call of many texts, split over
// goroutines, and one call per text) gives the reference's bits on
// random texts drawn from characters whose lowercasing is special (dotted
// I, Kelvin sign, final sigma, titlecase digraphs, 4-byte letters),
// letters and digits of other scripts, combining marks, symbols,
// separators, random bytes and invalid UTF-8, at the default dimension
// (its constant modulo) and others.
func TestHashMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	alphabet := []string{"a", "Z", "q", "0", "9", "İ", "ı", "\u212a", "Σ", "ς", "ǅ", "ẞ", "ß", "É", "é", "Ж", "ж",
		"水", "😀", "𐐀", "𐐨", "٣", "²", "Ⅻ", "\u0301", "\u00a0", " ", "\t", "\n", ",", ".", "'", "-", "_", "<", ">",
		"\ufffd", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\x00"}
	texts := make([]string, 20000)
	for i := range texts {
		var sb strings.Builder
		for range r.IntN(80) {
			if r.IntN(20) == 0 {
				sb.WriteByte(byte(r.Uint32()))
				continue
			}
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		texts[i] = sb.String()
	}
	texts = append(texts, "", " ", "user lives in Seattle", strings.Repeat("word ", 500), "ÀÉÎÕÜ àéîõü")
	ctx := context.Background()
	for _, dim := range []int{DefaultHashDim, 8, 100} {
		h := NewHash(dim)
		batch, err := h.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		// EmbedInto into memory that holds leftovers of other vectors.
		into := make([][]float32, len(texts))
		for i := range into {
			into[i] = make([]float32, dim)
			for j := range into[i] {
				into[i][j] = float32(j) + 0.5
			}
		}
		if err := h.EmbedInto(ctx, texts, into); err != nil {
			t.Fatal(err)
		}
		// EmbedSparse into a Sparse that holds another batch's vectors.
		sparse := &Sparse{Index: []int32{5, 1}, Value: []float32{1, 2}, Ends: []int{2}}
		if err := h.EmbedSparse(ctx, texts, sparse); err != nil {
			t.Fatal(err)
		}
		if sparse.Len() != len(texts) {
			t.Fatalf("%d sparse vectors for %d texts", sparse.Len(), len(texts))
		}
		for i, text := range texts {
			want := embedReference(dim, text)
			idx, val := sparse.Vector(i)
			for k := range idx {
				if idx[k] < 0 || int(idx[k]) >= dim || k > 0 && idx[k] <= idx[k-1] || val[k] == 0 {
					t.Fatalf("dim %d, %q: sparse component %d is %d=%v", dim, text, k, idx[k], val[k])
				}
			}
			dense := make([]float32, dim)
			for j := range dense {
				dense[j] = -1
			}
			sparse.Dense(i, dense)
			for j := range want {
				if math.Float32bits(dense[j]) != math.Float32bits(want[j]) {
					t.Fatalf("dim %d, %q: sparse component %d is %v, reference %v", dim, text, j, dense[j], want[j])
				}
			}
			one, err := h.Embed(ctx, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range [][]float32{batch[i], one[0], h.embed(text), into[i]} {
				if len(got) != dim || cap(got) != dim {
					t.Fatalf("dim %d, %q: len %d cap %d", dim, text, len(got), cap(got))
				}
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("dim %d, %q: component %d is %v, reference %v", dim, text, j, got[j], want[j])
					}
				}
			}
		}
	}
}

func BenchmarkHashEmbed(b *testing.B) {
	h := NewHash(0)
	b.ReportAllocs()
	for b.Loop() {
		h.embed("user lives in Seattle and works at Example Corporation since March")
	}
}

// TestHashParallelBatch: a batch large enough to be split over cores gives
// the vectors of embedding each text alone, in order, and a cancelled
// context fails it.
func TestHashParallelBatch(t *testing.T) {
	h := NewHash(64)
	texts := make([]string, 3*parallelEmbedMin+7)
	for i := range texts {
		texts[i] = strings.Repeat("word ", i%9) + "number " + strings.Repeat("x", i%13)
	}
	got, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(got[i], h.embed(text)) {
			t.Fatalf("text %d: batch vector differs from its own", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := h.EmbedSparse(ctx, texts, &Sparse{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sparse: %v", err)
	}
}

// BenchmarkHashEmbedBatch embeds a bulk import's 1000 fact texts in one
// Embed call (split over the cores, as the engine's prefetch does).
func BenchmarkHashEmbedBatch(b *testing.B) {
	for _, kind := range []string{"dense", "sparse"} {
		b.Run(kind, func(b *testing.B) { benchmarkHashEmbedBatch(b, kind == "sparse") })
	}
}

func benchmarkHashEmbedBatch(b *testing.B, sparse bool) {
	h := NewHash(0)
	preds := []string{"lives in", "likes", "works at", "plays instrument", "speaks language"}
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = fmt.Sprintf("user %s object-%d", preds[i%len(preds)], i)
		if i%10 == 0 {
			texts[i] += " since March, together with Ærøskøbing's Café Zoë"
		}
	}
	ctx := context.Background()
	var out Sparse
	b.ReportAllocs()
	for b.Loop() {
		if sparse {
			if err := h.EmbedSparse(ctx, texts, &out); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if _, err := h.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts)), "ns/text")
}

// TestEmbedIntoRefusesWrongShapes: EmbedInto names a count or a length that
// does not fit, instead of writing out of bounds.
func TestEmbedIntoRefusesWrongShapes(t *testing.T) {
	h := NewHash(8)
	ctx := context.Background()
	if err := h.EmbedInto(ctx, []string{"a", "b"}, [][]float32{make([]float32, 8)}); err == nil {
		t.Error("two texts into one vector")
	}
	if err := h.EmbedInto(ctx, []string{"a"}, [][]float32{make([]float32, 7)}); err == nil {
		t.Error("a vector of the wrong length")
	}
}
