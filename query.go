package memor

import (
	"context"
	"errors"
	"time"

	"github.com/memor-db/memor/extract"
)

// Fusion selects how Query combines its signals.
type Fusion uint8

const (
	// MinMax normalises each signal to [0, 1] over the candidates and sums
	// them with Weights (DESIGN §5).
	MinMax Fusion = iota
	// RRF is reciprocal rank fusion (k = 60) over the signal rankings.
	RRF
)

// Weights of the fused signals; the zero value means 0.4 / 0.4 / 0.2.
type Weights struct {
	Vector, BM25, Entity float64
}

// QueryOptions configures Query. The zero value asks what is true now.
type QueryOptions struct {
	// K is how many results to return (default 10).
	K int
	// ValidAt and KnownAt select the bitemporal view (zero = now): only
	// versions visible at (ValidAt, KnownAt) are candidates.
	ValidAt, KnownAt time.Time
	// Depth bounds the graph walk from entities named in the query
	// (default 3).
	Depth int
	Weights Weights
	Fusion  Fusion
	// NoEpisodes leaves raw episodes out of the candidates.
	NoEpisodes bool
	// Reranker, if set, reorders the top candidates in one batched call.
	Reranker extract.Reranker
	// Forgetting multiplies scores by a forgetting curve R = exp(−t/S),
	// with S growing with reinforcement (off by default).
	Forgetting bool
}

// Signals is a result's score broken down by signal (after normalisation).
type Signals struct {
	BM25    float64 `json:"bm25"`
	Vector  float64 `json:"vector"`
	Entity  float64 `json:"entity"`
	Boost   float64 `json:"boost"`
	Recency float64 `json:"recency,omitempty"`
	Rerank  float64 `json:"rerank,omitempty"`
}

// Result is one ranked answer: a fact version or an episode.
type Result struct {
	Fact    *Fact    `json:"fact,omitempty"`
	Episode *Episode `json:"episode,omitempty"`
	Score   float64  `json:"score"`
	Signals Signals  `json:"signals"`
	// Path is the graph path that reached the fact, rendered
	// "user → brother → Alex → has_pet → golden retriever" (empty when
	// the fact was not reached through the graph).
	Path string `json:"path,omitempty"`
}

// Text renders the result for a prompt: the fact as "subject predicate
// object", or the episode text with its date.
func (r Result) Text() string {
	switch {
	case r.Fact != nil:
		return r.Fact.String()
	case r.Episode != nil:
		return "[" + r.Episode.At.Format("2006-01-02") + "] " + r.Episode.Text
	}
	return ""
}

var errNoQuery = errors.New("memor: Query is not wired yet")

// Query returns the facts and episodes most relevant to text, visible at
// (ValidAt, KnownAt).
func (e *Engine) Query(ctx context.Context, user, text string, opts QueryOptions) ([]Result, error) {
	return nil, errNoQuery
}

// Context renders the top results for text as a fenced block for prompt
// injection; the fence makes Add ignore it if it is fed back.
func (e *Engine) Context(ctx context.Context, user, text string) (string, error) {
	return "", errNoQuery
}
