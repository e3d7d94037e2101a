package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/syncbuf"
)

// badLine is a line the server must refuse with a JSON-RPC error and then
// keep serving.
type badLine struct {
	name, line string
	code       float64
	id         any // nil: the error's id is null
}

// badLines are the refused lines for a transport bounding a line to limit
// bytes.
func badLines(limit int) []badLine {
	call := func(id int, user, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"%s","text":"%s"}}}`, id, user, text)
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	return []badLine{
		{"garbage", "this is not json", -32700, nil},
		{"garbage bytes", "\x00\x01\x02", -32700, nil},
		{"truncated", `{"jsonrpc":"2.0","id":5,"method":"tools/list"`, -32700, nil},
		{"two values", `{"jsonrpc":"2.0","id":6,"method":"ping"} {"jsonrpc":"2.0","id":6,"method":"ping"}`, -32700, nil},
		{"trailing garbage", `{"jsonrpc":"2.0","id":6,"method":"ping"}x`, -32700, nil},
		{"no jsonrpc", `{"id":7,"method":"tools/list"}`, -32600, 7.0},
		{"wrong version", `{"jsonrpc":"1.0","id":"s8","method":"tools/list"}`, -32600, "s8"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{"method not a string", `{"jsonrpc":"2.0","id":9,"method":1}`, -32600, 9.0},
		{"response without jsonrpc", `{"id":1,"result":{}}`, -32600, nil},
		{"number", `42`, -32600, nil},
		{"null", `null`, -32600, nil},
		{"string", `"tools/list"`, -32600, nil},
		{"empty batch", `[]`, -32600, nil},
		{"batch", `[{"jsonrpc":"2.0","id":10,"method":"ping"}]`, -32600, nil},
		{"nested too deep", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"a":` + deep + `}}`, -32700, 11.0},
		{"nested too deep batch", `[` + deep[1:] + `]`, -32700, nil},
		{"over-long", `{"jsonrpc":"2.0","id":12,"method":"ping","params":{"p":"` + strings.Repeat("x", limit) + `"}}`, -32700, nil},
		{"user ID not UTF-8", call(13, "\xff", "I live in Oslo."), -32700, 13.0},
		{"other user ID not UTF-8", call(14, "\xfe", "I live in Rome."), -32700, 14.0},
		{"lone high surrogate", call(15, `\ud800`, "I live in Oslo."), -32700, 15.0},
		{"lone low surrogate", call(16, `\udfff`, "I live in Rome."), -32700, 16.0},
		{"high surrogate then a letter", call(17, `\ud800\u0041`, "I live in Oslo."), -32700, 17.0},
		{"high surrogate at the end", call(18, `ab\udbff`, "I live in Oslo."), -32700, 18.0},
		{"text not UTF-8", call(19, "me", "I live in \xc3."), -32700, 19.0},
	}
}

// rawSession serves e over a Transport and speaks raw lines to it.
type rawSession struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	done  chan error
	log   *syncbuf.Buffer
}

func newRawSession(t *testing.T, e *memor.Engine, limit int) *rawSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawSession{t: t, in: inW, lines: make(chan string, 16), done: make(chan error, 1), log: &syncbuf.Buffer{}}
	logger := slog.New(slog.NewTextHandler(r.log, nil))
	go func() {
		tr := &Transport{Reader: inR, Writer: outW, Logger: logger, MaxLineBytes: limit}
		r.done <- New(e, Options{Version: "test", Logger: logger}).Run(context.Background(), tr)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() { inW.Close() })
	return r
}

// send writes line and returns the next message the server writes.
func (r *rawSession) send(line string) map[string]any {
	r.t.Helper()
	r.write(line)
	return r.next(line)
}

func (r *rawSession) write(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write %.60q: %v", line, err)
	}
}

func (r *rawSession) next(after string) map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("the server ended after %.80q: %v", after, <-r.done)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			r.t.Fatalf("not a JSON-RPC line: %q", line)
		}
		return m
	case <-time.After(20 * time.Second):
		r.t.Fatalf("no answer to %.80q", after)
	}
	return nil
}

// TestTransportSurvivesBadLines feeds every kind of malformed line, each
// followed by a valid call on the same input: each bad line gets a JSON-RPC
// error (with the request's id when it has one), each valid call its
// answer, and the session lives on.
func TestTransportSurvivesBadLines(t *testing.T) {
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const limit = 4096
	r := newRawSession(t, e, limit)
	init := r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if res, _ := init["result"].(map[string]any); res == nil {
		t.Fatalf("initialize: %v", init)
	}
	r.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	bad := badLines(limit)
	for i, b := range bad {
		got := r.send(b.line)
		e, _ := got["error"].(map[string]any)
		if e == nil || e["code"] != b.code || got["id"] != b.id {
			t.Errorf("%s: got %v, want error %v with id %v", b.name, got, b.code, b.id)
		}
		if id, ok := got["id"]; !ok {
			t.Errorf("%s: the error has no id member: %v", b.name, got)
		} else if msg, _ := e["message"].(string); msg == "" {
			t.Errorf("%s: the error (id %v) says nothing", b.name, id)
		}
		id := 1000 + i
		ok := r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_user_profile","arguments":{"user_id":"me"}}}`, id))
		if res, _ := ok["result"].(map[string]any); ok["id"] != float64(id) || res == nil || res["isError"] == true {
			t.Fatalf("after %s: valid call answered %v", b.name, ok)
		}
	}
	// Blank lines, white space around a message and CRLF are fine.
	r.write("")
	r.write("  \t ")
	if got := r.send(" \t{\"jsonrpc\":\"2.0\",\"id\":2000,\"method\":\"ping\"}  \r"); got["id"] != 2000.0 || got["error"] != nil {
		t.Errorf("ping with white space and CRLF: %v", got)
	}
	// A paired surrogate escape is a character like any other.
	add := r.send(`{"jsonrpc":"2.0","id":2001,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"\ud83d\ude42","text":"I live in Oslo."}}}`)
	if res, _ := add["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("add_memory for a user named by a surrogate pair: %v", add)
	}
	users, err := e.Users(context.Background())
	if err != nil || !slices.Equal(users, []string{"🙂"}) {
		t.Errorf("users = %q, %v; want only 🙂 (no U+FFFD user from the refused IDs)", users, err)
	}
	if n := strings.Count(r.log.String(), "refused a malformed JSON-RPC line"); n != len(bad) {
		t.Errorf("%d refusals logged, want %d:\n%s", n, len(bad), r.log.String())
	}
	r.in.Close()
	select {
	case err := <-r.done:
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Errorf("Run after the input ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end with its input")
	}
}

// TestCheckLine pins the line checks on their own, including the edges of
// the surrogate scan.
func TestCheckLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		code int64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\\ud800"}}`, 0}, // an escaped backslash, then text
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\"\ud83d\ude42\u00e9\ufffd"}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\ud800":1}}`, -32700}, // in a key too
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud83d\ud83d"}}`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\udc00\ud800"}}`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800\n"}}`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + strings.Repeat("[", MaxDepth) + `"}`, 0}, // brackets in a string
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, -32700},
	} {
		if code, msg := check([]byte(tc.line)); code != tc.code {
			t.Errorf("check(%.100s) = %d %s, want %d", tc.line, code, msg, tc.code)
		}
	}
}

// TestInputEndAnswersCallsRead: calls written just before the input ends
// (a host closing stdin right after its last call, or `memor mcp <
// calls.jsonl`) are carried out and answered before the session ends; the
// SDK alone drops them unanswered, the write not made.
func TestInputEndAnswersCallsRead(t *testing.T) {
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newRawSession(t, e, 0)
	r.write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next("initialize")
	r.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const n = 5
	for i := range n {
		r.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add_memory","arguments":{"user_id":"me","text":"I visited museum number %d in Oslo."}}}`, 10+i, i))
	}
	r.write(`{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"query_memory","arguments":{"user_id":"me","text":"museum"}}}`)
	r.in.Close()
	answered := map[any]bool{}
	for line := range r.lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Errorf("call %v failed: %v", m["id"], m)
		}
		answered[m["id"]] = true
	}
	if err := <-r.done; err != nil {
		t.Logf("session ended: %v", err)
	}
	for i := range n {
		if !answered[float64(10+i)] {
			t.Errorf("call %d was not answered", 10+i)
		}
	}
	if !answered["last"] {
		t.Error("the last call was not answered")
	}
	if eps, err := e.Episodes(context.Background(), "me"); err != nil || len(eps) != n {
		t.Errorf("%d episodes stored (%v), want %d", len(eps), err, n)
	}
}

// TestCancelledCallDoesNotHoldTheEnd: a call the client cancels gets no
// answer (MCP's rule), so the input's end does not wait for one.
func TestCancelledCallDoesNotHoldTheEnd(t *testing.T) {
	c := newCalls(context.Background())
	c.note([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`))
	c.note([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`))
	ended := make(chan struct{})
	go func() { c.wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the end waits for a cancelled call")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c = newCalls(ctx)
	c.note([]byte(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"x"}}`))
	ended = make(chan struct{})
	go func() { c.wait(); close(ended) }()
	select {
	case <-ended:
		t.Fatal("the end did not wait for an unanswered call")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the end still waits after the session's context ended")
	}
}
