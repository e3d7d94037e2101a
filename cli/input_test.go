package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/mcpserver"
)

// mcpProc is `memor mcp` run as the README tells a user, spoken to in raw
// JSON-RPC lines.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	done   bool
}

func startMCP(t *testing.T, e *env, argv ...string) *mcpProc {
	t.Helper()
	p := &mcpProc{t: t, cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 16), stderr: &bytes.Buffer{}}
	p.cmd.Env = e.vars
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.done {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

func (p *mcpProc) write(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("write %.60q: %v; stderr:\n%s", line, err, p.stderr)
	}
}

// send writes line and returns the next message on stdout.
func (p *mcpProc) send(line string) map[string]any {
	p.t.Helper()
	p.write(line)
	select {
	case out, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			p.done = true
			p.t.Fatalf("memor mcp ended (%v) after %.80q; stderr:\n%s", err, line, p.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil || m["jsonrpc"] != "2.0" {
			p.t.Fatalf("stdout line is not JSON-RPC: %q", out)
		}
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no answer to %.80q; stderr:\n%s", line, p.stderr)
	}
	return nil
}

// TestMCPBadLines: `memor mcp` answers each malformed JSON-RPC line with a
// JSON-RPC error, logs it to stderr, and answers the valid call that
// follows on the same stdin; user IDs that are not valid UTF-8 (or are
// half a surrogate pair) never become a user. The SDK's own stdio
// transport exits with status 1 at the first such line. It runs both
// `memor mcp` and memor-server, which the README's client configs run.
func TestMCPBadLines(t *testing.T) {
	t.Parallel()
	for name, argv := range map[string][]string{"memor mcp": {memorBin, "mcp"}, "memor-server": {serverBin}} {
		t.Run(name, func(t *testing.T) { testMCPBadLines(t, argv) })
	}
}

func testMCPBadLines(t *testing.T, argv []string) {
	e := newEnv(t)
	p := startMCP(t, e, argv...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	p.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id int, user, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"%s","text":"%s"}}}`, id, user, text)
	}
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	bad := []struct {
		name, line string
		code       float64
		id         any
	}{
		{"garbage", "garbage", -32700, nil},
		{"truncated", `{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700, nil},
		{"trailing garbage", `{"jsonrpc":"2.0","id":6,"method":"ping"} x`, -32700, nil},
		{"no jsonrpc", `{"id":7,"method":"tools/list"}`, -32600, 7.0},
		{"not an object", `[1,2]`, -32600, nil},
		{"nested too deep", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"a":` + deep + `}}`, -32700, 8.0},
		{"over-long", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"p":"` + strings.Repeat("x", mcpserver.MaxLineBytes) + `"}}`, -32700, nil},
		{"user ID \\xff", call(10, "\xff", "I live in Oslo."), -32700, 10.0},
		{"user ID \\xfe", call(11, "\xfe", "I live in Rome."), -32700, 11.0},
		{"user ID \\ud800", call(12, `\ud800`, "I live in Oslo."), -32700, 12.0},
		{"user ID \\udc00", call(13, `\udc00`, "I live in Rome."), -32700, 13.0},
	}
	for i, b := range bad {
		got := p.send(b.line)
		e, _ := got["error"].(map[string]any)
		if e == nil || e["code"] != b.code || got["id"] != b.id {
			t.Errorf("%s: got %.300v, want error %v with id %v", b.name, got, b.code, b.id)
		}
		id := 100 + i
		ok := p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_user_profile","arguments":{"user_id":"me"}}}`, id))
		if res, _ := ok["result"].(map[string]any); ok["id"] != float64(id) || res == nil || res["isError"] == true {
			t.Fatalf("after %s: valid call answered %v", b.name, ok)
		}
	}
	// A user ID refused by memor.ValidUser is a tool error the model reads.
	for i, u := range []string{" ", `a\u0000b`, `me\n`, `\t`} {
		got := p.send(call(200+i, u, "I live in Oslo."))
		if res, _ := got["result"].(map[string]any); res == nil || res["isError"] != true ||
			!strings.Contains(fmt.Sprint(res["content"]), "invalid user ID") {
			t.Errorf("add_memory for user %s: %v, want a tool error naming the invalid user ID", u, got)
		}
	}
	if got := p.send(call(300, "me", "I live in Oslo.")); got["error"] != nil {
		t.Fatalf("add_memory for me: %v", got)
	}
	p.stdin.Close()
	err := p.cmd.Wait()
	p.done = true
	if err != nil {
		t.Fatalf("memor mcp after stdin closed: %v; stderr:\n%s", err, p.stderr)
	}
	if n := strings.Count(p.stderr.String(), "refused a malformed JSON-RPC line"); n != len(bad) {
		t.Errorf("stderr logs %d refused lines, want %d:\n%s", n, len(bad), p.stderr)
	}
	users := map[string]bool{}
	// Line 1 of an export is its header, the last its end line.
	lines := strings.Split(strings.TrimSpace(e.ok("export")), "\n")
	for _, line := range lines[1 : len(lines)-1] {
		var ep memor.Episode
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		users[ep.User] = true
	}
	if len(users) != 1 || !users["me"] {
		t.Errorf("users after the session: %v, want only me", users)
	}
}

// TestUserIDRefusedByCLI: the CLI refuses the IDs memor.ValidUser refuses,
// from --user and from MEMOR_USER, with a usage exit and a message naming
// the problem, and writes nothing.
func TestUserIDRefusedByCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, u := range []string{" ", "\t", "a\x01b", "me\n", "\u00a0", "a\x1b[2Jb"} {
		for _, args := range [][]string{{"add", "I live in Oslo."}, {"state"}, {"query", "where"}, {"history", "lives_in"}} {
			r := e.run("", append([]string{"--user", u}, args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, "invalid user ID") {
				t.Errorf("memor --user %q %s: exit %d, stderr %q; want exit 2 naming the invalid user ID", u, args[0], r.code, r.stderr)
			}
		}
		env := *e
		env.vars = append(slices.Clone(e.vars), "MEMOR_USER="+u)
		if r := env.run("", "add", "I live in Oslo."); r.code != 2 || !strings.Contains(r.stderr, "invalid user ID") {
			t.Errorf("MEMOR_USER=%q memor add: exit %d, stderr %q", u, r.code, r.stderr)
		}
	}
	e.ok("add", "I live in Oslo.")
	if out := e.ok("export"); strings.Count(out, "\n") != 3 || !strings.Contains(out, `"user":"me"`) {
		t.Errorf("export after refused IDs: %s", out)
	}
}

// TestImportAllOrNothing: an import with one bad line in the middle
// imports nothing, from a file or from stdin, and the error names the
// line; the store is as it was. The same file without the bad line
// imports whole.
func TestImportAllOrNothing(t *testing.T) {
	t.Parallel()
	src := newEnv(t)
	src.ok("add", "I live in Lima.", "--at", "2026-01-10", "--user", "bob")
	src.ok("add", "I work at Acme.", "--at", "2026-02-01", "--user", "bob")
	src.ok("add", "I live in Quito.", "--at", "2026-01-10", "--user", "carol")
	src.ok("add", "I have a dog named Rex.", "--at", "2026-03-01", "--user", "carol")
	// Line 1 of an export is its header.
	header, episodes, _ := strings.Cut(src.ok("export"), "\n")
	good := strings.SplitAfter(strings.TrimSpace(episodes), "\n") // 4 episodes, the end line
	if len(good) != 5 {
		t.Fatalf("export: %q", good)
	}
	var ep memor.Episode
	if err := json.Unmarshal([]byte(good[0]), &ep); err != nil {
		t.Fatal(err)
	}
	variant := func(f func(*memor.Episode)) string {
		v := ep
		f(&v)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dst := newEnv(t)
	dst.ok("add", "I live in Oslo.", "--at", "2025-01-01")
	before := dst.ok("export")
	for name, bad := range map[string]string{
		"not JSON":                `{"user":"bob","kind":"text",`,
		"two values":              good[1][:len(good[1])-1] + good[1],
		"not an episode":          `[1,2,3]`,
		"unknown kind":            `{"user":"bob","kind":"dream","text":"x"}`,
		"no kind":                 `{"user":"bob","text":"I live in Rome."}`,
		"blank user":              variant(func(e *memor.Episode) { e.User = " " }),
		"control in user":         variant(func(e *memor.Episode) { e.User = "bob\x00" }),
		"empty user":              variant(func(e *memor.Episode) { e.User = "" }),
		"text not UTF-8":          strings.Replace(good[1], "Acme", `Ac\udc00me`, 1),
		"time out of range":       variant(func(e *memor.Episode) { e.At = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }),
		"fact without object":     `{"user":"bob","kind":"facts","at":"2026-01-01T00:00:00Z","text":"user lives_in","ops":[{"kind":"assert","subject":"user","predicate":"lives_in","object":" "}]}`,
		"correction without fact": `{"user":"bob","kind":"correct","at":"2026-01-01T00:00:00Z","text":"x"}`,
	} {
		bad = strings.TrimSuffix(bad, "\n")
		input := header + "\n" + good[0] + bad + "\n" + good[1] + good[2] + good[3]
		file := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(file, []byte(input), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, how := range []string{"file", "stdin"} {
			var r result
			if how == "file" {
				r = dst.run("", "import", file)
			} else {
				r = dst.run(input, "import")
			}
			if r.code == 0 || !strings.Contains(r.stderr, "line 3") || strings.Contains(r.stdout, "imported") {
				t.Errorf("%s from %s: exit %d, stdout %q, stderr %q; want a failure naming line 3", name, how, r.code, r.stdout, r.stderr)
			}
			if after := dst.ok("export"); after != before {
				t.Fatalf("%s from %s: the store changed:\n%s", name, how, after)
			}
		}
	}
	r := dst.run(header+"\n"+strings.Join(good, ""), "import")
	if r.code != 0 || !strings.Contains(r.stdout, "imported 4 episodes of 2 user(s)") {
		t.Fatalf("good import: %+v", r)
	}
	for user, want := range map[string]string{"me": "Oslo", "bob": "Acme,Lima", "carol": "Quito,Rex,dog"} {
		got := strings.Split(objects(dst.facts("state", "--user", user)), ",")
		slices.Sort(got)
		if strings.Join(got, ",") != want {
			t.Errorf("%s after import: %s, want %s", user, got, want)
		}
	}
}
