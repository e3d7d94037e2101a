package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestEpochMove is the story of issue 15.6: a move dated 1970-01-01 (the
// Unix epoch, 0 ns) supersedes the earlier value like any other date. The
// resolver used to read 0 ns as "open" and "the zero time", so Rome came
// back with valid_from 0001-01-01 and Paris stayed current beside it.
func TestEpochMove(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("x", "I have lived in Paris since 1965.", "2026-01-01")
	a.tell("x", "I moved to Rome in 1970.", "2026-01-02")
	st := a.must(200, "GET", "/v1/users/x/state", nil)
	if got := objects(st); strings.Join(got, ",") != "Rome" {
		t.Fatalf("state = %v, want [Rome]", got)
	}
	if vf := st["facts"].([]any)[0].(map[string]any)["valid_from"]; vf != "1970-01-01T00:00:00Z" {
		t.Errorf("Rome valid_from = %v, want 1970-01-01T00:00:00Z", vf)
	}
	if got := objects(a.must(200, "GET", "/v1/users/x/asof?valid=1969-12-31T23:59:59.999999999Z", nil)); strings.Join(got, ",") != "Paris" {
		t.Errorf("asof 1 ns before the epoch = %v, want [Paris]", got)
	}
	if got := objects(a.must(200, "GET", "/v1/users/x/asof?valid=1970-01-01", nil)); strings.Join(got, ",") != "Rome" {
		t.Errorf("asof the epoch = %v, want [Rome]", got)
	}
}

// TestAtOutOfRange: an "at" memor cannot store is invalid_time, never
// "now" (0001-01-01 is Go's zero time, which the library reads as unset).
func TestAtOutOfRange(t *testing.T) {
	a := newAPI(t, Options{})
	for _, at := range []string{"0001-01-01", "0001-01-01T00:00:00Z", "1677-12-31T23:59:59Z", "2262-01-01", "9999-12-31"} {
		st, out := a.do("POST", "/v1/users/x/episodes", map[string]any{"text": "I live in Oslo.", "at": at, "wait": true})
		if st != http.StatusBadRequest || out["code"] != "invalid_time" {
			t.Errorf("at %q: %d %v, want 400 invalid_time", at, st, out)
		}
	}
	for _, q := range []string{"valid=0001-01-01", "known=0001-01-01", "valid=2262-01-01"} {
		st, out := a.do("GET", "/v1/users/x/asof?"+q, nil)
		if st != http.StatusBadRequest || out["code"] != "invalid_time" {
			t.Errorf("asof?%s: %d %v, want 400 invalid_time", q, st, out)
		}
	}
	// The bounds themselves: the first instant accepted, the last one.
	for _, at := range []string{"1678-01-01", "2261-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z"} {
		a.tell("y", "I live in Oslo.", at)
	}
}
