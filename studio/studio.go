// Package studio is memor's web inspector: server-rendered pages of a
// store's users, a user's bitemporal timeline with one slider per clock,
// the episode log with its decisions, query explanations, conflicts, the
// entity graph and Forget with a dry run. Timeline and graph are SVG drawn
// on the server; assets are embedded; the pages need no network beyond the
// server and work without their script (the sliders and the actions that
// change the store use it).
//
// The handler serves every path under Prefix. It does no authentication
// of its own: mount it behind server.Options.Studio, which applies the
// API's token, Host and Origin checks to every request, so that its
// state-changing actions (Retry, Correct, Accept, Forget: JSON POSTs) are guarded
// exactly as the API's are.
package studio

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memor-db/memor"
)

// Prefix is the path the studio is served under (server.StudioPath).
const Prefix = "/studio/"

// PageSize bounds the rows of a long list (users, episodes); TimelinePage
// bounds the bars of one timeline page.
const (
	PageSize     = 50
	TimelinePage = 200
	// GraphNodes bounds the nodes the graph page draws.
	GraphNodes = 120
	maxBody    = 64 << 10
)

// ErrBadRequest reports a malformed studio request (a bad instant, a
// missing parameter, a wrong confirmation).
var ErrBadRequest = errors.New("studio: bad request")

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configures a Handler.
type Options struct {
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock for the default instants ("now"); nil: time.Now.
	Now func() time.Time
}

// Handler serves the studio over an engine. Safe for concurrent use.
type Handler struct {
	e    *memor.Engine
	o    Options
	log  *slog.Logger
	mux  *http.ServeMux
	tmpl *template.Template
}

// New returns the studio for e; the caller keeps ownership of e.
func New(e *memor.Engine, o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{e: e, o: o, log: o.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
	assets, _ := fs.Sub(assetFS, "assets")
	m := h.mux
	m.Handle("GET "+Prefix+"assets/", http.StripPrefix(Prefix+"assets/", http.FileServerFS(assets)))
	m.HandleFunc("GET "+Prefix+"{$}", h.users)
	m.HandleFunc("GET "+Prefix+"u/{user}/{$}", h.timeline)
	m.HandleFunc("GET "+Prefix+"u/{user}/episodes", h.episodes)
	m.HandleFunc("POST "+Prefix+"u/{user}/retry", h.retry)
	m.HandleFunc("GET "+Prefix+"u/{user}/query", h.query)
	m.HandleFunc("GET "+Prefix+"u/{user}/conflicts", h.conflicts)
	m.HandleFunc("POST "+Prefix+"u/{user}/correct", h.correct)
	m.HandleFunc("POST "+Prefix+"u/{user}/accept", h.accept)
	m.HandleFunc("GET "+Prefix+"u/{user}/graph", h.graph)
	m.HandleFunc("GET "+Prefix+"u/{user}/forget", h.forgetPlan)
	m.HandleFunc("POST "+Prefix+"u/{user}/forget", h.forget)
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// Everything the pages load is the studio's own: no inline script, no
	// frame of it on another page.
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// UserURL is the studio path of a user's page (view "" is the timeline).
func UserURL(user, view string) string {
	return Prefix + "u/" + url.PathEscape(user) + "/" + view
}

// page is what every template gets.
type page struct {
	Title string
	User  string
	View  string
	Data  any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

// fail answers an error as a page (GET) or as JSON (POST).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, memor.ErrInvalidUser), errors.Is(err, memor.ErrInvalidTime),
		errors.Is(err, memor.ErrInvalidText):
		status = http.StatusBadRequest
	case errors.Is(err, memor.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, memor.ErrReadOnly), errors.Is(err, memor.ErrNotContested):
		status = http.StatusConflict
	case errors.Is(err, context.Canceled):
		return
	}
	if status == http.StatusInternalServerError {
		h.log.Error("studio: request failed", "method", r.Method, "route", r.Pattern, "err", err)
	}
	if r.Method == http.MethodPost {
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = h.tmpl.ExecuteTemplate(w, "error.html", page{Title: http.StatusText(status), Data: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodePost reads a JSON POST body into v.
func decodePost(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %v", ErrBadRequest, err)
	}
	return nil
}

// ParseInstant reads an instant of a studio URL: RFC 3339 or a date
// (midnight UTC); empty is def.
func ParseInstant(s string, def time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: %w: %q is neither RFC 3339 (2026-02-01T09:00:00Z) nor a date (2026-02-01)", ErrBadRequest, memor.ErrInvalidTime, s)
}

// instants reads the two clocks of a view from the query string.
func (h *Handler) instants(r *http.Request) (valid, known time.Time, err error) {
	now := h.o.Now().UTC()
	q := r.URL.Query()
	if valid, err = ParseInstant(q.Get("valid"), now); err != nil {
		return
	}
	known, err = ParseInstant(q.Get("known"), now)
	return
}

// pageNum reads ?page= (1-based).
func pageNum(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pager says which slice of n rows page p shows.
type pager struct {
	Page, Pages, Total, From, To int
	Prev, Next                   string
}

func paginate(r *http.Request, n, size int) pager {
	p := pager{Page: pageNum(r), Total: n, Pages: (n + size - 1) / size}
	if p.Pages == 0 {
		p.Pages = 1
	}
	p.Page = min(p.Page, p.Pages)
	p.From = (p.Page - 1) * size
	p.To = min(p.From+size, n)
	link := func(n int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return r.URL.EscapedPath() + "?" + q.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return p
}

const stamp = "2006-01-02 15:04"

var funcs = template.FuncMap{
	"userURL": UserURL,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 {
			return t.UTC().Format(time.DateOnly)
		}
		return t.UTC().Format(stamp)
	},
	"rfc": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"f3":   func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"svg":  func(s string) template.HTML { return template.HTML(s) }, // built by svgWriter, every text escaped
	"join": strings.Join,
	"seq":  func() []int { return []int{1, 2, 3} },
}
