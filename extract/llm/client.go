package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/memor-db/memor/extract/llm/internal/llmjson"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Environment variables read by New.
const (
	EnvBaseURL = "MEMOR_LLM_BASE_URL"
	EnvModel   = "MEMOR_LLM_MODEL"
	EnvAPIKey  = "MEMOR_LLM_API_KEY"
)

// Defaults.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
)

type config struct {
	baseURL       string
	model         string
	apiKey        string
	timeout       time.Duration
	maxRetries    int
	maxRetryDelay time.Duration
	httpClient    *http.Client
	seed          int64
}

// Option configures a Client.
type Option func(*config)

// WithBaseURL sets the API base URL, e.g. "http://localhost:11434/v1" for
// Ollama. Default: $MEMOR_LLM_BASE_URL, else OpenAI's.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithModel sets the model name. Default: $MEMOR_LLM_MODEL. Required.
func WithModel(m string) Option { return func(c *config) { c.model = m } }

// WithAPIKey sets the bearer token. Default: $MEMOR_LLM_API_KEY; empty sends
// none (local servers need none).
func WithAPIKey(k string) Option { return func(c *config) { c.apiKey = k } }

// WithTimeout bounds each call, all retries included. Default 60 s.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMaxRetries sets how often a call is retried after a 408, 409, 429,
// 5xx or a connection error (negative means 0). Default 3.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = max(n, 0) } }

// WithMaxRetryDelay caps the backoff between attempts, server-directed
// delays included. Default: the SDK's (8 s backoff, 2 min Retry-After).
func WithMaxRetryDelay(d time.Duration) Option { return func(c *config) { c.maxRetryDelay = d } }

// WithHTTPClient sets the HTTP client (for proxies, TLS, tests).
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.httpClient = h } }

// WithSeed sets the sampling seed sent with every request, for endpoints
// that honour it. Requests also use temperature 0, so that replays are as
// reproducible as the endpoint allows.
func WithSeed(s int64) Option { return func(c *config) { c.seed = s } }

// Client talks to one OpenAI-compatible endpoint and model. It is safe for
// concurrent use. Extractor, Judge and Reranker share it.
type Client struct {
	oa      openai.Client
	model   string
	timeout time.Duration
	seed    int64
}

// New returns a Client configured from the environment and opts (opts win).
// It makes no request.
func New(opts ...Option) (*Client, error) {
	c := config{
		baseURL:    os.Getenv(EnvBaseURL),
		model:      os.Getenv(EnvModel),
		apiKey:     os.Getenv(EnvAPIKey),
		timeout:    DefaultTimeout,
		maxRetries: DefaultMaxRetries,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.model == "" {
		return nil, fmt.Errorf("%w: no model (set %s or use WithModel)", ErrConfig, EnvModel)
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("%w: timeout must be positive", ErrConfig)
	}
	// The API key is always set explicitly, even empty, so that an
	// OPENAI_API_KEY in the environment is never sent to another host.
	ro := []option.RequestOption{option.WithAPIKey(c.apiKey), option.WithMaxRetries(c.maxRetries)}
	if c.baseURL != "" {
		u, err := url.Parse(c.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: base URL %q", ErrConfig, c.baseURL)
		}
		ro = append(ro, option.WithBaseURL(c.baseURL))
	}
	if c.maxRetryDelay > 0 {
		ro = append(ro, option.WithMaxRetryDelay(c.maxRetryDelay))
	}
	if c.httpClient != nil {
		ro = append(ro, option.WithHTTPClient(c.httpClient))
	}
	return &Client{oa: openai.NewClient(ro...), model: c.model, timeout: c.timeout, seed: c.seed}, nil
}

// complete sends one structured-output request and returns the content of
// the answer.
func (c *Client) complete(ctx context.Context, system, user, schemaName string, schema map[string]any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(c.model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system),
			openai.UserMessage(user),
		},
		Temperature: openai.Float(0),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   schemaName,
					Strict: openai.Bool(true),
					Schema: schema,
				},
			},
		},
	}
	if c.seed != 0 {
		params.Seed = openai.Int(c.seed)
	}
	resp, err := c.oa.Chat.Completions.New(ctx, params)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return nil, fmt.Errorf("llm: %s: %w", schemaName, err)
	}
	if len(resp.Choices) == 0 {
		return nil, fmt.Errorf("%w: no choices", ErrNoAnswer)
	}
	msg := resp.Choices[0].Message
	if msg.Refusal != "" {
		return nil, fmt.Errorf("%w: refused: %s", ErrNoAnswer, llmjson.Truncate(msg.Refusal, 200))
	}
	if msg.Content == "" {
		return nil, fmt.Errorf("%w: empty message (finish reason %q)", ErrNoAnswer, resp.Choices[0].FinishReason)
	}
	return []byte(msg.Content), nil
}
