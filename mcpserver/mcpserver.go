// Package mcpserver exposes a memor engine to LLM agents as Model Context
// Protocol tools, over the official Go SDK.
//
// # Tools
//
//	add_memory(user_id, text, at?)                 remember what the user said; waits until applied
//	query_memory(user_id, text, limit?)            the most relevant facts and turns, with graph paths
//	get_user_profile(user_id)                      every fact believed true now
//	get_history(user_id, subject?, predicate)      every version of a fact, with the rule that made it
//	query_as_of(user_id, text?, valid_at?, known_at?)  time travel and audit
//	correct_memory(user_id, fact_id)               the fact was never true
//	accept_memory(user_id, fact_id)                the contested fact is right: it is in force from its valid time
//	list_conflicts(user_id)                        contested facts held for review
//	forget_memory(user_id)                         hard-delete everything about the user
//
// Every result carries structured content (the tool's output schema) and a
// short readable text. Bad arguments come back as a tool error the model
// can read and correct, never as a protocol failure or a crash. Serve it
// over [Transport], which answers a malformed JSON-RPC line with an error
// and keeps serving where the SDK's stdio transport would end the session,
// or over streamable HTTP with [NewHTTPHandler], which `memor serve` mounts
// at /mcp so that several hosts share one engine.
//
// # Concurrency
//
// The server returned by New is safe for concurrent sessions, as the
// engine is.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/instant"
)

// Name is the server's MCP implementation name.
const Name = "memor"

// DefaultLimit is query_memory's limit when the call leaves it out.
const DefaultLimit = 10

// MaxLimit bounds query_memory's limit.
const MaxLimit = 100

// ErrBadArgument reports a tool argument the server cannot use.
var ErrBadArgument = errors.New("mcpserver: bad argument")

// Options configures New.
type Options struct {
	// Version is reported to clients at initialize.
	Version string
	// Logger receives the SDK's protocol logs (nil: none). Over stdio it
	// must not write to stdout, which carries the protocol.
	Logger *slog.Logger
	// Now is the clock for defaulted times; nil means time.Now.
	Now func() time.Time
	// Through, if set, runs every tool's engine calls for one user: fn
	// makes them, write says whether they write. A cluster node passes
	// server.MCPThrough, so that a write runs as its HTTP routes' writes do
	// (in order in the log, retried once after a refusal) and a call for a
	// user this node does not serve is refused rather than answered from a
	// stale copy. Nil runs fn.
	Through func(ctx context.Context, user string, write bool, fn func() error) error
}

// New returns an MCP server whose tools read and write e. Run it with
// server.Run(ctx, &Transport{Reader: os.Stdin, Writer: os.Stdout}).
func New(e *memor.Engine, o Options) *mcp.Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "memor: bitemporal memory", Version: o.Version},
		&mcp.ServerOptions{Logger: o.Logger, Instructions: instructions})
	t := tools{e: e, now: o.Now, through: o.Through}
	if t.through == nil {
		t.through = func(_ context.Context, _ string, _ bool, fn func() error) error { return fn() }
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "add_memory", Description: "Remember something the user said. Facts (where they live, work, " +
		"family, pets, likes...) are extracted, and contradictions with what was known are resolved by time. " +
		"In a conversation of several people, pass speaker: what they say about themselves is theirs, not the user's. " +
		"Returns once the memory is applied, with the facts it produced."}, t.add)
	mcp.AddTool(s, &mcp.Tool{Name: "query_memory", Annotations: readOnly, Description: "Search the user's memory for what is " +
		"relevant to a question. Returns only what is true now, best first; a fact reached through related people or " +
		"things carries its path."}, t.query)
	mcp.AddTool(s, &mcp.Tool{Name: "get_user_profile", Annotations: readOnly, Description: "Every fact believed true now " +
		"about the user and the people and things around them."}, t.profile)
	mcp.AddTool(s, &mcp.Tool{Name: "get_history", Annotations: readOnly, Description: "Every version of one fact over time " +
		"(e.g. subject \"user\", predicate \"lives_in\"): when each value held, when memor learned and revised it, and the " +
		"rule that decided it."}, t.history)
	mcp.AddTool(s, &mcp.Tool{Name: "query_as_of", Annotations: readOnly, Description: "Time travel: what was true at valid_at " +
		"(\"where did I live on 2026-02-01?\"), as memor knew it at known_at (default now; set it to audit what was believed " +
		"then). Returns the facts of that moment, and the best results for text if given."}, t.asOf)
	mcp.AddTool(s, &mcp.Tool{Name: "correct_memory", Description: "The user says a remembered fact was never true: retract " +
		"it (kept in the history, never served again) and restore what it had replaced. Take fact_id from another tool's result."}, t.correct)
	mcp.AddTool(s, &mcp.Tool{Name: "list_conflicts", Annotations: readOnly, Description: "Contested facts memor holds for " +
		"review instead of serving them: two different values claimed for the same moment, or a much less confident " +
		"claim. Ask the user which is right, then accept_memory the right one (or correct_memory the wrong one)."}, t.conflicts)
	mcp.AddTool(s, &mcp.Tool{Name: "accept_memory", Description: "The user says a contested fact (from list_conflicts) is " +
		"right: it becomes the value in force from when it became true, replacing the value it contested; rivals claimed " +
		"for the same moment stay contested. Take fact_id from list_conflicts."}, t.accept)
	destructive := true
	mcp.AddTool(s, &mcp.Tool{Name: "forget_memory", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		Description: "Permanently delete everything memor holds about the user (GDPR erasure). Only on the user's explicit request."}, t.forget)
	return s
}

const instructions = "memor is the user's long-term memory. Call add_memory with what the user tells you about " +
	"themselves; call query_memory before answering questions about them. Facts know when they were true: use " +
	"query_as_of for questions about the past. Times are RFC 3339 or YYYY-MM-DD."

type tools struct {
	e       *memor.Engine
	now     func() time.Time
	through func(ctx context.Context, user string, write bool, fn func() error) error
}

// read runs fn, reads of user, through t.through.
func (t tools) read(ctx context.Context, user string, fn func() error) error {
	return t.through(ctx, user, false, fn)
}

// write runs fn, a write of user, through t.through.
func (t tools) write(ctx context.Context, user string, fn func() error) error {
	return t.through(ctx, user, true, fn)
}

// Tool inputs. Fields without omitempty are required by the schema.
type (
	addIn struct {
		UserID string `json:"user_id" jsonschema:"the user the memory belongs to"`
		Text   string `json:"text" jsonschema:"what the user said, in their words"`
		At     string `json:"at,omitempty" jsonschema:"when it was said: RFC 3339 or YYYY-MM-DD (default now)"`
		// Speaker is memor.Speaker.
		Speaker string `json:"speaker,omitempty" jsonschema:"who said it, when the conversation has several people: their I/me/my is about this name, not the user (default: the user)"`
		// IdempotencyKey is memor.IdempotencyKey.
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a name for this call (e.g. a UUID): repeating the call with the same key and text remembers nothing new and returns the first result's episode"`
	}
	queryIn struct {
		UserID string `json:"user_id" jsonschema:"the user whose memory to search"`
		Text   string `json:"text" jsonschema:"the question or topic"`
		Limit  int    `json:"limit,omitempty" jsonschema:"how many results (default 10, max 100)"`
		// Explain asks why each result ranked where it did.
		Explain bool `json:"explain,omitempty" jsonschema:"also say why each result ranked where it did: per-signal scores, BM25 terms, graph path, focus and time"`
		// MinSupport is memor.QueryOptions.MinSupport.
		MinSupport float64 `json:"min_support,omitempty" jsonschema:"answer nothing known when no result explains this share of the question's words (at most 1; default 0: memor's calibrated threshold; negative: always answer)"`
	}
	userIn struct {
		UserID string `json:"user_id" jsonschema:"the user"`
	}
	historyIn struct {
		UserID    string `json:"user_id" jsonschema:"the user"`
		Subject   string `json:"subject,omitempty" jsonschema:"whose fact: \"user\" (default) for the user, or a name such as \"Alex\""`
		Predicate string `json:"predicate" jsonschema:"the relation, e.g. lives_in, works_at, has_pet"`
	}
	asOfIn struct {
		UserID  string `json:"user_id" jsonschema:"the user"`
		Text    string `json:"text,omitempty" jsonschema:"optional question to rank results for"`
		ValidAt string `json:"valid_at,omitempty" jsonschema:"the moment in the world: RFC 3339 or YYYY-MM-DD (default now)"`
		KnownAt string `json:"known_at,omitempty" jsonschema:"what memor knew at this moment: RFC 3339 or YYYY-MM-DD (default now)"`
		Limit   int    `json:"limit,omitempty" jsonschema:"how many results for text (default 10, max 100)"`
	}
	correctIn struct {
		UserID string `json:"user_id" jsonschema:"the user"`
		FactID string `json:"fact_id" jsonschema:"the id of the fact that was never true"`
	}
	acceptIn struct {
		UserID string `json:"user_id" jsonschema:"the user"`
		FactID string `json:"fact_id" jsonschema:"the id of the contested fact that is right (from list_conflicts)"`
	}
)

// Fact is a fact version as tools return it: times as RFC 3339 strings,
// status and rule as words.
type Fact struct {
	ID        string `json:"id"`
	Text      string `json:"text" jsonschema:"subject predicate object"`
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`
	Context   string `json:"context,omitempty"`
	ValidFrom string `json:"valid_from" jsonschema:"when it became true"`
	ValidTo   string `json:"valid_to,omitempty" jsonschema:"when it stopped being true (absent: still true)"`
	// RecordedAt and ExpiredAt bound when memor believed this version.
	RecordedAt string  `json:"recorded_at"`
	ExpiredAt  string  `json:"expired_at,omitempty"`
	Status     string  `json:"status" jsonschema:"active, contested or retracted"`
	Rule       string  `json:"rule" jsonschema:"the resolution rule that produced this version"`
	Confidence float64 `json:"confidence"`
	Reinforced int     `json:"reinforced"`
	// Episodes are the sequence numbers of the episodes that support it.
	Episodes []uint64 `json:"episodes" jsonschema:"the episodes that support the fact: where it was said and restated"`
	Quote    string   `json:"quote,omitempty"`
}

// Result is one ranked query answer.
type Result struct {
	Text  string  `json:"text"`
	Score float64 `json:"score"`
	// Path is the graph path that reached the fact, if any.
	Path   string `json:"path,omitempty"`
	FactID string `json:"fact_id,omitempty"`
	// ValidFrom and ValidTo are the fact's valid time, or the episode's
	// date.
	ValidFrom string `json:"valid_from,omitempty"`
	ValidTo   string `json:"valid_to,omitempty"`
	// Explanation says why it ranked where it did (with explain only).
	Explanation *memor.Explanation `json:"explanation,omitempty"`
}

// Tool outputs. Slices are never nil: the schema says array.
type (
	addOut struct {
		Seq     uint64        `json:"seq" jsonschema:"the episode's sequence number"`
		At      string        `json:"at"`
		Learned []Fact        `json:"learned" jsonschema:"current facts that came from this memory"`
		Changes memor.Changes `json:"changes" jsonschema:"what the memory changed: facts added, superseded, ended, contested, reinforced, rejected, or nothing extracted"`
		Changed []change      `json:"changed" jsonschema:"one entry per rule decision the memory took for this episode"`
		// Repeated: idempotency_key named an episode remembered already.
		Repeated bool `json:"repeated,omitempty" jsonschema:"the idempotency_key named a memory added by an earlier call: nothing new was remembered"`
	}
	change struct {
		Change    string `json:"change" jsonschema:"added, superseded, ended, contested, reinforced, rejected, revised or unchanged"`
		Rule      string `json:"rule"`
		FactID    string `json:"fact_id"`
		Subject   string `json:"subject"`
		Predicate string `json:"predicate"`
		Object    string `json:"object,omitempty"`
		Detail    string `json:"detail,omitempty"`
	}
	queryOut struct {
		Results []Result `json:"results"`
	}
	factsOut struct {
		Facts []Fact `json:"facts"`
	}
	asOfOut struct {
		ValidAt string   `json:"valid_at"`
		KnownAt string   `json:"known_at"`
		Facts   []Fact   `json:"facts"`
		Results []Result `json:"results"`
	}
	doneOut struct {
		Done string `json:"done"`
	}
)

func (t tools) add(ctx context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	at, err := instant.Parse(in.At, time.Time{})
	if err != nil {
		return nil, addOut{}, err
	}
	if strings.TrimSpace(in.Text) == "" {
		return nil, addOut{}, fmt.Errorf("%w: text is empty: pass what the user said", ErrBadArgument)
	}
	var opts []memor.AddOption
	if !at.IsZero() {
		opts = append(opts, memor.At(at))
	}
	if in.Speaker != "" {
		opts = append(opts, memor.Speaker(in.Speaker))
	}
	if in.IdempotencyKey != "" {
		opts = append(opts, memor.IdempotencyKey(in.IdempotencyKey))
	}
	var repeated bool
	opts = append(opts, memor.Repeated(&repeated))
	var ds []memor.Decision
	var ep memor.Episode
	var st []memor.Fact
	err = t.write(ctx, in.UserID, func() (err error) {
		ds = nil
		if ep, err = t.e.Add(ctx, in.UserID, in.Text, append(opts, memor.Decisions(&ds))...); err != nil {
			return err
		}
		st, err = t.e.State(ctx, in.UserID)
		return err
	})
	if err != nil {
		return nil, addOut{}, explain(err)
	}
	out := addOut{Seq: ep.Seq, At: stamp(ep.At), Learned: []Fact{}, Changes: memor.Summarize(ds), Changed: []change{}, Repeated: repeated}
	for _, f := range st {
		if f.Episode == ep.Seq {
			out.Learned = append(out.Learned, toFact(f))
		}
	}
	text := fmt.Sprintf("Remembered (episode %d, said %s, recorded %s).", ep.Seq, stamp(ep.At), stamp(ep.RecordedAt))
	if repeated {
		text = fmt.Sprintf("Remembered already under this idempotency_key (episode %d, said %s, recorded %s): nothing new.", ep.Seq, stamp(ep.At), stamp(ep.RecordedAt))
	}
	for _, d := range ds {
		c := change{Change: d.Change(), Rule: string(d.Rule), FactID: d.FactID, Subject: d.Subject,
			Predicate: d.Predicate, Object: d.Object, Detail: d.Detail}
		out.Changed = append(out.Changed, c)
		text += fmt.Sprintf("\n%s: %s %s %s (rule %s)", c.Change, c.Subject, c.Predicate, c.Object, c.Rule)
	}
	if out.Changes.Contested > 0 {
		text += "\nContested claims are held for review (list_conflicts), not served as facts."
	}
	if len(out.Learned) > 0 {
		text += "\nNow true:\n" + factLines(out.Learned)
	}
	if out.Changes.Nothing {
		text += " Nothing extracted; the text is kept and searchable."
	}
	return textResult(text), out, nil
}

func (t tools) query(ctx context.Context, _ *mcp.CallToolRequest, in queryIn) (*mcp.CallToolResult, queryOut, error) {
	k, err := limit(in.Limit)
	if err != nil {
		return nil, queryOut{}, err
	}
	if in.MinSupport > 1 {
		return nil, queryOut{}, fmt.Errorf("%w: min_support must be at most 1, got %g", ErrBadArgument, in.MinSupport)
	}
	rs, err := t.search(ctx, in.UserID, in.Text, memor.QueryOptions{K: k, Explain: in.Explain, MinSupport: in.MinSupport})
	if err != nil {
		return nil, queryOut{}, err
	}
	return textResult(resultLines(rs)), queryOut{Results: rs}, nil
}

func (t tools) search(ctx context.Context, user, text string, o memor.QueryOptions) ([]Result, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%w: text is empty: pass the question", ErrBadArgument)
	}
	var rs []memor.Result
	err := t.read(ctx, user, func() (err error) {
		rs, err = t.e.Query(ctx, user, text, o)
		return err
	})
	if err != nil {
		return nil, explain(err)
	}
	out := make([]Result, 0, len(rs))
	for _, r := range rs {
		x := Result{Text: r.Text(), Score: r.Score, Path: r.Path, Explanation: r.Explanation}
		switch {
		case r.Fact != nil:
			x.FactID, x.ValidFrom, x.ValidTo = r.Fact.ID, stamp(r.Fact.ValidFrom), stamp(r.Fact.ValidTo)
		case r.Episode != nil:
			x.ValidFrom = stamp(r.Episode.At)
		}
		out = append(out, x)
	}
	return out, nil
}

func (t tools) profile(ctx context.Context, _ *mcp.CallToolRequest, in userIn) (*mcp.CallToolResult, factsOut, error) {
	var fs []memor.Fact
	err := t.read(ctx, in.UserID, func() (err error) {
		fs, err = t.e.State(ctx, in.UserID)
		return err
	})
	return t.facts(fs, err, "Nothing is known about this user yet.")
}

func (t tools) history(ctx context.Context, _ *mcp.CallToolRequest, in historyIn) (*mcp.CallToolResult, factsOut, error) {
	if strings.TrimSpace(in.Predicate) == "" {
		return nil, factsOut{}, fmt.Errorf("%w: predicate is empty: pass a relation such as lives_in", ErrBadArgument)
	}
	subject := in.Subject
	if subject == "" {
		subject = "user"
	}
	var fs []memor.Fact
	err := t.read(ctx, in.UserID, func() (err error) {
		fs, err = t.e.History(ctx, in.UserID, subject, in.Predicate)
		return err
	})
	return t.facts(fs, err, fmt.Sprintf("No history for %s %s.", subject, in.Predicate))
}

func (t tools) conflicts(ctx context.Context, _ *mcp.CallToolRequest, in userIn) (*mcp.CallToolResult, factsOut, error) {
	var fs []memor.Fact
	err := t.read(ctx, in.UserID, func() (err error) {
		fs, err = t.e.Conflicts(ctx, in.UserID)
		return err
	})
	return t.facts(fs, err, "No conflicts.")
}

func (t tools) facts(fs []memor.Fact, err error, empty string) (*mcp.CallToolResult, factsOut, error) {
	if err != nil {
		return nil, factsOut{}, explain(err)
	}
	out := factsOut{Facts: make([]Fact, 0, len(fs))}
	for _, f := range fs {
		out.Facts = append(out.Facts, toFact(f))
	}
	if len(fs) == 0 {
		return textResult(empty), out, nil
	}
	return textResult(factLines(out.Facts)), out, nil
}

func (t tools) asOf(ctx context.Context, _ *mcp.CallToolRequest, in asOfIn) (*mcp.CallToolResult, asOfOut, error) {
	now := t.now().UTC()
	valid, err := instant.Parse(in.ValidAt, now)
	if err != nil {
		return nil, asOfOut{}, err
	}
	known, err := instant.Parse(in.KnownAt, now)
	if err != nil {
		return nil, asOfOut{}, err
	}
	k, err := limit(in.Limit)
	if err != nil {
		return nil, asOfOut{}, err
	}
	var fs []memor.Fact
	err = t.read(ctx, in.UserID, func() (err error) {
		fs, err = t.e.AsOf(ctx, in.UserID, valid, known)
		return err
	})
	if err != nil {
		return nil, asOfOut{}, explain(err)
	}
	out := asOfOut{ValidAt: stamp(valid), KnownAt: stamp(known), Facts: make([]Fact, 0, len(fs)), Results: []Result{}}
	for _, f := range fs {
		out.Facts = append(out.Facts, toFact(f))
	}
	if strings.TrimSpace(in.Text) != "" {
		if out.Results, err = t.search(ctx, in.UserID, in.Text, memor.QueryOptions{K: k, ValidAt: valid, KnownAt: known}); err != nil {
			return nil, asOfOut{}, err
		}
	}
	text := fmt.Sprintf("True on %s, as known on %s:\n", valid.Format(time.DateOnly), known.Format(time.DateOnly))
	if len(out.Facts) == 0 {
		text += "nothing known.\n"
	} else {
		text += factLines(out.Facts)
	}
	if len(out.Results) > 0 {
		text += "Best matches:\n" + resultLines(out.Results)
	}
	return textResult(text), out, nil
}

func (t tools) correct(ctx context.Context, _ *mcp.CallToolRequest, in correctIn) (*mcp.CallToolResult, doneOut, error) {
	if err := t.write(ctx, in.UserID, func() error { return t.e.Correct(ctx, in.UserID, in.FactID) }); err != nil {
		return nil, doneOut{}, explain(err)
	}
	return textResult("Retracted fact " + in.FactID + "; what it had replaced is restored."), doneOut{Done: "corrected " + in.FactID}, nil
}

func (t tools) accept(ctx context.Context, _ *mcp.CallToolRequest, in acceptIn) (*mcp.CallToolResult, doneOut, error) {
	if err := t.write(ctx, in.UserID, func() error { return t.e.Accept(ctx, in.UserID, in.FactID) }); err != nil {
		return nil, doneOut{}, explain(err)
	}
	return textResult("Accepted fact " + in.FactID + "; it is the value in force from its valid time."), doneOut{Done: "accepted " + in.FactID}, nil
}

func (t tools) forget(ctx context.Context, _ *mcp.CallToolRequest, in userIn) (*mcp.CallToolResult, doneOut, error) {
	if err := t.write(ctx, in.UserID, func() error { return t.e.Forget(ctx, in.UserID) }); err != nil {
		return nil, doneOut{}, explain(err)
	}
	return textResult("Forgot everything about " + in.UserID + "."), doneOut{Done: "forgot " + in.UserID}, nil
}

// explain adds what to do to the engine's input errors, for the model.
func explain(err error) error {
	switch {
	case errors.Is(err, memor.ErrInvalidUser):
		return fmt.Errorf("%w (pass a user_id of at most %d bytes of UTF-8, with a visible character and no control character)", err, memor.MaxUserBytes)
	case errors.Is(err, memor.ErrNotContested):
		return fmt.Errorf("%w (accept_memory takes a fact_id from list_conflicts)", err)
	case errors.Is(err, memor.ErrInvalidFact), errors.Is(err, memor.ErrNotFound):
		return fmt.Errorf("%w (take fact_id from get_user_profile, get_history or query_memory)", err)
	case errors.Is(err, memor.ErrTooLarge):
		return fmt.Errorf("%w (split the text into shorter memories)", err)
	case errors.Is(err, memor.ErrInvalidSpeaker):
		return fmt.Errorf("%w (pass a speaker name of at most %d bytes of UTF-8, with a letter or digit and no control character, or leave it out for the user)", err, memor.MaxSpeakerBytes)
	}
	return err
}

func limit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 0 || n > MaxLimit:
		return 0, fmt.Errorf("%w: limit %d: must be between 1 and %d", ErrBadArgument, n, MaxLimit)
	}
	return n, nil
}

func toFact(f memor.Fact) Fact {
	return Fact{ID: f.ID, Text: f.String(), Subject: f.Subject, Predicate: f.Predicate, Object: f.Object,
		Context: f.Context, ValidFrom: stamp(f.ValidFrom), ValidTo: stamp(f.ValidTo),
		RecordedAt: stamp(f.RecordedAt), ExpiredAt: stamp(f.ExpiredAt), Status: f.Status.String(),
		Rule: string(f.Rule), Confidence: f.Confidence, Reinforced: f.Reinforced, Episodes: f.Episodes, Quote: f.Quote}
}

// stamp renders t as RFC 3339 in UTC, or "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func factLines(fs []Fact) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("- " + f.Text + " (from " + day(f.ValidFrom))
		if f.ValidTo != "" {
			b.WriteString(" to " + day(f.ValidTo))
		}
		b.WriteString(")")
		if f.Status != memor.Active.String() {
			b.WriteString(" [" + f.Status + "]")
		}
		if f.ExpiredAt != "" {
			b.WriteString(" [superseded belief, " + f.Rule + "]")
		}
		b.WriteString(" id=" + f.ID + "\n")
	}
	return b.String()
}

func resultLines(rs []Result) string {
	if len(rs) == 0 {
		return "Nothing relevant is known.\n"
	}
	var b strings.Builder
	if x := rs[0].Explanation; x != nil && x.Query != nil {
		b.WriteString(x.Query.String())
	}
	for i, r := range rs {
		fmt.Fprintf(&b, "%d. %s", i+1, r.Text)
		if r.Path != "" {
			b.WriteString("  (via " + r.Path + ")")
		}
		if r.FactID != "" {
			b.WriteString(" id=" + r.FactID)
		}
		b.WriteString("\n")
		if r.Explanation != nil {
			for _, line := range strings.SplitAfter(strings.TrimRight(r.Explanation.String(), "\n"), "\n") {
				b.WriteString("   " + line)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func day(rfc string) string {
	if len(rfc) >= 10 {
		return rfc[:10]
	}
	return rfc
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(s, "\n")}}}
}
