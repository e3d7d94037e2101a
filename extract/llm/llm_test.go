package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
)

var said = time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC)

// fakeLLM is an OpenAI-compatible chat-completions endpoint that answers
// each request with reply(n, request), n counting from 1.
type fakeLLM struct {
	t     *testing.T
	calls atomic.Int32
	reply func(n int, req map[string]any, w http.ResponseWriter)
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1))
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		f.t.Errorf("Authorization = %q", got)
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request is not JSON: %v", err)
	}
	rf, _ := req["response_format"].(map[string]any)
	if rf["type"] != "json_schema" {
		f.t.Errorf("response_format = %v, want json_schema", rf)
	}
	if req["model"] != "test-model" {
		f.t.Errorf("model = %v", req["model"])
	}
	f.reply(n, req, w)
}

// answer writes a chat completion whose message content is content.
func answer(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content},
		}},
	})
}

func newClient(t *testing.T, reply func(n int, req map[string]any, w http.ResponseWriter), opts ...Option) (*Client, *fakeLLM) {
	t.Helper()
	f := &fakeLLM{t: t, reply: reply}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	base := []Option{WithBaseURL(srv.URL + "/v1"), WithModel("test-model"), WithAPIKey("test-key"),
		WithTimeout(5 * time.Second), WithMaxRetryDelay(20 * time.Millisecond)}
	c, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

const episode = "My brother Alex adopted a golden retriever named Buddy last month."

const goodOps = `{"ops":[
 {"kind":"assert","subject":"user","predicate":"brother","object":"Alex","context":"","valid_from":"","confidence":1,"additive":false,"quote":"My brother Alex"},
 {"kind":"assert","subject":"Alex","predicate":"has_pet","object":"golden retriever","context":"","valid_from":"2026-06-11T15:04:00Z","confidence":1,"additive":false,"quote":"adopted a golden retriever named Buddy last month"},
 {"kind":"assert","subject":"Alex","predicate":"pet_name","object":"Buddy","context":"","valid_from":"2026-06-11","confidence":0.9,"additive":false,"quote":"named Buddy"}]}`

func TestExtractHappyPath(t *testing.T) {
	c, f := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		msgs, _ := req["messages"].([]any)
		if len(msgs) != 2 || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "golden retriever") {
			t.Errorf("messages = %v", msgs)
		}
		answer(w, goodOps)
	})
	ops, err := NewExtractor(c).Extract(context.Background(), episode, said)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || f.calls.Load() != 1 {
		t.Fatalf("ops = %+v, calls = %d", ops, f.calls.Load())
	}
	want := extract.Op{Kind: extract.Assert, Subject: "Alex", Predicate: "has_pet", Object: "golden retriever",
		ValidFrom: time.Date(2026, 6, 11, 15, 4, 0, 0, time.UTC), Confidence: 1,
		Quote: "adopted a golden retriever named Buddy last month"}
	if !ops[1].ValidFrom.Equal(want.ValidFrom) || ops[1].Object != want.Object || ops[1].Subject != want.Subject || ops[1].Quote != want.Quote {
		t.Errorf("ops[1] = %+v, want %+v", ops[1], want)
	}
	if !ops[2].ValidFrom.Equal(time.Date(2026, 6, 11, 0, 0, 0, 0, time.UTC)) || ops[2].Confidence != 0.9 {
		t.Errorf("ops[2] = %+v", ops[2])
	}
}

func TestExtractRejects(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    error
	}{
		{"malformed JSON", `{"ops":[{"kind":"assert",`, ErrMalformed},
		{"prose", `Sure! Here are the facts: Alex has a dog.`, ErrMalformed},
		{"trailing data", `{"ops":[]} {"ops":[]}`, ErrMalformed},
		{"wrong schema: ops not an array", `{"ops":{"kind":"assert"}}`, ErrSchema},
		{"wrong schema: missing ops", `{"facts":[]}`, ErrSchema},
		{"wrong schema: bad kind", strings.Replace(goodOps, `"kind":"assert"`, `"kind":"maybe"`, 1), ErrSchema},
		{"wrong schema: confidence", strings.Replace(goodOps, `"confidence":0.9`, `"confidence":7`, 1), ErrSchema},
		{"wrong schema: predicate case", strings.Replace(goodOps, `"has_pet"`, `"Has Pet"`, 1), ErrSchema},
		{"wrong schema: bad time", strings.Replace(goodOps, `"2026-06-11"`, `"last month"`, 1), ErrSchema},
		{"wrong schema: assert without object", strings.Replace(goodOps, `"object":"Buddy"`, `"object":""`, 1), ErrSchema},
		{"invented quote", strings.Replace(goodOps, `"quote":"named Buddy"`, `"quote":"named Buddy the Great"`, 1), ErrInvented},
		{"empty quote", strings.Replace(goodOps, `"quote":"named Buddy"`, `"quote":""`, 1), ErrInvented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) { answer(w, tt.content) })
			ops, err := NewExtractor(c).Extract(context.Background(), episode, said)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if ops != nil {
				t.Fatalf("partial ops returned: %+v", ops)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err %v is not a *DecodeError", err)
			}
		})
	}
}

func TestExtractTimeout(t *testing.T) {
	release := make(chan struct{})
	c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		select { // a server that never answers in time
		case <-release:
		case <-time.After(10 * time.Second):
		}
		answer(w, goodOps)
	}, WithTimeout(100*time.Millisecond), WithMaxRetries(0))
	defer close(release)
	start := time.Now()
	ops, err := NewExtractor(c).Extract(context.Background(), episode, said)
	if !errors.Is(err, context.DeadlineExceeded) || ops != nil {
		t.Fatalf("ops, err = %v, %v; want DeadlineExceeded", ops, err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("timeout took %v", el)
	}
}

func TestExtractRetries429ThenSucceeds(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		c, f := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
			if n < 3 {
				w.Header().Set("Retry-After-Ms", "5")
				http.Error(w, `{"error":{"message":"slow down"}}`, status)
				return
			}
			answer(w, goodOps)
		})
		ops, err := NewExtractor(c).Extract(context.Background(), episode, said)
		if err != nil || len(ops) != 3 {
			t.Fatalf("status %d: ops, err = %v, %v", status, ops, err)
		}
		if f.calls.Load() != 3 {
			t.Fatalf("status %d: %d calls, want 3", status, f.calls.Load())
		}
	}
}

func TestExtractGivesUpAfterMaxRetries(t *testing.T) {
	c, f := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusTooManyRequests)
	}, WithMaxRetries(2))
	_, err := NewExtractor(c).Extract(context.Background(), episode, said)
	if err == nil || f.calls.Load() != 3 {
		t.Fatalf("err = %v after %d calls; want an error after 3", err, f.calls.Load())
	}
}

func TestExtractNoRetryOn400(t *testing.T) {
	c, f := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		http.Error(w, `{"error":{"message":"bad"}}`, http.StatusBadRequest)
	})
	if _, err := NewExtractor(c).Extract(context.Background(), episode, said); err == nil || f.calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls", err, f.calls.Load())
	}
}

func TestExtractEmptyAnswerAndRefusal(t *testing.T) {
	c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) { answer(w, "") })
	if _, err := NewExtractor(c).Extract(context.Background(), episode, said); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("err = %v, want ErrNoAnswer", err)
	}
	c, _ = newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m", "choices": []any{}})
	})
	if _, err := NewExtractor(c).Extract(context.Background(), episode, said); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("err = %v, want ErrNoAnswer", err)
	}
}

func TestJudge(t *testing.T) {
	for _, tt := range []struct {
		content string
		want    extract.Verdict
		err     error
	}{
		{`{"verdict":"replace","reason":"one car at a time"}`, extract.Replace, nil},
		{`{"verdict":"append","reason":"many books"}`, extract.Append, nil},
		{`{"verdict":"both","reason":"?"}`, 0, ErrSchema},
		{`{"verdict":`, 0, ErrMalformed},
	} {
		c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
			msgs, _ := req["messages"].([]any)
			if !strings.Contains(msgs[1].(map[string]any)["content"].(string), "current_car") {
				t.Errorf("predicate not sent: %v", msgs)
			}
			answer(w, tt.content)
		})
		v, err := NewJudge(c).Judge(context.Background(), "current_car", []string{"I drive a Tesla now"})
		if v != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("%s: got %v, %v; want %v, %v", tt.content, v, err, tt.want, tt.err)
		}
	}
}

func TestRerank(t *testing.T) {
	c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		answer(w, `{"scores":[0.1,0.9,0.5]}`)
	})
	r := NewReranker(c)
	s, err := r.Rerank(context.Background(), "where does Alex live", []string{"a", "b", "c"})
	if err != nil || len(s) != 3 || s[1] != 0.9 {
		t.Fatalf("scores = %v, %v", s, err)
	}
	if _, err := r.Rerank(context.Background(), "q", []string{"a", "b"}); !errors.Is(err, ErrSchema) {
		t.Fatalf("wrong count: err = %v, want ErrSchema", err)
	}
	if s, err := r.Rerank(context.Background(), "q", nil); s != nil || err != nil {
		t.Fatalf("no docs: %v, %v", s, err)
	}
}

func TestNewConfig(t *testing.T) {
	t.Setenv(EnvModel, "")
	t.Setenv(EnvBaseURL, "")
	if _, err := New(); !errors.Is(err, ErrConfig) {
		t.Fatalf("no model: err = %v", err)
	}
	if _, err := New(WithModel("m"), WithBaseURL("localhost:8080")); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad URL: err = %v", err)
	}
	t.Setenv(EnvModel, "env-model")
	t.Setenv(EnvBaseURL, "http://127.0.0.1:1/v1")
	c, err := New()
	if err != nil || c.model != "env-model" {
		t.Fatalf("env: %v %v", c, err)
	}
	if c, err := New(WithModel("opt-model")); err != nil || c.model != "opt-model" {
		t.Fatalf("option must override env: %v %v", c, err)
	}
}

// TestEnvConfigReachesServer: with no options, the base URL, model and API
// key come from MEMOR_LLM_*; OPENAI_API_KEY is never sent to that host.
func TestEnvConfigReachesServer(t *testing.T) {
	var auth, model atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		model.Store(fmt.Sprint(req["model"]))
		answer(w, `{"verdict":"append","reason":"r"}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "must-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv(EnvBaseURL, srv.URL+"/v1")
	t.Setenv(EnvModel, "env-model")
	t.Setenv(EnvAPIKey, "env-key")
	c, err := New(WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := NewJudge(c).Judge(context.Background(), "owns_book", nil); err != nil || v != extract.Append {
		t.Fatalf("judge via env config: %v, %v", v, err)
	}
	if auth.Load() != "Bearer env-key" || model.Load() != "env-model" {
		t.Fatalf("Authorization %q, model %q", auth.Load(), model.Load())
	}
	// No key configured: none is sent, not OpenAI's.
	t.Setenv(EnvAPIKey, "")
	c, err = New(WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewJudge(c).Judge(context.Background(), "owns_book", nil); err != nil {
		t.Fatal(err)
	}
	if a := auth.Load().(string); strings.Contains(a, "must-not-leak") {
		t.Fatalf("OPENAI_API_KEY sent: %q", a)
	}
}

// TestRerankOneCall: every candidate is scored in a single request that
// carries all of them, in order.
func TestRerankOneCall(t *testing.T) {
	docs := []string{"Alex lives in Austin", "Sarah is vegan", "I play the violin", "Buddy is a golden retriever"}
	c, f := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		msgs, _ := req["messages"].([]any)
		var in struct {
			Query string `json:"query"`
			Docs  []struct {
				N    int    `json:"n"`
				Text string `json:"text"`
			} `json:"documents"`
		}
		if err := json.Unmarshal([]byte(msgs[1].(map[string]any)["content"].(string)), &in); err != nil {
			t.Errorf("rerank input: %v", err)
		}
		for i, d := range in.Docs {
			if d.N != i || d.Text != docs[i] {
				t.Errorf("doc %d = %+v", i, d)
			}
		}
		if len(in.Docs) != len(docs) || in.Query != "who has a dog" {
			t.Errorf("input %+v", in)
		}
		answer(w, `{"scores":[0.1,0,0,0.95]}`)
	})
	s, err := NewReranker(c).Rerank(context.Background(), "who has a dog", docs)
	if err != nil || fmt.Sprint(s) != "[0.1 0 0 0.95]" || f.calls.Load() != 1 {
		t.Fatalf("scores %v, %v after %d calls", s, err, f.calls.Load())
	}
	// A score outside [0, 1] or not a number is a schema violation.
	c, _ = newClient(t, func(n int, req map[string]any, w http.ResponseWriter) { answer(w, `{"scores":[0.1,"x"]}`) })
	if _, err := NewReranker(c).Rerank(context.Background(), "q", docs[:2]); !errors.Is(err, ErrSchema) {
		t.Fatalf("bad score: %v", err)
	}
}

// TestExtractSpeaker: a spoken episode's speaker reaches the model, in the
// input and in the instructions, so that it writes the speaker's name as
// the subject of the first person; without one, the input has no speaker.
func TestExtractSpeaker(t *testing.T) {
	var inputs []string
	c, _ := newClient(t, func(n int, req map[string]any, w http.ResponseWriter) {
		msgs, _ := req["messages"].([]any)
		system := msgs[0].(map[string]any)["content"].(string)
		if !strings.Contains(system, `names a "speaker"`) {
			t.Errorf("the prompt does not say what a speaker is: %q", system)
		}
		inputs = append(inputs, msgs[1].(map[string]any)["content"].(string))
		answer(w, `{"ops":[{"kind":"assert","subject":"Caroline","predicate":"brother","object":"Alex","context":"","valid_from":"","confidence":1,"additive":false,"quote":"My brother Alex"}]}`)
	})
	x := NewExtractor(c)
	var _ extract.InputExtractor = x
	ops, err := x.ExtractInput(context.Background(), extract.Input{Text: episode, At: said, Speaker: "Caroline"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Subject != "Caroline" {
		t.Fatalf("ops = %+v", ops)
	}
	if _, err := x.Extract(context.Background(), episode, said); err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 2 || !strings.Contains(inputs[0], `"speaker":"Caroline"`) || strings.Contains(inputs[1], `"speaker"`) {
		t.Fatalf("inputs = %q", inputs)
	}
}
