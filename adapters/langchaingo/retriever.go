package memorlangchaingo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/schema"

	"github.com/memor-db/memor"
)

// ErrNoEngine: a Retriever or Memory without an engine.
var ErrNoEngine = errors.New("memorlangchaingo: no memor engine")

// Metadata keys of retrieved documents.
const (
	MetaKind       = "kind" // KindFact or KindEpisode
	MetaSubject    = "subject"
	MetaPredicate  = "predicate"
	MetaObject     = "object"
	MetaContext    = "context"
	MetaValidFrom  = "valid_from" // time.Time
	MetaValidTo    = "valid_to"   // time.Time; absent while the fact is true
	MetaRecordedAt = "recorded_at"
	MetaRule       = "rule"
	MetaPath       = "path"
	MetaAt         = "at"
	MetaEpisode    = "episode"
	MetaSpeaker    = "speaker"
)

// Values of MetaKind.
const (
	KindFact    = "fact"
	KindEpisode = "episode"
)

// Retriever reads a user's memor memory as LangChainGo documents. The zero
// value has no engine; make one with [NewRetriever]. It is safe for
// concurrent use.
type Retriever struct {
	// CallbacksHandler, if set, is told of each retrieval, as
	// LangChainGo's vector store retrievers do.
	CallbacksHandler callbacks.Handler

	engine           *memor.Engine
	user             string
	k                int
	validAt, knownAt time.Time
	minSupport       float64
	threshold        float32
	hasThreshold     bool
}

var _ schema.Retriever = Retriever{}

// RetrieverOption configures a [Retriever].
type RetrieverOption func(*Retriever)

// WithK sets how many documents to return (default memor.DefaultK).
func WithK(k int) RetrieverOption { return func(r *Retriever) { r.k = k } }

// WithValidAt asks what was true in the world at t (valid time).
func WithValidAt(t time.Time) RetrieverOption { return func(r *Retriever) { r.validAt = t } }

// WithKnownAt asks what memor believed at t (transaction time).
func WithKnownAt(t time.Time) RetrieverOption { return func(r *Retriever) { r.knownAt = t } }

// WithMinSupport sets memor's abstention threshold (see
// memor.QueryOptions.MinSupport): 0 is memor's default, negative never
// abstains.
func WithMinSupport(s float64) RetrieverOption { return func(r *Retriever) { r.minSupport = s } }

// WithScoreThreshold drops documents scoring below s.
func WithScoreThreshold(s float32) RetrieverOption {
	return func(r *Retriever) { r.threshold, r.hasThreshold = s, true }
}

// NewRetriever returns a retriever of user's memory in e.
func NewRetriever(e *memor.Engine, user string, opts ...RetrieverOption) Retriever {
	r := Retriever{engine: e, user: user}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// GetRelevantDocuments returns the memories most relevant to query at the
// retriever's instants, best first.
func (r Retriever) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	if r.engine == nil {
		return nil, ErrNoEngine
	}
	if r.CallbacksHandler != nil {
		r.CallbacksHandler.HandleRetrieverStart(ctx, query)
	}
	rs, err := r.engine.Query(ctx, r.user, query, memor.QueryOptions{
		K: r.k, ValidAt: r.validAt, KnownAt: r.knownAt, MinSupport: r.minSupport,
	})
	if err != nil {
		return nil, fmt.Errorf("memorlangchaingo: retrieve: %w", err)
	}
	docs := make([]schema.Document, 0, len(rs))
	for _, res := range rs {
		if r.hasThreshold && float32(res.Score) < r.threshold {
			continue
		}
		docs = append(docs, document(res))
	}
	if r.CallbacksHandler != nil {
		r.CallbacksHandler.HandleRetrieverEnd(ctx, query, docs)
	}
	return docs, nil
}

func document(r memor.Result) schema.Document {
	d := schema.Document{PageContent: r.Text(), Metadata: map[string]any{}, Score: float32(r.Score)}
	switch {
	case r.Fact != nil:
		f := r.Fact
		d.Metadata[MetaKind] = KindFact
		d.Metadata["id"] = f.ID
		d.Metadata[MetaSubject] = f.Subject
		d.Metadata[MetaPredicate] = f.Predicate
		d.Metadata[MetaObject] = f.Object
		if f.Context != "" {
			d.Metadata[MetaContext] = f.Context
		}
		d.Metadata[MetaValidFrom] = f.ValidFrom
		if !f.ValidTo.IsZero() {
			d.Metadata[MetaValidTo] = f.ValidTo
		}
		d.Metadata[MetaRecordedAt] = f.RecordedAt
		d.Metadata[MetaRule] = string(f.Rule)
		if r.Path != "" {
			d.Metadata[MetaPath] = r.Path
		}
	case r.Episode != nil:
		ep := r.Episode
		d.Metadata[MetaKind] = KindEpisode
		d.Metadata[MetaAt] = ep.At
		d.Metadata[MetaEpisode] = ep.Seq
		d.Metadata[MetaRecordedAt] = ep.RecordedAt
		if ep.Speaker != "" {
			d.Metadata[MetaSpeaker] = ep.Speaker
		}
	}
	return d
}
