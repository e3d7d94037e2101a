package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// TestReadsSayHowFresh: every read carries the user's episode watermark
// (Memor-Applied, -Latest, -Pending, -Failed), taken before the read, so
// a client sees that an episode it added is not reflected yet.
func TestReadsSayHowFresh(t *testing.T) {
	gate := make(chan struct{})
	rules := extract.NewRuleExtractor()
	x := extract.ExtractorFunc(func(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return rules.Extract(ctx, text, at)
	})
	e := openEngine(t, memor.Options{Extractor: x})
	srv := httptest.NewServer(New(e, Options{}))
	defer srv.Close()
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	a := &api{t: t, srv: srv, e: e}
	a.must(http.StatusAccepted, "POST", "/v1/users/me/episodes", map[string]any{"text": "I live in Oslo."})

	reads := []string{"/v1/users/me/state", "/v1/users/me/history?predicate=lives_in", "/v1/users/me/asof?valid=2026-01-01",
		"/v1/users/me/conflicts", "/v1/users/me/query?q=where+do+I+live"}
	check := func(want map[string]string) {
		t.Helper()
		for _, path := range reads {
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: status %d", path, resp.StatusCode)
			}
			for h, v := range want {
				if got := resp.Header.Get(h); got != v {
					t.Errorf("GET %s: %s = %q, want %q", path, h, got, v)
				}
			}
		}
	}
	check(map[string]string{"Memor-Applied": "0", "Memor-Latest": "1", "Memor-Pending": "1", "Memor-Failed": "0"})
	close(gate)
	released = true
	if err := e.Flush(context.Background(), "me"); err != nil {
		t.Fatal(err)
	}
	check(map[string]string{"Memor-Applied": "1", "Memor-Latest": "1", "Memor-Pending": "0", "Memor-Failed": "0"})
}
