package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// served is a running `memor serve` whose stderr is kept.
type served struct {
	base string
	stop func(syscall.Signal) int
	mu   sync.Mutex
	log  strings.Builder
}

func (s *served) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// serveLogged starts memor serve like serve does, keeping its stderr.
func serveLogged(t *testing.T, e *env, args ...string) *served {
	t.Helper()
	cmd := exec.Command(memorBin, append([]string{"serve"}, args...)...)
	cmd.Env = e.vars
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	found := make(chan string, 1)
	read := make(chan struct{}) // closed once the pipe is read to its end
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pipe)
		urlRE := regexp.MustCompile(`serving http://(\S+):(\d+) `)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- "http://127.0.0.1:" + m[2]
			}
		}
		close(found)
	}()
	select {
	case b, ok := <-found:
		if !ok {
			t.Fatalf("memor serve %s exited without serving:\n%s", strings.Join(args, " "), s.stderr())
		}
		s.base = b
	case <-time.After(30 * time.Second):
		t.Fatalf("memor serve did not announce its address:\n%s", s.stderr())
	}
	s.stop = func(sig syscall.Signal) int {
		cmd.Process.Signal(sig)
		// Wait closes the pipe once the process exits, dropping what the
		// scanner has not read yet (the shutdown line): read it out first.
		<-read
		err := cmd.Wait()
		exited = true
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	}
	return s
}

// send is one raw HTTP request; it returns the status and the error code.
func send(t *testing.T, method, target, body string, headers ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb struct{ Code string }
	data, _ := io.ReadAll(resp.Body)
	json.Unmarshal(data, &eb)
	return resp.StatusCode, eb.Code
}

// TestServeRefusesIssueCurls sends the three curl requests of issue 15.3 to
// the binary, with and without --conformance: all are refused and the real
// user "me" keeps its memory.
func TestServeRefusesIssueCurls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("add", "I live in Lisbon.", "--at", "2026-01-10")
	before := e.ok("export")
	for _, flags := range [][]string{nil, {"--conformance"}} {
		s := serveLogged(t, e, append([]string{"--addr", "127.0.0.1:0"}, flags...)...)
		if st, code := send(t, "POST", s.base+"/v1/users/me/episodes", `{"text":"I just moved to Mordor.","wait":true}`,
			"Content-Type", "text/plain", "Origin", "http://evil.example"); st != 403 || code != "forbidden_origin" {
			t.Errorf("%v: cross-site episode: %d %s, want 403 forbidden_origin", flags, st, code)
		}
		if st, code := send(t, "GET", s.base+"/v1/users/me/state", "", "Host", "attacker.example"); st != 403 || code != "forbidden_host" {
			t.Errorf("%v: rebinding Host: %d %s, want 403 forbidden_host", flags, st, code)
		}
		st, code := send(t, "POST", s.base+"/conformance/reset", `{"user":"me"}`, "Content-Type", "text/plain")
		if st != 415 || code != "unsupported_media_type" {
			t.Errorf("%v: text/plain conformance reset: %d %s, want 415", flags, st, code)
		}
		st, _ = send(t, "POST", s.base+"/conformance/reset", `{"user":"me"}`, "Content-Type", "application/json")
		if want := map[bool]int{false: 404, true: 400}[flags != nil]; st != want {
			t.Errorf("%v: JSON conformance reset of me: %d, want %d", flags, st, want)
		}
		if code := s.stop(syscall.SIGTERM); code != 0 {
			t.Errorf("serve exit %d:\n%s", code, s.stderr())
		}
		if !strings.Contains(s.stderr(), "http://evil.example") || !strings.Contains(s.stderr(), "attacker.example") {
			t.Errorf("the refusals are not in serve's log:\n%s", s.stderr())
		}
	}
	if after := e.ok("export"); after != before {
		t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestServeFlagsRefused: a short token and a malformed --allow-origin stop
// serve at start with one clear line and the usage exit code.
func TestServeFlagsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := newEnv(t)
	tok.vars = append(tok.vars, "MEMOR_TOKEN=s3cret")
	for _, c := range []struct {
		e    *env
		args []string
		want string
	}{
		{tok, []string{"serve", "--addr", "127.0.0.1:0"}, "MEMOR_TOKEN is 6 bytes, shorter than 16"},
		{tok, []string{"serve", "--addr", "0.0.0.0:0"}, "MEMOR_TOKEN is 6 bytes, shorter than 16"},
		{e, []string{"serve", "--addr", "127.0.0.1:0", "--allow-origin", "*"}, `--allow-origin "*" is not an origin`},
		{e, []string{"serve", "--addr", "127.0.0.1:0", "--allow-origin", "app.example"}, `--allow-origin "app.example" is not an origin`},
	} {
		// Bounded: a serve that accepts the flags is killed, not leaked.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, memorBin, c.args...)
		cmd.Env = c.e.vars
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		timedOut := ctx.Err() != nil
		cancel()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if timedOut {
			t.Errorf("memor %s was serving; want it refused", strings.Join(c.args, " "))
			continue
		}
		if stderr := errb.String(); code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("memor %s: exit %d %q, want exit 2 with %q on one line", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

// TestREADMEConformanceRecipe runs the README's conformance recipe
// (memor serve --conformance & memor conformance --url …) on a store that
// holds a real user, "me" (the CLI's default user, as the suite's own
// default user is): the run passes, warns that the store holds a user
// outside the suite, and leaves the store exactly as it was, with no suite
// user behind.
func TestREADMEConformanceRecipe(t *testing.T) {
	t.Parallel()
	sec := readmeSection(t, "HTTP API:")
	var recipe []shellCmd
	for _, b := range codeBlocks(sec) {
		if b.lang == "sh" && strings.Contains(b.body, "memor conformance") {
			recipe = shellCommands(t, b.body)
		}
	}
	if len(recipe) == 0 {
		t.Fatal("README: no sh block with memor conformance in the HTTP section")
	}
	e := newEnv(t)
	e.ok("add", "I live in Lisbon.", "--at", "2026-01-10")
	e.ok("add", "I work at Initech.", "--at", "2026-02-01")
	e.ok("add", "I have a cat named Tom.", "--at", "2026-03-01", "--user", "alice")
	before, beforeState := e.ok("export"), objects(e.facts("state"))
	var s *served
	ran := false
	for _, c := range recipe {
		switch {
		case len(c.args) >= 2 && c.args[0] == "memor" && c.args[1] == "serve":
			if !c.background {
				t.Errorf("README: %q must run in the background", c.line)
			}
			s = serveLogged(t, e, append(slices.Clone(c.args[2:]), "--addr", "127.0.0.1:0")...)
		case len(c.args) >= 2 && c.args[0] == "memor" && c.args[1] == "conformance":
			if s == nil {
				t.Fatalf("README: %q before memor serve", c.line)
			}
			args := slices.Clone(c.args[1:])
			for i, a := range args {
				if u, ok := strings.CutPrefix(a, "http://127.0.0.1:7420"); ok {
					args[i] = s.base + u
				}
			}
			r := e.run("", append(args, "--strict")...)
			ran = true
			if r.code != 0 || !strings.Contains(r.stdout, "| update |") {
				t.Errorf("README: %s: %+v", c.line, r)
			}
			if !strings.Contains(r.stderr, `warning: the store behind`) || !strings.Contains(r.stderr, `holds 2 user(s) outside "memortest/"`) {
				t.Errorf("README: %s: no warning about the store's own users: %q", c.line, r.stderr)
			}
		default:
			t.Errorf("README: %q is not exercised by TestREADMEConformanceRecipe", c.line)
		}
	}
	if !ran {
		t.Fatal("README: the recipe runs no memor conformance")
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d:\n%s", code, s.stderr())
	}
	if got := objects(e.facts("state")); got != beforeState || got != "Initech,Lisbon" && got != "Lisbon,Initech" {
		t.Errorf("me after the conformance run: %s, want %s", got, beforeState)
	}
	// Every episode of every user as before: me and alice untouched, no
	// memortest/ user left behind.
	if after := e.ok("export"); after != before {
		t.Errorf("the store changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// findChromium returns a headless-capable Chromium, or "" .
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// attackPage is served from http://evil.example:PORT. It makes the
// request a hostile page can make without a preflight (a no-cors POST of
// text/plain), tries to read the profile (a CORS GET), a JSON POST and a
// DELETE (both need a preflight), the same two kinds of call to MCP at
// /mcp, then reports what it could see to its
// own origin. (A no-cors DELETE is not sent at all: no-cors allows only
// GET, HEAD and POST.)
const attackPage = `<!doctype html><title>evil</title><script>
(async () => {
  const params = new URLSearchParams(location.search);
  const api = params.get("api");
  const out = {};
  const body = JSON.stringify({text: "I just moved to Mordor.", wait: true});
  const tryIt = async (name, f) => { try { out[name] = await f(); } catch (e) { out[name] = "error: " + e.name; } };
  await tryIt("nocors_post", async () => { const r = await fetch(api + "/v1/users/me/episodes", {method: "POST", mode: "no-cors", body}); return r.type; });
  if (!params.has("allowed")) {
    await tryIt("cors_delete", async () => { const r = await fetch(api + "/v1/users/me", {method: "DELETE"}); return String(r.status); });
  }
  await tryIt("cors_get", async () => { const r = await fetch(api + "/v1/users/me/state"); return r.status + " " + await r.text(); });
  await tryIt("cors_post", async () => { const r = await fetch(api + "/v1/users/page/episodes", {method: "POST", headers: {"Content-Type": "application/json"}, body}); return String(r.status); });
  // The same through MCP at /mcp: a no-cors text/plain call, and a JSON
  // call with the headers an MCP client sends (both need a preflight).
  const call = (user) => JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/call", params: {name: "add_memory", arguments: {user_id: user, text: "I just moved to Mordor."}}});
  await tryIt("nocors_mcp", async () => { const r = await fetch(api + "/mcp", {method: "POST", mode: "no-cors", body: call("me")}); return r.type; });
  await tryIt("cors_mcp", async () => { const r = await fetch(api + "/mcp", {method: "POST", headers: {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}, body: call("pagemcp")}); return r.status + " " + await r.text(); });
  await fetch("/result", {method: "POST", body: JSON.stringify(out)});
})();
</script>`

// TestBrowserCrossSite opens a page of another origin in a real headless
// Chromium and lets it attack `memor serve` on loopback: the no-cors
// text/plain POST and DELETE reach the server (its log names the page's
// origin) and are refused, the page reads nothing, and the store is
// unchanged. The same page on a server started with --allow-origin for its
// origin can POST JSON (so the browser does reach the server, and the
// refusal is the origin check).
//
// It needs Chromium (apt-get install chromium); .ci/run installs it and
// sets MEMOR_REQUIRE_BROWSER=1, which turns the skip into a failure.
func TestBrowserCrossSite(t *testing.T) {
	t.Parallel()
	chromium := findChromium()
	if chromium == "" {
		if os.Getenv("MEMOR_REQUIRE_BROWSER") != "" {
			t.Fatal("MEMOR_REQUIRE_BROWSER is set and no chromium is in PATH (apt-get install chromium)")
		}
		t.Skip("no chromium in PATH: the browser test needs a headless Chromium (apt-get install chromium); TestBrowserNoCorsPost in server/ sends the same headers")
	}
	results := make(chan map[string]string, 1)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, attackPage)
		case "/result":
			var out map[string]string
			json.NewDecoder(r.Body).Decode(&out)
			select {
			case results <- out:
			default:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer page.Close()
	pageURL, _ := url.Parse(page.URL)
	origin := "http://evil.example:" + pageURL.Port()

	visit := func(t *testing.T, api string, allowed bool) map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium,
			"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--no-default-browser-check", "--no-proxy-server", "--disable-extensions",
			"--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
			"--user-data-dir="+t.TempDir(),
			// evil.example is another site; it resolves to this machine.
			"--host-resolver-rules=MAP evil.example 127.0.0.1",
			origin+"/?api="+url.QueryEscape(api)+map[bool]string{true: "&allowed=1"}[allowed])
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() {
			// Chromium's helpers are in its process group.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		defer stop()
		select {
		case out := <-results:
			return out
		case <-ctx.Done():
			stop()
			t.Fatalf("the page reported nothing within the time; chromium's stderr:\n%s", errb.String())
		}
		return nil
	}

	e := newEnv(t)
	e.ok("add", "I live in Lisbon.", "--at", "2026-01-10")
	before := e.ok("export")

	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	out := visit(t, s.base, false)
	t.Logf("the page saw: %v", out)
	if strings.Contains(out["cors_get"], "Lisbon") {
		t.Errorf("the page read the profile: %q", out["cors_get"])
	}
	if out["cors_post"] == "201" || out["cors_post"] == "202" {
		t.Errorf("the page's JSON POST was served: %q", out["cors_post"])
	}
	if strings.HasPrefix(out["cors_mcp"], "200") || out["nocors_mcp"] != "opaque" {
		t.Errorf("the page's MCP calls: no-cors %q (want opaque: sent, unreadable), JSON %q (want refused)", out["nocors_mcp"], out["cors_mcp"])
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d", code)
	}
	if out["cors_delete"] == "200" {
		t.Errorf("the page's DELETE was served")
	}
	// The no-cors POST is the page's first request: the one logged.
	// It names the route, not the path (which holds the user ID).
	if log := s.stderr(); !strings.Contains(log, "origin="+origin+` method=POST route="POST /v1/users/{user}/episodes"`) {
		t.Errorf("serve's log does not show the page's refused requests (did they arrive?):\n%s", log)
	}
	if got := e.facts("state", "--user", "pagemcp"); len(got) != 0 {
		t.Errorf("the page's MCP call added facts: %v", got)
	}
	if after := e.ok("export"); after != before {
		t.Errorf("the page changed the store:\nbefore %s\nafter  %s", before, after)
	}

	// Control: the same browser and page, its origin allowed on purpose.
	s = serveLogged(t, e, "--addr", "127.0.0.1:0", "--allow-origin", origin)
	out = visit(t, s.base, true)
	t.Logf("allowed, the page saw: %v", out)
	if out["cors_post"] != "201" {
		t.Errorf("allowed origin: the page's JSON POST: %q, want 201 (so the browser reaches the server)", out["cors_post"])
	}
	if !strings.HasPrefix(out["cors_get"], "200 ") || !strings.Contains(out["cors_get"], "Lisbon") {
		t.Errorf("allowed origin: the page's read: %q, want 200 with Lisbon", out["cors_get"])
	}
	if !strings.HasPrefix(out["cors_mcp"], "200 ") || !strings.Contains(out["cors_mcp"], "Mordor") {
		t.Errorf("allowed origin: the page's MCP call: %q, want 200 with the added fact (the preflight allows MCP's headers)", out["cors_mcp"])
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d", code)
	}
	// text/plain stays refused even for an allowed origin: only the JSON
	// POST stored an episode (the page skips its DELETE there, which an
	// allowed origin may send); me still lives in Lisbon.
	if got := objects(e.facts("state")); got != "Lisbon" {
		t.Errorf("me after the allowed page: %s, want Lisbon", got)
	}
	if got := fmt.Sprint(objects(e.facts("state", "--user", "page"))); got != "Mordor" {
		t.Errorf("the allowed page's user: %s, want Mordor", got)
	}
	if got := objects(e.facts("state", "--user", "pagemcp")); got != "Mordor" {
		t.Errorf("the allowed page's MCP user: %s, want Mordor", got)
	}
}
