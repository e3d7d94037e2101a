package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/mcpserver"
)

// TestClusterUsers: GET /v1/users on either node lists every user of the
// cluster (the log's), not the node's own store's, page by page.
func TestClusterUsers(t *testing.T) {
	p := newPair(t, Options{})
	for _, u := range []string{"alice", "bob"} {
		p.a.must(http.StatusCreated, "POST", "/v1/users/"+u+"/episodes?wait=true", map[string]any{"text": "I live in Oslo."})
	}
	if us := p.a.users(); !slices.Equal(us, []string{"alice"}) {
		t.Fatalf("a's store holds %v, want alice alone (bob is b's)", us)
	}
	for name, n := range map[string]*api{"a": p.a, "b": p.b} {
		got := n.must(http.StatusOK, "GET", "/v1/users", nil)
		if us, _ := got["users"].([]any); len(us) != 2 || us[0] != "alice" || us[1] != "bob" {
			t.Errorf("GET /v1/users on %s: %v, want [alice bob]", name, got)
		}
		got = n.must(http.StatusOK, "GET", "/v1/users?limit=1&after=alice", nil)
		if us, _ := got["users"].([]any); len(us) != 1 || us[0] != "bob" || got["next"] != nil {
			t.Errorf("GET /v1/users?limit=1&after=alice on %s: %v, want [bob] and no next", name, got)
		}
	}
}

// withMCP mounts the MCP tools over a node's engine, as memor serve does
// on a cluster node.
func withMCP(o *Options, e *memor.Engine, rt Router) {
	o.MCP = mcpserver.NewHTTPHandler(e, mcpserver.Options{Version: "test", Through: MCPThrough(rt)})
}

// TestClusterMCP: an MCP client connected to a reaches every user's
// owner: add_memory and query_memory of bob run on b's engine (a's store
// holds nothing of bob), those of alice on a's; a batch is refused.
func TestClusterMCP(t *testing.T) {
	p := newPair(t, Options{}, withMCP)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: p.a.srv.URL + MCPPath, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cluster-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s %v: tool error %s", tool, args, b.String())
		}
		return b.String()
	}
	call("add_memory", map[string]any{"user_id": "bob", "text": "I live in Oslo."})
	call("add_memory", map[string]any{"user_id": "alice", "text": "I live in Lima."})
	if us := p.a.users(); !slices.Equal(us, []string{"alice"}) {
		t.Fatalf("a's store holds %v, want alice alone", us)
	}
	if us := p.b.users(); !slices.Equal(us, []string{"bob"}) {
		t.Fatalf("b's store holds %v, want bob alone", us)
	}
	if p.rb.writes.Load() != 1 || p.ra.writes.Load() != 1 {
		t.Fatalf("writes through b's router %d, a's %d; want 1, 1", p.rb.writes.Load(), p.ra.writes.Load())
	}
	if got := call("query_memory", map[string]any{"user_id": "bob", "text": "where do I live"}); !strings.Contains(got, "Oslo") {
		t.Fatalf("query_memory of bob through a: %q", got)
	}
	if got := call("get_user_profile", map[string]any{"user_id": "alice"}); !strings.Contains(got, "Lima") || strings.Contains(got, "Oslo") {
		t.Fatalf("get_user_profile of alice through a: %q", got)
	}
	st, code, _ := p.a.raw("POST", MCPPath, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
	if st != http.StatusBadRequest || code != "bad_request" {
		t.Fatalf("a batch at /mcp: %d %s, want 400 bad_request", st, code)
	}
}

// TestMCPThrough: a read of a user this node does not serve is refused
// without running; a write runs through the router's Write.
func TestMCPThrough(t *testing.T) {
	p := newPair(t, Options{})
	through := MCPThrough(p.ra)
	ran := false
	err := through(context.Background(), "bob", false, func() error { ran = true; return nil })
	if !errors.Is(err, ErrForwardLoop) || ran {
		t.Fatalf("read of bob on a: %v (ran %v), want ErrForwardLoop without running", err, ran)
	}
	if err := through(context.Background(), "nobody", false, func() error { ran = true; return nil }); !errors.Is(err, ErrNoOwner) || ran {
		t.Fatalf("read of a user without owner: %v (ran %v)", err, ran)
	}
	if err := through(context.Background(), "alice", false, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("read of alice on a: %v (ran %v)", err, ran)
	}
	if err := through(context.Background(), "alice", true, func() error { return nil }); err != nil || p.ra.writes.Load() != 1 {
		t.Fatalf("write of alice on a: %v, %d writes through the router", err, p.ra.writes.Load())
	}
}

// TestClusterStudioConformance: a cluster node answers the studio and
// the conformance contract with 501 not_in_cluster.
func TestClusterStudioConformance(t *testing.T) {
	p := newPair(t, Options{Conformance: true, Studio: http.NotFoundHandler()})
	for _, c := range []struct{ method, path, body string }{
		{"GET", StudioPath, ""},
		{"GET", StudioPath + "login", ""},
		{"GET", "/conformance/status", ""},
		{"POST", "/conformance/add", `{"user":"memortest/x","text":"I live in Oslo."}`},
	} {
		st, code, hd := p.a.raw(c.method, c.path, c.body, map[string]string{"Content-Type": "application/json"})
		if st != http.StatusNotImplemented || code != "not_in_cluster" || hd.Get(NodeHeader) != "a" {
			t.Errorf("%s %s on a cluster node: %d %s, want 501 not_in_cluster", c.method, c.path, st, code)
		}
	}
}

// TestForwardedImportRetried: an import of bob sent to a, refused by b
// as behind, is sent again by a (the body it holds) until b takes it; one
// refused more often than a retries answers 503 behind.
func TestForwardedImportRetried(t *testing.T) {
	p := newPair(t, Options{})
	src := openEngine(t, memor.Options{})
	if _, err := src.Add(context.Background(), "bob", "I live in Oslo.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	var backup strings.Builder
	if _, err := src.Export(context.Background(), &backup, "bob"); err != nil {
		t.Fatal(err)
	}
	p.rb.behind.Store(2)
	before := p.hitB.Load()
	st, code, hd := p.a.raw("POST", "/v1/users/bob/import", backup.String(), map[string]string{"Content-Type": "application/x-ndjson"})
	if st != http.StatusOK || hd.Get(NodeHeader) != "b" {
		t.Fatalf("import of bob through a, refused twice: %d %s", st, code)
	}
	if n := p.hitB.Load() - before; n != 3 {
		t.Fatalf("b saw the import %d times, want 3 (two refusals, then the import)", n)
	}
	if us := p.b.users(); !slices.Equal(us, []string{"bob"}) {
		t.Fatalf("b's store holds %v after the import", us)
	}
	p.rb.behind.Store(behindRetries + 1)
	st, code, _ = p.a.raw("POST", "/v1/users/bob/import", backup.String(), map[string]string{"Content-Type": "application/x-ndjson"})
	if st != http.StatusServiceUnavailable || code != "behind" {
		t.Fatalf("import refused more often than a retries: %d %s, want 503 behind", st, code)
	}
}
