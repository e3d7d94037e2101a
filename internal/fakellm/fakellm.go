// Package fakellm holds what the tests' fake OpenAI-compatible servers
// share: reading a chat-completions request as memor's LLM back ends send
// it (a system and a user message, a JSON schema naming what is asked),
// and writing a completion. What a fake answers is each test's own.
package fakellm

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Schemas memor's back ends name in response_format.json_schema.name.
const (
	Ops     = "memor_ops"     // an extraction
	Verdict = "memor_verdict" // a judge's cardinality verdict
	Scores  = "memor_scores"  // a reranking
)

// Chat is one chat-completions request.
type Chat struct {
	// Schema is the JSON schema's name (Ops, Verdict, Scores).
	Schema string
	// System and User are the contents of the two messages.
	System, User string
}

// ErrBadRequest: the body is not a chat-completions request of two
// messages.
var ErrBadRequest = errors.New("fakellm: not a chat-completions request of two messages")

// ReadChat decodes r's body.
func ReadChat(r *http.Request) (Chat, error) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
		return Chat{}, ErrBadRequest
	}
	return Chat{Schema: req.ResponseFormat.JSONSchema.Name, System: req.Messages[0].Content, User: req.Messages[1].Content}, nil
}

// Text is the episode text of an extraction request (the user message is
// a JSON object with a "text" field); "" if there is none.
func (c Chat) Text() string {
	var in struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal([]byte(c.User), &in)
	return in.Text
}

// WriteCompletion answers with one assistant message whose content is
// content (the JSON the schema asks for).
func WriteCompletion(w http.ResponseWriter, model, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "c", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
}
