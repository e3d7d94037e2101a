// Package llmjson is the strict decoder of model answers used by package
// llm: extraction ops ([DecodeOps]), judge verdicts ([DecodeVerdict]) and
// reranker scores ([DecodeScores]).
//
// It is pure (JSON in, values or a typed error out) and imports no model
// client, so that its fuzz target, FuzzDecodeOps, builds in seconds: fuzzing
// instruments every package a test binary links, and instrumenting the
// OpenAI client that package llm links takes minutes.
//
// A model's answer is input, not truth: malformed JSON is [ErrMalformed],
// JSON of the wrong shape or with out-of-range values is [ErrSchema], and an
// op whose quote is not a verbatim substring of the episode text is
// [ErrInvented]. A failure returns no ops at all, never a partial list, and
// no input makes a decoder panic.
//
// Everything here is safe for concurrent use.
package llmjson
