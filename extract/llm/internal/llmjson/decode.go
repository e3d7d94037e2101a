package llmjson

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/instant"
)

// Limits on a decoded answer, so that a runaway model cannot make memor
// store megabytes of nonsense.
const (
	maxOps       = 256
	maxFieldLen  = 512
	maxQuoteLen  = 4096
	maxAnswerLen = 1 << 20
)

// wireOp is an op as the model writes it. It is also the schema the model
// is asked to follow (OpsSchema): the jsonschema tags are the field
// descriptions the model reads. Fields are pointers so that a missing
// field is told apart from an empty one; the schema still requires them.
type wireOp struct {
	Kind       *string  `json:"kind" jsonschema:"assert a fact, or end one"`
	Subject    *string  `json:"subject" jsonschema:"\"user\" for the speaker, else the person's name"`
	Predicate  *string  `json:"predicate" jsonschema:"lower snake case predicate"`
	Object     *string  `json:"object" jsonschema:"value; \"\" on an end that closes every value"`
	Context    *string  `json:"context" jsonschema:"separates coexisting values (work/home); usually \"\""`
	ValidFrom  *string  `json:"valid_from" jsonschema:"RFC 3339 time or YYYY-MM-DD when it became true (or, for end, stopped); \"\" = when said"`
	Confidence *float64 `json:"confidence" jsonschema:"0..1"`
	Additive   *bool    `json:"additive" jsonschema:"true when the text says \"also\": adds, does not replace"`
	Quote      *string  `json:"quote" jsonschema:"exact substring of the text the op comes from"`
}

// wireOps is the answer's envelope. Its ops are decoded one by one (so
// that an error names the op), as wireOp; opsAnswer is the same envelope
// with its items typed, for the schema.
type wireOps struct {
	Ops *[]json.RawMessage `json:"ops"`
}

type opsAnswer struct {
	Ops []wireOp `json:"ops"`
}

// wireVerdict is a judge's answer.
type wireVerdict struct {
	Verdict *string `json:"verdict" jsonschema:"replace or append"`
	Reason  *string `json:"reason" jsonschema:"one short sentence"`
}

// wireScores is a reranker's answer.
type wireScores struct {
	Scores *[]float64 `json:"scores" jsonschema:"one relevance score in [0, 1] per document, in the given order"`
}

// strictUnmarshal decodes exactly one JSON value into v, rejecting unknown
// fields and trailing data. Syntax errors are ErrMalformed; type mismatches
// and unknown fields are ErrSchema.
func strictUnmarshal(data []byte, v any, index int) error {
	if len(data) > maxAnswerLen {
		return decodeErr(ErrSchema, index, "", "answer is %d bytes, limit %d", len(data), maxAnswerLen)
	}
	if !json.Valid(data) {
		return decodeErr(ErrMalformed, index, "", "not a single JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeErr(ErrSchema, index, "", "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return decodeErr(ErrMalformed, index, "", "trailing data after JSON value")
	}
	return nil
}

// DecodeOps decodes a model's extraction answer, {"ops":[…]}, into ops and
// checks every op against text: the quote must be a non-empty verbatim
// substring of text (else ErrInvented). Any failure returns no ops and a
// *DecodeError wrapping ErrMalformed, ErrSchema or ErrInvented.
//
// Field rules: kind is "assert" or "end"; subject and predicate are
// non-empty; predicate is lower snake case; an assert has an object;
// valid_from is "" or an RFC 3339 time or a YYYY-MM-DD date (midnight in
// at's location) from 1678-01-01 to before 2262-01-01 (outside: ErrSchema,
// also matching memor's ErrInvalidTime); confidence is in [0, 1] (0 means 1); strings are valid
// UTF-8 and bounded in length.
func DecodeOps(data []byte, text string, at time.Time) ([]extract.Op, error) {
	var w wireOps
	if err := strictUnmarshal(data, &w, -1); err != nil {
		return nil, err
	}
	if w.Ops == nil {
		return nil, decodeErr(ErrSchema, -1, "ops", "missing")
	}
	if len(*w.Ops) > maxOps {
		return nil, decodeErr(ErrSchema, -1, "ops", "%d ops, limit %d", len(*w.Ops), maxOps)
	}
	ops := make([]extract.Op, 0, len(*w.Ops))
	for i, raw := range *w.Ops {
		var o wireOp
		if err := strictUnmarshal(raw, &o, i); err != nil {
			return nil, err
		}
		op, err := o.op(i, text, at)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func (o *wireOp) op(i int, text string, at time.Time) (extract.Op, error) {
	str := func(field string, p *string, required bool, limit int) (string, error) {
		if p == nil {
			if required {
				return "", decodeErr(ErrSchema, i, field, "missing")
			}
			return "", nil
		}
		s := *p
		if !utf8.ValidString(s) {
			return "", decodeErr(ErrSchema, i, field, "invalid UTF-8")
		}
		if len(s) > limit {
			return "", decodeErr(ErrSchema, i, field, "%d bytes, limit %d", len(s), limit)
		}
		return s, nil
	}
	var op extract.Op
	kind, err := str("kind", o.Kind, true, 16)
	if err != nil {
		return op, err
	}
	switch kind {
	case "assert":
		op.Kind = extract.Assert
	case "end":
		op.Kind = extract.End
	default:
		return op, decodeErr(ErrSchema, i, "kind", "%q is not assert or end", kind)
	}
	if op.Subject, err = str("subject", o.Subject, true, maxFieldLen); err != nil {
		return op, err
	}
	op.Subject = strings.TrimSpace(op.Subject)
	if op.Subject == "" {
		return op, decodeErr(ErrSchema, i, "subject", "empty")
	}
	if op.Predicate, err = str("predicate", o.Predicate, true, 64); err != nil {
		return op, err
	}
	if !isPredicate(op.Predicate) {
		return op, decodeErr(ErrSchema, i, "predicate", "%q is not lower snake case", op.Predicate)
	}
	if op.Object, err = str("object", o.Object, op.Kind == extract.Assert, maxFieldLen); err != nil {
		return op, err
	}
	op.Object = strings.TrimSpace(op.Object)
	if op.Kind == extract.Assert && op.Object == "" {
		return op, decodeErr(ErrSchema, i, "object", "empty on assert")
	}
	if op.Context, err = str("context", o.Context, false, maxFieldLen); err != nil {
		return op, err
	}
	vf, err := str("valid_from", o.ValidFrom, false, 64)
	if err != nil {
		return op, err
	}
	if vf != "" {
		t, err := time.Parse(time.RFC3339, vf)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02", vf, at.Location())
		}
		if err != nil {
			return op, decodeErr(ErrSchema, i, "valid_from", "%q is not RFC 3339 or YYYY-MM-DD", vf)
		}
		// 0001-01-01 would read as unset ("when said"), and memor
		// cannot store an instant outside its range.
		if err := instant.Check(t, "valid_from"); err != nil {
			de := decodeErr(ErrSchema, i, "valid_from", "%q is outside [1678-01-01, 2262-01-01)", vf).(*DecodeError)
			de.Cause = err
			return op, de
		}
		op.ValidFrom = t
	}
	if o.Confidence != nil {
		c := *o.Confidence
		if math.IsNaN(c) || c < 0 || c > 1 {
			return op, decodeErr(ErrSchema, i, "confidence", "%v not in [0, 1]", c)
		}
		op.Confidence = c
	}
	if o.Additive != nil {
		op.Additive = *o.Additive && op.Kind == extract.Assert
	}
	if op.Quote, err = str("quote", o.Quote, true, maxQuoteLen); err != nil {
		return op, err
	}
	if op.Quote == "" {
		return op, decodeErr(ErrInvented, i, "quote", "empty")
	}
	if !strings.Contains(text, op.Quote) {
		return op, decodeErr(ErrInvented, i, "quote", "%q is not in the text", Truncate(op.Quote, 80))
	}
	return op, nil
}

// Truncate shortens s to at most n bytes on a rune boundary, marking the
// cut: model output quoted in an error stays readable.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// isPredicate accepts lower snake case: [a-z][a-z0-9_]*.
func isPredicate(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// DecodeVerdict decodes a judge's answer, {"verdict":"replace"|"append",
// "reason":"…"}.
func DecodeVerdict(data []byte) (extract.Verdict, error) {
	var w wireVerdict
	if err := strictUnmarshal(data, &w, -1); err != nil {
		return 0, err
	}
	if w.Verdict == nil {
		return 0, decodeErr(ErrSchema, -1, "verdict", "missing")
	}
	switch *w.Verdict {
	case "replace":
		return extract.Replace, nil
	case "append":
		return extract.Append, nil
	}
	return 0, decodeErr(ErrSchema, -1, "verdict", "%q is not replace or append", *w.Verdict)
}

// DecodeScores decodes a reranker's answer, {"scores":[…]}, which must hold
// exactly n finite numbers.
func DecodeScores(data []byte, n int) ([]float64, error) {
	var w wireScores
	if err := strictUnmarshal(data, &w, -1); err != nil {
		return nil, err
	}
	if w.Scores == nil {
		return nil, decodeErr(ErrSchema, -1, "scores", "missing")
	}
	if len(*w.Scores) != n {
		return nil, decodeErr(ErrSchema, -1, "scores", "%d scores for %d docs", len(*w.Scores), n)
	}
	for i, s := range *w.Scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, decodeErr(ErrSchema, i, "score", "not finite")
		}
	}
	return *w.Scores, nil
}
