package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memor-db/memor"
)

// FuzzRequest sends arbitrary methods, paths, queries and bodies through
// the HTTP API's request decoding: every answer is JSON, never a 500, and
// every error carries a code.
func FuzzRequest(f *testing.F) {
	e, err := memor.Open(filepath.Join(f.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	h := New(e, Options{})
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/v1/users/alice/episodes", `{"text":"I live in Oslo.","at":"2026-01-10","wait":true}`},
		{"POST", "/v1/users/alice/episodes", `{"text":"\xff"}`},
		{"POST", "/v1/users/a%2Fb/episodes", `{"text":"hi","at":"nope"}`},
		{"GET", "/v1/users/alice/query?q=where+do+I+live&k=3&valid=2026-02-01", ""},
		{"GET", "/v1/users/alice/asof?valid=2026-02-01&known=2026-13-01", ""},
		{"GET", "/v1/users/alice/history?predicate=lives_in", ""},
		{"POST", "/v1/users/alice/facts/zz/correct", ""},
		{"POST", "/conformance/add", `{"user":"u","text":"I like tea.","at":"2026-01-01T00:00:00Z"}`},
		{"POST", "/conformance/query", `{"user":"u","q":"tea","k":-1}`},
		{"DELETE", "/v1/users/%00", ""},
	} {
		f.Add(s.method, s.path, s.body)
	}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		switch method {
		case "GET", "POST", "DELETE", "PUT":
		default:
			method = "GET"
		}
		if len(path) == 0 || path[0] != '/' {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, bytes.NewBufferString(body))
		if err != nil {
			return // not a request a client could send
		}
		req.RemoteAddr = "127.0.0.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("%s %s %q: status %d: %s", method, path, body, rec.Code, rec.Body)
		}
		// /conformance/ speaks memortest's plain contract, not the API's.
		if rec.Code >= 400 && rec.Code != http.StatusNotFound && !strings.HasPrefix(req.URL.Path, "/conformance/") {
			var eb errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Code == "" {
				t.Fatalf("%s %s: status %d without a JSON error: %q", method, path, rec.Code, rec.Body)
			}
		}
	})
}
