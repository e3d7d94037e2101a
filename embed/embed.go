// Package embed turns text into vectors for memor's vector index.
//
// [Embedder] is the interface the engine calls. Two implementations ship:
//
//   - [Hash], the default: feature hashing of words, word pairs and
//     character trigrams. No model weights, no network, deterministic across
//     runs and machines, fast. It captures lexical overlap (including
//     shared word stems such as "live" / "lives"), not meaning.
//   - [HTTP], a client of the OpenAI-compatible /v1/embeddings API
//     (OpenAI, Ollama, vLLM, llama.cpp, LM Studio …) with batching, retries
//     with backoff on 429 and 5xx, per-request timeouts and dimension checks.
//
// Both are safe for concurrent use.
package embed

import (
	"context"
	"errors"
	"fmt"
)

// Embedder maps texts to vectors of a fixed dimension. Embed returns one
// vector per text, in order. Implementations must be safe for concurrent
// use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dim is the length of every vector Embed returns (0 while unknown,
	// for an HTTP embedder not told its dimension and not yet called).
	Dim() int
}

// IntoEmbedder is an Embedder that writes vectors into memory its caller
// provides, so that a bulk import can reuse one buffer for every batch
// instead of allocating a vector per fact. The default Hash embedder is
// one.
type IntoEmbedder interface {
	Embedder
	// EmbedInto writes the vector of texts[i] to out[i], which has length
	// Dim() and may hold anything.
	EmbedInto(ctx context.Context, texts []string, out [][]float32) error
}

// SparseEmbedder is an Embedder whose vectors are mostly zero (the
// default Hash embedder's: a short text touches a few dozen of its 384
// buckets). A bulk import takes them as their non-zero components and
// never builds, clears or scans the dense vectors.
type SparseEmbedder interface {
	Embedder
	// EmbedSparse resets out and appends to it, for each text in order,
	// the non-zero components of the vector Embed returns for it, in
	// increasing index order, bit for bit.
	EmbedSparse(ctx context.Context, texts []string, out *Sparse) error
}

// Sparse holds vectors as their non-zero components: vector i's indexes
// and values are Index and Value from Ends[i-1] (0 for the first) to
// Ends[i]. Its memory is reused by the next EmbedSparse into it.
type Sparse struct {
	Index []int32
	Value []float32
	Ends  []int
}

// Reset empties s, keeping its memory.
func (s *Sparse) Reset() { s.Index, s.Value, s.Ends = s.Index[:0], s.Value[:0], s.Ends[:0] }

// Len is the number of vectors in s.
func (s *Sparse) Len() int { return len(s.Ends) }

// Vector returns the indexes and values of vector i.
func (s *Sparse) Vector(i int) ([]int32, []float32) {
	lo := 0
	if i > 0 {
		lo = s.Ends[i-1]
	}
	hi := s.Ends[i]
	return s.Index[lo:hi:hi], s.Value[lo:hi:hi]
}

// Dense writes vector i into v (of the embedder's dimension), zeroing
// the rest of it.
func (s *Sparse) Dense(i int, v []float32) {
	clear(v)
	idx, val := s.Vector(i)
	for k, j := range idx {
		v[j] = val[k]
	}
}

// ErrDimension: an embedder returned vectors of another dimension than
// configured or previously seen; the error is a *DimensionError.
var ErrDimension = errors.New("embed: embedding dimension mismatch")

// DimensionError reports vectors of an unexpected length.
type DimensionError struct {
	Want, Got int
	Index     int // position of the offending text in the Embed call
}

func (e *DimensionError) Error() string {
	return fmt.Sprintf("embed: text %d embedded to %d dimensions, want %d", e.Index, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrDimension) true.
func (e *DimensionError) Is(target error) bool { return target == ErrDimension }
