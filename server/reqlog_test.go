package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memor-db/memor"
)

// TestRequestLog: one info line per request with the route pattern and
// the user's hash, never the path; nothing below info; a streaming
// handler still finds http.Flusher through the status recorder.
func TestRequestLog(t *testing.T) {
	e, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var buf bytes.Buffer
	h := New(e, Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	for _, target := range []string{"/v1/users/bob%40example.com/state", "/v1/nope", "/v1/users?limit=x"} {
		req := httptest.NewRequest("GET", target, nil)
		req.Host = "127.0.0.1"
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	log := buf.String()
	for _, want := range []string{`route="GET /v1/users/{user}/state" status=200`, "user=" + UserHash("bob@example.com"),
		`route=/ status=404`, `route="GET /v1/users" status=400`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "bob") || strings.Contains(log, "nope") {
		t.Errorf("the log holds a path:\n%s", log)
	}
	if len(UserHash("a")) != 12 || UserHash("a") == UserHash("b") {
		t.Errorf("UserHash: %q %q", UserHash("a"), UserHash("b"))
	}
	var sw http.ResponseWriter = &statusWriter{ResponseWriter: httptest.NewRecorder()}
	if _, ok := sw.(http.Flusher); !ok {
		t.Error("statusWriter hides http.Flusher")
	}

	buf.Reset()
	quiet := New(e, Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	req := httptest.NewRequest("GET", "/v1/health", nil)
	req.Host = "127.0.0.1"
	quiet.ServeHTTP(httptest.NewRecorder(), req)
	if buf.Len() != 0 {
		t.Errorf("warn level logged a request: %s", buf.String())
	}
}

// TestRefusalLogNamesNoUser: the warning for a refused cross-site request
// names its route pattern, never the path with the user ID in it.
func TestRefusalLogNamesNoUser(t *testing.T) {
	e, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var logs strings.Builder
	h := New(e, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r := httptest.NewRequest("POST", "http://127.0.0.1:7420/v1/users/alice-secret/episodes", strings.NewReader(`{"text":"hi"}`))
	r.Header.Set("Origin", "https://evil.example")
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 {
		t.Fatalf("cross-site request: %d %s", w.Code, w.Body)
	}
	if out := logs.String(); strings.Contains(out, "alice-secret") || !strings.Contains(out, "route=\"POST /v1/users/{user}/episodes\"") {
		t.Errorf("refusal log: %s", out)
	}
}
