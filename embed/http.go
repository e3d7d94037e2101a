package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Environment variables read by [NewHTTP] for options left empty.
const (
	EnvBaseURL = "MEMOR_EMBED_BASE_URL"
	EnvModel   = "MEMOR_EMBED_MODEL"
	EnvAPIKey  = "MEMOR_EMBED_API_KEY"
)

// Defaults for zero [HTTPOptions] fields.
const (
	DefaultBatchSize  = 64
	DefaultMaxRetries = 3
	DefaultTimeout    = 30 * time.Second
	DefaultBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
)

// maxBody bounds how much of a response is read (a 2048-text batch of
// 3072-d vectors as JSON is ≈ 130 MB; batches are far smaller by default).
const maxBody = 256 << 20

// HTTPOptions configures [NewHTTP]. Empty BaseURL, Model and APIKey are
// taken from MEMOR_EMBED_BASE_URL, MEMOR_EMBED_MODEL and
// MEMOR_EMBED_API_KEY.
type HTTPOptions struct {
	// BaseURL is the API root including the version path, as in the OpenAI
	// SDKs: "https://api.openai.com/v1", "http://localhost:11434/v1"
	// (Ollama). Requests go to BaseURL + "/embeddings".
	BaseURL string
	// Model is the embedding model name, e.g. "text-embedding-3-small".
	Model string
	// APIKey is sent as "Authorization: Bearer …" when non-empty.
	APIKey string
	// Dim is the expected dimension. 0 takes it from the first response;
	// every later response must match it.
	Dim int
	// BatchSize is the most texts sent in one request (default 64).
	BatchSize int
	// MaxRetries is how many times a request is retried after a 429, a
	// 5xx, a timeout or a transport error (default 3; negative: none).
	MaxRetries int
	// Timeout bounds each request attempt (default 30 s).
	Timeout time.Duration
	// Backoff is the wait before the first retry, doubled for each next
	// one up to MaxBackoff (defaults 500 ms and 10 s). A Retry-After header
	// in seconds overrides it, still capped at MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Client sends the requests (default: a new http.Client).
	Client *http.Client
	// Sleep waits between retries; nil uses a timer. Tests inject one to
	// observe or skip the waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// HTTP embeds through an OpenAI-compatible /v1/embeddings endpoint. Safe for
// concurrent use.
type HTTP struct {
	o   HTTPOptions
	url string
	dim atomic.Int64
}

// NewHTTP validates o (filling defaults and environment values) and returns
// the embedder. It makes no request.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv(EnvBaseURL)
	}
	if o.Model == "" {
		o.Model = os.Getenv(EnvModel)
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv(EnvAPIKey)
	}
	if o.BaseURL == "" {
		return nil, fmt.Errorf("%w: no base URL (set HTTPOptions.BaseURL or %s)", ErrConfig, EnvBaseURL)
	}
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return nil, fmt.Errorf("%w: base URL %q is not http(s)", ErrConfig, o.BaseURL)
	}
	if o.Model == "" {
		return nil, fmt.Errorf("%w: no model (set HTTPOptions.Model or %s)", ErrConfig, EnvModel)
	}
	if o.Dim < 0 {
		return nil, fmt.Errorf("%w: negative dimension %d", ErrConfig, o.Dim)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	h := &HTTP{o: o, url: strings.TrimRight(o.BaseURL, "/") + "/embeddings"}
	h.dim.Store(int64(o.Dim))
	return h, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Dim returns the configured dimension, or the one learned from the first
// response (0 before it).
func (h *HTTP) Dim() int { return int(h.dim.Load()) }

// Embed sends texts in batches of BatchSize and returns one vector per
// text, in order. Vectors are returned as the service sent them (not
// normalised).
func (h *HTTP) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += h.o.BatchSize {
		batch := texts[start:min(start+h.o.BatchSize, len(texts))]
		vecs, err := h.batch(ctx, batch)
		if err != nil {
			return nil, err
		}
		for i, v := range vecs {
			if err := h.checkDim(start+i, len(v)); err != nil {
				return nil, err
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (h *HTTP) checkDim(i, got int) error {
	if h.dim.CompareAndSwap(0, int64(got)) {
		return nil
	}
	if want := int(h.dim.Load()); want != got {
		return &DimensionError{Want: want, Got: got, Index: i}
	}
	return nil
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// batch sends one request, retrying transient failures.
func (h *HTTP) batch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: h.o.Model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("embed: encode request: %w", err)
	}
	wait := h.o.Backoff
	for attempt := 0; ; attempt++ {
		vecs, retryAfter, err := h.attempt(ctx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("embed: %w", ctx.Err())
		}
		if retryAfter < 0 || attempt >= h.o.MaxRetries {
			var se *StatusError
			if errors.As(err, &se) {
				se.Retries = attempt
			}
			return nil, err
		}
		d := wait
		if retryAfter > 0 {
			d = retryAfter
		}
		if err := h.o.Sleep(ctx, min(d, h.o.MaxBackoff)); err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		wait = min(2*wait, h.o.MaxBackoff)
	}
}

// attempt makes one request. retry is negative when the failure is not
// worth retrying, positive when the server asked for that wait, else 0.
func (h *HTTP) attempt(ctx context.Context, body []byte, n int) (vecs [][]float32, retry time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.o.APIKey)
	}
	resp, err := h.o.Client.Do(req)
	if err != nil {
		// Transport errors and per-attempt timeouts are transient.
		return nil, 0, fmt.Errorf("embed: request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, 0, fmt.Errorf("embed: read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Code: resp.StatusCode, Body: string(raw[:min(len(raw), 512)])}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, retryAfter(resp.Header.Get("Retry-After")), se
		}
		return nil, -1, se
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, -1, fmt.Errorf("%w: %v", ErrResponse, err)
	}
	if len(r.Data) != n {
		return nil, -1, fmt.Errorf("%w: %d embeddings for %d texts", ErrResponse, len(r.Data), n)
	}
	vecs = make([][]float32, n)
	for pos, d := range r.Data {
		i := pos // servers that omit "index" answer in order
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n || vecs[i] != nil {
			return nil, -1, fmt.Errorf("%w: bad or repeated index %d", ErrResponse, i)
		}
		if len(d.Embedding) == 0 {
			return nil, -1, fmt.Errorf("%w: empty embedding at index %d", ErrResponse, i)
		}
		vecs[i] = d.Embedding
	}
	return vecs, 0, nil
}

// retryAfter parses a Retry-After header given in seconds (0 if absent or
// a date, which then falls back to exponential backoff).
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
