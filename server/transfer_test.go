package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/memor-db/memor"
)

// TestExportEndpoint: GET /v1/users/{user}/export streams the user's
// backup in the export format, which Import restores with both clocks;
// it takes the token like every route.
func TestExportEndpoint(t *testing.T) {
	ctx := context.Background()
	a := newAPI(t, Options{Token: strings.Repeat("t", 32)})
	for _, text := range []string{"I live in Oslo.", "I moved to Bergen."} {
		if _, err := a.e.Add(ctx, "alice", text, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.e.Add(ctx, "bob", "I live in Rome.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	get := func(path, token string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	if resp, _ := get("/v1/users/alice/export", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("export without the token: %d, want 401", resp.StatusCode)
	}
	resp, body := get("/v1/users/alice/export", a.token)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"memor_export":1`) || strings.Contains(string(body), "Rome") {
		t.Fatalf("export of alice: want a header and her 2 episodes only:\n%s", body)
	}
	dst := openEngine(t, memor.Options{})
	sum, err := dst.Import(ctx, bytes.NewReader(body))
	if err != nil || sum.Episodes != 2 {
		t.Fatalf("import of the download: %+v, %v", sum, err)
	}
	want, _ := a.e.History(ctx, "alice", "user", "lives_in")
	got, _ := dst.History(ctx, "alice", "user", "lives_in")
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("history after import: %v, want %v", got, want)
	}
	for i := range got {
		got[i].Doc, want[i].Doc = 0, 0
		if !got[i].RecordedAt.Equal(want[i].RecordedAt) || !got[i].ExpiredAt.Equal(want[i].ExpiredAt) || got[i].ID != want[i].ID {
			t.Errorf("version %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if resp, _ := get("/v1/users/a%00b/export", a.token); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("export of an invalid user: %d, want 400", resp.StatusCode)
	}
	if code, _ := a.do("POST", "/v1/users/alice/export", "{}"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST export: %d, want 405", code)
	}
}
