package memorgenkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/core/api"
	"github.com/firebase/genkit/go/genkit"

	"github.com/memor-db/memor"
)

// Provider is the namespace of the retrievers this package defines.
const Provider = "memor"

// Metadata keys of retrieved documents.
const (
	MetaKind       = "kind" // KindFact or KindEpisode
	MetaID         = "id"
	MetaSubject    = "subject"
	MetaPredicate  = "predicate"
	MetaObject     = "object"
	MetaContext    = "context"
	MetaValidFrom  = "valid_from"
	MetaValidTo    = "valid_to"
	MetaRecordedAt = "recorded_at"
	MetaRule       = "rule"
	MetaPath       = "path"
	MetaAt         = "at"
	MetaEpisode    = "episode"
	MetaSpeaker    = "speaker"
	MetaScore      = "score"
)

// Values of MetaKind.
const (
	KindFact    = "fact"
	KindEpisode = "episode"
)

// Config is a retriever's defaults.
type Config struct {
	// User is whose memory is read unless a request names another.
	User string
	// K is how many documents to return (0: memor.DefaultK).
	K int
	// MinSupport is memor's abstention threshold (see
	// memor.QueryOptions.MinSupport): 0 is memor's default, negative never
	// abstains.
	MinSupport float64
}

// RetrieverOptions is a request's configuration, passed with
// ai.WithConfig. Zero fields keep the retriever's defaults.
//
// The instants carry omitempty as well as omitzero: Genkit validates a
// request against the JSON schema it infers, which reads only omitempty
// as "optional"; omitzero is what leaves a zero instant out.
type RetrieverOptions struct {
	// User reads another user's memory than the configured one.
	User string `json:"user,omitempty"`
	// K is how many documents to return.
	K int `json:"k,omitempty"`
	// ValidAt asks what was true in the world at that instant.
	ValidAt time.Time `json:"validAt,omitempty,omitzero"`
	// KnownAt asks what memor believed at that instant.
	KnownAt time.Time `json:"knownAt,omitempty,omitzero"`
}

// DefineRetriever defines, in g, a retriever "memor/<name>" over e. It
// holds no state of its own: it is safe for concurrent use, like e.
func DefineRetriever(g *genkit.Genkit, e *memor.Engine, name string, cfg Config) ai.Retriever {
	full := api.NewName(Provider, name)
	opts := &ai.RetrieverOptions{
		Label:        "memor: " + name,
		ConfigSchema: core.InferSchemaMap(RetrieverOptions{}),
	}
	return genkit.DefineRetriever(g, full, opts, func(ctx context.Context, req *ai.RetrieverRequest) (*ai.RetrieverResponse, error) {
		return retrieve(ctx, e, full, cfg, req)
	})
}

func retrieve(ctx context.Context, e *memor.Engine, name string, cfg Config, req *ai.RetrieverRequest) (*ai.RetrieverResponse, error) {
	if e == nil {
		return nil, core.NewError(core.FAILED_PRECONDITION, "%s: no memor engine", name)
	}
	o, err := requestOptions(req.Options)
	if err != nil {
		return nil, core.NewError(core.INVALID_ARGUMENT, "%s: options: %v", name, err)
	}
	query := queryText(req.Query)
	if strings.TrimSpace(query) == "" {
		return nil, core.NewError(core.INVALID_ARGUMENT, "%s: the query has no text", name)
	}
	user, k := cfg.User, cfg.K
	if o.User != "" {
		user = o.User
	}
	if o.K != 0 {
		k = o.K
	}
	rs, err := e.Query(ctx, user, query, memor.QueryOptions{
		K: k, ValidAt: o.ValidAt, KnownAt: o.KnownAt, MinSupport: cfg.MinSupport,
	})
	if err != nil {
		if errors.Is(err, memor.ErrInvalidUser) || errors.Is(err, memor.ErrInvalidText) || errors.Is(err, memor.ErrInvalidTime) {
			// Both: Genkit finds the status with errors.As, a caller
			// finds memor's sentinel with errors.Is.
			return nil, fmt.Errorf("%w: %w", core.NewError(core.INVALID_ARGUMENT, "%s", name), err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	resp := &ai.RetrieverResponse{Documents: make([]*ai.Document, 0, len(rs))}
	for _, r := range rs {
		resp.Documents = append(resp.Documents, document(r))
	}
	return resp, nil
}

// requestOptions reads a request's options: the Go value ai.WithConfig
// passed, or the JSON a flow or the developer UI sent.
func requestOptions(v any) (RetrieverOptions, error) {
	switch o := v.(type) {
	case nil:
		return RetrieverOptions{}, nil
	case RetrieverOptions:
		return o, nil
	case *RetrieverOptions:
		if o == nil {
			return RetrieverOptions{}, nil
		}
		return *o, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return RetrieverOptions{}, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var o RetrieverOptions
	if err := dec.Decode(&o); err != nil {
		return RetrieverOptions{}, fmt.Errorf("want memorgenkit.RetrieverOptions: %w", err)
	}
	return o, nil
}

func queryText(d *ai.Document) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range d.Content {
		if p.IsText() {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func document(r memor.Result) *ai.Document {
	m := map[string]any{MetaScore: r.Score}
	switch {
	case r.Fact != nil:
		f := r.Fact
		m[MetaKind] = KindFact
		m[MetaID] = f.ID
		m[MetaSubject] = f.Subject
		m[MetaPredicate] = f.Predicate
		m[MetaObject] = f.Object
		if f.Context != "" {
			m[MetaContext] = f.Context
		}
		m[MetaValidFrom] = f.ValidFrom
		if !f.ValidTo.IsZero() {
			m[MetaValidTo] = f.ValidTo
		}
		m[MetaRecordedAt] = f.RecordedAt
		m[MetaRule] = string(f.Rule)
		if r.Path != "" {
			m[MetaPath] = r.Path
		}
	case r.Episode != nil:
		ep := r.Episode
		m[MetaKind] = KindEpisode
		m[MetaAt] = ep.At
		m[MetaEpisode] = ep.Seq
		m[MetaRecordedAt] = ep.RecordedAt
		if ep.Speaker != "" {
			m[MetaSpeaker] = ep.Speaker
		}
	}
	return ai.DocumentFromText(r.Text(), m)
}
