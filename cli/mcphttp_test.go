package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsSDKVersion is the TypeScript MCP SDK TestMCPHTTPTypeScript installs.
const tsSDKVersion = "1.32.2"

var memorTools = []string{"accept_memory", "add_memory", "correct_memory", "forget_memory", "get_history", "get_user_profile",
	"list_conflicts", "query_as_of", "query_memory"}

// tsSDK returns a folder whose node_modules holds the TypeScript MCP SDK.
func tsSDK(t *testing.T) string {
	t.Helper()
	return npmInstall(t, "@modelcontextprotocol/sdk", tsSDKVersion)
}

// npmInstall returns a folder whose node_modules holds pkg@version,
// installing it with npm on first use into the user's cache folder
// ($MEMOR_NPM_DIR overrides it), where later runs find it. Without node or
// npm the test is skipped, unless MEMOR_REQUIRE_NODE is set (.ci/run sets
// it): then it fails.
func npmInstall(t *testing.T, pkg, version string) string {
	t.Helper()
	if missing := noNode(t); missing != "" {
		t.Skipf("no %s in PATH: this test needs Node.js 18+ with npm for %s; TestHTTPTwoClients in mcpserver/ covers the Go SDK client", missing, pkg)
	}
	root := os.Getenv("MEMOR_NPM_DIR")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		root = filepath.Join(cache, "memor-test", "npm")
	}
	dir := filepath.Join(root, strings.ReplaceAll(strings.TrimPrefix(pkg, "@"), "/", "-")+"@"+version)
	marker := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	// Install beside dir and rename into place, so that two test runs
	// never see a half-installed folder.
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	manifest, _ := json.Marshal(map[string]any{"private": true, "dependencies": map[string]string{pkg: version}})
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run installed it meanwhile.
		if _, serr := os.Stat(marker); serr != nil {
			t.Fatalf("installing %s into %s: %v", pkg, dir, err)
		}
	}
	return dir
}

// noNode returns "node" or "npm" if that is not in PATH, or "". When one
// is missing and MEMOR_REQUIRE_NODE is set (.ci/run sets it), the test
// fails instead.
func noNode(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("MEMOR_REQUIRE_NODE") != "" {
				t.Fatalf("MEMOR_REQUIRE_NODE is set and %s is not in PATH (apt-get install nodejs npm)", tool)
			}
			return tool
		}
	}
	return ""
}

// mcpConfig is an entry of an MCP host's mcpServers.
type mcpConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// readmeMCPURL is the address the README's HTTP configs name: memor
// serve's default.
const readmeMCPURL = "http://127.0.0.1:7420/mcp"

// readmeHTTPTools starts memor serve on a store of its own and connects
// to its /mcp as the README's HTTP config srv says: directly (Cursor's
// url) or by running the mcp-remote bridge it names (Claude Desktop's
// npx), installed with npm. It returns the tools listed, or nil when the
// bridge needs Node.js and there is none.
func readmeHTTPTools(t *testing.T, srv mcpConfig) map[string]toolArgs {
	t.Helper()
	e := newEnv(t)
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	defer s.stop(syscall.SIGTERM)
	live := s.base + "/mcp"
	if srv.URL != "" {
		if srv.URL != readmeMCPURL {
			t.Errorf("README HTTP config names %s, want memor serve's default %s", srv.URL, readmeMCPURL)
		}
		tr := &mcp.StreamableClientTransport{Endpoint: live, MaxRetries: -1}
		return toolsOver(t, tr, func() string { return "README url config, memor serve:\n" + s.stderr() })
	}
	args := srv.Args
	if len(args) < 3 || args[0] != "-y" || !strings.HasPrefix(args[1], "mcp-remote@") {
		t.Fatalf("README npx config: want args -y mcp-remote@VERSION URL ...: %v", args)
	}
	if missing := noNode(t); missing != "" {
		t.Logf("no %s in PATH: the README's mcp-remote config is not run", missing)
		return nil
	}
	dir := npmInstall(t, "mcp-remote", strings.TrimPrefix(args[1], "mcp-remote@"))
	rest := slices.Clone(args[2:])
	if rest[0] != readmeMCPURL {
		t.Errorf("README mcp-remote config names %s, want memor serve's default %s", rest[0], readmeMCPURL)
	}
	rest[0] = live
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "mcp-remote"), rest...)
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return mcpTools(t, e, cmd)
}

// runNode runs a script of testdata in a fresh folder under sdk (so that
// it resolves the SDK from sdk/node_modules) with env, and returns stdout.
func runNode(t *testing.T, sdk, script string, env ...string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.MkdirTemp(sdk, "run-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	path := filepath.Join(run, script)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// TestMCPHTTPTypeScript starts `memor serve` with a token and connects two
// clients of the TypeScript SDK (npm @modelcontextprotocol/sdk) to its /mcp
// at once, over the streamable HTTP transport: both list memor's eight
// tools, each adds a memory at the same time, and each finds the other's
// in its query. Then the store, read by the CLI, holds both.
func TestMCPHTTPTypeScript(t *testing.T) {
	sdk := tsSDK(t)
	const token = "mcp-over-http-test-token"
	e := newEnv(t)
	e.vars = append(e.vars, "MEMOR_TOKEN="+token)
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")

	// The token rule holds for /mcp as for /v1.
	if status, code := send(t, "POST", s.base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream"); status != http.StatusUnauthorized || code != "unauthorized" {
		t.Errorf("POST /mcp without the token: %d %s, want 401", status, code)
	}

	out := runNode(t, sdk, "mcp_two_clients.mjs", "MEMOR_MCP_URL="+s.base+"/mcp", "MEMOR_TOKEN="+token)
	type answer struct {
		Error       bool
		First, Text string
	}
	var rep struct {
		Tools [][]string
		Added []struct {
			Error   bool
			Seq     uint64
			Learned []string
		}
		AAsksWork   answer `json:"a_asks_work"`
		BAsksHome   answer `json:"b_asks_home"`
		BadArgument answer `json:"bad_argument"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the script's report: %v\n%s", err, out)
	}
	t.Logf("the TypeScript clients saw: %s", out)
	if len(rep.Tools) != 2 || !slices.Equal(rep.Tools[0], memorTools) || !slices.Equal(rep.Tools[1], memorTools) {
		t.Errorf("tools/list of the two clients: %v, want %v each", rep.Tools, memorTools)
	}
	if len(rep.Added) != 2 || rep.Added[0].Error || rep.Added[1].Error || rep.Added[0].Seq == rep.Added[1].Seq ||
		!slices.Equal(rep.Added[0].Learned, []string{"Lisbon"}) || !slices.Equal(rep.Added[1].Learned, []string{"Globex"}) {
		t.Errorf("add_memory from the two clients: %+v", rep.Added)
	}
	if rep.AAsksWork.Error || !strings.Contains(rep.AAsksWork.First, "Globex") {
		t.Errorf("client A asks where the user works (B added it): %+v", rep.AAsksWork)
	}
	if rep.BAsksHome.Error || !strings.Contains(rep.BAsksHome.First, "Lisbon") {
		t.Errorf("client B asks where the user lives (A added it): %+v", rep.BAsksHome)
	}
	if !rep.BadArgument.Error || !strings.Contains(rep.BadArgument.Text, "text is empty") {
		t.Errorf("a bad argument: %+v, want a tool error the model can read", rep.BadArgument)
	}

	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d:\n%s", code, s.stderr())
	}
	if got := objects(e.facts("state", "--user", "me")); got != "Lisbon,Globex" && got != "Globex,Lisbon" {
		t.Errorf("the store after both clients: %s, want Lisbon and Globex", got)
	}
}

// TestMCPHTTPGoClient drives the built `memor serve` with the Go SDK's
// streamable HTTP client while another client uses the same store through
// /v1, and checks the binary's /mcp refuses what /v1 refuses: a cross-site
// page's request and a DNS-rebound Host.
func TestMCPHTTPGoClient(t *testing.T) {
	e := newEnv(t)
	s := serveLogged(t, e, "--addr", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const rpc = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"me","text":"I live in Mordor."}}}`
	mcpHeaders := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, c := range []struct {
		name    string
		headers []string
		code    string
	}{
		{"a cross-site page", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Origin", "http://evil.example"}, "forbidden_origin"},
		{"a no-cors page request", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, "forbidden_origin"},
		{"a DNS-rebound host name", []string{"Host", "attacker.example:" + s.base[strings.LastIndex(s.base, ":")+1:]}, "forbidden_host"},
	} {
		if status, code := send(t, "POST", s.base+"/mcp", rpc, append(slices.Clone(mcpHeaders), c.headers...)...); status != http.StatusForbidden || code != c.code {
			t.Errorf("%s: POST /mcp answered %d %s, want 403 %s", c.name, status, code, c.code)
		}
	}
	if log := s.stderr(); !strings.Contains(log, "route=/mcp") {
		t.Errorf("serve's log does not name the refused /mcp requests:\n%s", log)
	}

	var wg sync.WaitGroup
	var sessions [2]*mcp.ClientSession
	var errs [2]error
	for i := range sessions {
		wg.Go(func() {
			tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1}
			sessions[i], errs[i] = mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("connect: %v", err)
	}
	a, b := sessions[0], sessions[1]
	defer a.Close()
	defer b.Close()
	if got := a.InitializeResult().ServerInfo.Name; got != "memor" {
		t.Errorf("server name %q", got)
	}
	tools, err := b.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(memorTools) {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
		Arguments: map[string]any{"user_id": "me", "text": "My brother Alex adopted a golden retriever named Buddy last month.", "at": "2026-03-02"}})
	if err != nil || res.IsError {
		t.Fatalf("add_memory: %v %+v", err, res)
	}
	// The HTTP API sees what MCP added, and MCP what the API added.
	if status, body := get(t, s.base+"/v1/users/me/state", ""); status != http.StatusOK || !strings.Contains(string(body), "golden retriever") {
		t.Errorf("GET /v1/users/me/state after add_memory: %d %s", status, body)
	}
	if status, code := send(t, "POST", s.base+"/v1/users/me/episodes", `{"text":"I work at Globex.","wait":true}`, "Content-Type", "application/json"); status != http.StatusCreated {
		t.Errorf("POST /v1/users/me/episodes: %d %s", status, code)
	}
	res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "query_memory",
		Arguments: map[string]any{"user_id": "me", "text": "What kind of dog does my brother have?"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "golden retriever") {
		t.Errorf("query_memory from the other client: %v %+v", err, res)
	}
	res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "query_memory", Arguments: map[string]any{"user_id": "me", "text": "Where do I work?"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Globex") {
		t.Errorf("query_memory for what /v1 added: %v %+v", err, res)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d:\n%s", code, s.stderr())
	}
	// The transport is stateless: a session outlives the server. Restarted
	// on the same address, it answers the old session's next call.
	s = serveLogged(t, e, "--addr", strings.TrimPrefix(s.base, "http://"))
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "get_user_profile", Arguments: map[string]any{"user_id": "me"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Globex") {
		t.Errorf("get_user_profile after serve restarted: %v %+v", err, res)
	}
	a.Close()
	b.Close()
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("restarted serve exit %d:\n%s", code, s.stderr())
	}
	if _, err := os.Stat(e.db); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("no store after serve")
	}
	if out := e.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("check after the MCP sessions: %s", out)
	}
}
