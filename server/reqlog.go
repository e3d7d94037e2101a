package server

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// statusWriter remembers the status a handler wrote, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush passes a flush through, for handlers that stream (server-sent
// events, long exports) and look for http.Flusher.
func (s *statusWriter) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// UserHash is how the request log names a user: the first 12 hex digits
// of the SHA-256 of the ID, enough to follow one user through the log
// without writing the ID (which may be an e-mail address) into it.
func UserHash(user string) string {
	if user == "" {
		return ""
	}
	h := sha256.Sum256([]byte(user))
	return hex.EncodeToString(h[:6])
}

// logRequest writes one info line per request: method, route pattern
// (never the path, which holds the user ID and fact IDs), status,
// duration and the user's hash. Nothing of a body or query is logged.
func (h *Handler) logRequest(r *http.Request, status int, took time.Duration) {
	if !h.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	route := r.Pattern
	if route == "" {
		route = "(refused)" // answered before routing: guard, token
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route),
		slog.Int("status", status), slog.Duration("duration", took)}
	if u := UserHash(r.PathValue("user")); u != "" {
		attrs = append(attrs, slog.String("user", u))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}
