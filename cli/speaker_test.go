package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readmeSubsection returns the README's "### title" subsection.
func readmeSubsection(t *testing.T, title string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n### "+title+"\n")
	if i < 0 {
		t.Fatalf("README has no subsection %q", title)
	}
	s = s[i+1:]
	if j := strings.Index(s[4:], "\n#"); j >= 0 {
		s = s[:j+4]
	}
	return s
}

func subjects(fs []fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Subject+" "+f.Predicate+" "+f.Object)
	}
	slices.Sort(out)
	return out
}

// TestREADMESpeakers runs the README's Speakers commands as a user would:
// memor add --speaker and memor query on a store, then the curl against
// memor serve on it; each speaker's facts stay theirs, the question naming
// Caroline answers Boston with her turn, a bad name is a usage error, and
// export/import keeps the speakers.
func TestREADMESpeakers(t *testing.T) {
	t.Parallel()
	sec := readmeSubsection(t, "Speakers")
	e := newEnv(t)
	var curls [][]string
	for _, b := range codeBlocks(sec) {
		if b.lang != "sh" {
			continue
		}
		for _, c := range shellCommands(t, b.body) {
			switch {
			case c.args[0] == "memor" && len(c.args) > 1 && c.args[1] == "query":
				out := e.ok(c.args[1:]...)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if !strings.Contains(lines[0], "Caroline lives_in Boston") || !strings.Contains(out, "Caroline: I live in Boston.") || strings.Contains(out, "Seattle") {
					t.Errorf("README: %s:\n%s", c.line, out)
				}
			case c.args[0] == "memor":
				e.ok(c.args[1:]...)
			case c.args[0] == "curl":
				curls = append(curls, c.args[1:])
			default:
				t.Errorf("README: %q is not exercised by TestREADMESpeakers", c.line)
			}
		}
	}
	if len(curls) == 0 {
		t.Fatal("README: the Speakers subsection shows no curl")
	}
	if r := e.run("", "add", "--speaker", "", "I live in Oslo."); r.code != 2 || !strings.Contains(r.stderr, "invalid speaker") {
		t.Errorf("add --speaker '': %+v", r)
	}
	if r := e.run("", "add", "--speaker", "Ann\tLee", "I live in Oslo."); r.code != 2 || !strings.Contains(r.stderr, "invalid speaker") {
		t.Errorf("add --speaker with a tab: %+v", r)
	}

	base, stop := serve(t, e, "--addr", "127.0.0.1:0")
	for _, args := range curls {
		status, body := curl(t, base, args)
		var resp struct {
			Episode struct {
				Speaker string `json:"speaker"`
			} `json:"episode"`
		}
		if status != 201 || json.Unmarshal(body, &resp) != nil || resp.Episode.Speaker != "Melanie" {
			t.Errorf("README: curl %v: %d %s", args, status, body)
		}
	}
	status, body := curl(t, base, []string{"-XPOST", base + "/v1/users/me/episodes", "-H", "Content-Type: application/json",
		"-d", `{"text": "I live in Oslo.", "speaker": "\u0007"}`})
	if status != 400 || !strings.Contains(string(body), "invalid_speaker") {
		t.Errorf("a bad speaker over HTTP: %d %s", status, body)
	}
	if code := stop(syscall.SIGTERM); code != 0 {
		t.Errorf("memor serve exited %d", code)
	}
	want := []string{"Caroline lives_in Boston", "Melanie lives_in Seattle", "Melanie plays_instrument clarinet"}
	if got := subjects(e.facts("state")); !slices.Equal(got, want) {
		t.Fatalf("state:\n got %q\nwant %q", got, want)
	}

	file := filepath.Join(t.TempDir(), "dump.jsonl")
	e.ok("export", "-o", file)
	data, _ := os.ReadFile(file)
	if strings.Count(string(data), `"speaker":"Caroline"`) != 1 || strings.Count(string(data), `"speaker":"Melanie"`) != 2 {
		t.Fatalf("export lost the speakers:\n%s", data)
	}
	b := newEnv(t)
	b.ok("import", file)
	if got := subjects(b.facts("state")); !slices.Equal(got, want) {
		t.Fatalf("state after import:\n got %q\nwant %q", got, want)
	}
	again := filepath.Join(t.TempDir(), "again.jsonl")
	b.ok("export", "-o", again)
	data2, _ := os.ReadFile(again)
	speakers := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ep struct{ Text, Speaker string }
			if err := json.Unmarshal([]byte(l), &ep); err != nil {
				t.Fatal(err)
			}
			out = append(out, ep.Speaker+": "+ep.Text)
		}
		return out
	}
	if a, c := speakers(data), speakers(data2); !slices.Equal(a, c) {
		t.Fatalf("export of the import:\n%q\n%q", a, c)
	}
}

// TestMCPSpeaker: add_memory's speaker argument attributes the memory to
// the speaker, through memor-server on stdio, and a bad one is a tool
// error that says what to pass.
func TestMCPSpeaker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(serverBin, "--db", e.db)
	cmd.Env = e.vars
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
		Arguments: map[string]any{"user_id": "me", "text": "I live in Boston.", "speaker": "Caroline", "at": "2024-03-15"}})
	if err != nil || res.IsError {
		t.Fatalf("add_memory: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Caroline lives_in Boston") {
		t.Errorf("add_memory text: %s", text)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
		Arguments: map[string]any{"user_id": "me", "text": "I live in Seattle.", "speaker": "Melanie\n"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "invalid speaker") {
		t.Fatalf("add_memory with a bad speaker: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_memory",
		Arguments: map[string]any{"user_id": "me", "text": "Where does Caroline live?"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Caroline: I live in Boston.") {
		t.Fatalf("query_memory: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if got := subjects(e.facts("state", "--user", "me")); !slices.Equal(got, []string{"Caroline lives_in Boston"}) {
		t.Fatalf("state: %q", got)
	}
}
