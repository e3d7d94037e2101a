package llm

import (
	"errors"

	"github.com/memor-db/memor/extract/llm/internal/llmjson"
)

// Sentinel errors; match them with errors.Is. ErrMalformed, ErrSchema and
// ErrInvented are the values the decoder (internal/llmjson) returns.
var (
	// ErrConfig: the client is not configured (no model, bad base URL).
	ErrConfig = errors.New("llm: not configured")
	// ErrMalformed: the model's answer is not a single JSON value.
	ErrMalformed = llmjson.ErrMalformed
	// ErrSchema: the answer is JSON but not of the required shape, or a
	// value is out of range.
	ErrSchema = llmjson.ErrSchema
	// ErrInvented: an op's quote is not a verbatim substring of the text.
	ErrInvented = llmjson.ErrInvented
	// ErrNoAnswer: the endpoint returned no choice, an empty message or a
	// refusal.
	ErrNoAnswer = errors.New("llm: no answer")
)

// DecodeError locates a decoding failure in the model's answer. It wraps
// ErrMalformed, ErrSchema or ErrInvented.
type DecodeError = llmjson.DecodeError
