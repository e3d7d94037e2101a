package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
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
// The vectors share backing arrays of up to vecChunk bytes (each vector
// capped to its own length), so a batch costs one allocation per ~20
// vectors, not one per text. A chunk stays a small object: a single large
// array for a bulk import's batch came from fresh pages, and faulting
// them in cost more than the allocations it saved.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	perChunk := max(1, vecChunk/(4*h.dim))
	var backing []float32
	for i := range out {
		if len(backing) == 0 {
			backing = make([]float32, min(perChunk, len(texts)-i)*h.dim)
		}
		out[i], backing = backing[:h.dim:h.dim], backing[h.dim:]
	}
	if err := h.embedAll(ctx, texts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// EmbedInto is Embed writing to out (see [IntoEmbedder]).
func (h *Hash) EmbedInto(ctx context.Context, texts []string, out [][]float32) error {
	if len(out) != len(texts) {
		return fmt.Errorf("embed: %d vectors for %d texts", len(out), len(texts))
	}
	for i := range out {
		if len(out[i]) != h.dim {
			return fmt.Errorf("embed: vector %d has length %d, want %d", i, len(out[i]), h.dim)
		}
		clear(out[i])
	}
	return h.embedAll(ctx, texts, out)
}

// EmbedSparse is Embed returning the vectors' non-zero components (see
// [SparseEmbedder]).
func (h *Hash) EmbedSparse(ctx context.Context, texts []string, out *Sparse) error {
	out.Reset()
	out.grow(len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts)/parallelEmbedMin)
	if workers <= 1 {
		return h.sparseRange(ctx, texts, out)
	}
	// Each core fills its own part; the parts are appended in order.
	parts := make([]*Sparse, workers)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	per := (len(texts) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min(len(texts), (w+1)*per)
		part := out
		if w > 0 {
			part = sparsePool.Get().(*Sparse)
			part.Reset()
			part.grow(hi - lo)
			parts[w] = part
		}
		wg.Go(func() { errs[w] = h.sparseRange(ctx, texts[lo:hi], part) })
	}
	wg.Wait()
	defer func() {
		for _, p := range parts[1:] {
			sparsePool.Put(p)
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return ctx.Err()
	}
	for _, p := range parts[1:] {
		base := len(out.Index)
		out.Index = append(out.Index, p.Index...)
		out.Value = append(out.Value, p.Value...)
		for _, e := range p.Ends {
			out.Ends = append(out.Ends, base+e)
		}
	}
	return nil
}

var sparsePool = sync.Pool{New: func() any { return new(Sparse) }}

// sparseGuess is the components per text a Sparse is sized for up front:
// a fact's few words have about 30 features.
const sparseGuess = 32

// grow makes room in s for n more texts' vectors of the usual size, so
// that a fresh Sparse is not regrown a dozen times over a batch.
func (s *Sparse) grow(n int) {
	s.Index = slices.Grow(s.Index, n*sparseGuess)
	s.Value = slices.Grow(s.Value, n*sparseGuess)
	s.Ends = slices.Grow(s.Ends, n)
}

// sparseRange appends the sparse vectors of texts to out.
func (h *Hash) sparseRange(ctx context.Context, texts []string, out *Sparse) error {
	return eachText(ctx, texts, func(_ int, text string, sc *scratch) { h.embedSparse(out, text, sc) })
}

// eachText calls do with each text and a pooled scratch, checking ctx
// every 64 texts.
func eachText(ctx context.Context, texts []string, do func(i int, text string, sc *scratch)) error {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	for i, t := range texts {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		do(i, t, sc)
	}
	return nil
}

// embedAll fills out (zeroed) with the vectors of texts, over the cores
// for a large batch.
func (h *Hash) embedAll(ctx context.Context, texts []string, out [][]float32) error {
	workers := min(runtime.GOMAXPROCS(0), len(texts)/parallelEmbedMin)
	if workers <= 1 {
		return h.embedRange(ctx, texts, out)
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
		return ctx.Err()
	}
	return nil
}

// vecChunk is the most bytes of vectors Embed allocates at once: the
// largest small-object size.
const vecChunk = 32 << 10

// parallelEmbedMin is the number of texts per core from which Embed uses
// more than one: below it, starting goroutines costs more than it saves.
const parallelEmbedMin = 128

// embedRange fills out[i] (zeroed, of length dim) with the vector of
// texts[i].
func (h *Hash) embedRange(ctx context.Context, texts []string, out [][]float32) error {
	return eachText(ctx, texts, func(i int, text string, sc *scratch) { h.embedInto(out[i], text, sc) })
}

// Feature kinds, hashed in front of the feature so that the word "the" and
// the trigram "the" land in different buckets.
const (
	kindWord    = 'w'
	kindBigram  = 'b'
	kindTrigram = 'c'
)

// scratch is the reusable working memory of embedding one text.
type scratch struct {
	lower []byte  // the text's words, lowercased, back to back
	ends  []int32 // end offset in lower of each word
	tri   []byte  // "<" word ">"
	offs  []int32 // start of each rune of tri, and its length
	// vec accumulates the weights (zero between texts); touched has bit i
	// set when bucket i received one: the normalisation visits those
	// alone, in index order.
	vec     []float32
	touched []uint64
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// embed returns the vector of text (a new slice).
func (h *Hash) embed(text string) []float32 {
	v := make([]float32, h.dim)
	sc := scratchPool.Get().(*scratch)
	h.embedInto(v, text, sc)
	scratchPool.Put(sc)
	return v
}

// embedInto writes the vector of text into out (zeroed, len dim). The
// weights are summed in sc's vector, which stays in cache between texts:
// out is fresh memory, and adding into it directly missed the cache on
// most of a text's features.
//
// The features are those of the first implementation (kept in
// embed_test.go as embedReference), computed without its allocations: the
// words of strings.FieldsFunc(strings.ToLower(text), not a letter or
// digit) are found in one pass that lowercases rune by rune (the same
// mapping: ToLower is unicode.ToLower per rune, and it turns invalid
// UTF-8 into U+FFFD, which is no letter or digit, just as a RuneError
// from decoding here is a separator), and trigrams are hashed from the
// UTF-8 bytes of "<" word ">", which are what fnvRunes encoded.
func (h *Hash) embedInto(out []float32, text string, sc *scratch) {
	inv := h.accumulate(text, sc, nil)
	v, touched := sc.vec, sc.touched
	out = out[:len(v)]
	for k, word := range touched {
		for ; word != 0; word &= word - 1 {
			i := k*64 + bits.TrailingZeros64(word)
			if inv != 0 {
				out[i] = v[i] * inv
			}
			v[i] = 0
		}
	}
	clear(touched)
}

// embedSparse appends the non-zero components of text's vector to out:
// the components embedInto writes, in index order. A bucket is never -0,
// so the ones left out are those embedInto leaves +0.
func (h *Hash) embedSparse(out *Sparse, text string, sc *scratch) {
	inv := h.accumulate(text, sc, nil)
	v, touched := sc.vec, sc.touched
	for k, word := range touched {
		for ; word != 0; word &= word - 1 {
			i := k*64 + bits.TrailingZeros64(word)
			if x := v[i] * inv; x != 0 {
				out.Index = append(out.Index, int32(i))
				out.Value = append(out.Value, x)
			}
			v[i] = 0
		}
	}
	clear(touched)
	out.Ends = append(out.Ends, len(out.Index))
}

// accumulate sums the weights of text's features into sc.vec, marks the
// buckets it touched in sc.touched and returns the factor that
// normalises them (0 when they cancel out: the vector stays zero). The
// caller writes the vector out and zeroes the touched buckets. weight,
// if not nil, scales each word's features (its unigram and trigrams; a
// bigram by the geometric mean of its two words' weights).
func (h *Hash) accumulate(text string, sc *scratch, weight func(word string) float32) float32 {
	if len(sc.vec) != h.dim {
		sc.vec = make([]float32, h.dim)
	}
	v := sc.vec
	lower, ends := sc.lower[:0], sc.ends[:0]
	inWord := false
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
				lower = append(lower, c)
				inWord = true
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			i += size
			if r = unicode.ToLower(r); r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				lower = utf8.AppendRune(lower, r)
				inWord = true
				continue
			}
		}
		if inWord {
			ends = append(ends, int32(len(lower)))
			inWord = false
		}
	}
	if inWord {
		ends = append(ends, int32(len(lower)))
	}
	sc.lower, sc.ends = lower, ends

	dim := uint64(h.dim)
	if words := (h.dim + 63) / 64; len(sc.touched) != words {
		sc.touched = make([]uint64, words)
	}
	touched := sc.touched
	tri, offs := sc.tri, sc.offs
	start, prev := int32(0), ""
	scale, prevScale := float32(1), float32(1)
	for _, end := range ends {
		w := unsafeString(lower[start:end])
		start = end
		if weight != nil {
			prevScale, scale = scale, weight(w)
		}
		if scale > 0 {
			add(v, touched, dim, fnv(kindWord, w, ""), weightWord*scale)
		}
		if prev != "" && scale*prevScale > 0 {
			add(v, touched, dim, fnv(kindBigram, prev, w), weightBigram*float32(math.Sqrt(float64(scale*prevScale))))
		}
		prev = w
		if scale <= 0 {
			continue
		}
		tri = append(append(append(tri[:0], '<'), w...), '>')
		offs = offs[:0]
		for j := 0; j < len(tri); {
			offs = append(offs, int32(j))
			if tri[j] < utf8.RuneSelf {
				j++
			} else {
				_, size := utf8.DecodeRune(tri[j:])
				j += size
			}
		}
		offs = append(offs, int32(len(tri)))
		n := len(offs) - 3 // runes of w
		wt := float32(weightTrigram/math.Sqrt(float64(n))) * scale
		for j := 0; j+3 < len(offs); j++ {
			add(v, touched, dim, fnvBytes(kindTrigram, tri[offs[j]:offs[j+3]]), wt)
		}
	}
	sc.tri, sc.offs = tri, offs

	// Only touched buckets can be non-zero, and a zero adds nothing to the
	// sum (+0 + +0 = +0; a bucket is never -0) and stays zero when scaled,
	// so the sum visits them alone, in index order as before (the sum's
	// rounding depends on its order).
	var ss float64
	for k, word := range touched {
		for ; word != 0; word &= word - 1 {
			x := v[k*64+bits.TrailingZeros64(word)]
			ss += float64(x) * float64(x)
		}
	}
	if ss > 0 {
		return float32(1 / math.Sqrt(ss))
	}
	return 0 // every bucket cancelled: the vector stays zero
}

// EmbedWeighted returns the vector of text with each word's features
// scaled by weight(word) (the lowercased word; a weight ≤ 0 drops the
// word), L2-normalised. A query weighted by its words' rarity (IDF) makes
// cosine against the unweighted stored vectors count rare shared words
// over common ones ("what", "did"), without re-embedding what is stored.
// A text whose words all weigh 0 embeds to the zero vector.
func (h *Hash) EmbedWeighted(ctx context.Context, text string, weight func(word string) float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v := make([]float32, h.dim)
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// A copy of the words: weight may keep the strings it is given.
	inv := h.accumulate(text, sc, func(w string) float32 { return weight(strings.Clone(w)) })
	for k, word := range sc.touched {
		for ; word != 0; word &= word - 1 {
			i := k*64 + bits.TrailingZeros64(word)
			v[i] = sc.vec[i] * inv
			sc.vec[i] = 0
		}
	}
	clear(sc.touched)
	return v, nil
}

// unsafeString views b as a string (b is not changed while it is used).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// add puts weight w into the bucket of hash f with the sign of f's top
// bit (signed hashing keeps collisions from biasing dot products) and
// marks the bucket touched. The default dimension's modulo is by a
// constant, which the compiler turns into a multiplication (a 64-bit
// division was a tenth of embedding).
func add(v []float32, touched []uint64, dim, f uint64, w float32) {
	var i uint64
	if dim == DefaultHashDim {
		i = (f & (1<<63 - 1)) % DefaultHashDim
	} else {
		i = (f & (1<<63 - 1)) % dim
	}
	if f>>63 == 1 {
		w = -w
	}
	v[i] += w
	touched[i/64] |= 1 << (i % 64)
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

// fnvBytes is fnv(kind, string(b), "") without building the string.
func fnvBytes(kind byte, b []byte) uint64 {
	x := uint64(fnvOffset)
	x = (x ^ uint64(kind)) * fnvPrime
	for _, c := range b {
		x = (x ^ uint64(c)) * fnvPrime
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
