package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor/internal/instant"
	"github.com/memor-db/memor/internal/jsontext"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/memortest/backend"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
// An episode is at most memor.DefaultMaxTextBytes of text; the rest is room
// for JSON escaping.
const DefaultMaxBodyBytes = 1 << 20

// MaxK bounds the k of a query.
const MaxK = 1000

// Sentinel errors of the package.
var (
	// ErrBadRequest reports a malformed request: bad JSON, a missing
	// parameter, an unparseable time.
	ErrBadRequest = errors.New("server: bad request")
	// ErrUnauthorized reports a missing or wrong bearer token.
	ErrUnauthorized = errors.New("server: unauthorized")
	// ErrUnsafeBind reports a non-loopback listen address without a token.
	ErrUnsafeBind = errors.New("server: refusing to listen beyond loopback without a bearer token (set MEMOR_TOKEN)")
	// ErrWeakToken reports a bearer token shorter than MinTokenBytes.
	ErrWeakToken = errors.New("server: bearer token too short")
	// ErrInvalidOrigin reports an allowed origin that is not
	// scheme://host[:port].
	ErrInvalidOrigin = errors.New("server: invalid origin")
)

// Options configures a Handler.
type Options struct {
	// Token, if set, is the bearer token every request but /v1/health must
	// carry (Authorization: Bearer <token>).
	Token string
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives request failures (500s) with their detail and, at
	// info level, one line per request (method, route pattern, status,
	// duration, UserHash; never a body, path or query); nil discards them.
	Logger *slog.Logger
	// Version is reported by /v1/health.
	Version string
	// Now is the clock for defaulted times; nil means time.Now.
	Now func() time.Time
	// AllowOrigins lists the web origins (scheme://host[:port], e.g.
	// "https://app.example") whose pages may call the API: their requests
	// pass the origin check and are answered with CORS headers, preflights
	// included. A request from any other page (an Origin that is neither
	// allowed nor this server's own, or Sec-Fetch-Site cross-site or
	// same-site) is refused with 403 forbidden_origin. See NormalizeOrigin
	// for the accepted form; Serve refuses a malformed one.
	AllowOrigins []string
	// AnyHost serves a request whatever its Host header. Without it only
	// requests sent to a loopback name or address (localhost, 127.0.0.1,
	// [::1], with any port) are served, and any other Host is refused
	// with 403 forbidden_host: a page whose host name an attacker rebinds
	// to 127.0.0.1 cannot read the answers. Serve sets it on a listener
	// beyond loopback, where the bearer token is the guard.
	AnyHost bool
	// MaxImportBytes bounds the body of POST /v1/users/{user}/import (default
	// DefaultMaxImportBytes): a backup is read whole before it is written.
	MaxImportBytes int64
	// Conformance mounts memortest's HTTP contract under /conformance/
	// (add, query, reset, and GET /conformance/status), serving only users
	// under backend.UserPrefix, so that the suite cannot touch a real
	// user. Off by default: nothing is mounted.
	Conformance bool
	// MCP, if set, is served at MCPPath (mcpserver.NewHTTPHandler: the MCP
	// tools over the streamable HTTP transport) behind the same checks as
	// every other route: Host, Origin and Sec-Fetch-Site, bearer token,
	// body size and Content-Type. Nil: nothing is mounted there.
	MCP http.Handler
	// Metrics, if set, are served at GET /metrics (token and origin
	// checks as for every route) and count every request; nil serves no
	// /metrics. See Metrics, and ServeOptions.ExposeMetrics beyond
	// loopback.
	Metrics *Metrics
	// Studio, if set, is served under StudioPath (studio.New: the web
	// inspector) behind the same checks as every other route; with a
	// Token, a browser carries it in a cookie set by StudioPath+"login"
	// (see studioSession). Nil: nothing is mounted there.
	Studio http.Handler
	// Router, if set, makes the server one node of a memor cluster:
	// every route of one user is served here when this node owns the
	// user, else forwarded to the owner (or redirected, when the client
	// sends RedirectHeader), after the same host, origin and token checks
	// as a local request; so is an MCP tool call naming a user (give MCP
	// MCPThrough too). GET /v1/users lists the cluster's users. StudioPath
	// and /conformance/ answer 501 not_in_cluster (Studio and Conformance
	// are ignored). Answers carry
	// NodeHeader. See Router.
	Router Router
	// Transport carries forwarded requests (default: http.DefaultTransport's
	// settings without its proxy, see forwardTransport).
	Transport http.RoundTripper
}

// MCPPath is the route of Options.MCP.
const MCPPath = "/mcp"

// IdempotencyHeader, on POST /v1/users/{user}/episodes, is the request's
// idempotency key (memor.IdempotencyKey): a repeat of the request with
// the same key and text stores nothing and answers 200 with the first
// episode and "repeated": true; the key with another text is 409
// idempotency_conflict.
const IdempotencyHeader = "Idempotency-Key"

// Handler serves the HTTP API over an engine. Safe for concurrent use.
type Handler struct {
	e       *memor.Engine
	o       Options
	log     *slog.Logger
	mux     *http.ServeMux
	origins map[string]bool // Options.AllowOrigins, normalized
	ref     refusals
	fwd     http.RoundTripper // Options.Transport or forwardTransport
}

// New returns the API handler for e. The caller keeps ownership of e.
func New(e *memor.Engine, o Options) *Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{e: e, o: o, log: o.Logger, mux: http.NewServeMux(), origins: map[string]bool{}}
	h.ref.seen = map[string]bool{}
	h.fwd = o.Transport
	if h.fwd == nil && o.Router != nil {
		h.fwd = forwardTransport()
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range o.AllowOrigins {
		if n, err := NormalizeOrigin(s); err == nil {
			h.origins[n] = true
		}
	}
	m := h.mux
	m.HandleFunc("GET /v1/health", h.takes(h.health))
	m.HandleFunc("GET /v1/users", h.takes(h.users, "limit", "after"))
	m.HandleFunc("POST /v1/users/{user}/episodes", h.takes(h.routed(h.addEpisode), "wait"))
	m.HandleFunc("GET /v1/users/{user}/state", h.takes(h.routed(h.state)))
	m.HandleFunc("GET /v1/users/{user}/history", h.takes(h.routed(h.history), "subject", "predicate"))
	m.HandleFunc("GET /v1/users/{user}/query", h.takes(h.routed(h.query), "q", "k", "valid", "known", "explain", "min_support"))
	m.HandleFunc("GET /v1/users/{user}/asof", h.takes(h.routed(h.asOf), "valid", "known"))
	m.HandleFunc("GET /v1/users/{user}/conflicts", h.takes(h.routed(h.conflicts)))
	m.HandleFunc("GET /v1/users/{user}/freshness", h.takes(h.routed(h.freshness)))
	m.HandleFunc("GET /v1/users/{user}/export", h.takes(h.routed(h.exportUser)))
	m.HandleFunc("POST /v1/users/{user}/import", h.takes(h.routed(h.importUser)))
	m.HandleFunc("POST /v1/users/{user}/facts/{id}/correct", h.takes(h.routed(h.correct)))
	m.HandleFunc("POST /v1/users/{user}/facts/{id}/accept", h.takes(h.routed(h.accept)))
	m.HandleFunc("DELETE /v1/users/{user}", h.takes(h.routed(h.forget)))
	if o.Metrics != nil {
		o.Metrics.watch(e)
		if o.Router != nil {
			o.Metrics.watchRouter(o.Router)
		}
		m.Handle("GET /metrics", o.Metrics.handler())
		m.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "GET")
			writeErr(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" /metrics is not allowed; use GET")
		})
	}
	switch {
	case o.Router != nil:
		m.HandleFunc("/conformance/", h.notInCluster)
	case o.Conformance:
		m.Handle("/conformance/", http.StripPrefix("/conformance", backend.HTTPHandler(Backend(e))))
		m.HandleFunc("GET /conformance/status", h.conformanceStatus)
	}
	switch {
	case o.MCP != nil && o.Router != nil:
		m.Handle(MCPPath, h.mcpRouted(o.MCP))
	case o.MCP != nil:
		m.Handle(MCPPath, o.MCP)
	}
	switch {
	case o.Router != nil:
		m.HandleFunc(StudioPath, h.notInCluster)
		h.o.Studio = nil // no studio session either (studioSession)
	case o.Studio != nil:
		m.HandleFunc("GET "+StudioPath+"login", h.studioLogin)
		m.Handle(StudioPath, o.Studio)
	}
	// A pattern without a method is less specific than the same path with
	// one, so these catch only the wrong methods and answer them in JSON
	// (the mux's own 405 is plain text).
	for path, allow := range map[string]string{
		"/v1/health":                          "GET",
		"/v1/users":                           "GET",
		"/v1/users/{user}/episodes":           "POST",
		"/v1/users/{user}/state":              "GET",
		"/v1/users/{user}/history":            "GET",
		"/v1/users/{user}/query":              "GET",
		"/v1/users/{user}/asof":               "GET",
		"/v1/users/{user}/conflicts":          "GET",
		"/v1/users/{user}/freshness":          "GET",
		"/v1/users/{user}/export":             "GET",
		"/v1/users/{user}/import":             "POST",
		"/v1/users/{user}/facts/{id}/correct": "POST",
		"/v1/users/{user}/facts/{id}/accept":  "POST",
		"/v1/users/{user}":                    "DELETE",
	} {
		m.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeErr(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" "+r.URL.Path+" is not allowed; use "+allow)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path+"; see GET /v1/health and the route table in the docs")
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	// Deferred first, so it runs last: after a panic's 500 is written.
	defer func() {
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		d := time.Since(start)
		h.logRequest(r, sw.status, d)
		if m := h.o.Metrics; m != nil {
			m.observe(r.Pattern, sw.status, d)
		}
	}()
	defer func() {
		// A panic below is a bug of ours; the client gets a plain 500, the
		// log gets the detail, the server keeps serving.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.Error("server: panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			writeErr(w, http.StatusInternalServerError, "internal", "internal error")
		}
	}()
	if !h.guard(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.bodyLimit(r))
	h.mux.ServeHTTP(w, r)
}

// cleanPath is the path the mux serves for p (it redirects any other):
// path.Clean, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// Fact lists and other responses.
type (
	factsResponse struct {
		Facts []memor.Fact `json:"facts"`
	}
	queryResponse struct {
		Results []memor.Result `json:"results"`
	}
	episodeRequest struct {
		Text string `json:"text"`
		// At is RFC 3339 or YYYY-MM-DD; empty means now.
		At string `json:"at,omitempty"`
		// Speaker is who said it (memor.Speaker); empty means the user.
		Speaker string `json:"speaker,omitempty"`
		// Wait makes the call return once the episode is applied.
		Wait bool `json:"wait,omitempty"`
	}
	episodeResponse struct {
		Episode memor.Episode `json:"episode"`
		Applied bool          `json:"applied"`
		// Repeated: the Idempotency-Key named this episode, stored by an
		// earlier request; nothing was stored now (200 only).
		Repeated bool `json:"repeated,omitempty"`
		// Changes and Decisions say what an applied episode changed
		// (201 only).
		Changes   *memor.Changes   `json:"changes,omitempty"`
		Decisions []memor.Decision `json:"decisions,omitempty"`
	}
)

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": h.o.Version})
}

func (h *Handler) addEpisode(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	var req episodeRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	// The engine refuses it too; this message says what to send.
	if strings.TrimSpace(req.Text) == "" {
		h.fail(w, r, fmt.Errorf("%w: text is empty: send {\"text\": \"what the user said\"}", memor.ErrInvalidText))
		return
	}
	at, err := instant.Parse(req.At, time.Time{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var opts []memor.AddOption
	if !at.IsZero() {
		opts = append(opts, memor.At(at))
	}
	if req.Speaker != "" {
		opts = append(opts, memor.Speaker(req.Speaker))
	}
	if ks, ok := r.Header[IdempotencyHeader]; ok {
		if len(ks) != 1 {
			h.fail(w, r, fmt.Errorf("%w: send one %s header, got %d", ErrBadRequest, IdempotencyHeader, len(ks)))
			return
		}
		opts = append(opts, memor.IdempotencyKey(ks[0]))
	}
	var repeated bool
	opts = append(opts, memor.Repeated(&repeated))
	wait := req.Wait
	if vs, ok := r.URL.Query()["wait"]; ok {
		b, err := strconv.ParseBool(vs[0])
		if err != nil { // given once: takes refuses a repeat
			h.fail(w, r, fmt.Errorf("%w: wait must be true or false, got %q", ErrBadRequest, vs[0]))
			return
		}
		wait = wait || b
	}
	var ds []memor.Decision
	if wait {
		// Applied before Add returns, with what it changed.
		opts = append(opts, memor.Decisions(&ds))
	}
	var ep memor.Episode
	err = h.write(r, func() (err error) {
		ep, err = h.e.Add(r.Context(), user, req.Text, opts...)
		return err
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if repeated {
		// Applied if the first request's episode is (a wait applies it).
		f, err := h.e.Freshness(r.Context(), user)
		writeJSON(w, http.StatusOK, episodeResponse{Episode: ep, Repeated: true, Applied: err == nil && f.Applied >= ep.Seq})
		return
	}
	if !wait {
		writeJSON(w, http.StatusAccepted, episodeResponse{Episode: ep})
		return
	}
	ch := memor.Summarize(ds)
	if ds == nil {
		ds = []memor.Decision{}
	}
	writeJSON(w, http.StatusCreated, episodeResponse{Episode: ep, Applied: true, Changes: &ch, Decisions: ds})
}

// stampFreshness labels a read with how fresh it is: the user's episode
// watermark, taken before the read (Applied never goes back, so the read
// reflects at least Memor-Applied episodes). Headers, so that every read's
// body keeps its shape.
func (h *Handler) stampFreshness(w http.ResponseWriter, r *http.Request) {
	f, err := h.e.Freshness(r.Context(), r.PathValue("user"))
	if err != nil {
		return // the read that follows reports the error
	}
	hd := w.Header()
	hd.Set("Memor-Applied", strconv.FormatUint(f.Applied, 10))
	hd.Set("Memor-Latest", strconv.FormatUint(f.Latest, 10))
	hd.Set("Memor-Pending", strconv.FormatUint(f.Pending, 10))
	hd.Set("Memor-Failed", strconv.Itoa(f.Failed))
}

func (h *Handler) state(w http.ResponseWriter, r *http.Request) {
	h.stampFreshness(w, r)
	fs, err := h.e.State(r.Context(), r.PathValue("user"))
	h.facts(w, r, fs, err)
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	subject, predicate := q.Get("subject"), q.Get("predicate")
	if subject == "" {
		subject = "user"
	}
	if predicate == "" {
		h.fail(w, r, fmt.Errorf("%w: predicate is required (e.g. ?predicate=lives_in&subject=user)", ErrBadRequest))
		return
	}
	h.stampFreshness(w, r)
	fs, err := h.e.History(r.Context(), r.PathValue("user"), subject, predicate)
	h.facts(w, r, fs, err)
}

func (h *Handler) asOf(w http.ResponseWriter, r *http.Request) {
	valid, known, err := h.instants(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.stampFreshness(w, r)
	fs, err := h.e.AsOf(r.Context(), r.PathValue("user"), valid, known)
	h.facts(w, r, fs, err)
}

func (h *Handler) conflicts(w http.ResponseWriter, r *http.Request) {
	h.stampFreshness(w, r)
	fs, err := h.e.Conflicts(r.Context(), r.PathValue("user"))
	h.facts(w, r, fs, err)
}

func (h *Handler) freshness(w http.ResponseWriter, r *http.Request) {
	f, err := h.e.Freshness(r.Context(), r.PathValue("user"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (h *Handler) query(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	text := q.Get("q")
	if strings.TrimSpace(text) == "" {
		h.fail(w, r, fmt.Errorf("%w: q is required (e.g. ?q=where+do+I+live)", ErrBadRequest))
		return
	}
	var opts memor.QueryOptions
	if s := q.Get("k"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 || k > MaxK {
			h.fail(w, r, fmt.Errorf("%w: k must be an integer in [1, %d], got %q", ErrBadRequest, MaxK, s))
			return
		}
		opts.K = k
	}
	if s := q.Get("explain"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: explain must be true or false, got %q", ErrBadRequest, s))
			return
		}
		opts.Explain = b
	}
	if s := q.Get("min_support"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v > 1 {
			h.fail(w, r, fmt.Errorf("%w: min_support must be a number at most 1 (0: the default, negative: never answer nothing known), got %q", ErrBadRequest, s))
			return
		}
		opts.MinSupport = v
	}
	var err error
	if opts.ValidAt, err = instant.Parse(q.Get("valid"), time.Time{}); err != nil {
		h.fail(w, r, err)
		return
	}
	if opts.KnownAt, err = instant.Parse(q.Get("known"), time.Time{}); err != nil {
		h.fail(w, r, err)
		return
	}
	h.stampFreshness(w, r)
	res, err := h.e.Query(r.Context(), r.PathValue("user"), text, opts)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if res == nil {
		res = []memor.Result{}
	}
	writeJSON(w, http.StatusOK, queryResponse{Results: res})
}

func (h *Handler) correct(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := h.write(r, func() error { return h.e.Correct(r.Context(), r.PathValue("user"), id) }); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"corrected": id})
}

func (h *Handler) accept(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := h.write(r, func() error { return h.e.Accept(r.Context(), r.PathValue("user"), id) }); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"accepted": id})
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	if err := h.write(r, func() error { return h.e.Forget(r.Context(), user) }); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"forgotten": user})
}

// conformanceStatus says which users the conformance suite may touch and
// how many users of the store are outside that prefix (which it never
// touches), so that `memor conformance` can warn that it runs against a
// store in use.
func (h *Handler) conformanceStatus(w http.ResponseWriter, r *http.Request) {
	users, err := h.e.Users(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	suite := 0
	for _, u := range users {
		if strings.HasPrefix(u, backend.UserPrefix) {
			suite++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"prefix": backend.UserPrefix, "suite_users": suite, "other_users": len(users) - suite})
}

// instants reads ?valid= and ?known=, each defaulting to now.
func (h *Handler) instants(r *http.Request) (valid, known time.Time, err error) {
	now := h.o.Now().UTC()
	q := r.URL.Query()
	if valid, err = instant.Parse(q.Get("valid"), now); err != nil {
		return
	}
	known, err = instant.Parse(q.Get("known"), now)
	return
}

func (h *Handler) facts(w http.ResponseWriter, r *http.Request, fs []memor.Fact, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if fs == nil {
		fs = []memor.Fact{}
	}
	writeJSON(w, http.StatusOK, factsResponse{Facts: fs})
}

// fail writes err with its status. Client errors carry their message;
// anything unexpected is logged and answered with a generic 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := Status(err)
	msg := err.Error()
	switch code {
	case "internal":
		h.log.Error("server: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	case "storage":
		// The detail names the store's files: for the log only.
		h.log.Error("server: storage failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "storage failed: the store refuses writes until the server is restarted"
	}
	if retryable(err) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	writeErr(w, status, code, msg)
}

// Status maps an error to its HTTP status and machine-readable code.
func Status(err error) (int, string) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, memor.ErrInvalidUser):
		return http.StatusBadRequest, "invalid_user"
	case errors.Is(err, memor.ErrInvalidText):
		return http.StatusBadRequest, "invalid_text"
	case errors.Is(err, memor.ErrInvalidFact):
		return http.StatusBadRequest, "invalid_fact"
	case errors.Is(err, memor.ErrInvalidTime):
		return http.StatusBadRequest, "invalid_time"
	case errors.Is(err, memor.ErrInvalidSpeaker):
		return http.StatusBadRequest, "invalid_speaker"
	case errors.Is(err, memor.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, memor.ErrInvalidIdempotencyKey):
		return http.StatusBadRequest, "invalid_idempotency_key"
	case errors.Is(err, memor.ErrIdempotencyConflict):
		return http.StatusConflict, "idempotency_conflict"
	case errors.Is(err, memor.ErrHistoryConflict):
		return http.StatusConflict, "history_conflict"
	case errors.Is(err, memor.ErrInvalidImport):
		return http.StatusBadRequest, "invalid_import"
	case errors.Is(err, memor.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, memor.ErrNotContested):
		return http.StatusConflict, "not_contested"
	case errors.Is(err, memor.ErrClosed):
		return http.StatusServiceUnavailable, "closed"
	case errors.Is(err, memor.ErrStorage):
		// The disk is full or failing: nothing the client can fix.
		return http.StatusServiceUnavailable, "storage"
	case errors.Is(err, memor.ErrExtractionFailed):
		// The episode is stored; the extractor (a model) failed on it.
		return http.StatusBadGateway, "extraction_failed"
	case errors.Is(err, ErrNoOwner):
		return http.StatusServiceUnavailable, "no_owner"
	case errors.Is(err, ErrDraining):
		return http.StatusServiceUnavailable, "draining"
	case errors.Is(err, ErrForwardLoop):
		return http.StatusServiceUnavailable, "forward_loop"
	case errors.Is(err, ErrOwnerUnreachable):
		return http.StatusServiceUnavailable, "owner_unreachable"
	case errors.Is(err, ErrBehind):
		return http.StatusServiceUnavailable, "behind"
	case errors.Is(err, ErrLogUnavailable):
		return http.StatusServiceUnavailable, "log_unavailable"
	case errors.Is(err, ErrNotInCluster):
		return http.StatusNotImplemented, "not_in_cluster"
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timeout"
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		return 499, "canceled"
	}
	return http.StatusInternalServerError, "internal"
}

// readBody reads r's body whole, within the limit its route set: a body
// over the limit is memor.ErrTooLarge naming what was read, any other
// failure ErrBadRequest.
func readBody(r *http.Request, what string) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("%w: %s larger than %d bytes", memor.ErrTooLarge, what, tooBig.Limit)
		}
		return nil, fmt.Errorf("%w: reading the body: %v", ErrBadRequest, err)
	}
	return data, nil
}

// importBody names an import's body in readBody's errors.
const importBody = "import body (Options.MaxImportBytes)"

// decodeBody reads one JSON object into v, rejecting unknown fields so a
// misspelt field fails loudly instead of being ignored.
//
// The raw body must be valid UTF-8 with no unpaired surrogate escape:
// encoding/json would silently replace either with U+FFFD, storing text
// the client did not send (or merging two user IDs).
func decodeBody(r *http.Request, v any) error {
	data, err := readBody(r, "body")
	if err != nil {
		return err
	}
	// The decoder would replace invalid UTF-8 and unpaired surrogate
	// escapes with U+FFFD without an error: refuse what it would not
	// decode as sent (Lossy judges valid JSON; the decoder the rest).
	if json.Valid(data) {
		if err := jsontext.Lossy(data); err != nil {
			return fmt.Errorf("%w: body: %v", memor.ErrInvalidText, err)
		}
	} else if !utf8.Valid(data) {
		return fmt.Errorf("%w: body is not valid UTF-8", memor.ErrInvalidText)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body is not the expected JSON object: %v", ErrBadRequest, err)
	}
	// Only white space may follow. (dec.More would let a stray ']' or '}'
	// through: FuzzRequest found `{"text":"a"}]` accepted.)
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: body holds more than one JSON value", ErrBadRequest)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client has gone if this fails
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}
