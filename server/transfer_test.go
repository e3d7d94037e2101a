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
	if len(lines) != 4 || !strings.Contains(lines[0], `"memor_export":2`) || strings.Contains(string(body), "Rome") ||
		lines[3] != `{"memor_export_end":{"users":1,"episodes":2}}` {
		t.Fatalf("export of alice: want a header, her 2 episodes only and the end line:\n%s", body)
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

// TestImportEndpoint: POST /v1/users/{user}/import restores a download of
// GET …/export; again, it skips everything; a line of another user, a
// form's content type, or history later than the file's are refused and
// import nothing.
func TestImportEndpoint(t *testing.T) {
	ctx := context.Background()
	src := openEngine(t, memor.Options{})
	for _, text := range []string{"I live in Oslo.", "I moved to Bergen."} {
		if _, err := src.Add(ctx, "alice", text, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	var file bytes.Buffer
	if _, err := src.Export(ctx, &file, "alice"); err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, Options{})
	post := func(path, ct, body string) (int, string) {
		req, _ := http.NewRequest("POST", a.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/v1/users/alice/import", "text/plain", file.String()); code != http.StatusUnsupportedMediaType {
		t.Errorf("import as text/plain: %d %s, want 415", code, body)
	}
	if code, body := post("/v1/users/bob/import", "application/x-ndjson", file.String()); code != http.StatusBadRequest ||
		!strings.Contains(body, "invalid_import") || !strings.Contains(body, "line 2") {
		t.Errorf("alice's backup into bob: %d %s, want 400 invalid_import naming line 2", code, body)
	}
	code, body := post("/v1/users/alice/import", "application/x-ndjson", file.String())
	if code != 200 || !strings.Contains(body, `"episodes":2`) {
		t.Fatalf("import: %d %s", code, body)
	}
	if code, body := post("/v1/users/alice/import", "application/x-ndjson; charset=utf-8", file.String()); code != 200 ||
		!strings.Contains(body, `"episodes":0`) || !strings.Contains(body, `"skipped":2`) {
		t.Errorf("second import: %d %s, want 0 imported and 2 skipped", code, body)
	}
	want, _ := src.History(ctx, "alice", "user", "lives_in")
	got, _ := a.e.History(ctx, "alice", "user", "lives_in")
	if len(got) != len(want) || len(got) == 0 || !got[0].RecordedAt.Equal(want[0].RecordedAt) {
		t.Errorf("history after import: %v, want %v", got, want)
	}
	// carol has history later than the file (re-labelled as hers).
	if _, err := a.e.Add(ctx, "carol", "I live in Rome.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	theirs := strings.ReplaceAll(file.String(), `"user":"alice"`, `"user":"carol"`)
	if code, body := post("/v1/users/carol/import", "application/json", theirs); code != http.StatusConflict ||
		!strings.Contains(body, "history_conflict") {
		t.Errorf("import over later history: %d %s, want 409", code, body)
	}
	if eps, _ := a.e.Episodes(ctx, "carol"); len(eps) != 1 {
		t.Errorf("a refused import wrote %d episodes of carol", len(eps))
	}
}
