package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
)

// connect starts a server over e and returns a client session talking to
// it through the SDK's in-memory transport.
func connect(t *testing.T) (*mcp.ClientSession, *memor.Engine) {
	t.Helper()
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(e, Options{Version: "test"}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
		e.Close()
	})
	return cs, e
}

// call invokes a tool and decodes its structured content into out. It
// fails the test on a protocol error; a tool error is returned as text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (errText string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		if text == "" {
			t.Fatalf("%s: tool error without text", name)
		}
		return text
	}
	if text == "" {
		t.Errorf("%s: result without readable text", name)
	}
	if out != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, data, err)
		}
	}
	return ""
}

func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if msg := call(t, cs, name, args, out); msg != "" {
		t.Fatalf("%s(%v): tool error %s", name, args, msg)
	}
}

func objects(fs []Fact) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Object)
	}
	return s
}

func TestListTools(t *testing.T) {
	cs, _ := connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s: missing description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"accept_memory", "add_memory", "correct_memory", "forget_memory", "get_history", "get_user_profile",
		"list_conflicts", "query_as_of", "query_memory"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestTools(t *testing.T) {
	cs, e := connect(t)
	var added addOut
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I live in San Francisco.", "at": "2026-01-10"}, &added)
	if added.Seq != 1 || len(added.Learned) != 1 || added.Learned[0].Object != "San Francisco" {
		t.Fatalf("add_memory = %+v", added)
	}
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I just moved to Seattle.", "at": "2026-07-11T10:00:00Z"}, &added)
	if added.Seq != 2 || len(added.Learned) != 1 || added.Learned[0].Object != "Seattle" {
		t.Fatalf("add_memory = %+v", added)
	}
	// add_memory waited: the engine has nothing pending.
	if f, err := e.Freshness(context.Background(), "me"); err != nil || f.Pending != 0 {
		t.Fatalf("freshness after add_memory: %+v %v", f, err)
	}

	var prof factsOut
	mustCall(t, cs, "get_user_profile", map[string]any{"user_id": "me"}, &prof)
	if got := objects(prof.Facts); !slices.Equal(got, []string{"Seattle"}) {
		t.Errorf("profile = %v, want [Seattle]", got)
	}
	seattle := prof.Facts[0].ID

	var hist factsOut
	mustCall(t, cs, "get_history", map[string]any{"user_id": "me", "predicate": "lives_in"}, &hist)
	if len(hist.Facts) != 3 {
		t.Errorf("history = %+v, want 3 versions", hist.Facts)
	}
	rules := map[string]bool{}
	for _, f := range hist.Facts {
		rules[f.Rule] = true
	}
	if !rules["supersede"] {
		t.Errorf("history rules = %v, want supersede among them", rules)
	}

	var asof asOfOut
	mustCall(t, cs, "query_as_of", map[string]any{"user_id": "me", "valid_at": "2026-02-01"}, &asof)
	if got := objects(asof.Facts); !slices.Equal(got, []string{"San Francisco"}) {
		t.Errorf("as of 2026-02-01 = %v, want [San Francisco]", got)
	}
	// Audit: known at the epoch of the store, memor knew nothing.
	mustCall(t, cs, "query_as_of", map[string]any{"user_id": "me", "valid_at": "2026-02-01", "known_at": "2000-01-01"}, &asof)
	if len(asof.Facts) != 0 {
		t.Errorf("as known in 2000 = %v, want nothing", objects(asof.Facts))
	}

	var conf factsOut
	mustCall(t, cs, "list_conflicts", map[string]any{"user_id": "me"}, &conf)
	if conf.Facts == nil || len(conf.Facts) != 0 {
		t.Errorf("conflicts = %+v, want an empty list", conf.Facts)
	}
	// Two different cities for the same day: contested.
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "c", "text": "I live in Oslo.", "at": "2026-03-01"}, nil)
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "c", "text": "I live in Bergen.", "at": "2026-03-01"}, nil)
	mustCall(t, cs, "list_conflicts", map[string]any{"user_id": "c"}, &conf)
	if len(conf.Facts) == 0 {
		t.Fatalf("same-instant disagreement not listed as a conflict")
	}
	// Accepting one of them: it is the value in force, its rival stays
	// contested.
	var bergen string
	for _, f := range conf.Facts {
		if f.Object == "Bergen" {
			bergen = f.ID
		}
	}
	var acc doneOut
	mustCall(t, cs, "accept_memory", map[string]any{"user_id": "c", "fact_id": bergen}, &acc)
	if acc.Done != "accepted "+bergen {
		t.Errorf("accept_memory = %+v", acc)
	}
	mustCall(t, cs, "get_user_profile", map[string]any{"user_id": "c"}, &prof)
	if got := objects(prof.Facts); !slices.Equal(got, []string{"Bergen"}) {
		t.Errorf("profile after accept = %v, want [Bergen]", got)
	}
	mustCall(t, cs, "list_conflicts", map[string]any{"user_id": "c"}, &conf)
	if got := objects(conf.Facts); !slices.Equal(got, []string{"Oslo"}) {
		t.Errorf("conflicts after accept = %v, want [Oslo]", got)
	}

	var done doneOut
	mustCall(t, cs, "correct_memory", map[string]any{"user_id": "me", "fact_id": seattle}, &done)
	mustCall(t, cs, "get_user_profile", map[string]any{"user_id": "me"}, &prof)
	if got := objects(prof.Facts); !slices.Equal(got, []string{"San Francisco"}) {
		t.Errorf("profile after correct = %v, want [San Francisco]", got)
	}

	{
		var q queryOut
		mustCall(t, cs, "query_memory", map[string]any{"user_id": "me", "text": "Where do I live?", "limit": 3}, &q)
		if len(q.Results) == 0 || len(q.Results) > 3 || !strings.Contains(q.Results[0].Text+q.Results[len(q.Results)-1].Text, "San Francisco") {
			t.Errorf("query_memory = %+v", q.Results)
		}
		mustCall(t, cs, "query_as_of", map[string]any{"user_id": "me", "text": "Where do I live?", "valid_at": "2026-02-01"}, &asof)
		if len(asof.Results) == 0 {
			t.Errorf("query_as_of with text: no results")
		}
	}

	mustCall(t, cs, "forget_memory", map[string]any{"user_id": "me"}, &done)
	mustCall(t, cs, "get_user_profile", map[string]any{"user_id": "me"}, &prof)
	if len(prof.Facts) != 0 {
		t.Errorf("profile after forget = %v", objects(prof.Facts))
	}
}

// TestBadArguments: every mistake a model can make comes back as a tool
// error it can read, and the session goes on.
func TestBadArguments(t *testing.T) {
	cs, _ := connect(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string // a word the error must contain
	}{
		{"add_memory", map[string]any{"text": "hi"}, "user_id"},
		{"add_memory", map[string]any{"user_id": "", "text": "hi"}, "user_id"},
		{"add_memory", map[string]any{"user_id": "u", "text": "   "}, "text"},
		{"add_memory", map[string]any{"user_id": "u", "text": 42}, "text"},
		{"add_memory", map[string]any{"user_id": "u", "text": "hi", "at": "tomorrow-ish"}, "RFC 3339"},
		{"add_memory", map[string]any{"user_id": "u", "text": strings.Repeat("a", 70<<10)}, "too large"},
		{"query_memory", map[string]any{"user_id": "u", "text": "x", "limit": -1}, "limit"},
		{"query_memory", map[string]any{"user_id": "u", "text": "x", "limit": 1000}, "limit"},
		{"query_memory", map[string]any{"user_id": "u", "text": ""}, "text"},
		{"get_user_profile", map[string]any{}, "user_id"},
		{"get_history", map[string]any{"user_id": "u"}, "predicate"},
		{"get_history", map[string]any{"user_id": "u", "predicate": ""}, "predicate"},
		{"query_as_of", map[string]any{"user_id": "u", "valid_at": "01/02/2026"}, "RFC 3339"},
		{"query_as_of", map[string]any{"user_id": "u", "known_at": "0000-01-01"}, "time"},
		{"correct_memory", map[string]any{"user_id": "u", "fact_id": "nope"}, "fact_id"},
		{"correct_memory", map[string]any{"user_id": "u"}, "fact_id"},
		{"accept_memory", map[string]any{"user_id": "u", "fact_id": "nope"}, "fact_id"},
		{"accept_memory", map[string]any{"user_id": "u"}, "fact_id"},
		{"list_conflicts", map[string]any{"user_id": ""}, "user_id"},
		{"forget_memory", map[string]any{"user_id": ""}, "user_id"},
		{"forget_memory", map[string]any{"user_id": "u", "extra": true}, "extra"},
	} {
		msg := call(t, cs, c.tool, c.args, nil)
		t.Logf("%s: %s", c.tool, msg)
		if msg == "" {
			t.Errorf("%s(%v): no tool error", c.tool, c.args)
			continue
		}
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(c.want)) {
			t.Errorf("%s(%v): error %q does not mention %q", c.tool, c.args, msg, c.want)
		}
	}
	// An unknown tool is a protocol error, and the session survives it.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("unknown tool: no error")
	}
	mustCall(t, cs, "get_user_profile", map[string]any{"user_id": "u"}, nil)
}

// TestClosedEngine: when the store is gone, every tool answers a readable
// tool error and the session survives.
func TestClosedEngine(t *testing.T) {
	cs, e := connect(t)
	e.Close()
	for name, args := range map[string]map[string]any{
		"add_memory":       {"user_id": "u", "text": "I live in Oslo."},
		"query_memory":     {"user_id": "u", "text": "where"},
		"get_user_profile": {"user_id": "u"},
		"get_history":      {"user_id": "u", "predicate": "lives_in"},
		"query_as_of":      {"user_id": "u", "valid_at": "2026-02-01"},
		"correct_memory":   {"user_id": "u", "fact_id": "00000000000000000000000000000000"},
		"accept_memory":    {"user_id": "u", "fact_id": "00000000000000000000000000000000"},
		"list_conflicts":   {"user_id": "u"},
		"forget_memory":    {"user_id": "u"},
	} {
		if msg := call(t, cs, name, args, nil); !strings.Contains(msg, "closed") {
			t.Errorf("%s on a closed store: %q, want a tool error saying it is closed", name, msg)
		}
	}
}

// TestSchemas: the input schemas require exactly the arguments a call
// cannot do without.
func TestSchemas(t *testing.T) {
	cs, _ := connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"add_memory": {"text", "user_id"}, "query_memory": {"text", "user_id"}, "get_user_profile": {"user_id"},
		"forget_memory": {"user_id"}, "get_history": {"predicate", "user_id"}, "query_as_of": {"user_id"},
		"correct_memory": {"fact_id", "user_id"}, "list_conflicts": {"user_id"}, "accept_memory": {"fact_id", "user_id"},
	}
	for _, tool := range res.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Type     string   `json:"type"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		slices.Sort(s.Required)
		if s.Type != "object" || !slices.Equal(s.Required, want[tool.Name]) {
			t.Errorf("%s: input schema type %q required %v, want object requiring %v", tool.Name, s.Type, s.Required, want[tool.Name])
		}
	}
}

// TestQueryExplain: query_memory's explain argument adds an explanation
// to every result, in the structured content and in the text.
func TestQueryExplain(t *testing.T) {
	cs, _ := connect(t)
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "My brother Alex adopted a golden retriever named Buddy last month.", "at": "2026-03-02"}, nil)
	var q queryOut
	mustCall(t, cs, "query_memory", map[string]any{"user_id": "me", "text": "What kind of dog does my brother have?", "explain": true}, &q)
	if len(q.Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range q.Results {
		if r.Explanation == nil || r.Explanation.Query == nil || len(r.Explanation.Signals) == 0 {
			t.Fatalf("%s: explanation %+v", r.Text, r.Explanation)
		}
		if r.Explanation.Query.Focus.Relation != "brother" {
			t.Errorf("%s: focus %+v, want through brother", r.Text, r.Explanation.Query.Focus)
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_memory",
		Arguments: map[string]any{"user_id": "me", "text": "What kind of dog does my brother have?", "explain": true}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "focus: relation") || !strings.Contains(text, "normalised") {
		t.Errorf("text without the explanation:\n%s", text)
	}
	var plain queryOut
	mustCall(t, cs, "query_memory", map[string]any{"user_id": "me", "text": "What kind of dog does my brother have?"}, &plain)
	for _, r := range plain.Results {
		if r.Explanation != nil {
			t.Errorf("%s: explanation without explain", r.Text)
		}
	}
}

// TestAddIdempotencyKey: add_memory repeated with its idempotency_key
// remembers nothing new and returns the first episode (repeated); the key
// with another text is a tool error.
func TestAddIdempotencyKey(t *testing.T) {
	cs, e := connect(t)
	args := map[string]any{"user_id": "me", "text": "I live in Oslo.", "idempotency_key": "call-1"}
	var first, again addOut
	mustCall(t, cs, "add_memory", args, &first)
	mustCall(t, cs, "add_memory", args, &again)
	if first.Repeated || !again.Repeated || again.Seq != first.Seq {
		t.Fatalf("first %+v, again %+v; want the repeat to return episode %d", first, again, first.Seq)
	}
	eps, err := e.Episodes(context.Background(), "me")
	if err != nil || len(eps) != 1 {
		t.Fatalf("me holds %d episodes (%v), want 1", len(eps), err)
	}
	args["text"] = "I live in Rome."
	if msg := call(t, cs, "add_memory", args, nil); !strings.Contains(msg, "idempotency key") {
		t.Fatalf("the key with another text: %q, want a tool error naming the key", msg)
	}
}
