package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/instant"
)

// fuzzToken is the bearer token of the fuzzed handler that requires one.
const fuzzToken = "s3cret"

// routeSeeds reach every route of the API and of the conformance handler
// at least once (TestRouteSeedsReachEveryRoute keeps it so), with valid and
// invalid bodies and query strings: the fuzzer mutates from here.
var routeSeeds = []struct{ method, path, body string }{
	{"GET", "/v1/health", ""},
	{"POST", "/v1/users/alice/episodes", `{"text":"I live in Oslo.","at":"2026-01-10","wait":true}`},
	{"POST", "/v1/users/alice/episodes?wait=true", `{"text":"I work at Acme.","at":"2026-01-10T09:00:00.5+02:00"}`},
	{"POST", "/v1/users/alice/episodes", `{"text":"\xff"}`},
	{"POST", "/v1/users/a%2Fb/episodes", `{"text":"hi","at":"nope"}`},
	{"POST", "/v1/users/bob/episodes", `{"text":"hi","TEXT":"dup","x":1}`},
	{"POST", "/v1/users/bob/episodes", `{"text":"a"}{"text":"b"}`},
	{"POST", "/v1/users/bob/episodes", `{"text":"a"}]`}, // was accepted
	{"GET", "/v1/users/alice/state", ""},
	{"GET", "/v1/users/alice/history?predicate=lives_in&subject=user", ""},
	{"GET", "/v1/users/alice/history", ""},
	{"GET", "/v1/users/alice/query?q=where+do+I+live&k=3&valid=2026-02-01&known=2026-03-01T00:00:00Z", ""},
	{"GET", "/v1/users/alice/query?q=x&k=0", ""},
	{"GET", "/v1/users/alice/asof?valid=2026-02-01&known=2026-13-01", ""},
	{"GET", "/v1/users/alice/asof?valid=2026-02-01", ""},
	{"GET", "/v1/users/alice/conflicts", ""},
	{"GET", "/v1/users/alice/freshness", ""},
	{"POST", "/v1/users/alice/facts/zz/correct", ""},
	{"POST", "/v1/users/alice/facts/zz/accept", ""},
	{"DELETE", "/v1/users/carol", ""},
	{"DELETE", "/v1/users/%00", ""},
	{"PUT", "/v1/users/alice/state", ""},
	{"POST", "/conformance/add", `{"user":"u","text":"I like tea.","at":"2026-01-01T00:00:00Z"}`},
	{"POST", "/conformance/query", `{"user":"u","q":"tea","k":-1}`},
	{"POST", "/conformance/reset", `{"user":"u"}`},
	{"GET", "/nowhere", ""},
}

// routes are the patterns New registers (the API's, their wrong-method
// catch-alls, the conformance mount and the catch-all 404).
var routes = []string{
	"GET /v1/health",
	"POST /v1/users/{user}/episodes",
	"GET /v1/users/{user}/state",
	"GET /v1/users/{user}/history",
	"GET /v1/users/{user}/query",
	"GET /v1/users/{user}/asof",
	"GET /v1/users/{user}/conflicts",
	"GET /v1/users/{user}/freshness",
	"POST /v1/users/{user}/facts/{id}/correct",
	"POST /v1/users/{user}/facts/{id}/accept",
	"DELETE /v1/users/{user}",
	"/v1/users/{user}/state",
	"/conformance/",
	"/",
}

// serve sends one request through h and returns the recorder and the
// pattern the mux matched.
func serve(h http.Handler, method, path, body, auth string) (*httptest.ResponseRecorder, *http.Request) {
	req, err := http.NewRequest(method, "http://127.0.0.1"+path, bytes.NewBufferString(body))
	if err != nil {
		return nil, nil
	}
	req.RemoteAddr = "127.0.0.1:1234"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, req
}

// TestRouteSeedsReachEveryRoute: the fuzz seeds reach every route New
// registers, so that the fuzzer starts from each decoder and not only from
// the 404 handler.
func TestRouteSeedsReachEveryRoute(t *testing.T) {
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := New(e, Options{Conformance: true})
	seen := map[string]bool{}
	for _, s := range routeSeeds {
		_, req := serve(h, s.method, s.path, s.body, "")
		if req == nil {
			t.Fatalf("seed %s %s is not a request", s.method, s.path)
		}
		seen[req.Pattern] = true
	}
	for _, r := range routes {
		if !seen[r] {
			t.Errorf("no fuzz seed reaches %q", r)
		}
	}
}

// FuzzRequest sends arbitrary methods, paths, queries, bodies and
// Authorization headers through the HTTP API's request decoding, with and
// without a bearer token configured. Every answer is JSON and never a 500,
// every API error carries a code; without the right token nothing but
// /v1/health answers; a query time or k that does not parse is a 400, never
// silently defaulted; an accepted episode is stored for the user of the
// path, with the text and time of the body.
func FuzzRequest(f *testing.F) {
	e, err := memor.Open(filepath.Join(f.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	open, locked := New(e, Options{Conformance: true}), New(e, Options{Token: fuzzToken, Conformance: true})
	for i, s := range routeSeeds {
		f.Add(s.method, s.path, s.body, "")
		if i%4 == 0 {
			f.Add(s.method, s.path, s.body, "Bearer "+fuzzToken)
			f.Add(s.method, s.path, s.body, "Bearer s3cre")
		}
	}
	f.Fuzz(func(t *testing.T, method, path, body, auth string) {
		switch method {
		case "GET", "POST", "DELETE", "PUT":
		default:
			method = "GET"
		}
		if len(path) == 0 || path[0] != '/' {
			path = "/" + path
		}
		// An empty auth fuzzes the open handler, any other the locked one.
		h := open
		if auth != "" {
			h = locked
		}
		rec, req := serve(h, method, path, body, auth)
		if rec == nil {
			return // not a request a client could send
		}
		if req.Header.Get("Authorization") != auth {
			return // not a header value a client could send
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("%s %s %q: status %d: %s", method, path, body, rec.Code, rec.Body)
		}
		scheme, tok, _ := strings.Cut(auth, " ")
		rightToken := strings.EqualFold(scheme, "Bearer") && strings.TrimLeft(tok, " ") == fuzzToken
		if h == locked && !rightToken && req.URL.Path != "/v1/health" && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s %s with Authorization %q: status %d, want 401", method, path, auth, rec.Code)
		}
		// /conformance/ speaks memortest's plain contract, not the API's.
		conformance := strings.HasPrefix(req.URL.Path, "/conformance/")
		if rec.Code >= 400 && !conformance {
			var eb errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Code == "" {
				t.Fatalf("%s %s: status %d without a JSON error: %q", method, path, rec.Code, rec.Body)
			}
		}
		if rec.Code < 300 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: status %d with a body that is not JSON: %q", method, path, rec.Code, rec.Body)
		}
		q := req.URL.Query()
		switch req.Pattern {
		case "GET /v1/users/{user}/query", "GET /v1/users/{user}/asof":
			bad := false
			for _, name := range []string{"valid", "known"} {
				if _, err := instant.Parse(q.Get(name), time.Time{}); err != nil {
					bad = true
				}
			}
			if req.Pattern == "GET /v1/users/{user}/query" {
				if k, err := strconv.Atoi(q.Get("k")); q.Get("k") != "" && (err != nil || k < 1 || k > MaxK) {
					bad = true
				}
			}
			if bad && rec.Code != http.StatusBadRequest {
				t.Fatalf("%s %s: status %d for a query that does not parse, want 400", method, path, rec.Code)
			}
		case "POST /v1/users/{user}/episodes":
			if rec.Code >= 300 {
				return
			}
			var got episodeResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%s %s: answer %q: %v", method, path, rec.Body, err)
			}
			var sent episodeRequest
			if err := json.Unmarshal([]byte(body), &sent); err != nil {
				t.Fatalf("%s %s: accepted a body encoding/json refuses: %q: %v", method, path, body, err)
			}
			if got.Episode.User != req.PathValue("user") || got.Episode.Text != sent.Text {
				t.Fatalf("%s %s %q: stored user %q text %q", method, path, body, got.Episode.User, got.Episode.Text)
			}
			if at, _ := instant.Parse(sent.At, time.Time{}); !at.IsZero() && !got.Episode.At.Equal(at) {
				t.Fatalf("%s %s %q: stored at %v, want %v", method, path, body, got.Episode.At, at)
			}
		}
	})
}
