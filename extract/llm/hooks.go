package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/extract/llm/internal/llmjson"
	"github.com/memor-db/memor/lang"
	"github.com/memor-db/memor/lang/en"
)

// Compile-time checks.
var (
	_ extract.Extractor  = (*Extractor)(nil)
	_ extract.Catalogued = (*Extractor)(nil)
	_ extract.Judge      = (*Judge)(nil)
	_ extract.Reranker   = (*Reranker)(nil)
)

// The answers' schemas, generated from the types they decode into.
var (
	opsSchema     = llmjson.OpsSchema()
	verdictSchema = llmjson.VerdictSchema()
	scoresSchema  = llmjson.ScoresSchema()
)

// extractPrompt is the extraction instructions; %s is where the
// predicate list goes (see predicateList).
const extractPrompt = `You extract durable personal facts from what a user said, for a memory store.
Return {"ops":[...]}; return {"ops":[]} when nothing qualifies.

Subjects: "user" for the speaker (I, me, my, we). Another person mentioned by name is the
subject of their own facts ("my friend Sarah lives in Austin" gives user-friend->Sarah and
Sarah-lives_in->Austin). Never attribute another person's facts to the user.
When the input names a "speaker", that person said the text: write the speaker's name,
exactly as given, as the subject wherever the speaker talks about themselves (I, me, my),
and as the subject of their relations ("my brother Alex" said by Caroline gives
Caroline-brother->Alex); do not use "user" for them.

%s

Kinds: "assert" when something became or is true; "end" when it stopped ("I no longer play
the violin" ends plays_instrument violin; "I quit my job" ends works_at with object "";
"I moved out of Paris" ends lives_in Paris).

Do NOT extract from questions, hypotheticals ("if I moved to Paris"), wishes, plans or
future intentions, negations ("I don't live in Paris"), jokes, or what other people claim
about the user.

valid_from: resolve relative times ("last month", "since March 2024", "in January",
"two weeks ago") against the time the text was said, given below; "" when the text gives
no time. confidence: 1 for plain statements, lower when the user hedges.
quote: copy the clause the op comes from EXACTLY, character for character, from the text.
Objects keep natural casing ("San Francisco", "golden retriever").`

// predicateList tells the model the predicates of cat: single-valued,
// several-valued and relations, each with its note.
func predicateList(cat *lang.Catalogue) string {
	var one, many, rel []string
	for _, p := range cat.All() {
		name := p.Name
		if p.Family {
			name += "<thing>"
		}
		if p.Note != "" {
			name += " (" + p.Note + ")"
		}
		switch {
		case p.Relation:
			rel = append(rel, name)
		case p.One:
			one = append(one, name)
		default:
			many = append(many, name)
		}
	}
	var b strings.Builder
	b.WriteString("Use these predicates when they fit:\n")
	if len(one) > 0 {
		b.WriteString(" one value at a time: " + strings.Join(one, ", ") + ".\n")
	}
	if len(many) > 0 {
		b.WriteString(" several values: " + strings.Join(many, ", ") + ".\n")
	}
	if len(rel) > 0 {
		b.WriteString(" relations (subject \"user\", object the person's name): " + strings.Join(rel, ", ") + ".\n")
	}
	b.WriteString("Otherwise invent a short lower_snake_case predicate.")
	return b.String()
}

// Extractor is an extract.Extractor backed by a chat model. It is safe for
// concurrent use.
type Extractor struct {
	c *Client
	// cat lists the predicates the model is told (nil: en's catalogue).
	cat *lang.Catalogue
}

// NewExtractor returns an Extractor using c.
func NewExtractor(c *Client) *Extractor { return &Extractor{c: c} }

// WithCatalogue returns an Extractor that tells the model the predicates
// of c, read at each call (it implements extract.Catalogued): memor.Open
// passes its own, so the predicates an application registers are in the
// prompt.
func (x *Extractor) WithCatalogue(c *lang.Catalogue) extract.Extractor {
	return &Extractor{c: x.c, cat: c}
}

// prompt is the system prompt of an extraction.
func (x *Extractor) prompt() string {
	cat := x.cat
	if cat == nil {
		cat = defaultCatalogue
	}
	return fmt.Sprintf(extractPrompt, predicateList(cat))
}

// defaultCatalogue is the catalogue of an Extractor not given one.
var defaultCatalogue = en.NewCatalogue()

// Extract asks the model for ops and returns them only if the whole answer
// decodes and every quote is in text; otherwise it returns nil and an error
// wrapping ErrMalformed, ErrSchema, ErrInvented, ErrNoAnswer or the
// transport error.
func (x *Extractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	return x.ExtractInput(ctx, extract.Input{Text: text, At: at})
}

// ExtractInput is Extract told who said the text: the model is given
// in.Speaker and asked to write it as the subject of the first person.
// It implements extract.InputExtractor.
func (x *Extractor) ExtractInput(ctx context.Context, in extract.Input) ([]extract.Op, error) {
	text, at := in.Text, in.At
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	msg, err := json.Marshal(struct {
		SaidAt  string `json:"said_at"`
		Speaker string `json:"speaker,omitempty"`
		Text    string `json:"text"`
	}{at.Format(time.RFC3339), in.Speaker, text})
	if err != nil {
		return nil, fmt.Errorf("llm: extract: %w", err)
	}
	out, err := x.c.complete(ctx, x.prompt(), string(msg), "memor_ops", opsSchema)
	if err != nil {
		return nil, err
	}
	ops, err := DecodeOps(out, text, at)
	if err != nil {
		return nil, fmt.Errorf("llm: extract: %w", err)
	}
	return ops, nil
}

const judgePrompt = `You decide how a memory store treats a predicate it does not know.
"replace": a person has at most one value at a time, so a new value replaces the old one
(like lives_in, employer, current_car). "append": a person may have several values at once,
so values accumulate (like plays_instrument, visited_country, owns_book).
Answer {"verdict":"replace"|"append","reason":"…"}.`

// Judge is an extract.Judge backed by a chat model. It is safe for
// concurrent use. The engine caches its verdicts, so it is asked once per
// predicate.
type Judge struct{ c *Client }

// NewJudge returns a Judge using c.
func NewJudge(c *Client) *Judge { return &Judge{c: c} }

// Judge asks whether predicate replaces or appends, showing the model up to
// ten example statements.
func (j *Judge) Judge(ctx context.Context, predicate string, examples []string) (extract.Verdict, error) {
	if len(examples) > 10 {
		examples = examples[:10]
	}
	in, err := json.Marshal(struct {
		Predicate string   `json:"predicate"`
		Examples  []string `json:"examples"`
	}{predicate, examples})
	if err != nil {
		return 0, fmt.Errorf("llm: judge: %w", err)
	}
	out, err := j.c.complete(ctx, judgePrompt, string(in), "memor_verdict", verdictSchema)
	if err != nil {
		return 0, err
	}
	v, err := DecodeVerdict(out)
	if err != nil {
		return 0, fmt.Errorf("llm: judge: %w", err)
	}
	return v, nil
}

const rerankPrompt = `You score how relevant each numbered document is to the query, from 0 (irrelevant)
to 1 (answers it). Return {"scores":[…]} with exactly one score per document, in order.`

// Reranker is an extract.Reranker backed by a chat model: one request scores
// every candidate. It is safe for concurrent use.
type Reranker struct{ c *Client }

// NewReranker returns a Reranker using c.
func NewReranker(c *Client) *Reranker { return &Reranker{c: c} }

// Rerank returns one score per doc, in order; an answer with a different
// number of scores is ErrSchema.
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	type doc struct {
		N    int    `json:"n"`
		Text string `json:"text"`
	}
	ds := make([]doc, len(docs))
	for i, d := range docs {
		ds[i] = doc{i, d}
	}
	in, err := json.Marshal(struct {
		Query string `json:"query"`
		Docs  []doc  `json:"documents"`
	}{query, ds})
	if err != nil {
		return nil, fmt.Errorf("llm: rerank: %w", err)
	}
	out, err := r.c.complete(ctx, rerankPrompt, string(in), "memor_scores", scoresSchema)
	if err != nil {
		return nil, err
	}
	s, err := DecodeScores(out, len(docs))
	if err != nil {
		return nil, fmt.Errorf("llm: rerank: %w", err)
	}
	return s, nil
}
