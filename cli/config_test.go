package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor/internal/fakellm"
)

// fakeOpenAI speaks the OpenAI chat-completions and embeddings APIs as
// memor's back ends use them. Its extractor answers every text with one
// op that no rule would make: user mentions <the text's last word>; its
// judge says every unknown predicate replaces; its embeddings are word
// hashes in 8 dimensions.
type fakeOpenAI struct {
	t                               *testing.T
	key                             string
	models, extracts, judges, reran atomic.Int32
	embedTexts, embedCalls          atomic.Int32
	// block, if set, is called before answering embeddings call n (from 1).
	block func(n int)
}

func newFakeOpenAI(t *testing.T, key string) (*fakeOpenAI, string) {
	f := &fakeOpenAI{t: t, key: key}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); f.key != "" && got != "Bearer "+f.key {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/models":
		f.models.Add(1)
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-chat","object":"model"}]}`)
	case "POST /v1/chat/completions":
		req, err := fakellm.ReadChat(r)
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var content string
		switch req.Schema {
		case fakellm.Ops:
			f.extracts.Add(1)
			words := strings.Fields(req.Text())
			last := strings.Trim(words[len(words)-1], ".!?,")
			op := map[string]any{"kind": "assert", "subject": "user", "predicate": "mentions", "object": last,
				"context": "", "valid_from": "", "confidence": 1, "additive": false, "quote": last}
			b, _ := json.Marshal(map[string]any{"ops": []any{op}})
			content = string(b)
		case fakellm.Verdict:
			f.judges.Add(1)
			content = `{"verdict":"replace","reason":"one at a time"}`
		case fakellm.Scores:
			f.reran.Add(1)
			var in struct {
				Documents []any `json:"documents"`
			}
			json.Unmarshal([]byte(req.User), &in)
			scores := make([]float64, len(in.Documents))
			for i := range scores {
				scores[i] = 1 / float64(i+2)
			}
			b, _ := json.Marshal(map[string]any{"scores": scores})
			content = string(b)
		default:
			http.Error(w, "unknown schema", http.StatusBadRequest)
			return
		}
		fakellm.WriteCompletion(w, "fake-chat", content)
	case "POST /v1/embeddings":
		n := int(f.embedCalls.Add(1))
		if f.block != nil {
			f.block(n)
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.embedTexts.Add(int32(len(req.Input)))
		var data []any
		for i, text := range req.Input {
			v := make([]float32, 8)
			for _, w := range strings.Fields(strings.ToLower(text)) {
				h := fnv.New32a()
				h.Write([]byte(strings.Trim(w, ".,!?")))
				v[h.Sum32()%8]++
			}
			v[7] += 0.01
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": "fake-embed"})
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// configLine is memor config's line of key as its key, value and source.
func configLine(out, key string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			if i := strings.Index(line, "("); i > 0 {
				return append(f[:2:2], line[i:])
			}
			return f
		}
	}
	return nil
}

func (e *env) with(vars ...string) *env {
	c := *e
	c.vars = append(append([]string(nil), e.vars...), vars...)
	return &c
}

// TestConfigLLMExtractor: with MEMOR_LLM_* set, memor add calls the LLM
// extractor (the fake's op is stored), the judge decides the unknown
// predicate, and memor config shows where each value came from without
// the key.
func TestConfigLLMExtractor(t *testing.T) {
	t.Parallel()
	f, base := newFakeOpenAI(t, "sk-test-secret")
	e := newEnv(t).with("MEMOR_LLM_BASE_URL="+base, "MEMOR_LLM_MODEL=fake-chat", "MEMOR_LLM_API_KEY=sk-test-secret")
	e.ok("add", "--at", "2026-01-10", "I went to Oslo")
	e.ok("add", "--at", "2026-02-10", "Then I went to Bergen")
	if f.extracts.Load() != 2 || f.judges.Load() != 1 {
		t.Fatalf("extract calls %d, judge calls %d; want 2 and 1", f.extracts.Load(), f.judges.Load())
	}
	// The judge said replace: Bergen superseded Oslo.
	if got := objects(e.facts("state")); got != "Bergen" {
		t.Fatalf("state after two LLM adds: %q, want Bergen", got)
	}
	out := e.ok("config")
	for _, want := range []string{"extractor=llm", "judge=llm", "(env MEMOR_LLM_MODEL)", "llm.api_key", "********"} {
		if !strings.Contains(out, want) {
			t.Errorf("memor config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-test-secret") {
		t.Errorf("memor config prints the API key:\n%s", out)
	}
	// A refused key is a configuration error, even with --fallback.
	bad := e.with("MEMOR_LLM_API_KEY=wrong")
	if r := bad.run("", "--fallback", "add", "I went to Rome"); r.code != 2 || !strings.Contains(r.stderr, "refused the API key") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("wrong key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestConfigFilePrecedence: the config file configures the back ends and
// registers predicates; env beats the file, flags beat env; an unknown
// key or a bad value fails at start with one line.
func TestConfigFilePrecedence(t *testing.T) {
	t.Parallel()
	f, base := newFakeOpenAI(t, "")
	e := newEnv(t)
	cfg := filepath.Join(t.TempDir(), "memor.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[extractor]
kind = "llm"
[llm]
base_url = %q
model = "from-file"
timeout = "5s"
[store]
index_cache = "256MiB"
durability = "sync"
[[predicates]]
name = "mentions"
cardinality = "many"
aliases = ["talks_about"]
gloss = "mentions talks about"
`, base)), 0o600)
	e = e.with("MEMOR_CONFIG=" + cfg)
	out := e.ok("config")
	for _, c := range []struct{ key, val, src string }{
		{"llm.model", "from-file", "(file " + cfg + ")"},
		{"store.index_cache", "256MiB", "(file " + cfg + ")"},
		{"store.block_cache", "64MiB", "(default)"},
	} {
		if f := configLine(out, c.key); len(f) != 3 || f[1] != c.val || "("+f[2] != c.src && f[2] != c.src {
			t.Errorf("memor config %s: %q, want %s %s", c.key, f, c.val, c.src)
		}
	}
	if !strings.Contains(out, `"name":"mentions"`) {
		t.Errorf("memor config lacks the predicate:\n%s", out)
	}
	envd := e.with("MEMOR_LLM_MODEL=from-env")
	if f := configLine(envd.ok("config"), "llm.model"); strings.Join(f, " ") != "llm.model from-env (env MEMOR_LLM_MODEL)" {
		t.Errorf("env does not beat the file: %q", f)
	}
	if f := configLine(envd.ok("config", "--llm-model", "from-flag"), "llm.model"); strings.Join(f, " ") != "llm.model from-flag (flag --llm-model)" {
		t.Errorf("flag does not beat env: %q", f)
	}
	// mentions is registered Many by the file: no judge, both values stand.
	e.ok("add", "--at", "2026-01-10", "I went to Oslo")
	e.ok("add", "--at", "2026-02-10", "Then I went to Bergen")
	if f.judges.Load() != 0 || f.extracts.Load() != 2 {
		t.Errorf("judge calls %d (want 0: the predicate is registered), extract calls %d", f.judges.Load(), f.extracts.Load())
	}
	if got := objects(e.facts("state")); got != "Bergen,Oslo" && got != "Oslo,Bergen" {
		t.Errorf("state: %q, want both values of a Many predicate", got)
	}
	for _, c := range []struct{ file, want string }{
		{"[llm]\nmodle = \"x\"\n", `unknown key "llm.modle"`},
		{"[store]\ndurability = \"sometimes\"\n", `store.durability = "sometimes"`},
		{"[[predicates]]\nname = \"x\"\ncardinality = \"few\"\n", `cardinality "few"`},
		{"[extractor]\nkind = \"llm\"\n", "the llm extractor needs a model"},
		{"[embedder]\nkind = \"http\"\nmodel = \"m\"\n", "the http embedder needs a base URL"},
		{"[llm\n", "config file"},
	} {
		os.WriteFile(cfg, []byte(c.file), 0o600)
		r := e.run("", "state")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("config %q: exit %d, stderr %q; want exit 2, one line with %q", c.file, r.code, r.stderr, c.want)
		}
	}
	if r := e.run("", "state", "--config", filepath.Join(t.TempDir(), "none.toml")); r.code != 2 || !strings.Contains(r.stderr, "none.toml") {
		t.Errorf("missing --config file: exit %d, %q", r.code, r.stderr)
	}
}

// TestConfigUnreachable: an unreachable endpoint is an error, unless the
// user asked for the fallback: then a warning, and the offline default.
func TestConfigUnreachable(t *testing.T) {
	t.Parallel()
	ln := httptest.NewServer(http.NotFoundHandler())
	dead := ln.URL + "/v1"
	ln.Close()
	e := newEnv(t).with("MEMOR_LLM_BASE_URL="+dead, "MEMOR_LLM_MODEL=m")
	r := e.run("", "add", "I live in Lisbon.")
	if r.code != 2 || !strings.Contains(r.stderr, "unreachable") || !strings.Contains(r.stderr, "--fallback") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("unreachable LLM: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := e.run("", "config", "--check"); r.code != 2 || !strings.Contains(r.stderr, "unreachable") {
		t.Errorf("config --check with an unreachable LLM: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := e.run("", "config"); r.code != 0 {
		t.Errorf("config without --check contacts the endpoint: exit %d, stderr %q", r.code, r.stderr)
	}
	r = e.with("MEMOR_FALLBACK=true").run("", "add", "I live in Lisbon.")
	if r.code != 0 || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "rules extractor") {
		t.Fatalf("fallback: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := objects(e.with("MEMOR_LLM_MODEL=", "MEMOR_LLM_BASE_URL=").facts("state")); got != "Lisbon" {
		t.Errorf("fallback stored %q, want the rules' Lisbon", got)
	}
	r = e.with("MEMOR_LLM_MODEL=", "MEMOR_EMBED_BASE_URL="+dead, "MEMOR_EMBED_MODEL=m").run("", "state")
	if r.code != 2 || !strings.Contains(r.stderr, "embeddings endpoint") {
		t.Errorf("unreachable embedder: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestServeAndMCPUseConfiguredBackends: memor serve and memor-server take
// the same configuration: their adds go through the fake LLM.
func TestServeAndMCPUseConfiguredBackends(t *testing.T) {
	t.Parallel()
	f, base := newFakeOpenAI(t, "")
	e := newEnv(t).with("MEMOR_LLM_BASE_URL="+base, "MEMOR_LLM_MODEL=fake-chat", "MEMOR_RERANKER=llm")
	url, stop := serve(t, e, "--addr", "127.0.0.1:0")
	resp, err := http.Post(url+"/v1/users/me/episodes?wait=true", "application/json", strings.NewReader(`{"text":"I went to Oslo","at":"2026-01-10T00:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || f.extracts.Load() != 1 {
		t.Fatalf("serve add: %d %s; extract calls %d", resp.StatusCode, body, f.extracts.Load())
	}
	resp, err = http.Get(url + "/v1/users/me/query?q=Oslo")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || f.reran.Load() == 0 {
		t.Errorf("serve query: %d %s; rerank calls %d", resp.StatusCode, body, f.reran.Load())
	}
	if code := stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exit %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(serverBin)
	cmd.Env = e.vars
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory",
		Arguments: map[string]any{"user_id": "me", "text": "Then I went to Bergen", "at": "2026-02-10"}})
	if err != nil || res.IsError {
		t.Fatalf("add_memory: %v %+v", err, res)
	}
	cs.Close()
	if f.extracts.Load() != 2 {
		t.Errorf("memor-server add: extract calls %d, want 2", f.extracts.Load())
	}
	if got := objects(e.facts("state")); got != "Bergen" {
		t.Errorf("state after serve and mcp adds: %q", got)
	}
}

// TestReembedAfterKill: a store built by the hash embedder refuses the
// http one with an error naming both; memor reembed moves it, and killed
// part way (SIGKILL while the embeddings server holds a request) it
// resumes after the users already moved.
func TestReembedAfterKill(t *testing.T) {
	t.Parallel()
	f, base := newFakeOpenAI(t, "")
	e := newEnv(t)
	users := []string{"ana", "bo", "cy"}
	for _, u := range users {
		e.ok("--user", u, "add", "I live in Lisbon and sail boats.")
	}
	h := e.with("MEMOR_EMBED_BASE_URL="+base, "MEMOR_EMBED_MODEL=fake-embed")
	r := h.run("", "state")
	if r.code != 1 || !strings.Contains(r.stderr, "hash (384 dimensions)") || !strings.Contains(r.stderr, "http fake-embed (8 dimensions)") ||
		!strings.Contains(r.stderr, "memor reembed") {
		t.Fatalf("open with another embedder: exit %d, stderr %q", r.code, r.stderr)
	}

	// The third embeddings request (probe, first user, second user) hangs:
	// the process is killed while it waits.
	var once sync.Once
	held := make(chan struct{})
	release := make(chan struct{})
	start := int(f.embedCalls.Load())
	f.block = func(n int) {
		if n == start+3 {
			once.Do(func() { close(held) })
			<-release
		}
	}
	defer close(release)
	cmd := exec.Command(memorBin, "reembed")
	cmd.Env = append(slices.Clone(h.vars), "MEMOR_PROGRESS_INTERVAL=1ns")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("reembed never reached its second user: %s", stderr.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.Contains(stderr.String(), ": 1/3 users (33%)") {
		t.Errorf("progress before the kill: %q", stderr.String())
	}
	f.block = nil
	for _, x := range []*env{e, h} {
		if r := x.run("", "state"); r.code != 1 || !strings.Contains(r.stderr, "interrupted reembed") {
			t.Errorf("open after a killed reembed: exit %d, %q", r.code, r.stderr)
		}
	}
	before := f.embedCalls.Load()
	h.vars = append(h.vars, "MEMOR_PROGRESS_INTERVAL=1ns")
	r = h.run("", "reembed")
	if r.code != 0 || !strings.Contains(r.stdout, "reembedded with http fake-embed (8 dimensions)") || !strings.Contains(r.stderr, "3/3") {
		t.Fatalf("resumed reembed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The probe and the two users left: the first is not embedded again.
	if got := f.embedCalls.Load() - before; got != 3 {
		t.Errorf("resumed reembed made %d embeddings requests, want 3", got)
	}
	if out := h.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("check after reembed: %s", out)
	}
	before = f.embedCalls.Load()
	if out := h.ok("--user", "bo", "query", "sailing boats"); !strings.Contains(out, "sail") {
		t.Errorf("query after reembed: %s", out)
	}
	if f.embedCalls.Load() == before {
		t.Error("query did not embed through the configured embedder")
	}
	if r := e.run("", "state"); r.code != 1 || !strings.Contains(r.stderr, "built by embedder http fake-embed (8 dimensions), not hash") {
		t.Errorf("the old embedder after reembed: exit %d, %q", r.code, r.stderr)
	}
}

// TestREADMEConfiguration: the README's config file is one memor accepts
// as written, and its table names every setting's variable and flag.
func TestREADMEConfiguration(t *testing.T) {
	t.Parallel()
	sec := readmeSection(t, "Configuration")
	var file string
	for _, b := range codeBlocks(sec) {
		if b.lang == "toml" {
			file = b.body
		}
	}
	if file == "" {
		t.Fatal("README Configuration: no toml block")
	}
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "memor"), 0o700)
	os.WriteFile(filepath.Join(xdg, "memor", "config.toml"), []byte(file), 0o600)
	e := newEnv(t).with("XDG_CONFIG_HOME=" + xdg)
	var got struct {
		File      string
		Settings  []struct{ Key, Value, Source, Env, Flag string }
		Effective map[string]string
	}
	if err := json.Unmarshal([]byte(e.ok("--json", "config")), &got); err != nil {
		t.Fatal(err)
	}
	if got.File == "" || got.Effective["extractor"] != "llm" || got.Effective["embedder"] != "http" {
		t.Errorf("the README's file was not read as written: %+v", got)
	}
	for _, s := range got.Settings {
		names := []string{s.Env, s.Flag}
		if !strings.HasPrefix(s.Key, "judge.") && !strings.HasPrefix(s.Key, "reranker.") || strings.HasSuffix(s.Key, ".kind") {
			names = append(names, s.Key) // the judge's and reranker's endpoint keys share a row
		}
		for _, name := range names {
			if name != "" && !strings.Contains(sec, "`"+name+"`") {
				t.Errorf("README Configuration does not name %s", name)
			}
		}
	}
}
