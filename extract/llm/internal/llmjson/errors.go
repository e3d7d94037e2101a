package llmjson

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is. Package llm re-exports them
// under the same names (they are the same values), so callers of either
// package match the same errors. The messages keep the "llm:" prefix the
// decoder has always used.
var (
	// ErrMalformed: the model's answer is not a single JSON value.
	ErrMalformed = errors.New("llm: malformed JSON")
	// ErrSchema: the answer is JSON but not of the required shape, or a
	// value is out of range.
	ErrSchema = errors.New("llm: answer violates schema")
	// ErrInvented: an op's quote is not a verbatim substring of the text.
	ErrInvented = errors.New("llm: quote not in text")
)

// DecodeError locates a decoding failure in the model's answer. It wraps
// one of the sentinels.
type DecodeError struct {
	Index int    // index of the offending op or score; -1 for the whole answer
	Field string // offending field, if any
	Err   error  // ErrMalformed, ErrSchema or ErrInvented
	Msg   string
	// Cause, if not nil, is matched by errors.Is too: memor's
	// ErrInvalidTime for a valid_from outside the instants memor accepts.
	Cause error
}

func (e *DecodeError) Error() string {
	switch {
	case e.Index >= 0 && e.Field != "":
		return fmt.Sprintf("%v: item %d: %s: %s", e.Err, e.Index, e.Field, e.Msg)
	case e.Index >= 0:
		return fmt.Sprintf("%v: item %d: %s", e.Err, e.Index, e.Msg)
	}
	return fmt.Sprintf("%v: %s", e.Err, e.Msg)
}

// Unwrap returns the sentinel, and the cause if there is one.
func (e *DecodeError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

func decodeErr(sentinel error, index int, field, format string, args ...any) error {
	return &DecodeError{Index: index, Field: field, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
}
