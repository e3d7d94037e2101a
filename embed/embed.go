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

// Errors returned by this package; match them with errors.Is.
var (
	// ErrConfig: options are missing or invalid (no base URL or model).
	ErrConfig = errors.New("embed: invalid configuration")
	// ErrDimension: the service returned vectors of another dimension
	// than configured or previously seen; the error is a *DimensionError.
	ErrDimension = errors.New("embed: embedding dimension mismatch")
	// ErrStatus: the service answered with a non-2xx status (after any
	// retries); the error is a *StatusError.
	ErrStatus = errors.New("embed: embeddings service returned an error status")
	// ErrResponse: the service's answer could not be decoded or does not
	// match the request (wrong count, bad indexes, empty vectors).
	ErrResponse = errors.New("embed: malformed embeddings response")
)

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

// StatusError reports a non-2xx answer from the embeddings service.
type StatusError struct {
	Code    int
	Body    string // first 512 bytes of the response body
	Retries int    // retries made before giving up
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embed: embeddings service returned %d after %d retries: %s", e.Code, e.Retries, e.Body)
}

// Is makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }
