package memoreino

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/schema"

	"github.com/memor-db/memor"
)

var (
	// ErrNoEngine: a config without an Engine.
	ErrNoEngine = errors.New("memoreino: no memor engine")
	// ErrMetadata: a document's metadata names a field memor reads with a
	// value of the wrong type or form.
	ErrMetadata = errors.New("memoreino: invalid metadata")
)

// RetrieverConfig configures a [Retriever].
type RetrieverConfig struct {
	Engine *memor.Engine
	// User is whose memory is read; [WithUser] overrides it per call.
	User string
	// TopK is how many documents to return (0: memor.DefaultK);
	// retriever.WithTopK overrides it per call.
	TopK int
	// ScoreThreshold, if set, drops results scoring below it;
	// retriever.WithScoreThreshold overrides it per call.
	ScoreThreshold *float64
	// MinSupport is memor's abstention threshold (see
	// memor.QueryOptions.MinSupport): 0 is memor's default, negative
	// never abstains.
	MinSupport float64
	// NoEpisodes serves facts only, never raw episodes.
	NoEpisodes bool
}

// Retriever reads a user's memor memory. It is safe for concurrent use.
type Retriever struct {
	cfg RetrieverConfig
}

var (
	_ retriever.Retriever = (*Retriever)(nil)
	_ components.Typer    = (*Retriever)(nil)
	_ components.Checker  = (*Retriever)(nil)
)

// NewRetriever returns a retriever over cfg.Engine.
func NewRetriever(_ context.Context, cfg *RetrieverConfig) (*Retriever, error) {
	if cfg == nil || cfg.Engine == nil {
		return nil, fmt.Errorf("[NewRetriever] %w", ErrNoEngine)
	}
	return &Retriever{cfg: *cfg}, nil
}

// retrieveOptions are the memor-specific options of Retrieve.
type retrieveOptions struct {
	user             string
	validAt, knownAt time.Time
}

// WithValidAt asks what was true in the world at t (valid time).
func WithValidAt(t time.Time) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *retrieveOptions) { o.validAt = t })
}

// WithKnownAt asks what memor believed at t (transaction time): what it
// had learned by then, before any later correction or move.
func WithKnownAt(t time.Time) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *retrieveOptions) { o.knownAt = t })
}

// WithUser reads another user's memory than the configured one.
func WithUser(user string) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *retrieveOptions) { o.user = user })
}

// GetType names the implementation for Eino's callbacks and graphs.
func (r *Retriever) GetType() string { return "Memor" }

// IsCallbacksEnabled says that Retrieve reports to Eino's callbacks itself.
func (r *Retriever) IsCallbacksEnabled() bool { return true }

// Retrieve returns the memories most relevant to query, visible at the
// instants of [WithValidAt] and [WithKnownAt] (now by default), best first.
func (r *Retriever) Retrieve(ctx context.Context, query string, opts ...retriever.Option) (docs []*schema.Document, err error) {
	common := retriever.GetCommonOptions(&retriever.Options{TopK: &r.cfg.TopK, ScoreThreshold: r.cfg.ScoreThreshold}, opts...)
	own := retriever.GetImplSpecificOptions(&retrieveOptions{user: r.cfg.User}, opts...)
	topK := 0
	if common.TopK != nil {
		topK = *common.TopK
	}

	ctx = callbacks.EnsureRunInfo(ctx, r.GetType(), components.ComponentOfRetriever)
	ctx = callbacks.OnStart(ctx, &retriever.CallbackInput{Query: query, TopK: topK, ScoreThreshold: common.ScoreThreshold})
	defer func() {
		if err != nil {
			callbacks.OnError(ctx, err)
		}
	}()

	rs, err := r.cfg.Engine.Query(ctx, own.user, query, memor.QueryOptions{
		K:          topK,
		ValidAt:    own.validAt,
		KnownAt:    own.knownAt,
		MinSupport: r.cfg.MinSupport,
		NoEpisodes: r.cfg.NoEpisodes,
	})
	if err != nil {
		return nil, fmt.Errorf("[memoreino.Retrieve] %w", err)
	}
	docs = make([]*schema.Document, 0, len(rs))
	for _, res := range rs {
		if common.ScoreThreshold != nil && res.Score < *common.ScoreThreshold {
			continue
		}
		docs = append(docs, document(res))
	}
	callbacks.OnEnd(ctx, &retriever.CallbackOutput{Docs: docs})
	return docs, nil
}
