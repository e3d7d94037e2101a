package embed

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// DefaultHashDim is the dimension of [NewHash] when given 0: 384, the size
// of the common small sentence-embedding models (all-MiniLM-L6-v2,
// bge-small), so a store can switch between them without changing the
// vector index's shape, and large enough that a typical memory's few dozen
// features rarely collide.
const DefaultHashDim = 384

// Feature weights. Whole words carry the most meaning; word pairs add
// phrase order; character trigrams tie inflections and typos together
// ("lives" and "live" share "<li", "liv", "ive"). Each word's trigrams
// share one weight budget so that long words do not outweigh short ones.
const (
	weightWord    = 1.0
	weightBigram  = 0.6
	weightTrigram = 1.2 // split over the word's trigrams
)

// Hash is the default embedder: signed feature hashing (the "hashing
// trick") of lowercased word unigrams, word bigrams and character trigrams
// of each word, L2-normalised. It needs no weights, is deterministic (FNV-1a,
// no per-process seed) and is safe for concurrent use.
//
// A text with no letters or digits embeds to the zero vector: it is
// similar to nothing, and a cosine index will reject it.
type Hash struct{ dim int }

// NewHash returns a hashing embedder of dimension dim (DefaultHashDim when
// dim ≤ 0).
func NewHash(dim int) *Hash {
	if dim <= 0 {
		dim = DefaultHashDim
	}
	return &Hash{dim: dim}
}

// Dim returns the vector dimension.
func (h *Hash) Dim() int { return h.dim }

// Embed returns one L2-normalised vector per text. It fails only when ctx
// is done. A large batch (a bulk import) is split over the available
// cores; each vector depends on its text alone, so the result is the same.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts)/parallelEmbedMin)
	if workers <= 1 {
		return out, h.embedRange(ctx, texts, out)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	per := (len(texts) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min(len(texts), (w+1)*per)
		wg.Go(func() { errs[w] = h.embedRange(ctx, texts[lo:hi], out[lo:hi]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, ctx.Err()
	}
	return out, nil
}

// parallelEmbedMin is the number of texts per core from which Embed uses
// more than one: below it, starting goroutines costs more than it saves.
const parallelEmbedMin = 128

func (h *Hash) embedRange(ctx context.Context, texts []string, out [][]float32) error {
	for i, t := range texts {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		out[i] = h.embed(t)
	}
	return nil
}

// Feature kinds, hashed in front of the feature so that the word "the" and
// the trigram "the" land in different buckets.
const (
	kindWord    = 'w'
	kindBigram  = 'b'
	kindTrigram = 'c'
)

func (h *Hash) embed(text string) []float32 {
	v := make([]float32, h.dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var r []rune // "<" word ">", reused across words
	for i, w := range words {
		h.add(v, fnv(kindWord, w, ""), weightWord)
		if i > 0 {
			h.add(v, fnv(kindBigram, words[i-1], w), weightBigram)
		}
		r = append(r[:0], '<')
		for _, c := range w {
			r = append(r, c)
		}
		r = append(r, '>')
		n := len(r) - 2
		if n < 1 {
			continue
		}
		wt := float32(weightTrigram / math.Sqrt(float64(n)))
		for j := 0; j+3 <= len(r); j++ {
			h.add(v, fnvRunes(kindTrigram, r[j:j+3]), wt)
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

// add puts weight w into the bucket of hash f with the sign of f's top
// bit; signed hashing keeps collisions from biasing dot products.
func (h *Hash) add(v []float32, f uint64, w float32) {
	i := (f & (1<<63 - 1)) % uint64(h.dim)
	if f>>63 == 1 {
		w = -w
	}
	v[i] += w
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv is 64-bit FNV-1a over kind, a, a space and b.
func fnv(kind byte, a, b string) uint64 {
	x := uint64(fnvOffset)
	x = (x ^ uint64(kind)) * fnvPrime
	for i := 0; i < len(a); i++ {
		x = (x ^ uint64(a[i])) * fnvPrime
	}
	if b != "" {
		x = (x ^ ' ') * fnvPrime
		for i := 0; i < len(b); i++ {
			x = (x ^ uint64(b[i])) * fnvPrime
		}
	}
	return mix(x)
}

// fnvRunes is fnv(kind, string(rs), ""), without building the string.
func fnvRunes(kind byte, rs []rune) uint64 {
	x := uint64(fnvOffset)
	x = (x ^ uint64(kind)) * fnvPrime
	var buf [utf8.UTFMax]byte
	for _, c := range rs {
		n := utf8.EncodeRune(buf[:], c)
		for _, b := range buf[:n] {
			x = (x ^ uint64(b)) * fnvPrime
		}
	}
	return mix(x)
}

// mix finalises a hash (splitmix64) so that the low bits used for the
// bucket and the top bit used for the sign are well mixed.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
