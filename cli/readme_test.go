package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/memor-db/memor/server"
)

// The README's sections on the CLI, the MCP server and the HTTP API are
// executable documentation: TestREADME runs every command they show, checks
// the demo transcript against the real one, starts memor-server with the
// Claude Desktop / Cursor configs as written, and checks the command, tool
// and route tables against the binaries. A command added to those sections
// that this file does not know how to run fails the test.

// readmeSection returns the README section under the heading that starts
// with title, up to the next level-2 heading.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n## "+title)
	if i < 0 {
		t.Fatalf("README has no section %q", title)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

type codeBlock struct{ lang, body string }

var fenceRE = regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```")

func codeBlocks(section string) []codeBlock {
	var out []codeBlock
	for _, m := range fenceRE.FindAllStringSubmatch(section, -1) {
		out = append(out, codeBlock{m[1], m[2]})
	}
	return out
}

// shellCmd is one command of a sh block: leading VAR=value assignments,
// the words, and whether it ends in &.
type shellCmd struct {
	line       string
	env        []string
	args       []string
	background bool
}

// shellCommands splits a sh block into commands the way sh would for the
// simple forms the README uses: backslash-newline continues a line, quotes
// group words, an unquoted # after a blank starts a comment, $(...) is one
// word part (kept verbatim), a trailing & backgrounds the command.
func shellCommands(t *testing.T, block string) []shellCmd {
	t.Helper()
	block = strings.ReplaceAll(block, "\\\n", " ")
	var out []shellCmd
	for _, line := range strings.Split(block, "\n") {
		var words []string
		var w strings.Builder
		inWord := false
		rs := []rune(line)
		flush := func() {
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		}
	scan:
		for i := 0; i < len(rs); i++ {
			switch c := rs[i]; {
			case c == ' ' || c == '\t':
				flush()
			case c == '#' && !inWord:
				break scan
			case c == '\'':
				j := slices.Index(rs[i+1:], '\'')
				if j < 0 {
					t.Fatalf("README: unterminated ' in %q", line)
				}
				w.WriteString(string(rs[i+1 : i+1+j]))
				i += j + 1
				inWord = true
			case c == '"':
				j := slices.Index(rs[i+1:], '"')
				if j < 0 {
					t.Fatalf("README: unterminated \" in %q", line)
				}
				w.WriteString(string(rs[i+1 : i+1+j]))
				i += j + 1
				inWord = true
			case c == '$' && i+1 < len(rs) && rs[i+1] == '(':
				j := slices.Index(rs[i:], ')')
				if j < 0 {
					t.Fatalf("README: unterminated $( in %q", line)
				}
				w.WriteString(string(rs[i : i+j+1]))
				i += j
				inWord = true
			default:
				w.WriteRune(c)
				inWord = true
			}
		}
		flush()
		if len(words) == 0 {
			continue
		}
		c := shellCmd{line: strings.Join(strings.Fields(line), " ")}
		if words[len(words)-1] == "&" {
			c.background, words = true, words[:len(words)-1]
		}
		for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
			c.env, words = append(c.env, words[0]), words[1:]
		}
		c.args = words
		out = append(out, c)
	}
	return out
}

// readmeToken stands for what $(openssl rand -hex 16) prints.
const readmeToken = "0123456789abcdef0123456789abcdef"

func expandEnv(vars []string) []string {
	var out []string
	for _, v := range vars {
		name, val, _ := strings.Cut(v, "=")
		if strings.HasPrefix(val, "$(openssl rand") {
			val = readmeToken
		}
		out = append(out, name+"="+val)
	}
	return out
}

// checkGoInstall runs the README's `go install ./cmd/...` as a user in the
// clone would (GOBIN a temporary folder) and checks that it installs
// memor and memor-server, the binaries the rest of the README runs.
func checkGoInstall(t *testing.T, c shellCmd) {
	t.Helper()
	if !slices.Equal(c.args, []string{"go", "install", "./cmd/..."}) {
		t.Errorf("README: %q: want go install ./cmd/... (the module is not published)", c.line)
		return
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README: %q: %v\n%s", c.line, err, out)
		return
	}
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	for _, name := range []string{"memor", "memor-server"} {
		if _, err := os.Stat(filepath.Join(bin, name+exe)); err != nil {
			t.Errorf("README: %q installed no %s: %v", c.line, name, err)
		}
	}
}

// checkDemo compares the README's transcript with the real one; only the
// temporary store's name differs.
func checkDemo(t *testing.T, e *env, transcript string) {
	t.Helper()
	r := e.run("", "demo")
	if r.code != 0 {
		t.Fatalf("memor demo: %+v", r)
	}
	storeRE := regexp.MustCompile(`(?m)^store: \S+ \(temporary, deleted on exit\), user "me"$`)
	norm := func(s string) string { return storeRE.ReplaceAllString(s, "store: TMP") }
	if got, want := norm(r.stdout), norm(transcript); got != want {
		t.Errorf("memor demo prints\n%s\nthe README shows\n%s", r.stdout, transcript)
	}
}

func TestREADMECLI(t *testing.T) {
	sec := readmeSection(t, "The CLI")
	blocks := codeBlocks(sec)
	var transcript string
	for _, b := range blocks {
		if b.lang == "" && strings.HasPrefix(b.body, "memor demo:") {
			transcript = b.body
		}
	}
	if transcript == "" {
		t.Fatal("README: no demo transcript in the CLI section")
	}
	e := newEnv(t)
	e.dir = t.TempDir()
	// What some README commands must print; every key must be a command of
	// the section.
	expect := map[string]struct{ has, hasNot string }{
		`memor state`:                                                {"user lives_in Seattle", "San Francisco"},
		`memor asof --valid 2026-02-01`:                              {"user lives_in San Francisco", "Seattle"},
		`memor history lives_in`:                                     {"supersede", ""},
		`memor query "Where do I live?"`:                             {"Seattle", "San Francisco"},
		`memor correct <fact-id>`:                                    {"retracted", ""},
		`memor export --all -o backup.jsonl`:                         {"exported 4 episodes of 1 user(s) to backup.jsonl", ""},
		`memor --db ./copy import backup.jsonl`:                      {"imported 4 episodes of 1 user(s); 0 skipped", ""},
		`memor --db ./copy import backup.jsonl --json`:               {`"skipped": 4`, ""},
		`memor query "Where do I live?" --explain`:                   {"focus: first person, about user", ""},
		`memor add "I still live in San Francisco." --at 2026-08-01`: {"episode 4", ""},
		`memor asof --valid 2026-08-01 --known-after 1`:              {"user lives_in San Francisco", "Seattle"},
		`memor users`: {"me\n", ""},
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		for _, c := range shellCommands(t, b.body) {
			switch {
			case c.args[0] == "go":
				checkGoInstall(t, c)
			case c.args[0] != "memor" || len(c.env) > 0 || c.background:
				t.Errorf("README: %q is not exercised by TestREADMECLI", c.line)
			case len(c.args) == 2 && c.args[1] == "demo":
				checkDemo(t, e, transcript)
			default:
				args := slices.Clone(c.args[1:])
				for i, a := range args {
					if a == "<fact-id>" {
						args[i] = factIDOf(t, e, "Seattle")
					}
				}
				out := e.ok(args...)
				key := strings.SplitN(c.line, " #", 2)[0]
				key = strings.TrimSpace(key)
				seen[key] = true
				if x, ok := expect[key]; ok {
					if !strings.Contains(out, x.has) || (x.hasNot != "" && strings.Contains(out, x.hasNot)) {
						t.Errorf("README: %s printed\n%s\nwant %q and not %q", key, out, x.has, x.hasNot)
					}
				}
			}
		}
	}
	for k := range expect {
		if !seen[k] {
			t.Errorf("README no longer shows %q: update TestREADMECLI", k)
		}
	}
	// The copy holds the same history as the original, correction and
	// transaction times included.
	copyDB := []string{"--db", filepath.Join(e.dir, "copy")}
	if got, want := e.ok(append(copyDB, "history", "lives_in", "--json")...), e.ok("history", "lives_in", "--json"); got != want {
		t.Errorf("imported copy: history\n%s\nwant\n%s", got, want)
	}

	// The command table: every row is a command whose help shows the flags
	// named, and every command of memor --help has a row.
	rowRE := regexp.MustCompile("(?m)^\\| (`[^|]*) \\| [^|]+ \\|$")
	flagRE := regexp.MustCompile(`(?:^|[\s(\x60\[])(--?[a-z][a-z-]*)`)
	documented := map[string]bool{}
	for _, m := range rowRE.FindAllStringSubmatch(sec, -1) {
		for _, part := range strings.Split(m[1], " / ") {
			name := strings.Fields(regexp.MustCompile("`([^`]+)`").FindStringSubmatch(part)[1])[0]
			documented[name] = true
			help := e.ok(name, "--help")
			for _, f := range flagRE.FindAllStringSubmatch(part, -1) {
				if !regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(f[1])+`\b`).MatchString(help) &&
					!regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(f[1])+`, `).MatchString(help) {
					t.Errorf("README table: memor %s has no flag %s:\n%s", name, f[1], help)
				}
			}
		}
	}
	cmdRE := regexp.MustCompile(`(?m)^  (\w+)\s{2,}\S`)
	root := e.ok("--help")
	_, list, _ := strings.Cut(root, "Available Commands:")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, m := range cmdRE.FindAllStringSubmatch(list, -1) {
		if m[1] != "help" && !documented[m[1]] {
			t.Errorf("memor %s is missing from the README's command table", m[1])
		}
	}
	if len(documented) < 17 {
		t.Errorf("README command table lists %d commands, want every one of them", len(documented))
	}
	// Global flags as documented.
	for _, f := range []string{"--db", "--user", "--json"} {
		if !strings.Contains(root, f) {
			t.Errorf("memor --help lacks the global flag %s", f)
		}
	}
}

// factIDOf returns the ID of the current fact whose object is object.
func factIDOf(t *testing.T, e *env, object string) string {
	t.Helper()
	for _, f := range e.facts("state") {
		if f.Object == object {
			return f.ID
		}
	}
	t.Fatalf("no current fact with object %q", object)
	return ""
}

// TestREADMEMCP starts memor-server with each MCP client config the README
// shows and checks the README's tool table against the tools it lists.
func TestREADMEMCP(t *testing.T) {
	sec := readmeSection(t, "MCP:")
	type table struct{ args, required []string }
	want := map[string]table{}
	rowRE := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| ([^|]+) \\| [^|]+ \\|$")
	argRE := regexp.MustCompile("`(\\w+)`(\\??)")
	for _, m := range rowRE.FindAllStringSubmatch(sec, -1) {
		var tb table
		for _, a := range argRE.FindAllStringSubmatch(m[2], -1) {
			if a[1] == "user" && a[2] == "" && strings.Contains(m[2], "default `user`") {
				continue // a default value, not an argument
			}
			tb.args = append(tb.args, a[1])
			if a[2] == "" {
				tb.required = append(tb.required, a[1])
			}
		}
		slices.Sort(tb.args)
		slices.Sort(tb.required)
		want[m[1]] = tb
	}
	if len(want) != 9 {
		t.Fatalf("README tool table has %d tools, want 9", len(want))
	}

	configs := 0
	for _, b := range codeBlocks(sec) {
		switch b.lang {
		case "sh":
			for _, c := range shellCommands(t, b.body) {
				switch {
				case c.args[0] == "go":
					checkGoInstall(t, c)
				case slices.Equal(c.args, []string{"which", "memor-server"}):
					// A shell lookup of the binary go install made; nothing
					// of ours to run.
				case slices.Equal(c.args, []string{"memor", "serve"}):
					// Started for each HTTP config below.
				default:
					t.Errorf("README: %q is not exercised by TestREADMEMCP", c.line)
				}
			}
		case "json":
			configs++
			var cfg struct {
				MCPServers map[string]mcpConfig `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(b.body), &cfg); err != nil {
				t.Fatalf("README MCP config is not JSON: %v\n%s", err, b.body)
			}
			srv, ok := cfg.MCPServers["memor"]
			var tools map[string]toolArgs
			switch {
			case ok && (srv.URL != "" || srv.Command == "npx"):
				// MCP over HTTP: memor serve, reached directly or through
				// the mcp-remote bridge.
				if tools = readmeHTTPTools(t, srv); tools == nil {
					continue
				}
			case ok && filepath.Base(srv.Command) == "memor-server":
				args := slices.Clone(srv.Args)
				for i, a := range args {
					if strings.HasPrefix(a, "/Users/you/") {
						args[i] = filepath.Join(t.TempDir(), filepath.Base(a))
					}
				}
				tools = mcpTools(t, newEnv(t), exec.Command(serverBin, args...))
			default:
				t.Fatalf("README MCP config: want mcpServers.memor running memor-server, mcp-remote or naming a url: %+v", cfg)
			}
			for name, tb := range want {
				got, ok := tools[name]
				if !ok {
					t.Errorf("README tool %s: not served", name)
					continue
				}
				if !slices.Equal(got.args, tb.args) || !slices.Equal(got.required, tb.required) {
					t.Errorf("README tool %s: arguments %v (required %v); the server's schema has %v (required %v)",
						name, tb.args, tb.required, got.args, got.required)
				}
			}
			if len(tools) != len(want) {
				t.Errorf("server lists %d tools, the README %d", len(tools), len(want))
			}
		}
	}
	if configs != 4 {
		t.Errorf("README shows %d MCP client configs, want Claude Desktop's and Cursor's, over stdio and HTTP", configs)
	}
}

type toolArgs struct{ args, required []string }

// mcpTools runs cmd as an MCP server over stdio and returns each tool's
// argument names and required ones, from its input schema.
func mcpTools(t *testing.T, e *env, cmd *exec.Cmd) map[string]toolArgs {
	t.Helper()
	cmd.Env = append(slices.Clone(e.vars), cmd.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return toolsOver(t, &mcp.CommandTransport{Command: cmd}, func() string { return fmt.Sprintf("%v (stderr %s)", cmd.Args, stderr.String()) })
}

// toolsOver connects to an MCP server through tr and returns each tool's
// argument names and required ones; who describes the server in failures.
func toolsOver(t *testing.T, tr mcp.Transport, who func() string) map[string]toolArgs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("%s: initialize: %v", who(), err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]toolArgs{}
	for _, tool := range res.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		var ta toolArgs
		for p := range s.Properties {
			ta.args = append(ta.args, p)
		}
		ta.required = slices.Clone(s.Required)
		slices.Sort(ta.args)
		slices.Sort(ta.required)
		out[tool.Name] = ta
	}
	return out
}

// TestREADMEHTTP runs the HTTP section: each memor serve line on a store of
// its own (they are alternatives), the curl calls and the conformance run
// against the last loopback server without a token, and every route of the
// table. Then it checks what serve promises: the store is held, and SIGINT
// applies queued episodes before exiting.
func TestREADMEHTTP(t *testing.T) {
	sec := readmeSection(t, "HTTP API:")
	type running struct {
		e     *env
		base  string
		token string
		stop  func(syscall.Signal) int
	}
	var servers []*running
	var plain *running // the last loopback server without a token
	for _, b := range codeBlocks(sec) {
		if b.lang != "sh" {
			continue
		}
		for _, c := range shellCommands(t, b.body) {
			switch {
			case len(c.args) >= 2 && c.args[0] == "memor" && c.args[1] == "serve":
				e := newEnv(t)
				vars := expandEnv(c.env)
				e.vars = append(e.vars, vars...)
				args := slices.Clone(c.args[2:])
				hasAddr := false
				for i := range args {
					if args[i] == "--addr" && i+1 < len(args) {
						// The README's fixed port may be taken: keep the
						// host, let the system pick the port.
						host, _, _ := strings.Cut(args[i+1], ":")
						args[i+1], hasAddr = host+":0", true
					}
				}
				if !hasAddr {
					args = append(args, "--addr", "127.0.0.1:0")
				}
				base, stop := serve(t, e, args...)
				r := &running{e: e, base: base, stop: stop}
				for _, v := range vars {
					if tok, ok := strings.CutPrefix(v, "MEMOR_TOKEN="); ok {
						r.token = tok
					}
				}
				servers = append(servers, r)
				if r.token == "" {
					plain = r
				}
			case c.args[0] == "curl":
				if plain == nil {
					t.Fatalf("README: %q before any loopback memor serve", c.line)
				}
				status, body := curl(t, plain.base, c.args[1:])
				if strings.Contains(c.line, "/metrics") {
					p := expfmt.NewTextParser(model.UTF8Validation)
					fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
					if status != 200 || err != nil || fams["memor_episodes_queued_total"] == nil {
						t.Errorf("README: %s: status %d, %v: %.300s", c.line, status, err, body)
					}
					continue
				}
				if status/100 != 2 || !json.Valid(body) {
					t.Errorf("README: %s: status %d: %s", c.line, status, body)
				}
				if strings.Contains(c.line, "/query?") && !strings.Contains(string(body), "Seattle") {
					t.Errorf("README: %s: the episode added just before is not found: %s", c.line, body)
				}
			case len(c.args) >= 2 && c.args[0] == "memor" && c.args[1] == "conformance":
				if plain == nil {
					t.Fatalf("README: %q before any loopback memor serve", c.line)
				}
				args := slices.Clone(c.args[1:])
				for i, a := range args {
					if u, ok := strings.CutPrefix(a, "http://127.0.0.1:7420"); ok {
						args[i] = plain.base + u
					}
				}
				// memor itself must pass every case through its own HTTP contract.
				if !slices.Contains(args, "--strict") {
					args = append(args, "--strict")
				}
				r := plain.e.run("", args...)
				if r.code != 0 || !strings.Contains(r.stdout, "| update |") || !strings.Contains(r.stdout, "| time-travel |") {
					t.Errorf("README: %s: %+v", c.line, r)
				}
			default:
				t.Errorf("README: %q is not exercised by TestREADMEHTTP", c.line)
			}
		}
	}
	if plain == nil || len(servers) < 2 {
		t.Fatalf("README: want a loopback serve and a token serve, got %d servers", len(servers))
	}

	// The server with a token: health is open, the rest needs the token.
	for _, s := range servers {
		if s.token == "" {
			continue
		}
		if st, _ := get(t, s.base+"/v1/health", ""); st != 200 {
			t.Errorf("token server: health %d", st)
		}
		if st, body := get(t, s.base+"/v1/users/alice/state", ""); st != 401 || !strings.Contains(string(body), `"unauthorized"`) {
			t.Errorf("token server without a token: %d %s", st, body)
		}
		if st, body := get(t, s.base+"/v1/users/alice/state", s.token); st != 200 {
			t.Errorf("token server with the token: %d %s", st, body)
		}
	}

	// Every route of the table answers (no 404 "no route", no 405).
	routeRE := regexp.MustCompile("(?m)^\\| (GET|POST|DELETE) \\| `([^`]+)`(.*?) \\|")
	routes := 0
	for _, m := range routeRE.FindAllStringSubmatch(sec, -1) {
		paths := []string{m[2]}
		if strings.HasPrefix(m[2], "/conformance/") {
			for _, p := range regexp.MustCompile("`/(\\w+)`").FindAllStringSubmatch(m[3], -1) {
				paths = append(paths, "/conformance/"+p[1])
			}
		}
		for _, p := range paths {
			routes++
			checkRoute(t, plain.base, m[1], p)
		}
	}
	if routes < 13 {
		t.Errorf("README route table: %d routes, want every one", routes)
	}

	// The store belongs to the server while it runs.
	if r := plain.e.run("", "state"); r.code != 1 || !strings.Contains(r.stderr, "another memor process") {
		t.Errorf("state while serving: %+v", r)
	}
	// Queue an episode without waiting, then stop: it is applied first.
	resp, err := http.Post(plain.base+"/v1/users/srv/episodes", "application/json", strings.NewReader(`{"text":"I live in Oslo.","at":"2025-01-01"}`))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("add: %v %v", resp, err)
	}
	resp.Body.Close()
	// SIGINT (Ctrl-C) or SIGTERM (a service manager) stop it cleanly; the
	// server with the queued episode gets SIGTERM.
	for _, s := range servers {
		sig := syscall.SIGINT
		if s == plain {
			sig = syscall.SIGTERM
		}
		if code := s.stop(sig); code != 0 {
			t.Errorf("serve exit code after %v: %d", sig, code)
		}
	}
	if got := objects(plain.e.facts("state", "--user", "srv")); got != "Oslo" {
		t.Errorf("state after serve stopped = %s", got)
	}
	// The limits the README states are the server's.
	m := regexp.MustCompile(`Bodies are limited to (\d+) MiB; read/write/idle timeouts (\d+) s / (\d+) s / (\d+) min`).FindStringSubmatch(strings.Join(strings.Fields(sec), " "))
	if m == nil {
		t.Errorf("README: the body limit and timeouts sentence is gone; update TestREADMEHTTP")
	} else if m[1] != fmt.Sprint(server.DefaultMaxBodyBytes>>20) || m[2] != fmt.Sprint(server.DefaultReadTimeout.Seconds()) ||
		m[3] != fmt.Sprint(server.DefaultWriteTimeout.Seconds()) || m[4] != fmt.Sprint(server.DefaultIdleTimeout.Minutes()) {
		t.Errorf("README states %v; the server: %d MiB, %v / %v / %v", m[1:], server.DefaultMaxBodyBytes>>20,
			server.DefaultReadTimeout, server.DefaultWriteTimeout, server.DefaultIdleTimeout)
	}
	// serve's default address is loopback.
	if help := plain.e.ok("serve", "--help"); !strings.Contains(help, `(default "127.0.0.1:7420")`) {
		t.Errorf("serve --help does not show the loopback default:\n%s", help)
	}
}

// checkRoute sends a plausible request to a route of the README's table and
// fails if the server has no such route.
func checkRoute(t *testing.T, base, method, path string) {
	t.Helper()
	path = strings.NewReplacer("{user}", "readme-routes", "{id}", strings.Repeat("0", 32)).Replace(path)
	body := map[string]string{
		"/v1/users/readme-routes/episodes": `{"text":"I live in Oslo.","wait":true}`,
		"/conformance/add":                 `{"user":"memortest/readme-routes","text":"I live in Oslo.","at":"2026-01-01T00:00:00Z"}`,
		"/conformance/query":               `{"user":"memortest/readme-routes","q":"where do I live","k":3}`,
		"/conformance/reset":               `{"user":"memortest/readme-routes"}`,
	}[path]
	query := map[string]string{
		"/v1/users/readme-routes/history": "?predicate=lives_in",
		"/v1/users/readme-routes/query":   "?q=where+do+I+live",
	}[path]
	req, err := http.NewRequest(method, base+path+query, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantStatus := 200
	switch {
	case strings.HasSuffix(path, "/episodes"):
		wantStatus = 201
	case strings.HasSuffix(path, "/correct"), strings.HasSuffix(path, "/accept"):
		wantStatus = 404 // no such fact, but a route
	}
	if resp.StatusCode != wantStatus || strings.Contains(string(data), "no route") || !json.Valid(data) {
		t.Errorf("README route %s %s: %d %s, want %d", method, path, resp.StatusCode, data, wantStatus)
	}
}

// curl sends what `curl -s [-XMETHOD] URL [-d DATA] [-H HEADER]` would.
func curl(t *testing.T, base string, args []string) (int, []byte) {
	t.Helper()
	method, target, data := "", "", ""
	var headers []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s":
		case strings.HasPrefix(a, "-X"):
			method = strings.TrimPrefix(a, "-X")
			if method == "" && i+1 < len(args) {
				i++
				method = args[i]
			}
		case a == "-d" && i+1 < len(args):
			i++
			data = args[i]
		case a == "-H" && i+1 < len(args):
			i++
			headers = append(headers, args[i])
		case !strings.HasPrefix(a, "-") && target == "":
			target = a
		default:
			t.Fatalf("README: curl option %q is not understood by this test", a)
		}
	}
	if method == "" {
		method = "GET"
		if data != "" {
			method = "POST"
		}
	}
	for _, h := range []string{"http://localhost:7420", "localhost:7420", "http://127.0.0.1:7420", "127.0.0.1:7420"} {
		if rest, ok := strings.CutPrefix(target, h); ok {
			target = base + rest
			break
		}
	}
	req, err := http.NewRequest(method, target, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if data != "" {
		// curl -d sends this content type.
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
