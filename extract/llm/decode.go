package llm

import (
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/extract/llm/llmjson"
)

// DecodeOps decodes a model's extraction answer, {"ops":[…]}, into ops and
// checks every op against text: the quote must be a non-empty verbatim
// substring of text (else ErrInvented). Any failure returns no ops and a
// *DecodeError wrapping ErrMalformed, ErrSchema or ErrInvented. See
// [llmjson.DecodeOps] for the field rules; it is the same function.
func DecodeOps(data []byte, text string, at time.Time) ([]extract.Op, error) {
	return llmjson.DecodeOps(data, text, at)
}

// DecodeVerdict decodes a judge's answer, {"verdict":"replace"|"append",
// "reason":"…"} ([llmjson.DecodeVerdict]).
func DecodeVerdict(data []byte) (extract.Verdict, error) { return llmjson.DecodeVerdict(data) }

// DecodeScores decodes a reranker's answer, {"scores":[…]}, which must hold
// exactly n finite numbers ([llmjson.DecodeScores]).
func DecodeScores(data []byte, n int) ([]float64, error) { return llmjson.DecodeScores(data, n) }
