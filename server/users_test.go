package server

import (
	"net/http"
	"net/url"
	"testing"
)

// TestUserIDRefused: every /v1 route answers a user ID that
// memor.ValidUser refuses with 400 invalid_user, and nothing is stored.
// (DELETE of such an ID is accepted: Forget still reaches a user an
// earlier version stored under it.)
func TestUserIDRefused(t *testing.T) {
	a := newAPI(t, Options{})
	routes := []struct{ method, suffix string }{
		{"POST", "/episodes"}, {"GET", "/state"}, {"GET", "/history?predicate=lives_in"}, {"GET", "/query?q=where"},
		{"GET", "/asof?valid=2026-01-01"}, {"GET", "/conflicts"}, {"GET", "/freshness"},
		{"POST", "/facts/" + "abababababababababababababababab" + "/correct"},
		{"POST", "/facts/" + "abababababababababababababababab" + "/accept"},
	}
	for _, u := range []string{" ", "   ", "\t", "\n", "\x00", "a\x00b", "me\r\n", "\x1b[31m", "\u00a0", "\u2028", "\u200b", "a\u0085"} {
		for _, r := range routes {
			var body any
			if r.method == "POST" && r.suffix == "/episodes" {
				body = map[string]any{"text": "I live in Oslo.", "wait": true}
			}
			status, out := a.do(r.method, "/v1/users/"+url.PathEscape(u)+r.suffix, body)
			if status != http.StatusBadRequest || out["code"] != "invalid_user" {
				t.Errorf("%s /v1/users/%s%s: %d %v, want 400 invalid_user", r.method, url.PathEscape(u), r.suffix, status, out)
			}
		}
	}
	if users, err := a.e.Users(t.Context()); err != nil || len(users) != 0 {
		t.Errorf("users after refused requests: %q, %v", users, err)
	}
}
