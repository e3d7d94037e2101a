package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor/embed"
)

// fakeAPI is an OpenAI-compatible /v1/embeddings server whose vector for a
// text is derived from the text, so tests can check order.
type fakeAPI struct {
	dim     int
	mu      sync.Mutex
	batches [][]string
	auth    []string
	calls   atomic.Int32
	// respond, when set, handles call number n (1-based) instead.
	respond func(n int, w http.ResponseWriter, r *http.Request) bool
}

func vecFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)*10 + i)
	}
	return v
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1))
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if f.respond != nil && f.respond(n, w, r) {
		return
	}
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" {
		http.Error(w, "no key", http.StatusUnauthorized)
		return
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m1" || req.EncodingFormat != "float" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.batches = append(f.batches, req.Input)
	f.mu.Unlock()
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	// Answer in reverse order: clients must use "index".
	for i := len(req.Input) - 1; i >= 0; i-- {
		resp.Data = append(resp.Data, item{"embedding", i, vecFor(req.Input[i], f.dim)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func newClient(t *testing.T, f *fakeAPI, o Options) *Embedder {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	if o.BaseURL == "" {
		o.BaseURL = srv.URL + "/v1/"
	}
	o.Model, o.APIKey = "m1", "sk-test"
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fail answers with status code and asks for a retry after ms
// milliseconds (the SDK's Retry-After-Ms), so tests do not wait for the
// exponential backoff.
func fail(w http.ResponseWriter, code int, ms string) {
	if ms != "" {
		w.Header().Set("Retry-After-Ms", ms)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{"error":{"message":"no","type":"x"}}`))
}

func TestHappyPathAndBatching(t *testing.T) {
	f := &fakeAPI{dim: 8}
	e := newClient(t, f, Options{BatchSize: 3})
	if e.Dim() != 0 {
		t.Fatalf("Dim before any call = %d", e.Dim())
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(got), len(texts))
	}
	for i, v := range got {
		if !slices.Equal(v, vecFor(texts[i], 8)) {
			t.Errorf("vector %d is not the one for %q", i, texts[i])
		}
	}
	if e.Dim() != 8 {
		t.Errorf("Dim after a call = %d", e.Dim())
	}
	want := [][]string{{"a", "bb", "ccc"}, {"dddd", "eeeee", "ffffff"}, {"g"}}
	if len(f.batches) != 3 {
		t.Fatalf("batches %v, want %v", f.batches, want)
	}
	for i := range want {
		if !slices.Equal(f.batches[i], want[i]) {
			t.Errorf("batch %d = %v, want %v", i, f.batches[i], want[i])
		}
	}
	if v, err := e.Embed(context.Background(), nil); err != nil || len(v) != 0 || f.calls.Load() != 3 {
		t.Errorf("empty input: %v %v, %d calls", v, err, f.calls.Load())
	}
	if fp := e.Fingerprint(); fp != (embed.Fingerprint{Name: "http", Model: "m1", Dim: 8}) {
		t.Errorf("fingerprint %+v", fp)
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	f := &fakeAPI{dim: 4}
	f.respond = func(n int, w http.ResponseWriter, _ *http.Request) bool {
		switch n {
		case 1:
			fail(w, http.StatusTooManyRequests, "150")
			return true
		case 2:
			fail(w, http.StatusServiceUnavailable, "1")
			return true
		}
		return false
	}
	e := newClient(t, f, Options{})
	start := time.Now()
	got, err := e.Embed(context.Background(), []string{"hi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || f.calls.Load() != 3 {
		t.Fatalf("got %v after %d calls", got, f.calls.Load())
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("answered in %v: the server's 150 ms Retry-After was not honoured", d)
	}
}

func TestRetryAfterBeyondTheCapEndsRetrying(t *testing.T) {
	f := &fakeAPI{dim: 4}
	f.respond = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		fail(w, http.StatusTooManyRequests, "60000")
		return true
	}
	e := newClient(t, f, Options{MaxRetryDelay: time.Second})
	start := time.Now()
	_, err := e.Embed(context.Background(), []string{"hi"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.Retries != 0 || f.calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls", err, f.calls.Load())
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("waited %v for a retry that was never to be made", time.Since(start))
	}
}

func TestRetriesExhaustedAndClientErrorsNotRetried(t *testing.T) {
	f := &fakeAPI{dim: 4}
	f.respond = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		fail(w, http.StatusInternalServerError, "1")
		return true
	}
	e := newClient(t, f, Options{MaxRetries: 2})
	_, err := e.Embed(context.Background(), []string{"hi"})
	var se *StatusError
	if !errors.Is(err, ErrStatus) || !errors.As(err, &se) || se.Code != 500 || se.Retries != 2 {
		t.Fatalf("err = %v", err)
	}
	if f.calls.Load() != 3 {
		t.Errorf("%d calls, want 3", f.calls.Load())
	}
	// A 4xx other than 408, 409 and 429 is not retried.
	f2 := &fakeAPI{dim: 4}
	f2.respond = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		fail(w, http.StatusUnauthorized, "1")
		return true
	}
	e2 := newClient(t, f2, Options{})
	if _, err := e2.Embed(context.Background(), []string{"hi"}); !errors.As(err, &se) || se.Code != 401 || f2.calls.Load() != 1 {
		t.Errorf("401: %v after %d calls", err, f2.calls.Load())
	}
	// Negative MaxRetries: one attempt only.
	f3 := &fakeAPI{dim: 4}
	f3.respond = f.respond
	e3 := newClient(t, f3, Options{MaxRetries: -1})
	if _, err := e3.Embed(context.Background(), []string{"hi"}); !errors.Is(err, ErrStatus) || f3.calls.Load() != 1 {
		t.Errorf("no retries: %v after %d calls", err, f3.calls.Load())
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	f := &fakeAPI{dim: 4}
	f.respond = func(_ int, _ http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	e := newClient(t, f, Options{Timeout: 50 * time.Millisecond, MaxRetries: 1})
	defer close(release)
	start := time.Now()
	_, err := e.Embed(context.Background(), []string{"hi"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// The caller's own cancellation stops at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"hi"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestDimensionMismatch(t *testing.T) {
	f := &fakeAPI{dim: 8}
	e := newClient(t, f, Options{Dim: 16})
	_, err := e.Embed(context.Background(), []string{"a", "b"})
	var de *embed.DimensionError
	if !errors.Is(err, embed.ErrDimension) || !errors.As(err, &de) || de.Want != 16 || de.Got != 8 {
		t.Fatalf("err = %v", err)
	}
	// Learned dimension: a later answer of another size fails too.
	f2 := &fakeAPI{dim: 8}
	e2 := newClient(t, f2, Options{})
	if _, err := e2.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	f2.dim = 4
	if _, err := e2.Embed(context.Background(), []string{"a"}); !errors.Is(err, embed.ErrDimension) {
		t.Errorf("changed dimension: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	cases := map[string]string{
		"not json":      `{"data": [`,
		"wrong count":   `{"data": [{"index": 0, "embedding": [1, 2]}]}`,
		"bad index":     `{"data": [{"index": 0, "embedding": [1]}, {"index": 5, "embedding": [1]}]}`,
		"repeat index":  `{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]}`,
		"empty vector":  `{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1]}]}`,
		"short base64":  `{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1]}]}`,
		"object vector": `{"data": [{"index": 0, "embedding": {"a": 1}}, {"index": 1, "embedding": [1]}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{}
			f.respond = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
				return true
			}
			e := newClient(t, f, Options{})
			if _, err := e.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, ErrResponse) {
				t.Errorf("err = %v, want ErrResponse", err)
			}
			if f.calls.Load() != 1 {
				t.Errorf("malformed answer retried: %d calls", f.calls.Load())
			}
		})
	}
}

// Servers that omit "index" (some local ones) answer in order.
func TestAnswerWithoutIndexIsPositional(t *testing.T) {
	f := &fakeAPI{}
	f.respond = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": [{"embedding": [1, 2]}, {"embedding": [3, 4]}]}`))
		return true
	}
	e := newClient(t, f, Options{})
	got, err := e.Embed(context.Background(), []string{"a", "b"})
	if err != nil || !slices.Equal(got[0], []float32{1, 2}) || !slices.Equal(got[1], []float32{3, 4}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestConfig(t *testing.T) {
	t.Setenv(EnvBaseURL, "")
	t.Setenv(EnvModel, "")
	t.Setenv(EnvAPIKey, "")
	for name, o := range map[string]Options{
		"no URL":           {Model: "m"},
		"no model":         {BaseURL: "http://127.0.0.1:1/v1"},
		"ftp URL":          {BaseURL: "ftp://x", Model: "m"},
		"no host":          {BaseURL: "http:///v1", Model: "m"},
		"negative dim":     {BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dim: -1},
		"not a URL at all": {BaseURL: "::", Model: "m"},
	} {
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The environment fills what options leave empty; OPENAI_API_KEY is
	// never sent.
	f := &fakeAPI{dim: 3}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-not-for-this-host")
	t.Setenv(EnvBaseURL, srv.URL+"/v1")
	t.Setenv(EnvModel, "m1")
	e, err := New(Options{Dim: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrStatus) {
		t.Fatalf("keyless call to a keyed server: %v", err)
	}
	for _, a := range f.auth {
		if a != "" && a != "Bearer" && a != "Bearer " {
			t.Errorf("sent Authorization %q with no key configured", a)
		}
	}
	t.Setenv(EnvAPIKey, "sk-test")
	e, err = New(Options{Dim: 3})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := e.Embed(context.Background(), []string{"x"}); err != nil || len(v[0]) != 3 {
		t.Fatalf("env-configured embed: %v %v", v, err)
	}
	var _ embed.Embedder = e
	var _ embed.Fingerprinter = e
}
