package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackupKeepsBothClocks: issue 17's observation through the binary.
// After export and import into a new store, asof at a belief time between
// two recordings answers as the original does (the old import re-stamped
// recorded_at, so the copy knew nothing then); history carries the same
// four instants; importing the file again imports nothing and says every
// episode was skipped; --all exports the whole store.
func TestBackupKeepsBothClocks(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.ok("add", "I live in Oslo.", "--at", "2026-08-01")
	time.Sleep(20 * time.Millisecond)
	a.ok("add", "I moved to Bergen.", "--at", "2026-09-01")
	a.ok("add", "I live in Lisbon.", "--at", "2026-01-01", "--user", "bob")
	var eps []struct {
		Seq        uint64    `json:"seq"`
		User       string    `json:"user"`
		RecordedAt time.Time `json:"recorded_at"`
	}
	dump := a.ok("export", "--all")
	lines := strings.Split(strings.TrimSpace(dump), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], `"memor_export":2`) ||
		lines[4] != `{"memor_export_end":{"users":2,"episodes":3}}` {
		t.Fatalf("export --all: want a header, 3 episodes and the end line:\n%s", dump)
	}
	for _, l := range lines[1:4] {
		var ep struct {
			Seq        uint64    `json:"seq"`
			User       string    `json:"user"`
			RecordedAt time.Time `json:"recorded_at"`
		}
		if err := json.Unmarshal([]byte(l), &ep); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	// Users export in order: bob, then me. Between the two recordings of
	// me, Oslo was believed for mid-September, Bergen not yet.
	if eps[0].User != "bob" || eps[1].User != "me" || eps[2].User != "me" {
		t.Fatalf("export order %+v", eps)
	}
	between := eps[1].RecordedAt.Add(eps[2].RecordedAt.Sub(eps[1].RecordedAt) / 2).Format(time.RFC3339Nano)
	audit := []string{"asof", "--valid", "2026-09-15", "--known", between}
	later := []string{"asof", "--valid", "2026-09-15", "--known", eps[2].RecordedAt.Format(time.RFC3339Nano)}
	if got := objects(a.facts(audit...)); got != "Oslo" {
		t.Fatalf("original: %v = %s, want Oslo", audit, got)
	}
	if got := objects(a.facts(later...)); got != "Bergen" {
		t.Fatalf("original: %v = %s, want Bergen", later, got)
	}

	file := filepath.Join(t.TempDir(), "backup.jsonl")
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newEnv(t)
	r := b.run("", "import", file)
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "imported 3 episodes of 2 user(s); 0 skipped") {
		t.Fatalf("import: %+v", r)
	}
	if got := objects(b.facts(audit...)); got != "Oslo" {
		t.Errorf("restored: %v = %s, want Oslo as on the original", audit, got)
	}
	if got := objects(b.facts(later...)); got != "Bergen" {
		t.Errorf("restored: %v = %s, want Bergen as on the original", later, got)
	}
	for _, user := range []string{"me", "bob"} {
		for _, cmd := range [][]string{{"history", "lives_in"}, {"state"}} {
			args := append(cmd, "--user", user, "--json")
			if got, want := b.ok(args...), a.ok(args...); got != want {
				t.Errorf("%v after import:\n got %s\nwant %s", args, got, want)
			}
		}
	}
	_, want, _ := strings.Cut(dump, "\n")
	if _, got, _ := strings.Cut(b.ok("export"), "\n"); got != want {
		t.Errorf("the copy's export differs:\n got %s\nwant %s", got, want)
	}

	r = b.run("", "import", file)
	if r.code != 0 || !strings.Contains(r.stdout, "imported 0 episodes of 0 user(s); 3 skipped") {
		t.Errorf("second import: %+v", r)
	}
	if n := strings.Count(b.ok("export"), "\n"); n != 5 {
		t.Errorf("after a second import the copy exports %d lines, want 5", n)
	}

	// A store whose user has later history refuses the file, naming why.
	c := newEnv(t)
	c.ok("add", "I live in Rome.")
	r = c.run(dump, "import")
	if r.code != 1 || !strings.Contains(r.stderr, "line 3") || !strings.Contains(r.stderr, "later than this episode") {
		t.Errorf("import over later history: %+v", r)
	}
	if users := c.ok("export", "--all"); strings.Contains(users, `"bob"`) {
		t.Errorf("a refused import wrote bob:\n%s", users)
	}
	if r := c.run("", "export", "--all", "--user", "me"); r.code != 2 {
		t.Errorf("export --all --user: %+v, want a usage error", r)
	}
}

// TestBackupOverHTTP: a running memor serve holds its store, so a backup
// is taken and restored through it, as the README's curl lines do: GET
// …/export from one server, POST …/import into another, with the same
// history (transaction times included) on both.
func TestBackupOverHTTP(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.ok("add", "I live in Oslo.", "--at", "2026-08-01")
	a.ok("add", "I moved to Bergen.", "--at", "2026-09-01")
	want := a.ok("history", "lives_in", "--json")
	srcURL, stopSrc := serve(t, a, "--addr", "127.0.0.1:0")
	resp, err := http.Get(srcURL + "/v1/users/me/export")
	if err != nil {
		t.Fatal(err)
	}
	backup, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(backup), "\n") != 4 {
		t.Fatalf("GET export: %d\n%s", resp.StatusCode, backup)
	}
	stopSrc(syscall.SIGTERM)

	b := newEnv(t)
	b.ok("add", "I have a cat named Tom.", "--user", "alice") // the store exists; me does not
	dstURL, stopDst := serve(t, b, "--addr", "127.0.0.1:0")
	post := func() string {
		resp, err := http.Post(dstURL+"/v1/users/me/import", "application/x-ndjson", bytes.NewReader(backup))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("POST import: %d %s", resp.StatusCode, body)
		}
		return string(body)
	}
	if got := post(); !strings.Contains(got, `"episodes":2`) {
		t.Errorf("import: %s", got)
	}
	if got := post(); !strings.Contains(got, `"skipped":2`) || !strings.Contains(got, `"episodes":0`) {
		t.Errorf("second import: %s", got)
	}
	stopDst(syscall.SIGTERM)
	if got := b.ok("history", "lives_in", "--json"); got != want {
		t.Errorf("history restored over HTTP:\n got %s\nwant %s", got, want)
	}
}

// TestExportFileIsAtomic: export -o writes beside the file and renames
// over it only once the export is complete, so a failed export leaves the
// earlier backup of that name as it was and no temporary file behind, and
// a file cut short is refused by import as a whole.
func TestExportFileIsAtomic(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.ok("add", "I live in Oslo.")
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.jsonl")
	a.ok("export", "-o", file)
	backup, err := os.ReadFile(file)
	if err != nil || !strings.HasSuffix(string(backup), `{"memor_export_end":{"users":1,"episodes":1}}`+"\n") {
		t.Fatalf("backup %q, %v: want it to end with the end line", backup, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", fi.Mode().Perm())
	}
	// A user ID with a control character: the export fails after the
	// output was opened.
	if r := a.run("", "export", "-o", file, "--user", "bad\tid"); r.code == 0 {
		t.Fatalf("export of an invalid user: %+v, want a failure", r)
	}
	if got, _ := os.ReadFile(file); string(got) != string(backup) {
		t.Errorf("a failed export changed the earlier backup:\n%s", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files beside the backup after a failed export: %v", ents)
	}
	// A copy cut short imports nothing.
	cut := filepath.Join(dir, "cut.jsonl")
	whole := strings.TrimSuffix(string(backup), "\n")
	if err := os.WriteFile(cut, []byte(whole[:strings.LastIndex(whole, "\n")+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newEnv(t)
	if r := b.run("", "import", cut); r.code == 0 || !strings.Contains(r.stderr, "truncated") {
		t.Errorf("import of a file cut short: %+v, want refused as truncated", r)
	}
	if got := b.ok("export"); strings.Count(got, "\n") != 2 {
		t.Errorf("a refused import wrote episodes:\n%s", got)
	}
}
