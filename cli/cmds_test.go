package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
)

// TestReadsNeverCreateStore: a read on a missing store is an error that
// says so and creates nothing; a write creates it; a folder holding other
// files is refused by reads and writes alike, and left as it was.
func TestReadsNeverCreateStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"state"}, {"query", "where do I live?"}, {"history", "lives_in"},
		{"asof", "--valid", "2026-02-01"}, {"conflicts"}, {"users"}, {"check"}, {"export"}, {"rebuild"},
		{"correct", "00000000000000000000000000000000"}, {"forget", "--yes"}, {"prune", "--before", "2026-01-01"}} {
		r := e.run("", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no memor store at "+e.db) || r.stdout != "" {
			t.Errorf("memor %s on a missing store: %+v, want exit 1 naming the missing store", strings.Join(args, " "), r)
		}
		if _, err := os.Stat(e.db); !os.IsNotExist(err) {
			t.Fatalf("memor %s created %s (%v)", strings.Join(args, " "), e.db, err)
		}
	}
	// An empty folder is no store for a read either, and takes a write.
	if err := os.Mkdir(e.db, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := e.run("", "state"); r.code != 1 || !strings.Contains(r.stderr, "no memor store") {
		t.Errorf("state on an empty folder: %+v", r)
	}
	e.ok("add", "I live in Oslo.")
	if got := objects(e.facts("state")); got != "Oslo" {
		t.Errorf("state after the first add: %s", got)
	}

	other := filepath.Join(t.TempDir(), "notes")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "todo.txt"), []byte("buy milk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "I live in Oslo."}, {"state"}, {"import", os.DevNull}} {
		r := e.run("", append([]string{"--db", other}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "not a memor store") || !strings.Contains(r.stderr, "todo.txt") {
			t.Errorf("memor %s on a folder of other files: %+v", strings.Join(args, " "), r)
		}
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Errorf("the refused folder now holds %v", ents)
	}
	if r := e.run("", "--db", other, "serve", "--addr", "127.0.0.1:0"); r.code != 1 || !strings.Contains(r.stderr, "not a memor store") {
		t.Errorf("serve on a folder of other files: %+v", r)
	}
}

// TestServeCreatesStoreOnceListening: a serve that cannot listen leaves
// no store behind.
func TestServeCreatesStoreOnceListening(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := e.run("", "serve", "--addr", ln.Addr().String())
	if r.code == 0 || !strings.Contains(r.stderr, "cannot listen on") {
		t.Errorf("serve on a taken port: %+v", r)
	}
	if _, err := os.Stat(e.db); !os.IsNotExist(err) {
		t.Errorf("serve that never listened created %s (%v)", e.db, err)
	}
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	if _, err := os.Stat(filepath.Join(e.db, "MEMOR_FORMAT")); err != nil {
		t.Errorf("listening serve: no store (%v)", err)
	}
	s.stop(syscall.SIGINT)
}

// TestAddSaysWhatChanged: every add through the CLI reports the facts it
// added, superseded, contested, reinforced, or that nothing was
// extracted; --json carries the same as data.
func TestAddSaysWhatChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"I live in Oslo.", "--at", "2026-01-10"}, []string{"remembered episode 1", "said 2026-01-10 (valid time)", "UTC (known time)", "added  user lives_in Oslo  rule add"}},
		{[]string{"I just moved to Bergen.", "--at", "2026-03-10T09:30:00Z"}, []string{"said 2026-03-10 09:30 UTC", "added       user lives_in Bergen", "superseded  user lives_in Oslo"}},
		{[]string{"I might move to Austin."}, []string{"contested  user lives_in Austin  rule contest", "memor conflicts"}},
		{[]string{"I live in Bergen."}, []string{"reinforced  user lives_in Bergen  rule dup"}},
		{[]string{"What a lovely day it was."}, []string{"nothing extracted; kept and searchable"}},
	} {
		out := e.ok(append([]string{"add"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("memor add %q printed\n%s\nwant %q", c.args[0], out, w)
			}
		}
	}
	var rep struct {
		Seq       uint64           `json:"seq"`
		Changes   memor.Changes    `json:"changes"`
		Decisions []memor.Decision `json:"decisions"`
	}
	out := e.ok("add", "I moved to Tromsø.", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("add --json: %v\n%s", err, out)
	}
	if rep.Seq != 6 || rep.Changes != (memor.Changes{Added: 1, Superseded: 1}) || len(rep.Decisions) != 2 {
		t.Errorf("add --json: %+v", rep)
	}
	out = e.ok("add", "Nice weather.", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Changes.Nothing || rep.Decisions == nil || len(rep.Decisions) != 0 {
		t.Errorf("add --json of nothing: %+v %v\n%s", rep, err, out)
	}
}

// TestAddChangesOverHTTPAndMCP: POST …/episodes?wait=true (201) and the
// add_memory tool say what changed too.
func TestAddChangesOverHTTPAndMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	post := func(text string) map[string]any {
		resp, err := http.Post(s.base+"/v1/users/me/episodes?wait=true", "application/json", strings.NewReader(`{"text": "`+text+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %q: %d %v", text, resp.StatusCode, m)
		}
		return m
	}
	post("I live in Oslo.")
	m := post("I might move to Austin.")
	if ch, _ := m["changes"].(map[string]any); ch["contested"] != 1.0 || ch["added"] != 0.0 {
		t.Errorf("201 of a contested claim: %v", m)
	}
	if ds, _ := m["decisions"].([]any); len(ds) != 1 {
		t.Errorf("201 decisions: %v", m["decisions"])
	}
	m = post("Nice weather today.")
	if ch, _ := m["changes"].(map[string]any); ch["nothing_extracted"] != true {
		t.Errorf("201 of nothing: %v", m)
	}
	s.stop(syscall.SIGINT)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(serverBin)
	cmd.Env = e.vars
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory", Arguments: map[string]any{"user_id": "me", "text": "I just moved to Bergen."}})
	if err != nil || res.IsError {
		t.Fatalf("add_memory: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "added: user lives_in Bergen (rule supersede)") || !strings.Contains(text, "superseded: user lives_in Oslo") {
		t.Errorf("add_memory text:\n%s", text)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Changes memor.Changes `json:"changes"`
		Changed []struct{ Change, Rule string }
	}
	if err := json.Unmarshal(sc, &out); err != nil || out.Changes != (memor.Changes{Added: 1, Superseded: 1}) || len(out.Changed) != 2 || out.Changed[0].Change != "added" {
		t.Errorf("add_memory structured: %s", sc)
	}
}

// TestAsOfAxes: asof says which instant each axis was; --known before
// anything was learned explains the empty answer; --known-after audits
// what memor believed right after an episode.
func TestAsOfAxes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("add", "I live in San Francisco.", "--at", "2026-01-10")
	e.ok("add", "I just moved to Seattle.", "--at", "2026-07-11")
	out := e.ok("asof", "--valid", "2026-08-01", "--known-after", "1")
	if !strings.Contains(out, "true at 2026-08-01 (valid time), as memor knew it at ") ||
		!strings.Contains(out, "(known time: right after episode 1)") ||
		!strings.Contains(out, "user lives_in San Francisco") || strings.Contains(out, "Seattle") {
		t.Errorf("asof --known-after 1:\n%s", out)
	}
	if got := objects(e.facts("asof", "--valid", "2026-08-01", "--known-after", "2")); got != "Seattle" {
		t.Errorf("asof --known-after 2 = %s", got)
	}
	out = e.ok("asof", "--valid", "2026-08-01", "--known", "2026-07-01")
	if !strings.Contains(out, "as memor knew it at 2026-07-01 00:00:00 UTC (known time)") || !strings.Contains(out, "nothing known: memor first heard from me at ") {
		t.Errorf("asof --known before the first add:\n%s", out)
	}
	if out := e.ok("query", "Where do I live?", "--valid", "2026-02-01"); !strings.HasPrefix(out, "true at 2026-02-01 (valid time), as memor knew it at now (known time)\n") {
		t.Errorf("query --valid:\n%s", out)
	}
	if r := e.run("", "asof", "--known-after", "9"); r.code != 2 || !strings.Contains(r.stderr, "no episode 9") {
		t.Errorf("asof --known-after 9: %+v", r)
	}
	if r := e.run("", "asof", "--known-after", "1", "--known", "2026-01-01"); r.code != 2 {
		t.Errorf("asof --known-after with --known: %+v", r)
	}
}

// TestUsersListed: memor users and GET /v1/users, page by page.
func TestUsersListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, u := range []string{"carol", "alice", "bob"} {
		e.ok("add", "--user", u, "I live in Oslo.")
	}
	if out := e.ok("users"); out != "alice\nbob\ncarol\n" {
		t.Errorf("memor users:\n%s", out)
	}
	var us []string
	if err := json.Unmarshal([]byte(e.ok("users", "--json")), &us); err != nil || strings.Join(us, ",") != "alice,bob,carol" {
		t.Errorf("memor users --json: %v %v", us, err)
	}
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	defer s.stop(syscall.SIGINT)
	var all []string
	after := ""
	for range 4 {
		status, body := get(t, s.base+"/v1/users?limit=2&after="+after, "")
		var page struct {
			Users []string `json:"users"`
			Next  string   `json:"next"`
		}
		if status != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("GET /v1/users: %d %s", status, body)
		}
		all = append(all, page.Users...)
		if after = page.Next; after == "" {
			break
		}
	}
	if strings.Join(all, ",") != "alice,bob,carol" {
		t.Errorf("GET /v1/users pages: %v", all)
	}
	if status, _ := get(t, s.base+"/v1/users?limit=0", ""); status != 400 {
		t.Errorf("GET /v1/users?limit=0: %d, want 400", status)
	}
}

// TestConformanceRefusesDeadServer: memor conformance fails when nothing
// answers, or the server answers 401.
func TestConformanceRefusesDeadServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	if r := e.run("", "conformance", "--url", url+"/conformance"); r.code != 1 || !strings.Contains(r.stderr, "does not answer") {
		t.Errorf("conformance of a closed port: %+v", r)
	}
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer locked.Close()
	if r := e.run("", "conformance", "--url", locked.URL+"/conformance"); r.code != 1 || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, "MEMOR_TOKEN") {
		t.Errorf("conformance of a 401 server: %+v", r)
	}
}

// TestCommandLineFeedback: completion scripts, did-you-mean, memor-server
// naming itself, a version that is never "dev", one "memor:" per error.
func TestCommandLineFeedback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out := e.ok("completion", sh); !strings.Contains(out, "memor") || len(out) < 500 {
			t.Errorf("completion %s: %.200s", sh, out)
		}
	}
	if r := e.run("", "stat"); r.code != 2 || !strings.Contains(r.stderr, `did you mean "state"?`) {
		t.Errorf("memor stat: %+v", r)
	}
	cmd := exec.Command(serverBin, "--help")
	cmd.Env = e.vars
	help, err := cmd.Output()
	if err != nil || !strings.Contains(string(help), "memor-server [flags]") || strings.Contains(string(help), "memor mcp [flags]") {
		t.Errorf("memor-server --help: %v\n%s", err, help)
	}
	verRE := regexp.MustCompile(`^(memor|memor-server) version v0\.\d+\.\d+(\+[0-9a-f]{12}(\.dirty)?)?\n$`)
	if out := e.ok("--version"); !verRE.MatchString(out) || !strings.Contains(out, memor.Version) {
		t.Errorf("memor --version: %q", out)
	}
	cmd = exec.Command(serverBin, "--version")
	cmd.Env = e.vars
	if out, err := cmd.Output(); err != nil || !verRE.MatchString(string(out)) {
		t.Errorf("memor-server --version: %q %v", out, err)
	}
	e.ok("add", "I live in Oslo.")
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	status, body := get(t, s.base+"/v1/health", "")
	var h struct{ Version string }
	if json.Unmarshal(body, &h); status != 200 || !strings.HasPrefix(h.Version, memor.Version) {
		t.Errorf("/v1/health: %d %s", status, body)
	}
	s.stop(syscall.SIGINT)
	for _, args := range [][]string{{"add", "--at", "13/01/2026", "hi"}, {"asof", "--valid", "yesterday"}, {"--db", t.TempDir() + "/x", "state"}} {
		r := e.run("", args...)
		if strings.Count(r.stderr, "memor:") != 1 || strings.Contains(r.stderr, "cli:") {
			t.Errorf("memor %s: %q, want \"memor:\" once", strings.Join(args, " "), r.stderr)
		}
	}
}

// TestServeRequestLog: MEMOR_LOG=info logs each request (method, route
// pattern, status, duration, user hash; never the user ID or the text)
// and a shutdown line; an unknown level is refused.
func TestServeRequestLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "MEMOR_LOG=verbose")
	if r := e.run("", "serve", "--addr", "127.0.0.1:0"); r.code != 2 || !strings.Contains(r.stderr, `MEMOR_LOG="verbose" is not a log level`) {
		t.Errorf("serve with MEMOR_LOG=verbose: %+v", r)
	}
	e.vars[len(e.vars)-1] = "MEMOR_LOG=info"
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	resp, err := http.Post(s.base+"/v1/users/alice.secret@example.com/episodes?wait=true", "application/json",
		strings.NewReader(`{"text": "My password hint is pineapple."}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if code := s.stop(syscall.SIGINT); code != 0 {
		t.Errorf("serve exit %d", code)
	}
	log := s.stderr()
	lineRE := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=request method=POST route="POST /v1/users/\{user\}/episodes" status=201 duration=\S+ user=[0-9a-f]{12}$`)
	if !lineRE.MatchString(log) {
		t.Errorf("no request line in the log:\n%s", log)
	}
	if strings.Contains(log, "alice") || strings.Contains(log, "pineapple") {
		t.Errorf("the log holds the user ID or the text:\n%s", log)
	}
	if !strings.Contains(log, "memor: stopped serving http://127.0.0.1:") {
		t.Errorf("no shutdown line:\n%s", log)
	}
}
