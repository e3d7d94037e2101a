package cli_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestREADMEMinSupport runs the README's abstention commands ("What Query
// serves") as a user would: memor query answers a question nothing
// supports with nothing known, --min-support -1 answers it anyway, the
// curl against memor serve with min_support=-1 too, and MCP query_memory's
// min_support through memor-server; a threshold above 1 is refused by
// each.
func TestREADMEMinSupport(t *testing.T) {
	t.Parallel()
	sec := readmeSubsection(t, "What Query serves")
	e := newEnv(t)
	var curls [][]string
	queries := 0
	for _, b := range codeBlocks(sec) {
		if b.lang != "sh" {
			continue
		}
		for _, c := range shellCommands(t, b.body) {
			switch {
			case c.args[0] == "memor" && len(c.args) > 1 && c.args[1] == "query":
				queries++
				out := e.ok(c.args[1:]...)
				never := strings.Contains(c.line, "--min-support -1")
				if got := strings.Contains(out, "nothing relevant is known"); got == never || (never && !strings.Contains(out, "Boston")) {
					t.Errorf("README: %s:\n%s", c.line, out)
				}
			case c.args[0] == "memor":
				e.ok(c.args[1:]...)
			case c.args[0] == "curl":
				curls = append(curls, c.args[1:])
			default:
				t.Errorf("README: %q is not exercised by TestREADMEMinSupport", c.line)
			}
		}
	}
	if queries != 2 || len(curls) != 1 {
		t.Fatalf("README: What Query serves shows %d queries and %d curls, want 2 and 1", queries, len(curls))
	}
	for _, v := range []string{"1.5", "NaN", "x"} {
		if r := e.run("", "query", "Which phone model do I use in Boston?", "--min-support", v); r.code != 2 {
			t.Errorf("query --min-support %s: %+v", v, r)
		}
	}

	base, stop := serve(t, e, "--addr", "127.0.0.1:0")
	type results struct {
		Results []struct {
			Episode *struct{ Text string } `json:"episode"`
		} `json:"results"`
	}
	status, body := curl(t, base, curls[0])
	var rs results
	// The best matches: the fact, which ranks at least as high as the
	// episode it came from, and the episode.
	jerr := json.Unmarshal(body, &rs)
	said := false
	for _, r := range rs.Results {
		said = said || (r.Episode != nil && r.Episode.Text == "I live in Boston.")
	}
	if status != 200 || jerr != nil || !said {
		t.Errorf("README: curl %v: %d %s", curls[0], status, body)
	}
	status, body = curl(t, base, []string{base + "/v1/users/me/query?q=Which+phone+model+do+I+use+in+Boston%3F"})
	if rs = (results{}); status != 200 || json.Unmarshal(body, &rs) != nil || len(rs.Results) != 0 {
		t.Errorf("the default threshold over HTTP: %d %s", status, body)
	}
	status, body = curl(t, base, []string{base + "/v1/users/me/query?q=Which+phone+model+do+I+use+in+Boston%3F&min_support=2"})
	if status != 400 || !strings.Contains(string(body), "min_support") {
		t.Errorf("min_support=2 over HTTP: %d %s", status, body)
	}
	if code := stop(syscall.SIGTERM); code != 0 {
		t.Errorf("memor serve exited %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(serverBin, "--db", e.db)
	cmd.Env = e.vars
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	defer cs.Close()
	for _, c := range []struct {
		args    map[string]any
		boston  bool
		isError bool
	}{
		{map[string]any{}, false, false},
		{map[string]any{"min_support": -1}, true, false},
		{map[string]any{"min_support": 1.5}, false, true},
	} {
		c.args["user_id"], c.args["text"] = "me", "Which phone model do I use in Boston?"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_memory", Arguments: c.args})
		if err != nil {
			t.Fatalf("query_memory %v: %v", c.args, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError != c.isError || strings.Contains(text, "Boston") != c.boston {
			t.Errorf("query_memory %v: error %v: %s", c.args, res.IsError, text)
		}
	}
}
