package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/server"
)

// serveHTTP mounts NewHTTPHandler behind server.New, as `memor serve`
// does, on a loopback httptest server.
func serveHTTP(t *testing.T, token string) (*httptest.Server, *memor.Engine) {
	t.Helper()
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(e, server.Options{Token: token, MCP: NewHTTPHandler(e, Options{Version: "test"})})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		e.Close()
	})
	return ts, e
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects a Go SDK client to the server's /mcp.
func connectHTTP(ctx context.Context, base, token string) (*mcp.ClientSession, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	if token != "" {
		client.Transport = bearerTransport{token}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: base + server.MCPPath, HTTPClient: client, MaxRetries: -1}
	return mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
}

// TestHTTPTwoClients connects two Go SDK clients at once over streamable
// HTTP to one server: each lists the eight tools, adds a memory, and finds
// the other's in its query, since they share the engine.
func TestHTTPTwoClients(t *testing.T) {
	ts, _ := serveHTTP(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := connectHTTP(ctx, ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := connectHTTP(ctx, ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	for _, cs := range []*mcp.ClientSession{a, b} {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		want := []string{"accept_memory", "add_memory", "correct_memory", "forget_memory", "get_history", "get_user_profile",
			"list_conflicts", "query_as_of", "query_memory"}
		if !slices.Equal(names, want) {
			t.Errorf("tools over HTTP = %v, want %v", names, want)
		}
	}

	// Both add at once: the engine orders them, neither is lost.
	var wg sync.WaitGroup
	added := make([]addOut, 2)
	errs := make([]error, 2)
	for i, m := range []struct {
		cs   *mcp.ClientSession
		text string
	}{{a, "I live in Lisbon."}, {b, "I work at Globex."}} {
		wg.Go(func() {
			res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
				Arguments: map[string]any{"user_id": "me", "text": m.text, "at": "2026-03-01"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			if err == nil {
				var data []byte
				if data, err = json.Marshal(res.StructuredContent); err == nil {
					err = json.Unmarshal(data, &added[i])
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("add_memory from two clients at once: %v", err)
	}
	if added[0].Seq == added[1].Seq || len(added[0].Learned) != 1 || len(added[1].Learned) != 1 {
		t.Fatalf("add_memory from two clients: %+v", added)
	}

	for _, q := range []struct {
		cs         *mcp.ClientSession
		text, want string
	}{{a, "Where do I work?", "Globex"}, {b, "Where do I live?", "Lisbon"}} {
		var out queryOut
		mustCall(t, q.cs, "query_memory", map[string]any{"user_id": "me", "text": q.text}, &out)
		if len(out.Results) == 0 || !strings.Contains(out.Results[0].Text, q.want) {
			t.Errorf("query_memory %q from the other client: %+v, want %s first", q.text, out.Results, q.want)
		}
	}
	var prof factsOut
	mustCall(t, a, "get_user_profile", map[string]any{"user_id": "me"}, &prof)
	if got := objects(prof.Facts); !slices.Contains(got, "Lisbon") || !slices.Contains(got, "Globex") || len(got) != 2 {
		t.Errorf("profile = %v, want Lisbon and Globex", got)
	}
}

// rpc is a tools/call of add_memory as a raw JSON-RPC POST: what a web
// page or a rebound host name could send.
const rpc = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"me","text":"I live in Mordor."}}}`

func post(t *testing.T, url, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
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
	data, _ := io.ReadAll(resp.Body)
	var eb struct{ Code string }
	json.Unmarshal(data, &eb)
	if eb.Code == "" {
		eb.Code = string(data)
	}
	return resp.StatusCode, eb.Code, resp.Header
}

// TestHTTPGuard sends MCP requests to /mcp the way a hostile web page and
// a DNS-rebound host name would: the server's guard refuses them before
// the MCP handler, as it does for /v1, and the store is unchanged. A plain
// request from a local program, the control, is served.
func TestHTTPGuard(t *testing.T) {
	ts, e := serveHTTP(t, "")
	url := ts.URL + server.MCPPath
	for _, c := range []struct {
		name    string
		headers []string
		code    string
	}{
		{"cross-site page (Sec-Fetch-Site)", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, "forbidden_origin"},
		{"same-site page", []string{"Sec-Fetch-Site", "same-site"}, "forbidden_origin"},
		{"page of another origin", []string{"Origin", "http://evil.example"}, "forbidden_origin"},
		{"page of another loopback port", []string{"Origin", "http://127.0.0.1:1"}, "forbidden_origin"},
		{"DNS rebinding (Host)", []string{"Host", "attacker.example"}, "forbidden_host"},
		{"DNS rebinding with a port", []string{"Host", "attacker.example:" + strings.Split(ts.URL, ":")[2]}, "forbidden_host"},
	} {
		if status, code, _ := post(t, url, rpc, c.headers...); status != http.StatusForbidden || code != c.code {
			t.Errorf("%s: %d %s, want 403 %s", c.name, status, code, c.code)
		}
	}
	// A browser cannot send JSON without a preflight; text/plain is refused.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(rpc))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST: %v %v, want 415", resp, err)
	} else {
		resp.Body.Close()
	}
	if users, err := e.Users(context.Background()); err != nil || len(users) != 0 {
		t.Fatalf("after refused requests the store has users %v (%v)", users, err)
	}

	// Control: a local program's request, with the Origin of the server
	// itself too.
	for i, headers := range [][]string{nil, {"Origin", ts.URL, "Sec-Fetch-Site", "same-origin"}} {
		status, body, _ := post(t, url, rpc, headers...)
		if want := fmt.Sprintf(`"seq":%d`, i+1); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("local request %v: %d %s, want 200 with %s", headers, status, body, want)
		}
	}
	if fs, err := e.State(context.Background(), "me"); err != nil || len(fs) != 1 || fs[0].Object != "Mordor" {
		t.Errorf("state after the local requests: %v %v", fs, err)
	}
}

// TestHTTPToken: with a token (as off loopback), /mcp needs it like every
// route; a Go SDK client that sends it is served.
func TestHTTPToken(t *testing.T) {
	const token = "0123456789abcdef0123"
	ts, e := serveHTTP(t, token)
	url := ts.URL + server.MCPPath
	for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Basic " + token} {
		var h []string
		if auth != "" {
			h = []string{"Authorization", auth}
		}
		if status, code, hd := post(t, url, rpc, h...); status != http.StatusUnauthorized || code != "unauthorized" || hd.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %s, want 401 unauthorized with WWW-Authenticate", auth, status, code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := connectHTTP(ctx, ts.URL, ""); err == nil {
		t.Error("a client without the token connected")
	}
	cs, err := connectHTTP(ctx, ts.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var added addOut
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I live in Lisbon."}, &added)
	if fs, err := e.State(ctx, "me"); err != nil || len(fs) != 1 || fs[0].Object != "Lisbon" {
		t.Errorf("state after the authorized add: %v %v", fs, err)
	}
}

// TestHTTPAllowedOriginPreflight: a page of an allowed origin may speak MCP
// from a browser: the preflight allows the headers an MCP client sends.
func TestHTTPAllowedOriginPreflight(t *testing.T) {
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const origin = "http://localhost:3000"
	ts := httptest.NewServer(server.New(e, server.Options{AllowOrigins: []string{origin}, MCP: NewHTTPHandler(e, Options{})}))
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodOptions, ts.URL+server.MCPPath, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,mcp-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allow := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(allow, "mcp-protocol-version") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if status, body, hd := post(t, ts.URL+server.MCPPath, rpc, "Origin", origin, "Sec-Fetch-Site", "cross-site"); status != http.StatusOK || !strings.Contains(body, "Mordor") || hd.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("allowed origin's POST: %d %s", status, body)
	}
}
