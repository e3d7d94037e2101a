// Package remote embeds texts through an OpenAI-compatible embeddings
// endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp's server, ...) with
// the official OpenAI Go SDK, which owns the protocol: authentication,
// retries with backoff and Retry-After, per-attempt timeouts and the
// base64 or float encodings of the answer. This package adds what memor
// needs on top: batching, a fixed or learned dimension that every answer
// must keep, strict checks of the answer's shape, and typed errors.
//
// It is its own package so that a program using only memor's default
// hash embedder does not link an HTTP client library.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memor-db/memor/embed"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Environment variables read by [New] for options left empty.
const (
	EnvBaseURL = "MEMOR_EMBED_BASE_URL"
	EnvModel   = "MEMOR_EMBED_MODEL"
	EnvAPIKey  = "MEMOR_EMBED_API_KEY"
)

// Defaults for zero [Options] fields.
const (
	DefaultBatchSize     = 64
	DefaultMaxRetries    = 3
	DefaultTimeout       = 30 * time.Second
	DefaultMaxRetryDelay = 10 * time.Second
)

// maxBody bounds how much of an answer is read (a 2048-text batch of
// 3072-d vectors as JSON is ≈ 130 MB; batches are far smaller by default).
const maxBody = 256 << 20

// Errors returned by this package; match them with errors.Is. A vector of
// the wrong length is embed.ErrDimension (an *embed.DimensionError).
var (
	// ErrConfig: options are missing or invalid (no base URL or model).
	ErrConfig = errors.New("embed/remote: invalid configuration")
	// ErrStatus: the service answered with a non-2xx status (after any
	// retries); the error is a *StatusError.
	ErrStatus = errors.New("embed/remote: embeddings service returned an error status")
	// ErrResponse: the service's answer could not be decoded or does not
	// match the request (wrong count, bad indexes, empty vectors).
	ErrResponse = errors.New("embed/remote: malformed embeddings response")
)

// StatusError reports a non-2xx answer from the embeddings service.
type StatusError struct {
	Code    int
	Body    string // first 512 bytes of the response body
	Retries int    // retries made before giving up
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embed/remote: embeddings service returned %d after %d retries: %s", e.Code, e.Retries, e.Body)
}

// Is makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// Options configures [New]. Empty BaseURL, Model and APIKey are taken from
// MEMOR_EMBED_BASE_URL, MEMOR_EMBED_MODEL and MEMOR_EMBED_API_KEY.
type Options struct {
	// BaseURL is the API root including the version path, as in the OpenAI
	// SDKs: "https://api.openai.com/v1", "http://localhost:11434/v1"
	// (Ollama). Requests go to BaseURL + "/embeddings".
	BaseURL string
	// Model is the embedding model name, e.g. "text-embedding-3-small".
	Model string
	// APIKey is sent as "Authorization: Bearer …" when non-empty. It is
	// never taken from OPENAI_API_KEY, so that a key meant for OpenAI is
	// not sent to another host.
	APIKey string
	// Dim is the expected dimension. 0 takes it from the first answer;
	// every later answer must match it.
	Dim int
	// BatchSize is the most texts sent in one request (default 64).
	BatchSize int
	// MaxRetries is how many times a request is retried after a 408, 409,
	// 429, 5xx or a connection error (default 3; negative: none). An
	// attempt that runs out of Timeout is not retried.
	MaxRetries int
	// Timeout bounds each request attempt (default 30 s).
	Timeout time.Duration
	// MaxRetryDelay caps the wait between attempts (default 10 s). A
	// server asking, with Retry-After, for a longer wait ends the retries
	// with its answer.
	MaxRetryDelay time.Duration
	// Client sends the requests (default: the SDK's, http.DefaultClient's
	// transport).
	Client *http.Client
}

// Embedder embeds through an OpenAI-compatible /embeddings endpoint. Safe
// for concurrent use.
type Embedder struct {
	o   Options
	oa  openai.Client
	dim atomic.Int64
}

// New validates o (filling defaults and environment values) and returns
// the embedder. It makes no request.
func New(o Options) (*Embedder, error) {
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
		return nil, fmt.Errorf("%w: no base URL (set Options.BaseURL or %s)", ErrConfig, EnvBaseURL)
	}
	if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrConfig, o.BaseURL)
	}
	if o.Model == "" {
		return nil, fmt.Errorf("%w: no model (set Options.Model or %s)", ErrConfig, EnvModel)
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
	o.MaxRetries = max(o.MaxRetries, 0)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = DefaultMaxRetryDelay
	}
	ro := []option.RequestOption{
		// Always set, even empty: the SDK would otherwise read
		// OPENAI_API_KEY from the environment.
		option.WithAPIKey(o.APIKey),
		option.WithBaseURL(strings.TrimRight(o.BaseURL, "/") + "/"),
		option.WithMaxRetries(o.MaxRetries),
		option.WithRequestTimeout(o.Timeout),
		option.WithMaxRetryDelay(o.MaxRetryDelay),
		option.WithMiddleware(limitBody),
	}
	if o.Client != nil {
		ro = append(ro, option.WithHTTPClient(o.Client))
	}
	e := &Embedder{o: o, oa: openai.NewClient(ro...)}
	e.dim.Store(int64(o.Dim))
	return e, nil
}

// limitBody bounds what the SDK reads of an answer.
func limitBody(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if res != nil && res.Body != nil {
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(res.Body, maxBody), res.Body}
	}
	return res, err
}

// Dim returns the configured dimension, or the one learned from the first
// answer (0 before it).
func (e *Embedder) Dim() int { return int(e.dim.Load()) }

// Fingerprint returns {http, model, dimension}; the base URL is not part
// of it (one model behind two servers makes the same vectors). The name
// "http" is what stores record for this embedder.
func (e *Embedder) Fingerprint() embed.Fingerprint {
	return embed.Fingerprint{Name: "http", Model: e.o.Model, Dim: e.Dim()}
}

// Embed sends texts in batches of BatchSize and returns one vector per
// text, in order. Vectors are returned as the service sent them (not
// normalised).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.o.BatchSize {
		batch := texts[start:min(start+e.o.BatchSize, len(texts))]
		vecs, err := e.batch(ctx, batch)
		if err != nil {
			return nil, err
		}
		for i, v := range vecs {
			if err := e.checkDim(start+i, len(v)); err != nil {
				return nil, err
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) checkDim(i, got int) error {
	if e.dim.CompareAndSwap(0, int64(got)) {
		return nil
	}
	if want := int(e.dim.Load()); want != got {
		return &embed.DimensionError{Want: want, Got: got, Index: i}
	}
	return nil
}

// batch sends one request (the SDK retries it) and checks the answer.
func (e *Embedder) batch(ctx context.Context, texts []string) ([][]float32, error) {
	var attempts int
	count := func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		attempts++
		return next(req)
	}
	resp, err := e.oa.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          openai.EmbeddingModel(e.o.Model),
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}, option.WithMiddleware(count))
	if err != nil {
		return nil, e.classify(ctx, err, attempts)
	}
	n := len(texts)
	if len(resp.Data) != n {
		return nil, fmt.Errorf("%w: %d embeddings for %d texts", ErrResponse, len(resp.Data), n)
	}
	vecs := make([][]float32, n)
	for pos, d := range resp.Data {
		i := pos // servers that omit "index" answer in order
		if d.JSON.Index.Valid() {
			i = int(d.Index)
		}
		if i < 0 || i >= n || vecs[i] != nil {
			return nil, fmt.Errorf("%w: bad or repeated index %d", ErrResponse, i)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w: empty embedding at index %d", ErrResponse, i)
		}
		v := make([]float32, len(d.Embedding))
		for k, x := range d.Embedding {
			v[k] = float32(x)
		}
		vecs[i] = v
	}
	return vecs, nil
}

// classify turns the SDK's error into this package's: a status answer is a
// *StatusError, the caller's or an attempt's deadline stays a context
// error, a transport failure is wrapped as is, and anything else is an
// answer that could not be decoded.
func (e *Embedder) classify(ctx context.Context, err error, attempts int) error {
	var apiErr *openai.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &apiErr):
		body := ""
		if apiErr.Response != nil && apiErr.Response.Body != nil {
			raw, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 512))
			body = string(raw)
		}
		return &StatusError{Code: apiErr.StatusCode, Body: body, Retries: max(attempts-1, 0)}
	case ctx.Err() != nil:
		return fmt.Errorf("embed/remote: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("embed/remote: attempt timed out after %v: %w", e.o.Timeout, err)
	case errors.As(err, &urlErr):
		return fmt.Errorf("embed/remote: request: %w", err)
	default:
		return fmt.Errorf("%w: %v", ErrResponse, err)
	}
}
