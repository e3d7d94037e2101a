package memor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/memor-db/memor/internal/jsontext"
	"github.com/memor-db/memor/kv"
)

// Export and import (a backup of both clocks).
//
// # Format
//
// An export is JSON Lines, UTF-8, one JSON object a line:
//
//  1. A header: {"memor_export": 1, "extractor": …, "embedder": {"name": …,
//     "dim": …}}. memor_export is the format
//     version (ExportFormat); extractor and embedder name the components
//     of the store that wrote it, since an import re-extracts text
//     episodes with its own.
//  2. Every episode of every exported user, one a line, in log order per
//     user (users one after another), as Episode marshals: user, seq,
//     kind, at (valid time: when it was said), recorded_at (transaction
//     time: when memor learned it), text, speaker, key (the idempotency
//     key of a text episode, IdempotencyKey), ops (structured episodes),
//     correct (corrections).
//  3. An end line: {"memor_export_end": {"users": …, "episodes": …}}, the
//     counts of what the lines before it hold. Export writes it only once
//     everything else is written, so an export that failed midway (a
//     damaged log, a full disk) or a file cut short (a copy interrupted,
//     a process killed) has none, and Import refuses it whole
//     (ErrTruncatedImport) rather than restoring part of a user's history
//     as if it were all of it.
//
// A file without a header (what memor wrote before the format had a
// version) is read as version 0, and format 1 (before the end line) as
// it was written: the same episode lines, with no end line to check, so
// Import warns that it cannot tell such a file whole from cut short.
//
// # Import
//
// Import replays the episodes as the engine replays its log (Rebuild):
// each episode's derived facts, versions, decisions and corrections carry
// the episode's own recorded_at, so a store restored from an export
// answers AsOf and History at every (valid, known) instant as the
// original does (with the same extractor; see the header). The rules:
//
//  1. The whole input is read and checked before anything is written: a
//     line that is not an episode the engine would accept imports nothing,
//     and the *ImportError names the line and field.
//  2. An episode is identified by its user, its recorded_at and its
//     content. One the user's log already holds is skipped (counted in
//     ImportSummary.Skipped), so importing a file twice is a no-op.
//  3. Transaction times come from the file only where they keep the
//     user's transaction time strictly increasing: every new episode of a
//     user must be recorded after everything the user has stored (their
//     last transaction time). Otherwise the import fails with
//     ErrHistoryConflict and writes nothing for that user. A new user
//     always qualifies.
//  4. Each user's new episodes and everything derived from them are
//     committed in one batch, so a user is imported whole or not at all.
//     If a write fails midway (a full disk), the users before it are
//     imported; importing the same file again completes the rest.
//  5. Current reads never precede a stored transaction time: a file
//     recorded ahead of the engine clock advances the engine's "now".

// ExportFormat is the version of the export format Export writes and the
// newest Import reads.
const ExportFormat = 2

var (
	// ErrInvalidImport: an import's input is not an export memor reads
	// (not JSON Lines, a field of the wrong type or out of range, an
	// episode the engine would refuse, a format newer than ExportFormat).
	// The error is an *ImportError that names the line and field.
	ErrInvalidImport = errors.New("memor: invalid import")
	// ErrHistoryConflict: an import would give a user an episode recorded
	// before what the user already has stored, or a different episode at
	// an instant the user's log already holds (see Import).
	ErrHistoryConflict = errors.New("memor: import conflicts with the stored history")
	// ErrTruncatedImport: an import's input of format 2 or later has no
	// end line, or one whose counts are not what the file holds: the
	// export failed midway or the file was cut short. Nothing is
	// imported. The error is an *ImportError that also matches
	// ErrInvalidImport.
	ErrTruncatedImport = errors.New("memor: import input is truncated")
)

// ImportError is the failure of an import on one line of its input.
type ImportError struct {
	// Line is the 1-based line of the input; Field the JSON field at
	// fault, if one is ("" for the whole line).
	Line  int
	Field string
	Err   error
}

func (e *ImportError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("line %d: field %s: %v", e.Line, e.Field, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *ImportError) Unwrap() error { return e.Err }

// ExportHeader is the first line of an export. It holds no time of its
// own: exporting a store twice writes the same bytes, so backups diff.
type ExportHeader struct {
	Format    int          `json:"memor_export"`
	Extractor string       `json:"extractor"`
	Embedder  EmbedderInfo `json:"embedder"`
}

// ExportEnd is an export's last line (format 2 on): the counts of what the
// file holds, written after everything else.
type ExportEnd struct {
	End ExportSummary `json:"memor_export_end"`
}

// EmbedderInfo names an embedder in an export's header.
type EmbedderInfo struct {
	Name string `json:"name"`
	Dim  int    `json:"dim"`
}

// ExportSummary says what Export wrote.
type ExportSummary struct {
	Users    int `json:"users"`
	Episodes int `json:"episodes"`
}

// ImportSummary says what Import did.
type ImportSummary struct {
	// Format is the version of the input (0: a file without header).
	Format int `json:"format"`
	// Header is the input's header (zero for format 0).
	Header ExportHeader `json:"header"`
	// Users counts the users that got at least one new episode.
	Users int `json:"users"`
	// Episodes counts the episodes imported.
	Episodes int `json:"episodes"`
	// Skipped counts the episodes not imported: already in the store, or
	// blank text episodes an older store accepted.
	Skipped int `json:"skipped"`
	// Failed counts imported text episodes whose extraction failed (see
	// Failed and Retry).
	Failed int `json:"failed"`
	// Warnings say what may make the restored store differ from the
	// original: another extractor or embedder, corrections whose fact
	// the import did not produce.
	Warnings []string `json:"warnings,omitempty"`
}

// ImportOption configures Import.
type ImportOption func(*importConfig)

type importConfig struct {
	as, only *string
	progress func(ImportProgress)
}

// ImportAs imports every episode as user, whatever user the file names.
// A correction names its fact by an ID derived from the user, so a
// correction imported under another user finds no fact and changes
// nothing (ImportSummary.Warnings says so).
func ImportAs(user string) ImportOption { return func(c *importConfig) { c.as = &user } }

// ImportOnly refuses an input holding an episode of any user but user
// (an *ImportError naming the line, wrapping ErrInvalidImport): the
// import of one user's backup, as the HTTP API takes it.
func ImportOnly(user string) ImportOption { return func(c *importConfig) { c.only = &user } }

// WithImportProgress calls f as the import proceeds: after each line read
// (Stage "read") and each episode applied (Stage "apply").
func WithImportProgress(f func(ImportProgress)) ImportOption {
	return func(c *importConfig) { c.progress = f }
}

// ImportProgress is how far an import has got.
type ImportProgress struct {
	Stage string
	// Done of Total: lines read (Total unknown, 0) or episodes applied.
	Done, Total int
	// Bytes read so far.
	Bytes int64
}

// Export writes the episode logs of users (every user if none is given)
// to w in the export format (see ExportFormat): a header line, then each
// user's episodes in log order, each user's read from one snapshot, then
// the end line. On an error it returns with what it wrote so far and no
// end line, which Import refuses.
func (e *Engine) Export(ctx context.Context, w io.Writer, users ...string) (ExportSummary, error) {
	var sum ExportSummary
	if len(users) == 0 {
		var err error
		if users, err = e.Users(ctx); err != nil {
			return sum, err
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.exportHeader()); err != nil {
		return sum, err
	}
	for _, u := range users {
		// Streamed: a user's log is never held whole, only its episode
		// being encoded.
		n := 0
		for ep, err := range e.EpisodesSeq(ctx, u) {
			if err != nil {
				return sum, fmt.Errorf("memor: export %q: %w", u, err)
			}
			if err := enc.Encode(&ep); err != nil {
				return sum, err
			}
			n++
		}
		sum.Episodes += n
		sum.Users += min(1, n)
	}
	if err := enc.Encode(ExportEnd{End: sum}); err != nil {
		return sum, err
	}
	return sum, bw.Flush()
}

func (e *Engine) exportHeader() ExportHeader {
	return ExportHeader{Format: ExportFormat, Extractor: componentName(e.ext),
		Embedder: EmbedderInfo{Name: componentName(e.idx.emb), Dim: e.idx.emb.Dim()}}
}

// componentName names an extractor or embedder: its Name method's answer
// if it has one, else its Go type.
func componentName(c any) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return reflect.TypeOf(c).String()
}

// importLine is one episode of an import with the line it came from.
type importLine struct {
	ep   Episode
	line int
}

// Import reads an export (see ExportFormat) from r and adds its episodes
// to the store, preserving both clocks: see the rules above ExportFormat.
// A bad line imports nothing and returns an *ImportError wrapping
// ErrInvalidImport (or the engine's error for the episode, e.g.
// ErrInvalidText); a user whose stored history is later than the file's
// fails with ErrHistoryConflict before anything is written.
func (e *Engine) Import(ctx context.Context, r io.Reader, opts ...ImportOption) (ImportSummary, error) {
	var cfg importConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.as != nil {
		if err := e.validUser(*cfg.as); err != nil {
			return ImportSummary{}, err
		}
	}
	sum, byUser, order, err := e.readImport(ctx, r, &cfg)
	if err != nil {
		return sum, err
	}
	if cfg.as != nil && len(order) == 1 {
		// Several users merged into one: their logs interleave in time.
		eps := byUser[order[0]]
		slices.SortStableFunc(eps, func(a, b importLine) int { return a.ep.RecordedAt.Compare(b.ep.RecordedAt) })
		for i := 1; i < len(eps); i++ {
			if !eps[i].ep.RecordedAt.After(eps[i-1].ep.RecordedAt) {
				return sum, &ImportError{Line: eps[i].line, Field: "recorded_at",
					Err: fmt.Errorf("%w: two episodes recorded at %s for %q", ErrHistoryConflict,
						eps[i].ep.RecordedAt.Format(time.RFC3339Nano), order[0])}
			}
		}
	}
	// Every user is planned before any is written: a conflict imports
	// nothing.
	plans := make([][]importLine, len(order))
	total := 0
	for i, u := range order {
		p, skipped, err := e.planImport(ctx, u, byUser[u])
		if err != nil {
			return sum, err
		}
		plans[i], sum.Skipped = p, sum.Skipped+skipped
		total += len(p)
	}
	unmatched := 0
	done := 0
	for i, u := range order {
		if len(plans[i]) == 0 {
			continue
		}
		n, failed, um, err := e.importUser(ctx, u, plans[i], func() {
			done++
			if cfg.progress != nil {
				cfg.progress(ImportProgress{Stage: "apply", Done: done, Total: total})
			}
		})
		if err != nil {
			return sum, fmt.Errorf("memor: import %q: %w", u, err)
		}
		sum.Users++
		sum.Episodes += n
		sum.Failed += failed
		unmatched += um
	}
	if unmatched > 0 {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%d correction(s) found no fact to retract", unmatched))
	}
	return sum, nil
}

// readImport reads and checks the whole input: episodes by user, users in
// the order they first appear.
func (e *Engine) readImport(ctx context.Context, r io.Reader, cfg *importConfig) (ImportSummary, map[string][]importLine, []string, error) {
	var sum ImportSummary
	byUser := map[string][]importLine{}
	var order []string
	br := bufio.NewReaderSize(r, 1<<16)
	var read int64
	first := true
	blank := 0
	// What the lines hold, for the end line to be checked against: episode
	// lines and the distinct users they name (before ImportAs).
	var (
		count ExportSummary
		named = map[string]bool{}
		ended int // the end line's line number, once read
		last  int // the last line read that is not blank
	)
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return sum, nil, nil, err
		}
		b, err := br.ReadBytes('\n')
		read += int64(len(b))
		if len(b) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return sum, nil, nil, fmt.Errorf("memor: import: line %d: %w", line, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		last = line
		if first {
			first = false
			h, ok, err := parseHeader(b, line)
			if err != nil {
				return sum, nil, nil, err
			}
			if ok {
				sum.Format, sum.Header = h.Format, h
				sum.Warnings = e.headerWarnings(h)
				continue
			}
		}
		if ended > 0 {
			return sum, nil, nil, &ImportError{Line: line,
				Err: fmt.Errorf("%w: a line after the end line (line %d)", ErrInvalidImport, ended)}
		}
		if end, ok, err := parseEnd(b, line, sum.Format); err != nil {
			return sum, nil, nil, err
		} else if ok {
			if end.End != count {
				return sum, nil, nil, &ImportError{Line: line, Field: "memor_export_end",
					Err: fmt.Errorf("%w: the end line counts %d episode(s) of %d user(s), the file holds %d of %d",
						errTruncated, end.End.Episodes, end.End.Users, count.Episodes, count.Users)}
			}
			ended = line
			if cfg.progress != nil {
				cfg.progress(ImportProgress{Stage: "read", Done: line, Bytes: read})
			}
			continue
		}
		ep, err := e.parseEpisode(b, line, sum.Format)
		if err != nil {
			return sum, nil, nil, err
		}
		count.Episodes++
		if !named[ep.User] {
			named[ep.User] = true
			count.Users++
		}
		if ep.Kind == EpisodeText && strings.TrimSpace(ep.Text) == "" {
			blank++ // an older store accepted blank episodes; Add refuses them
			continue
		}
		if cfg.only != nil && ep.User != *cfg.only {
			return sum, nil, nil, &ImportError{Line: line, Field: "user",
				Err: fmt.Errorf("%w: an episode of %q in an import of %q", ErrInvalidImport, ep.User, *cfg.only)}
		}
		if cfg.as != nil {
			ep.User = *cfg.as
		}
		prev := byUser[ep.User]
		if prev == nil {
			order = append(order, ep.User)
		} else if cfg.as == nil {
			last := prev[len(prev)-1].ep
			if ep.Seq <= last.Seq {
				return sum, nil, nil, &ImportError{Line: line, Field: "seq",
					Err: fmt.Errorf("%w: %d after %d: not in log order", ErrInvalidImport, ep.Seq, last.Seq)}
			}
			if !ep.RecordedAt.After(last.RecordedAt) {
				return sum, nil, nil, &ImportError{Line: line, Field: "recorded_at",
					Err: fmt.Errorf("%w: %s is not after the user's previous episode (%s, line %d)", ErrInvalidImport,
						ep.RecordedAt.Format(time.RFC3339Nano), last.RecordedAt.Format(time.RFC3339Nano), prev[len(prev)-1].line)}
			}
		}
		byUser[ep.User] = append(prev, importLine{ep: ep, line: line})
		if cfg.progress != nil {
			cfg.progress(ImportProgress{Stage: "read", Done: line, Bytes: read})
		}
	}
	switch {
	case sum.Format >= 2 && ended == 0:
		return sum, nil, nil, &ImportError{Line: last + 1, Field: "memor_export_end",
			Err: fmt.Errorf("%w: the file ends without its end line, after %d episode(s)", errTruncated, count.Episodes)}
	case sum.Format < 2:
		sum.Warnings = append(sum.Warnings, fmt.Sprintf(
			"format %d has no end line: a file cut short cannot be told from a whole one", sum.Format))
	}
	if blank > 0 {
		sum.Skipped += blank
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("skipped %d blank text episode(s), which this memor refuses", blank))
	}
	return sum, byUser, order, nil
}

// errTruncated matches both ErrTruncatedImport and ErrInvalidImport: a
// truncated file is also one memor does not import.
var errTruncated = fmt.Errorf("%w (%w)", ErrTruncatedImport, ErrInvalidImport)

// parseEnd reports whether line b is an export's end line, and parses it.
// Before format 2 no line is: an episode line cannot hold the key
// unescaped except as its own key, which the episode parser refuses.
func parseEnd(b []byte, line, format int) (ExportEnd, bool, error) {
	var end ExportEnd
	if format < 2 || !bytes.Contains(b, []byte(`"memor_export_end"`)) {
		return end, false, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return end, false, nil
	}
	if _, ok := probe["memor_export_end"]; !ok {
		return end, false, nil
	}
	if len(probe) != 1 {
		return end, true, &ImportError{Line: line, Field: "memor_export_end",
			Err: fmt.Errorf("%w: the end line holds other fields", ErrInvalidImport)}
	}
	if err := json.Unmarshal(b, &end); err != nil {
		return end, true, lineError(line, err)
	}
	return end, true, nil
}

// parseHeader reports whether line b is an export header, and parses it.
func parseHeader(b []byte, line int) (ExportHeader, bool, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return ExportHeader{}, false, nil // not an object: the episode parser says why
	}
	if _, ok := probe["memor_export"]; !ok {
		return ExportHeader{}, false, nil
	}
	var h ExportHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return h, true, lineError(line, err)
	}
	if h.Format < 1 || h.Format > ExportFormat {
		return h, true, &ImportError{Line: line, Field: "memor_export",
			Err: fmt.Errorf("%w: format version %d (this memor reads 0 to %d)", ErrInvalidImport, h.Format, ExportFormat)}
	}
	return h, true, nil
}

func (e *Engine) headerWarnings(h ExportHeader) []string {
	var out []string
	mine := e.exportHeader()
	if h.Extractor != mine.Extractor {
		out = append(out, fmt.Sprintf("exported with extractor %s, imported with %s: text episodes are re-extracted, so facts may differ",
			h.Extractor, mine.Extractor))
	}
	if h.Embedder != mine.Embedder {
		out = append(out, fmt.Sprintf("exported with embedder %s (dim %d), imported with %s (dim %d): vectors are recomputed",
			h.Embedder.Name, h.Embedder.Dim, mine.Embedder.Name, mine.Embedder.Dim))
	}
	return out
}

// parseEpisode decodes and checks one episode line.
func (e *Engine) parseEpisode(b []byte, line, format int) (Episode, error) {
	var ep Episode
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ep); err != nil {
		ie := lineError(line, err)
		if ie.Field == "" {
			ie.Field = failingField(b)
		}
		return ep, ie
	}
	if dec.More() {
		return ep, &ImportError{Line: line, Err: fmt.Errorf("%w: more than one JSON value on the line", ErrInvalidImport)}
	}
	// encoding/json would turn invalid UTF-8 and half surrogate pairs into
	// U+FFFD: two users would become one.
	if err := jsontext.Lossy(b); err != nil {
		return ep, &ImportError{Line: line, Err: fmt.Errorf("%w: %v", ErrInvalidImport, err)}
	}
	bad := func(field string, err error) error { return &ImportError{Line: line, Field: field, Err: err} }
	if ep.Seq == 0 {
		return ep, bad("seq", fmt.Errorf("%w: missing or zero", ErrInvalidImport))
	}
	if ep.Kind == 0 {
		return ep, bad("kind", fmt.Errorf("%w: missing", ErrInvalidImport))
	}
	if ep.RecordedAt.IsZero() {
		return ep, bad("recorded_at", fmt.Errorf("%w: missing", ErrInvalidImport))
	}
	if err := checkTime(ep.RecordedAt, "recorded_at"); err != nil {
		return ep, bad("recorded_at", err)
	}
	if ep.At.IsZero() {
		if format > 0 {
			return ep, bad("at", fmt.Errorf("%w: missing", ErrInvalidImport))
		}
		ep.At = ep.RecordedAt
	}
	if ep.Kind == EpisodeText && strings.TrimSpace(ep.Text) == "" {
		return ep, nil // skipped by the caller
	}
	if err := e.CheckEpisode(ep); err != nil {
		return ep, bad(episodeField(ep, err), err)
	}
	if a := ep.Accept; ep.Kind == EpisodeAccept {
		if _, err := parseID(a.FactID); err != nil {
			return ep, bad("accept.fact_id", fmt.Errorf("%w: %q is not a fact ID", ErrInvalidImport, a.FactID))
		}
	}
	if c := ep.Correct; ep.Kind == EpisodeCorrect {
		// memor writes fact IDs only: anything else is not an export.
		if _, err := parseID(c.FactID); err != nil {
			return ep, bad("correct.fact_id", fmt.Errorf("%w: %q is not a fact ID", ErrInvalidImport, c.FactID))
		}
		for _, id := range c.Claims {
			if _, err := parseID(id); err != nil {
				return ep, bad("correct.claims", fmt.Errorf("%w: %q is not a fact ID", ErrInvalidImport, id))
			}
		}
	}
	return ep, nil
}

// episodeField names the field CheckEpisode's err is about.
func episodeField(ep Episode, err error) string {
	switch {
	case errors.Is(err, ErrInvalidUser):
		return "user"
	case errors.Is(err, ErrInvalidSpeaker):
		return "speaker"
	case errors.Is(err, ErrInvalidIdempotencyKey):
		return "key"
	case errors.Is(err, ErrInvalidTime):
		return "at"
	case ep.Kind == EpisodeFacts:
		return "ops"
	case ep.Kind == EpisodeCorrect:
		return "correct"
	case ep.Kind == EpisodeAccept:
		return "accept"
	}
	return "text"
}

// lineError turns a JSON decoding error into an *ImportError naming the
// field when the decoder knows it.
func lineError(line int, err error) *ImportError {
	field := ""
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field = te.Field
	}
	if s := err.Error(); field == "" && strings.HasPrefix(s, "json: unknown field ") {
		field = strings.Trim(strings.TrimPrefix(s, "json: unknown field "), `"`)
	}
	return &ImportError{Line: line, Field: field, Err: fmt.Errorf("%w: %v", ErrInvalidImport, err)}
}

// failingField names the field of episode line b that does not decode
// (encoding/json names it for some errors only: not for a time or a kind
// that does not parse).
func failingField(b []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return ""
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		var ep Episode
		if json.Unmarshal(one, &ep) != nil {
			return k
		}
	}
	return ""
}

// planImport returns the episodes of eps that user's log does not hold
// yet, and how many it holds, or ErrHistoryConflict.
func (e *Engine) planImport(ctx context.Context, user string, eps []importLine) ([]importLine, int, error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	var out []importLine
	skipped := 0
	err = e.db.View(func(s *kv.Snapshot) error {
		out, skipped, err = e.newEpisodes(ctx, s, user, eps)
		return err
	})
	return out, skipped, err
}

// newEpisodes is planImport reading from r.
func (e *Engine) newEpisodes(ctx context.Context, r kv.Reader, user string, eps []importLine) ([]importLine, int, error) {
	m, err := loadMeta(r, user)
	if err != nil {
		return nil, 0, err
	}
	if m.Seq == 0 && m.Txn == 0 {
		return eps, 0, keyTwice(user, eps)
	}
	stored, err := e.episodes(ctx, r, user)
	if err != nil {
		return nil, 0, err
	}
	byTime := make(map[int64][]byte, len(stored))
	keys := map[string]bool{}
	for _, ep := range stored {
		byTime[nanos(ep.RecordedAt)] = episodeContent(ep)
		if ep.Key != "" {
			keys[ep.Key] = true
		}
	}
	var out []importLine
	skipped := 0
	for _, l := range eps {
		rec := nanos(l.ep.RecordedAt)
		if have, ok := byTime[rec]; ok {
			if !bytes.Equal(have, episodeContent(l.ep)) {
				return nil, 0, &ImportError{Line: l.line, Field: "recorded_at", Err: fmt.Errorf(
					"%w: user %q has another episode recorded at %s", ErrHistoryConflict, user, l.ep.RecordedAt.Format(time.RFC3339Nano))}
			}
			skipped++
			continue
		}
		if err := claimKey(keys, user, l); err != nil {
			return nil, 0, err
		}
		if rec <= m.Txn {
			return nil, 0, &ImportError{Line: l.line, Field: "recorded_at", Err: fmt.Errorf(
				"%w: user %q has history recorded up to %s, later than this episode (%s); import into a new store or another user",
				ErrHistoryConflict, user, fromNanos(m.Txn).Format(time.RFC3339Nano), l.ep.RecordedAt.Format(time.RFC3339Nano))}
		}
		out = append(out, l)
	}
	return out, skipped, nil
}

// keyTwice fails with ErrHistoryConflict when two of eps, episodes new to
// user, were added under one idempotency key.
func keyTwice(user string, eps []importLine) error {
	keys := map[string]bool{}
	for _, l := range eps {
		if err := claimKey(keys, user, l); err != nil {
			return err
		}
	}
	return nil
}

// claimKey adds l's idempotency key, if any, to keys, the keys user's
// episodes hold: ErrHistoryConflict when one holds it already.
func claimKey(keys map[string]bool, user string, l importLine) error {
	k := l.ep.Key
	if k == "" {
		return nil
	}
	if keys[k] {
		return &ImportError{Line: l.line, Field: "key", Err: fmt.Errorf(
			"%w: user %q has another episode added under idempotency key %q", ErrHistoryConflict, user, k)}
	}
	keys[k] = true
	return nil
}

// episodeContent is what identifies an episode within its user's log:
// everything but its sequence number.
func episodeContent(ep Episode) []byte {
	ep.Seq = 0
	ep.User = ""
	return episodeBytes(ep)
}

// importUser appends eps (planned by planImport) to user's log and applies
// them in one batch, each at its own transaction time. It returns how many
// it imported, how many of those failed extraction, and how many
// corrections found no fact.
func (e *Engine) importUser(ctx context.Context, user string, eps []importLine, step func()) (n, failed, unmatched int, err error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return 0, 0, 0, err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	var fails failures
	for {
		n, failed, unmatched, err = e.importOnce(ctx, user, eps, fails)
		if !fails.retry(err, nil) {
			break
		}
	}
	if err != nil {
		return 0, 0, 0, causeOf(err)
	}
	for range n {
		step()
	}
	return n, failed, unmatched, nil
}

func (e *Engine) importOnce(ctx context.Context, user string, eps []importLine, fails failures) (n, failed, unmatched int, err error) {
	size := 0
	for _, l := range eps {
		size += len(l.ep.Ops)*bytesPerFact + 2*len(l.ep.Text)
	}
	t, err := e.begin(ctx, user, size)
	if err != nil {
		return 0, 0, 0, err
	}
	defer t.close()
	t.fails = fails
	if err := t.catchUp(); err != nil {
		return 0, 0, 0, err
	}
	caught := t.caught
	// Checked again under the user's lock: a write may have come between
	// the plan and now.
	fresh, _, err := e.newEpisodes(ctx, t.b, user, eps)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(fresh) != len(eps) {
		return 0, 0, 0, fmt.Errorf("%w: user %q was written to during the import", ErrHistoryConflict, user)
	}
	for _, l := range eps {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		ep := l.ep
		ep.User = user
		t.now = nanos(ep.RecordedAt)
		t.meta.Seq++
		ep.Seq = t.meta.Seq
		if err := t.putEpisode(&ep); err != nil {
			return 0, 0, 0, err
		}
		if ep.Kind == EpisodeCorrect && ep.Correct != nil {
			if ok, err := t.hasFact(ep.Correct.FactID); err != nil {
				return 0, 0, 0, err
			} else if !ok {
				unmatched++
			}
		}
		t.pre = nil
		if err := t.apply(ep); err != nil {
			return 0, 0, 0, err
		}
		if t.failure != nil {
			failed++
		}
		t.meta.Applied = ep.Seq
	}
	// Current reads never precede a stored transaction time: raised
	// before the commit, so no read between the two misses the import.
	for {
		last := e.lastTick.Load()
		if last >= t.now || e.lastTick.CompareAndSwap(last, t.now) {
			break
		}
	}
	if err := t.commit(); err != nil {
		return 0, 0, 0, err
	}
	if caught > 0 {
		e.ing.applied(user, caught)
	}
	return len(eps), failed, unmatched, nil
}

// hasFact reports whether the batch holds fact id of the user.
func (t *txn) hasFact(id string) (bool, error) {
	raw, err := parseID(id)
	if err != nil {
		return false, nil
	}
	_, err = t.b.Get(userKey(t.user, kv.SubFactIndex, raw[:]))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
