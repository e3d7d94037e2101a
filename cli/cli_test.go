package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/kv"
)

// The tests run the real binaries, built once.
var memorBin, serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memor-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	memorBin, serverBin = filepath.Join(dir, "memor"+exe), filepath.Join(dir, "memor-server"+exe)
	// One go build for both: the packages compile once, the links run in
	// parallel.
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../cmd/memor", "../cmd/memor-server").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is an isolated environment: its own store, home and temp folder.
type env struct {
	t    *testing.T
	db   string
	vars []string
	dir  string // working directory of the commands; "" is the test's
}

func newEnv(t *testing.T) *env {
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "store")
	return &env{t: t, db: db, vars: []string{
		"HOME=" + home, "TMPDIR=" + t.TempDir(), "MEMOR_DB=" + db, "PATH=" + os.Getenv("PATH"),
	}}
}

type result struct {
	code           int
	stdout, stderr string
}

func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(memorBin, args...)
	cmd.Env = e.vars
	cmd.Dir = e.dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// ok runs a command that must succeed and returns its stdout.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.run("", args...)
	if r.code != 0 {
		e.t.Fatalf("memor %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

type fact struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Subject   string    `json:"subject"`
	Predicate string    `json:"predicate"`
	Object    string    `json:"object"`
	ValidFrom time.Time `json:"valid_from"`
	ValidTo   time.Time `json:"valid_to"`
	ExpiredAt time.Time `json:"expired_at"`
	Rule      string    `json:"rule"`
}

func (e *env) facts(args ...string) []fact {
	e.t.Helper()
	var fs []fact
	out := e.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		e.t.Fatalf("memor %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
	if fs == nil {
		e.t.Fatalf("memor %s --json printed null, want an array", strings.Join(args, " "))
	}
	return fs
}

func objects(fs []fact) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Object)
	}
	return strings.Join(s, ",")
}

func TestDemo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = slices.DeleteFunc(e.vars, func(v string) bool { return strings.HasPrefix(v, "MEMOR_DB=") })
	r := e.run("", "demo")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("demo: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{
		"user lives_in Seattle", "since 2026-07-11", // current state
		"Alex has_pet golden retriever", "since 2026-02-02", // "last month" resolved
		"Where did I live on 2026-02-01?", "San Francisco   (2026-01-10 → 2026-07-11)", // time travel
		"supersede", "revised by a later episode", // audit trail
		"path: user → brother → Alex → has_pet → golden retriever", // multi-hop
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "user lives_in San Francisco  since") {
		t.Errorf("demo serves San Francisco as current:\n%s", r.stdout)
	}
	if lines := strings.Count(r.stdout, "\n"); lines > 40 {
		t.Errorf("demo transcript is %d lines; keep it short", lines)
	}
	// The temporary store is gone, and nothing went to the user data folder.
	for _, v := range e.vars {
		if d, ok := strings.CutPrefix(v, "TMPDIR="); ok {
			if ents, _ := os.ReadDir(d); len(ents) != 0 {
				t.Errorf("demo left %v in TMPDIR", ents)
			}
		}
		if d, ok := strings.CutPrefix(v, "HOME="); ok {
			if ents, _ := os.ReadDir(d); len(ents) != 0 {
				t.Errorf("demo wrote %v into HOME", ents)
			}
		}
	}
	// With --db the store is kept and readable afterwards.
	db := filepath.Join(t.TempDir(), "kept")
	e.ok("demo", "--db", db)
	e.vars = append(e.vars, "MEMOR_DB="+db)
	if got := objects(e.facts("history", "lives_in")); got != "San Francisco,San Francisco,Seattle" {
		t.Errorf("kept demo store: history %s", got)
	}
}

func TestWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.ok("add", "I live in San Francisco.", "--at", "2026-01-10")
	if !strings.Contains(out, "user lives_in San Francisco") {
		t.Errorf("add output: %s", out)
	}
	r := e.run("I just moved to Seattle.\n", "add", "--at", "2026-07-11T08:00:00Z")
	if r.code != 0 {
		t.Fatalf("add from stdin: %+v", r)
	}
	var ep struct {
		Seq  uint64    `json:"seq"`
		At   time.Time `json:"at"`
		Text string    `json:"text"`
	}
	if err := json.Unmarshal([]byte(e.ok("add", "My brother Alex adopted a golden retriever named Buddy last month.", "--at", "2026-03-02", "--json")), &ep); err != nil || ep.Seq != 3 {
		t.Fatalf("add --json: %+v %v", ep, err)
	}

	st := e.facts("state")
	if got := objects(st); got != "golden retriever,Buddy,Alex,Seattle" {
		t.Errorf("state = %s", got)
	}
	if got := objects(e.facts("asof", "--valid", "2026-02-01")); got != "San Francisco" {
		t.Errorf("asof 2026-02-01 = %s", got)
	}
	if got := objects(e.facts("asof", "--valid", "2026-02-01T12:00:00+02:00", "--known", "2030-01-01")); got != "San Francisco" {
		t.Errorf("asof --valid in RFC 3339 = %s", got)
	}
	// Audit: believed in the year 2000, nothing was known.
	if got := objects(e.facts("asof", "--valid", "2026-08-01", "--known", "2000-01-01T00:00:00Z")); got != "" {
		t.Errorf("asof known 2000 = %s", got)
	}
	var rs []struct {
		Fact *fact  `json:"fact"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(e.ok("query", "What kind of dog does my brother have?", "--json", "-k", "3")), &rs); err != nil || len(rs) == 0 || len(rs) > 3 {
		t.Fatalf("query --json: %v %+v", err, rs)
	}
	if !slices.ContainsFunc(rs, func(r struct {
		Fact *fact  `json:"fact"`
		Path string `json:"path"`
	}) bool {
		return r.Path == "user → brother → Alex → has_pet → golden retriever"
	}) {
		t.Errorf("multi-hop query: no result with the path user → brother → Alex → has_pet → golden retriever: %+v", rs)
	}
	if out := e.ok("query", "Where do I live?", "--valid", "2026-02-01"); !strings.Contains(out, "San Francisco") || strings.Contains(out, "Seattle") {
		t.Errorf("query --valid 2026-02-01:\n%s", out)
	}
	if out := e.ok("query", "Where do I live?"); !strings.Contains(out, "Seattle") || strings.Contains(out, "San Francisco") {
		t.Errorf("query now:\n%s", out)
	}
	hist := e.facts("history", "lives_in")
	if got := objects(hist); got != "San Francisco,San Francisco,Seattle" {
		t.Errorf("history = %s", got)
	}
	if got := objects(e.facts("history", "Alex", "has_pet")); got != "golden retriever" {
		t.Errorf("history Alex has_pet = %s", got)
	}
	if got := e.facts("conflicts"); len(got) != 0 {
		t.Errorf("conflicts = %v", got)
	}
	human := e.ok("history", "lives_in")
	for _, want := range []string{"FACT", "VALID", "BELIEVED", "supersede", "2026-01-10 → 2026-07-11"} {
		if !strings.Contains(human, want) {
			t.Errorf("history table lacks %q:\n%s", want, human)
		}
	}

	// Another user sees nothing of ours.
	if got := objects(e.facts("state", "--user", "alice")); got != "" {
		t.Errorf("alice's state = %s", got)
	}
	// MEMOR_USER selects the user too.
	e.vars = append(e.vars, "MEMOR_USER=alice")
	e.ok("add", "I live in Oslo.")
	if got := objects(e.facts("state")); got != "Oslo" {
		t.Errorf("MEMOR_USER=alice state = %s", got)
	}
	e.vars = e.vars[:len(e.vars)-1]

	var seattle string
	for _, f := range st {
		if f.Object == "Seattle" {
			seattle = f.ID
		}
	}
	e.ok("correct", seattle)
	if got := objects(e.facts("state")); !strings.Contains(got, "San Francisco") || strings.Contains(got, "Seattle") {
		t.Errorf("state after correct = %s", got)
	}
	// accept takes a contested fact only.
	if r := e.run("", "accept", seattle); r.code != 1 || !strings.Contains(r.stderr, "not contested") || !strings.Contains(r.stderr, "memor conflicts") {
		t.Errorf("accept of a retracted fact: %+v", r)
	}

	if r := e.run("", "forget"); r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("forget without --yes: %+v", r)
	}
	e.ok("forget", "--yes")
	if got := objects(e.facts("state")); got != "" {
		t.Errorf("state after forget = %s", got)
	}
	if got := objects(e.facts("state", "--user", "alice")); got != "Oslo" {
		t.Errorf("forget touched alice: %s", got)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		code int
		want string // in the error line
	}{
		{[]string{"frobnicate"}, 2, "memor --help"},
		{[]string{"state", "--bogus"}, 2, "memor state --help"},
		{[]string{"state", "extra"}, 2, "memor state --help"},
		{[]string{"correct"}, 2, "memor correct --help"},
		{[]string{"accept"}, 2, "memor accept --help"},
		{[]string{"history"}, 2, "memor history --help"},
		{[]string{"asof", "--valid", "yesterday"}, 2, "RFC 3339"},
		{[]string{"add", "--at", "13/01/2026", "hi"}, 2, "RFC 3339"},
		{[]string{"add"}, 2, "nothing to add"},
		{[]string{"query", "x", "--k", "0"}, 2, "--k"},
		{[]string{"prune"}, 2, "--before"},
		{[]string{"state", "--user", ""}, 2, "--user"},
		{[]string{"serve", "--addr", "0.0.0.0:0"}, 2, "MEMOR_TOKEN"},
		{[]string{"conformance"}, 2, "--url"},
		{[]string{"conformance", "--url", "ftp://x"}, 2, "--url"},
		{[]string{"correct", "00000000000000000000000000000000"}, 1, "no memor store"}, // reads and corrections need a store
		{[]string{"import", "/no/such/file"}, 1, "no such file or directory; check the path"},
	} {
		r := e.run("", c.args...)
		if r.code != c.code {
			t.Errorf("memor %s: exit %d, want %d (stderr %q)", strings.Join(c.args, " "), r.code, c.code, r.stderr)
		}
		if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "memor: ") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("memor %s: stderr %q: want one line starting \"memor: \" mentioning %q", strings.Join(c.args, " "), r.stderr, c.want)
		}
		if r.stdout != "" {
			t.Errorf("memor %s: stdout %q on error", strings.Join(c.args, " "), r.stdout)
		}
	}
	if r := e.run("", "--help"); r.code != 0 || !strings.Contains(r.stdout, "MEMOR_DB") {
		t.Errorf("--help: %+v", r)
	}
	if r := e.run(""); r.code != 0 || !strings.Contains(r.stdout, "memor demo") {
		t.Errorf("no arguments: %+v", r)
	}
}

func TestDefaultStoreFolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = slices.DeleteFunc(e.vars, func(v string) bool { return strings.HasPrefix(v, "MEMOR_DB=") })
	xdg := t.TempDir()
	e.vars = append(e.vars, "XDG_DATA_HOME="+xdg)
	e.ok("add", "I live in Oslo.")
	if _, err := os.Stat(filepath.Join(xdg, "memor")); err != nil {
		t.Errorf("store not in $XDG_DATA_HOME/memor: %v", err)
	}
	// --db wins over everything.
	db := filepath.Join(t.TempDir(), "x")
	e.ok("--db", db, "add", "I live in Lima.")
	if got := objects(e.facts("--db", db, "state")); got != "Lima" {
		t.Errorf("--db store state = %s", got)
	}
}

func TestMaintenance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("add", "I live in Oslo.", "--at", "2025-01-01")
	e.ok("add", "I moved to Lima.", "--at", "2025-06-01")
	e.ok("add", "I live in Quito.", "--at", "2025-01-01", "--user", "bob")
	if out := e.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("check: %s", out)
	}
	var chk struct {
		OK       bool     `json:"ok"`
		Findings []string `json:"findings"`
	}
	if err := json.Unmarshal([]byte(e.ok("check", "--json")), &chk); err != nil || !chk.OK || chk.Findings == nil {
		t.Errorf("check --json: %+v %v", chk, err)
	}
	before := objects(e.facts("history", "lives_in"))
	if out := e.ok("rebuild", "--all"); !strings.Contains(out, "rebuilt 2 user(s)") {
		t.Errorf("rebuild --all: %s", out)
	}
	if got := objects(e.facts("history", "lives_in")); got != before {
		t.Errorf("history after rebuild = %s, before %s", got, before)
	}
	e.ok("rebuild")
	var pr struct {
		Archived int `json:"archived"`
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if err := json.Unmarshal([]byte(e.ok("prune", "--before", future, "--json")), &pr); err != nil || pr.Archived < 1 {
		t.Errorf("prune: %+v %v (the move expired one version)", pr, err)
	}
	if got := objects(e.facts("state")); got != "Lima" {
		t.Errorf("state after prune = %s", got)
	}
	e.ok("check")
}

func TestImportExport(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.ok("add", "I live in San Francisco.", "--at", "2026-01-10")
	a.ok("add", "I just moved to Seattle.", "--at", "2026-07-11")
	a.ok("add", "I work at Acme.", "--at", "2026-02-01")
	a.ok("add", "I live in Oslo.", "--at", "2025-01-01", "--user", "bob")
	var acme string
	for _, f := range a.facts("state") {
		if f.Object == "Acme" {
			acme = f.ID
		}
	}
	a.ok("correct", acme)

	file := filepath.Join(t.TempDir(), "dump.jsonl")
	r := a.run("", "export", "-o", file)
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "exported 5 episodes of 2 user(s)") {
		t.Fatalf("export: %+v (want quiet stderr off a terminal)", r)
	}
	data, _ := os.ReadFile(file)
	if n := strings.Count(string(data), "\n"); n != 7 {
		t.Fatalf("export wrote %d lines, want a header, 5 episodes and the end line:\n%s", n, data)
	}

	b := newEnv(t)
	r = b.run("", "import", file)
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "imported 5 episodes of 2 user(s); 0 skipped") {
		t.Fatalf("import: %+v", r)
	}
	for _, user := range []string{"me", "bob"} {
		for _, cmd := range [][]string{{"state"}, {"history", "lives_in"}, {"history", "works_at"}, {"asof", "--valid", "2026-03-01"}} {
			args := append(cmd, "--user", user)
			if got, want := strip(b.facts(args...)), strip(a.facts(args...)); got != want {
				t.Errorf("%v after import:\n got %s\nwant %s", args, got, want)
			}
		}
	}

	// Pipe one user into another name in a third store.
	c := newEnv(t)
	r = c.run(a.ok("export", "--user", "bob"), "import", "--user", "carol")
	if r.code != 0 {
		t.Fatalf("import from stdin: %+v", r)
	}
	if got := objects(c.facts("state", "--user", "carol")); got != "Oslo" {
		t.Errorf("carol's state = %s", got)
	}

	if r := c.run("{\"user\":", "import"); r.code != 2 || !strings.Contains(r.stderr, "line 1") {
		t.Errorf("import of garbage: %+v", r)
	}
}

// strip renders facts without their transaction times, which an import
// legitimately changes.
func strip(fs []fact) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s %s %s %s %v %s|", f.ID, f.Subject, f.Predicate, f.Object, f.ValidFrom, f.ValidTo, f.Rule)
	}
	return b.String()
}

// serve starts `memor serve` with args (which should choose port 0) and
// returns its base URL on loopback and a stop function that sends it a
// signal and returns its exit code.
func serve(t *testing.T, e *env, args ...string) (string, func(syscall.Signal) int) {
	t.Helper()
	cmd := exec.Command(memorBin, append([]string{"serve"}, args...)...)
	cmd.Env = e.vars
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	urlRE := regexp.MustCompile(`serving http://(\S+):(\d+) `)
	var base string
	for sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			// Every interface includes loopback.
			base = "http://127.0.0.1:" + m[2]
			break
		}
	}
	if base == "" {
		t.Fatal("memor serve did not announce its address")
	}
	go io.Copy(io.Discard, stderr)
	return base, func(sig syscall.Signal) int {
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		exited = true
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	}
}

// TestConformanceClient runs memor conformance against a stand-in memory
// that remembers nothing: every request carries MEMOR_TOKEN as a bearer
// token, --json reports every case failed, and --strict turns that into
// exit 1. (TestREADMEHTTP runs it against memor serve.)
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	var bad []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		// memor conformance also asks GET /status (404 here: no warning).
		method := map[bool]string{true: "GET", false: "POST"}[r.URL.Path == "/mem/status"]
		if got := r.Header.Get("Authorization"); got != "Bearer t0k3n" || r.Method != method {
			bad = append(bad, r.Method+" "+r.URL.Path+" Authorization="+got)
		}
		var body struct{ User string }
		if r.Method == "POST" && (json.NewDecoder(r.Body).Decode(&body) != nil || !strings.HasPrefix(body.User, "memortest/")) {
			bad = append(bad, r.URL.Path+" for user "+strconv.Quote(body.User)+", outside memortest/")
		}
		mu.Unlock()
		if method == "GET" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/mem/query" {
			io.WriteString(w, `{"results":[]}`)
			return
		}
		io.WriteString(w, `{}`)
	}))
	defer fake.Close()
	e := newEnv(t)
	e.vars = append(e.vars, "MEMOR_TOKEN=t0k3n")
	r := e.run("", "conformance", "--url", fake.URL+"/mem", "--json")
	var rep struct {
		Arm    string `json:"arm"`
		Cases  int    `json:"cases"`
		Passed int    `json:"passed"`
		Errors int    `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || rep.Cases == 0 || rep.Passed >= rep.Cases || rep.Errors != 0 {
		t.Errorf("conformance --json against an empty memory: %+v %v", r, err)
	}
	if want := strings.TrimPrefix(fake.URL, "http://"); rep.Arm != want {
		t.Errorf("arm %q, want the URL's host %q", rep.Arm, want)
	}
	if len(bad) > 0 || calls["/mem/add"] == 0 || calls["/mem/query"] != rep.Cases || calls["/mem/reset"] == 0 {
		t.Errorf("requests: %v; without the token, of the wrong method or user: %v", calls, bad)
	}
	r = e.run("", "conformance", "--url", fake.URL+"/mem", "--strict", "--name", "empty")
	if r.code != 1 || !strings.Contains(r.stdout, "| empty |") || !strings.Contains(r.stderr, "cases failed") {
		t.Errorf("conformance --strict against an empty memory: %+v", r)
	}
}

// TestMCPStdio starts the built memor-server and talks MCP to it over
// stdio: initialize, tools/list, add, query.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(serverBin, "--db", e.db)
	cmd.Env = e.vars
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v (stderr %s)", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "memor" {
		t.Errorf("server name %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 9 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
		Arguments: map[string]any{"user_id": "me", "text": "My brother Alex adopted a golden retriever named Buddy last month.", "at": "2026-03-02"}})
	if err != nil || res.IsError {
		t.Fatalf("add_memory: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "golden retriever") {
		t.Errorf("add_memory text: %s", text)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_memory",
		Arguments: map[string]any{"user_id": "me", "text": "What kind of dog does my brother have?"}})
	if err != nil {
		t.Fatalf("query_memory: protocol error %v", err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "golden retriever") {
		t.Errorf("query_memory: error=%v %s", res.IsError, text)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("server stderr: %s", stderr.String())
	}
	// The store is consistent after the session.
	if out := e.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("check after MCP session: %s", out)
	}
}

// TestJSONEverywhere: every command that prints data prints one JSON value
// with --json, and the conflicts listing shows a contested claim.
func TestJSONEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dir = t.TempDir()
	e.ok("add", "I live in Oslo.", "--at", "2026-03-01", "--user", "c")
	e.ok("add", "I live in Bergen.", "--at", "2026-03-01", "--user", "c")
	conf := e.facts("conflicts", "--user", "c")
	if len(conf) == 0 {
		t.Fatal("conflicts --json: two cities for the same day are not listed")
	}
	human := e.ok("conflicts", "--user", "c")
	if !strings.Contains(human, "contested") || !strings.Contains(human, "RULE") {
		t.Errorf("conflicts table:\n%s", human)
	}
	// A contested claim is never served as state.
	if st := objects(e.facts("state", "--user", "c")); strings.Contains(st, ",") {
		t.Errorf("state serves both contested cities: %s", st)
	}
	id := conf[0].ID
	// Accepting one puts it in force; its rival stays contested.
	e.ok("accept", id, "--user", "c")
	if st := objects(e.facts("state", "--user", "c")); st != conf[0].Object {
		t.Errorf("state after accept = %s, want %s", st, conf[0].Object)
	}
	if left := e.facts("conflicts", "--user", "c"); len(left) != len(conf)-1 {
		t.Errorf("conflicts after accept = %v", left)
	}
	for _, args := range [][]string{
		{"add", "I live in Lima.", "--at", "2026-01-01"},
		{"query", "where do I live"},
		{"state"},
		{"history", "lives_in"},
		{"asof", "--valid", "2026-02-01", "--known", "2030-01-01"},
		{"conflicts", "--user", "c"},
		{"accept", id, "--user", "c"},
		{"correct", id, "--user", "c"},
		{"prune", "--before", "2000-01-01"},
		{"rebuild", "--all"},
		{"check"},
		{"export", "-o", "x.jsonl"},
		{"import", "x.jsonl", "--user", "copy"},
		{"forget", "--yes", "--user", "c"},
	} {
		out := e.ok(append(args, "--json")...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("memor %s --json: not one JSON value (%v):\n%s", strings.Join(args, " "), err, out)
		}
	}
	// export to stdout is JSON Lines whatever --json says.
	for _, line := range strings.Split(strings.TrimSpace(e.ok("export", "--json")), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("export line %q is not JSON", line)
		}
	}
}

// TestCheckFinding damages an index behind memor's back: check exits 1 with
// the finding and a hint, and rebuild --all, the hint, repairs it.
func TestCheckFinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("add", "I live in Oslo.", "--at", "2025-01-01")
	e.ok("add", "I moved to Lima.", "--at", "2025-06-01")
	db, err := kv.Open(e.db, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := kv.UserKey("me", kv.SubFactIndex)
	if err := db.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r := e.run("", "check")
	if r.code != 1 || !strings.Contains(r.stdout, "fact index") ||
		strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "memor rebuild --all") {
		t.Fatalf("check of a damaged store: %+v", r)
	}
	r = e.run("", "check", "--json")
	var chk struct {
		OK       bool     `json:"ok"`
		Findings []string `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &chk); r.code != 1 || err != nil || chk.OK || len(chk.Findings) == 0 {
		t.Errorf("check --json of a damaged store: %+v (%v)", r, err)
	}
	e.ok("rebuild", "--all")
	if out := e.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("check after rebuild: %s", out)
	}
	if got := objects(e.facts("state")); got != "Lima" {
		t.Errorf("state after rebuild = %s", got)
	}
}

// TestHomeDataFolder: with neither --db, MEMOR_DB nor XDG_DATA_HOME, the
// store is ~/.local/share/memor on Linux and BSD.
func TestHomeDataFolder(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		t.Skip("the data folder is not under $HOME/.local/share here")
	}
	e := newEnv(t)
	e.vars = slices.DeleteFunc(e.vars, func(v string) bool { return strings.HasPrefix(v, "MEMOR_DB=") })
	var home string
	for _, v := range e.vars {
		if h, ok := strings.CutPrefix(v, "HOME="); ok {
			home = h
		}
	}
	e.ok("add", "I live in Oslo.")
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "memor")); err != nil {
		t.Errorf("store not in ~/.local/share/memor: %v", err)
	}
	if got := objects(e.facts("state")); got != "Oslo" {
		t.Errorf("state = %s", got)
	}
}

// TestMCPSubcommandStdio speaks raw JSON-RPC to `memor mcp` with debug
// logging on: stdout carries protocol messages only, the logs go to
// stderr.
func TestMCPSubcommandStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(memorBin, "mcp")
	cmd.Env = append(e.vars, "MEMOR_LOG=debug")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	t.Cleanup(func() {
		if !done {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string)
	var all []string
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// response sends msg and returns the response with the given id.
	response := func(msg string, id float64) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed; stderr:\n%s", stderr.String())
				}
				all = append(all, line)
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
					t.Fatalf("stdout line is not JSON-RPC: %q", line)
				}
				if m["id"] == id {
					return m
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no response to %s; stderr:\n%s", msg, stderr.String())
			}
		}
	}
	init := response(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, 1)
	if name, _ := init["result"].(map[string]any)["serverInfo"].(map[string]any)["name"].(string); name != "memor" {
		t.Fatalf("initialize: %v", init)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	add := response(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"me","text":"I live in Oslo.","at":"2026-01-10"}}}`, 2)
	res, _ := add["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if learned, _ := sc["learned"].([]any); res["isError"] == true || len(learned) != 1 {
		t.Errorf("add_memory: %v", add)
	}
	bad := response(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_history","arguments":{"user_id":"me"}}}`, 3)
	if res, _ := bad["result"].(map[string]any); res["isError"] != true {
		t.Errorf("get_history without predicate: %v, want a tool error", bad)
	}
	stdin.Close()
	err = cmd.Wait()
	done = true
	if err != nil {
		t.Errorf("memor mcp after stdin closed: %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=") {
		t.Errorf("MEMOR_LOG=debug: no logs on stderr")
	}
	if len(all) < 3 {
		t.Errorf("stdout: %q", all)
	}
}

// TestTransferStructured moves structured writes (AssertBatch, End, with
// contexts, confidence and quotes) between stores, and shows what --user
// does to a correction.
func TestTransferStructured(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	ctx := context.Background()
	eng, err := memor.Open(a.db, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	if _, err := eng.AssertBatch(ctx, "me", []memor.FactInput{
		{Subject: "user", Predicate: "works_at", Object: "Acme", ValidFrom: day("2025-01-01"), Quote: "I joined Acme"},
		{Subject: "user", Predicate: "plays_instrument", Object: "violin", ValidFrom: day("2024-05-01"), Confidence: 0.9},
		{Subject: "service", Predicate: "runs_on", Object: "v1", Context: "prod", ValidFrom: day("2025-02-01")},
		{Subject: "service", Predicate: "runs_on", Object: "v2", Context: "staging", ValidFrom: day("2025-02-01")},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.End(ctx, "me", memor.EndInput{Subject: "user", Predicate: "plays_instrument", Object: "violin", At: day("2025-03-01")}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Assert(ctx, "me", memor.FactInput{Subject: "user", Predicate: "works_at", Object: "Globex", ValidFrom: day("2025-06-01")}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	var globex string
	for _, f := range a.facts("state") {
		if f.Object == "Globex" {
			globex = f.ID
		}
	}
	a.ok("correct", globex)

	dump := a.ok("export")
	b := newEnv(t)
	if r := b.run(dump, "import"); r.code != 0 || !strings.Contains(r.stdout, "0 skipped") {
		t.Fatalf("import: %+v", r)
	}
	for _, args := range [][]string{{"state"}, {"history", "works_at"}, {"history", "plays_instrument"},
		{"history", "service", "runs_on"}, {"asof", "--valid", "2025-04-01"}, {"asof", "--valid", "2024-06-01"}} {
		if got, want := strip(b.facts(args...)), strip(a.facts(args...)); got != want {
			t.Errorf("%v after import:\n got %s\nwant %s", args, got, want)
		}
	}
	if got := objects(b.facts("state")); !strings.Contains(got, "Acme") || strings.Contains(got, "Globex") || strings.Contains(got, "violin") {
		t.Errorf("imported state = %s: want Acme back (Globex corrected) and no violin (ended)", got)
	}

	// Under another user name the correction cannot find its fact: it is
	// imported (it is part of the log) and changes nothing, with a
	// warning, and the import still succeeds.
	c := newEnv(t)
	r := c.run(dump, "import", "--user", "dave")
	if r.code != 0 || !strings.Contains(r.stdout, "0 skipped") || !strings.Contains(r.stderr, "1 correction(s) found no fact") {
		t.Errorf("import --user dave: %+v", r)
	}
}

// TestImportSkipsBlankEpisode: a blank text episode (older stores accepted
// them; Add now refuses them) is skipped with a warning, and the rest of
// the file imports.
func TestImportSkipsBlankEpisode(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.ok("add", "I live in Oslo.", "--at", "2026-01-10")
	dump := a.ok("export")
	lines := strings.Split(strings.TrimSpace(dump), "\n") // header, episode, end line
	header, line := lines[0], lines[1]
	blank := regexp.MustCompile(`"text":"[^"]*"`).ReplaceAllString(line, `"text":" \n"`)
	if blank == line {
		t.Fatalf("no text field in the export line %s", line)
	}
	b := newEnv(t)
	r := b.run(header+"\n"+blank+"\n"+line+"\n"+`{"memor_export_end":{"users":1,"episodes":2}}`+"\n", "import")
	if r.code != 0 || !strings.Contains(r.stdout, "1 skipped") || !strings.Contains(r.stderr, "skipped 1 blank text episode") {
		t.Fatalf("import: %+v", r)
	}
	if got := objects(b.facts("state")); got != "Oslo" {
		t.Errorf("state after import = %s, want Oslo", got)
	}
}

// TestQueryExplain: memor query --explain prints why each result ranked
// where it did, and --json carries it.
func TestQueryExplain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("add", "My brother Alex adopted a golden retriever named Buddy last month.", "--at", "2026-03-02")
	out := e.ok("query", "What kind of dog does my brother have?", "--explain")
	for _, want := range []string{"focus: relation, about alex (through relation brother)", "view: valid at", "bm25    raw", "normalised", `asked as "What kind of dog does Alex have?"`, `"dog" 0.994`, "path    user → brother → Alex → has_pet → golden retriever"} {
		if !strings.Contains(out, want) {
			t.Errorf("query --explain lacks %q:\n%s", want, out)
		}
	}
	var rs []struct {
		Score       float64 `json:"score"`
		Explanation *struct {
			Score float64 `json:"score"`
			Fused float64 `json:"fused"`
		} `json:"explanation"`
	}
	if err := json.Unmarshal([]byte(e.ok("query", "What kind of dog does my brother have?", "--explain", "--json")), &rs); err != nil || len(rs) == 0 {
		t.Fatalf("query --explain --json: %v %+v", err, rs)
	}
	for _, r := range rs {
		if r.Explanation == nil || r.Explanation.Score != r.Score || r.Explanation.Fused <= 0 {
			t.Errorf("explanation %+v for score %v", r.Explanation, r.Score)
		}
	}
	if out := e.ok("query", "What kind of dog does my brother have?"); strings.Contains(out, "normalised") {
		t.Errorf("query without --explain explains:\n%s", out)
	}
}

// TestMCPScriptedStdin: `memor mcp < calls.jsonl`, the way a script or a
// host that closes stdin after its last call uses it: every call read
// before the end is carried out and answered before memor exits.
func TestMCPScriptedStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(memorBin, "mcp")
	cmd.Env = e.vars
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"me","text":"I live in Oslo."}}}`,
	}, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("memor mcp: %v\n%s", err, stderr.String())
	}
	answered := map[float64]bool{}
	for line := range strings.Lines(string(out)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		if res, _ := m["result"].(map[string]any); res != nil && res["isError"] != true {
			id, _ := m["id"].(float64)
			answered[id] = true
		}
	}
	if !answered[1] || !answered[2] {
		t.Errorf("answered %v, want calls 1 and 2; stdout:\n%s\nstderr:\n%s", answered, out, stderr.String())
	}
	if got := objects(e.facts("state")); got != "Oslo" {
		t.Errorf("state after the script = %s, want Oslo", got)
	}
}
