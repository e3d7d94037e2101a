// Package extract turns what a user said into proposed operations on facts,
// and holds the other model-shaped hooks of memor: the Judge that decides the
// cardinality of an unknown predicate and the Reranker that reorders query
// results.
//
// Extractors only propose. Every operation carries a verbatim quote from the
// episode text; the engine's resolver rejects an operation whose quote is not
// in the text, and it alone changes state.
package extract

import (
	"context"
	"time"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/lang"
)

// Kind says what an Op proposes. Values are stored in episodes; do not
// change them.
type Kind uint8

const (
	// Assert proposes that Subject Predicate Object holds from ValidFrom on.
	Assert Kind = 1
	// End proposes that a value stopped holding at ValidFrom ("I quit",
	// "I no longer play the violin"). An empty Object ends every open value
	// of the slot.
	End Kind = 2
)

func (k Kind) String() string {
	switch k {
	case Assert:
		return "assert"
	case End:
		return "end"
	}
	return "unknown"
}

// Op is one proposed operation.
type Op struct {
	Kind      Kind   `json:"kind"`
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object,omitempty"`
	// Context separates values that coexist (prod / staging, work / home).
	Context string `json:"context,omitempty"`
	// ValidFrom is when the proposition became true (for End: when it
	// stopped). Zero means the episode's time.
	ValidFrom time.Time `json:"valid_from,omitzero"`
	// Confidence in (0, 1]; zero means 1.
	Confidence float64 `json:"confidence,omitempty"`
	// Quote is the verbatim span of the episode text the op comes from.
	Quote string `json:"quote"`
	// Additive marks an assertion that adds a value beside those in force
	// rather than replacing them ("I also work at Starbucks"): the resolver
	// should treat this one op as cardinality Many even on a One predicate.
	// It has no meaning on End.
	Additive bool `json:"additive,omitempty"`
}

// Extractor proposes operations for one episode. text has had fenced recall
// removed; at is when the episode was said, against which relative times
// ("last month") resolve. Implementations must be safe for concurrent use;
// a deterministic extractor makes Rebuild reproduce the same facts.
type Extractor interface {
	Extract(ctx context.Context, text string, at time.Time) ([]Op, error)
}

// KnownNamesExtractor is an Extractor that can be told the people already
// known from earlier episodes (the objects of the user's relation facts), so
// that a bare name in a later episode ("Alex moved to Dallas") resolves to
// that person. The engine passes the names when the extractor has this
// method; the names depend only on earlier episodes, so Rebuild stays
// deterministic.
type KnownNamesExtractor interface {
	Extractor
	ExtractKnown(ctx context.Context, text string, at time.Time, names []string) ([]Op, error)
}

// Input is what the engine knows about an episode when it asks for its
// ops: more than Extract's arguments, so that an extractor can use what it
// understands of it and ignore the rest.
type Input struct {
	// Text has had fenced recall removed; quotes must come from it.
	Text string
	// At is when the episode was said.
	At time.Time
	// Names are the people already known from earlier episodes, as given
	// to KnownNamesExtractor (sorted; may be empty).
	Names []string
	// Speaker is who said the text, or "" for the memory's owner. First
	// person in the text ("I", "me", "my") is the speaker: an op about
	// them has Subject Speaker, not User, and their relations hang off
	// them ("my brother Alex" said by Caroline is Caroline brother Alex).
	// The engine maps a Subject of User in the ops of a spoken episode to
	// the speaker anyway, so an extractor that ignores Speaker still
	// attributes first person right; one that reads it can tell the
	// speaker from the owner where the text names both.
	Speaker string
}

// InputExtractor is an Extractor that takes the whole Input. The engine
// calls ExtractInput when the extractor has it (in preference to
// ExtractKnown and Extract). Every field of Input depends only on the
// episode and earlier episodes, so Rebuild stays deterministic.
type InputExtractor interface {
	Extractor
	ExtractInput(ctx context.Context, in Input) ([]Op, error)
}

// AttributeTo returns ops with every Subject that names User (case and
// surrounding white space aside) replaced by speaker: the first person
// of a spoken episode is the speaker. It changes ops in place.
func AttributeTo(ops []Op, speaker string) []Op {
	for i := range ops {
		if norm.Key(ops[i].Subject) == User {
			ops[i].Subject = speaker
		}
	}
	return ops
}

// Catalogued is an Extractor that can be told the predicates its engine
// knows: the defaults and those the application registered
// (memor.Options.Predicates, RegisterPredicate). Open calls WithCatalogue
// once and extracts with what it returns; the catalogue may grow after
// that (RegisterPredicate), so an implementation reads it when it
// extracts. The result must still implement every other interface the
// receiver does (KnownNamesExtractor, InputExtractor).
type Catalogued interface {
	Extractor
	WithCatalogue(c *lang.Catalogue) Extractor
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, text string, at time.Time) ([]Op, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, text string, at time.Time) ([]Op, error) {
	return f(ctx, text, at)
}

// Verdict is a Judge's answer about a predicate's cardinality.
type Verdict uint8

const (
	// Replace: a new value replaces the old one (cardinality One).
	Replace Verdict = 1
	// Append: values accumulate (cardinality Many).
	Append Verdict = 2
)

func (v Verdict) String() string {
	switch v {
	case Replace:
		return "replace"
	case Append:
		return "append"
	}
	return "unknown"
}

// Judge decides whether a predicate memor does not know replaces or appends.
// The engine caches each verdict durably, per user (one user's verdict never
// decides another's, and Forget removes it), so that replays are
// deterministic: it asks once per user and predicate.
type Judge interface {
	Judge(ctx context.Context, predicate string, examples []string) (Verdict, error)
}

// Reranker scores every candidate against the query in one call; a higher
// score ranks first. It returns one score per doc, in order.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}
