package llm

import (
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/extract/llm/internal/llmjson"
)

// DecodeOps decodes a model's extraction answer, {"ops":[…]}, into ops and
// checks every op against text: the quote must be a non-empty verbatim
// substring of text (else ErrInvented). Any failure returns no ops and a
// *DecodeError wrapping ErrMalformed, ErrSchema or ErrInvented. The field
// rules live with the decoder, in internal/llmjson (which builds without
// the model client, for fuzzing).
func DecodeOps(data []byte, text string, at time.Time) ([]extract.Op, error) {
	return llmjson.DecodeOps(data, text, at)
}

// DecodeVerdict decodes a judge's answer, {"verdict":"replace"|"append",
// "reason":"…"}.
func DecodeVerdict(data []byte) (extract.Verdict, error) { return llmjson.DecodeVerdict(data) }

// DecodeScores decodes a reranker's answer, {"scores":[…]}, which must hold
// exactly n finite numbers.
func DecodeScores(data []byte, n int) ([]float64, error) { return llmjson.DecodeScores(data, n) }
