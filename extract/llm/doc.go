// Package llm implements memor's model-backed hooks — an extract.Extractor,
// an extract.Judge and an extract.Reranker — over any OpenAI-compatible
// chat-completions endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio …),
// using JSON-schema structured output.
//
// # Configuration
//
// [New] reads MEMOR_LLM_BASE_URL, MEMOR_LLM_MODEL and MEMOR_LLM_API_KEY from
// the environment; options override them. A model is required. Each call
// has a timeout ([WithTimeout], default 60 s) covering all its attempts,
// and 408/409/429/5xx answers and connection errors are retried with
// exponential backoff (honouring Retry-After) up to [WithMaxRetries] times.
//
// # Trust
//
// A model's answer is input, not truth. Every answer is decoded strictly
// ([DecodeOps], [DecodeVerdict], [DecodeScores]): malformed JSON is
// [ErrMalformed], JSON of the wrong shape or with out-of-range values is
// [ErrSchema], and an op whose quote is not a verbatim substring of the
// episode text is [ErrInvented]. A call that fails returns no ops at all,
// never a partial list, and nothing here panics on a model's output.
//
// # Speakers
//
// [Extractor] is an [extract.InputExtractor]: told the speaker of an
// episode ([extract.Input].Speaker), it gives the model the name and asks
// for it as the subject of the first person instead of "user".
//
// All types are safe for concurrent use.
package llm
