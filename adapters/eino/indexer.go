package memoreino

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/indexer"
	"github.com/cloudwego/eino/schema"

	"github.com/memor-db/memor"
)

// IndexerConfig configures an [Indexer].
type IndexerConfig struct {
	Engine *memor.Engine
	// User is whose memory is written; [WithStoreUser] overrides it per
	// call.
	User string
}

// Indexer writes documents into a user's memor memory: a document whose
// metadata names [MetaSubject], [MetaPredicate] and [MetaObject] is
// asserted as a fact (the structured path: no extraction), any other is
// added as an episode that memor extracts facts from. It is safe for
// concurrent use.
type Indexer struct {
	cfg IndexerConfig
}

var (
	_ indexer.Indexer    = (*Indexer)(nil)
	_ components.Typer   = (*Indexer)(nil)
	_ components.Checker = (*Indexer)(nil)
)

// NewIndexer returns an indexer over cfg.Engine.
func NewIndexer(_ context.Context, cfg *IndexerConfig) (*Indexer, error) {
	if cfg == nil || cfg.Engine == nil {
		return nil, fmt.Errorf("[NewIndexer] %w", ErrNoEngine)
	}
	return &Indexer{cfg: *cfg}, nil
}

type storeOptions struct{ user string }

// WithStoreUser writes into another user's memory than the configured one.
func WithStoreUser(user string) indexer.Option {
	return indexer.WrapImplSpecificOptFn(func(o *storeOptions) { o.user = user })
}

// GetType names the implementation for Eino's callbacks and graphs.
func (ix *Indexer) GetType() string { return "Memor" }

// IsCallbacksEnabled says that Store reports to Eino's callbacks itself.
func (ix *Indexer) IsCallbacksEnabled() bool { return true }

// Store writes docs in order and returns, for each, the ID a retrieved
// document of it carries: the fact ID of an assertion, "episode-N" for an
// episode. When Store returns, every episode is applied: a Retrieve that
// follows sees its facts. An episode's [MetaAt] says when it was said
// (default now) and [MetaSpeaker] who said it (default the user); an
// assertion's [MetaValidFrom], [MetaContext] and [MetaConfidence] are read
// as memor.FactInput's, and its content is kept as the fact's quote.
//
// On an error the documents before the failing one are stored; the error
// names the failing document's index.
func (ix *Indexer) Store(ctx context.Context, docs []*schema.Document, opts ...indexer.Option) (ids []string, err error) {
	own := indexer.GetImplSpecificOptions(&storeOptions{user: ix.cfg.User}, opts...)

	ctx = callbacks.EnsureRunInfo(ctx, ix.GetType(), components.ComponentOfIndexer)
	ctx = callbacks.OnStart(ctx, &indexer.CallbackInput{Docs: docs})
	defer func() {
		if err != nil {
			callbacks.OnError(ctx, err)
		}
	}()

	ids = make([]string, 0, len(docs))
	added := false
	for i, d := range docs {
		id, episode, err := ix.store(ctx, own.user, d)
		if err != nil {
			return nil, fmt.Errorf("[memoreino.Store] document %d: %w", i, err)
		}
		added = added || episode
		ids = append(ids, id)
	}
	// Add only queues extraction; waiting once for the whole batch keeps
	// the engine's workers busy and still gives read-your-writes.
	if added {
		if err := ix.cfg.Engine.Flush(ctx, own.user); err != nil {
			return nil, fmt.Errorf("[memoreino.Store] %w", err)
		}
	}
	callbacks.OnEnd(ctx, &indexer.CallbackOutput{IDs: ids})
	return ids, nil
}

func (ix *Indexer) store(ctx context.Context, user string, d *schema.Document) (id string, episode bool, err error) {
	if d == nil {
		return "", false, fmt.Errorf("%w: nil document", ErrMetadata)
	}
	in, isFact, err := factInput(d)
	if err != nil {
		return "", false, err
	}
	if isFact {
		ds, err := ix.cfg.Engine.Assert(ctx, user, in)
		if err != nil {
			return "", false, err
		}
		if len(ds) == 0 {
			return "", false, fmt.Errorf("memoreino: assert took no decision")
		}
		// A restatement is folded into the fact it restates: that
		// fact's ID is the one a retrieved document of it carries.
		if r := ds[0].Reinforces; r != "" {
			return r, false, nil
		}
		return ds[0].FactID, false, nil
	}
	var addOpts []memor.AddOption
	at, err := metaTime(d.MetaData, MetaAt)
	if err != nil {
		return "", false, err
	}
	if !at.IsZero() {
		addOpts = append(addOpts, memor.At(at))
	}
	if sp, ok := metaString(d.MetaData, MetaSpeaker); ok {
		addOpts = append(addOpts, memor.Speaker(sp))
	}
	ep, err := ix.cfg.Engine.Add(ctx, user, d.Content, addOpts...)
	if err != nil {
		return "", false, err
	}
	return episodeID(ep.Seq), true, nil
}
