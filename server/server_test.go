package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/memortest"
)

func openEngine(t testing.TB, o memor.Options) *memor.Engine {
	t.Helper()
	o.NoSync = true
	e, err := memor.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

type api struct {
	t     testing.TB
	srv   *httptest.Server
	e     *memor.Engine
	token string
}

func newAPI(t testing.TB, o Options) *api {
	e := openEngine(t, memor.Options{MaxTextBytes: 4096})
	srv := httptest.NewServer(New(e, o))
	t.Cleanup(srv.Close)
	return &api{t: t, srv: srv, e: e, token: o.Token}
}

// do sends a request and decodes the JSON answer into a generic value.
func (a *api) do(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	return a.doHeaders(method, path, body, nil)
}

// doHeaders is do with these request headers besides.
func (a *api) doHeaders(method, path string, body any, headers map[string]string) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if ct := resp.Header.Get("Content-Type"); ct == "application/json" && len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			a.t.Fatalf("%s %s: bad JSON %q: %v", method, path, data, err)
		}
	} else {
		out = map[string]any{"raw": string(data)}
	}
	return resp.StatusCode, out
}

func (a *api) must(status int, method, path string, body any) map[string]any {
	a.t.Helper()
	got, out := a.do(method, path, body)
	if got != status {
		a.t.Fatalf("%s %s: status %d, want %d: %v", method, path, got, status, out)
	}
	return out
}

// objects returns the "object" field of every fact in a facts response.
func objects(out map[string]any) []string {
	var s []string
	fs, _ := out["facts"].([]any)
	for _, f := range fs {
		s = append(s, f.(map[string]any)["object"].(string))
	}
	return s
}

func factID(t *testing.T, out map[string]any, object string) string {
	t.Helper()
	fs, _ := out["facts"].([]any)
	for _, f := range fs {
		m := f.(map[string]any)
		if m["object"] == object {
			return m["id"].(string)
		}
	}
	t.Fatalf("no fact with object %q in %v", object, out)
	return ""
}

func (a *api) tell(user, text, at string) {
	a.t.Helper()
	out := a.must(http.StatusCreated, "POST", "/v1/users/"+url.PathEscape(user)+"/episodes",
		map[string]any{"text": text, "at": at, "wait": true})
	if out["applied"] != true {
		a.t.Fatalf("wait:true answered applied=%v", out["applied"])
	}
}

func TestTimeline(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("me", "I live in San Francisco.", "2026-01-10")
	a.tell("me", "I just moved to Seattle.", "2026-07-11T09:00:00Z")

	if got := objects(a.must(200, "GET", "/v1/users/me/state", nil)); strings.Join(got, ",") != "Seattle" {
		t.Errorf("state = %v, want [Seattle]", got)
	}
	if got := objects(a.must(200, "GET", "/v1/users/me/asof?valid=2026-02-01", nil)); strings.Join(got, ",") != "San Francisco" {
		t.Errorf("asof 2026-02-01 = %v, want [San Francisco]", got)
	}
	// Audit: known before the move was learned, valid after it: memor did
	// not know yet, so nothing about Seattle.
	before := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if got := objects(a.must(200, "GET", "/v1/users/me/asof?valid=2026-08-01&known="+before, nil)); len(got) != 0 {
		t.Errorf("asof known an hour ago = %v, want nothing", got)
	}
	hist := a.must(200, "GET", "/v1/users/me/history?predicate=lives_in", nil)
	if got := objects(hist); len(got) != 3 {
		t.Errorf("history = %v, want 3 versions (SF open, SF closed, Seattle)", got)
	}
	if got := a.must(200, "GET", "/v1/users/me/history?subject=user&predicate=resides_in", nil); len(objects(got)) != 3 {
		t.Errorf("history by alias = %v, want 3 versions", objects(got))
	}
	c := a.must(200, "GET", "/v1/users/me/conflicts", nil)
	if fs, ok := c["facts"].([]any); !ok || len(fs) != 0 {
		t.Errorf("conflicts = %v, want an empty array (not null)", c)
	}
	fr := a.must(200, "GET", "/v1/users/me/freshness", nil)
	if fr["pending"].(float64) != 0 || fr["latest"].(float64) != 2 {
		t.Errorf("freshness = %v", fr)
	}

	// Correct Seattle: San Francisco is restored.
	id := factID(t, a.must(200, "GET", "/v1/users/me/state", nil), "Seattle")
	a.must(200, "POST", "/v1/users/me/facts/"+id+"/correct", nil)
	if got := objects(a.must(200, "GET", "/v1/users/me/state", nil)); strings.Join(got, ",") != "San Francisco" {
		t.Errorf("state after correct = %v, want [San Francisco]", got)
	}
	// Unknown but well-formed ID: 404; malformed: 400.
	_, out := a.do("POST", "/v1/users/me/facts/"+strings.Repeat("0", len(id))+"/correct", nil)
	if out["code"] != "not_found" {
		t.Errorf("correct unknown fact: %v, want code not_found", out)
	}
	if st, out := a.do("POST", "/v1/users/me/facts/zz/correct", nil); st != 404 || out["code"] != "not_found" {
		t.Errorf("correct malformed id: %d %v, want 404 not_found", st, out)
	}

	a.must(200, "DELETE", "/v1/users/me", nil)
	if got := objects(a.must(200, "GET", "/v1/users/me/state", nil)); len(got) != 0 {
		t.Errorf("state after forget = %v", got)
	}
	if got := objects(a.must(200, "GET", "/v1/users/me/history?predicate=lives_in", nil)); len(got) != 0 {
		t.Errorf("history after forget = %v", got)
	}
}

func TestAsyncAddDrains(t *testing.T) {
	a := newAPI(t, Options{})
	out := a.must(http.StatusAccepted, "POST", "/v1/users/u1/episodes", map[string]any{"text": "I live in Oslo."})
	ep := out["episode"].(map[string]any)
	if out["applied"] != false || ep["seq"].(float64) != 1 {
		t.Fatalf("async add = %v", out)
	}
	// ?wait=true works as well as the body field.
	a.must(http.StatusCreated, "POST", "/v1/users/u1/episodes?wait=true", map[string]any{"text": "I work at Acme."})
	if err := Drain(context.Background(), a.e); err != nil {
		t.Fatal(err)
	}
	if got := objects(a.must(200, "GET", "/v1/users/u1/state", nil)); len(got) != 2 {
		t.Errorf("state = %v, want Oslo and Acme", got)
	}
}

func TestEscapedUsers(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("a/b", "I live in Lima.", "2026-01-01")
	a.tell("a", "I live in Quito.", "2026-01-01")
	a.tell("ユーザ x", "I live in Kyoto.", "2026-01-01")
	for user, want := range map[string]string{"a/b": "Lima", "a": "Quito", "ユーザ x": "Kyoto", "b": ""} {
		got := objects(a.must(200, "GET", "/v1/users/"+url.PathEscape(user)+"/state", nil))
		if strings.Join(got, ",") != want {
			t.Errorf("user %q: state %v, want %q", user, got, want)
		}
		if len(got) == 1 {
			fs := a.must(200, "GET", "/v1/users/"+url.PathEscape(user)+"/state", nil)["facts"].([]any)
			if u := fs[0].(map[string]any)["user"]; u != user {
				t.Errorf("fact of %q carries user %q", user, u)
			}
		}
	}
	a.must(200, "DELETE", "/v1/users/a%2Fb", nil)
	if got := objects(a.must(200, "GET", "/v1/users/a/state", nil)); strings.Join(got, ",") != "Quito" {
		t.Errorf("forgetting a/b touched a: %v", got)
	}
}

func TestErrors(t *testing.T) {
	a := newAPI(t, Options{MaxBodyBytes: 64 << 10})
	big := strings.Repeat("x", 5000) // over the engine's 4096-byte text limit
	huge := `{"text":"` + strings.Repeat("y", 70<<10) + `"}`
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"bad json", "POST", "/v1/users/u/episodes", `{"text":`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/users/u/episodes", `{"txt":"hi"}`, 400, "bad_request"},
		{"two values", "POST", "/v1/users/u/episodes", `{"text":"a"} {"text":"b"}`, 400, "bad_request"},
		{"bad time", "POST", "/v1/users/u/episodes", map[string]any{"text": "hi", "at": "yesterday"}, 400, "invalid_time"},
		{"text too large", "POST", "/v1/users/u/episodes", map[string]any{"text": big}, 413, "too_large"},
		{"body too large", "POST", "/v1/users/u/episodes", huge, 413, "too_large"},
		{"invalid user", "GET", "/v1/users/%FF/state", nil, 400, "invalid_user"},
		{"history without predicate", "GET", "/v1/users/u/history", nil, 400, "bad_request"},
		{"query without q", "GET", "/v1/users/u/query", nil, 400, "bad_request"},
		{"query bad k", "GET", "/v1/users/u/query?q=x&k=0", nil, 400, "bad_request"},
		{"query huge k", "GET", "/v1/users/u/query?q=x&k=100000", nil, 400, "bad_request"},
		{"query bad valid", "GET", "/v1/users/u/query?q=x&valid=soon", nil, 400, "invalid_time"},
		{"query bad known", "GET", "/v1/users/u/query?q=x&known=13/01/2026", nil, 400, "invalid_time"},
		{"asof bad valid", "GET", "/v1/users/u/asof?valid=2026-13-01", nil, 400, "invalid_time"},
		{"asof year 0", "GET", "/v1/users/u/asof?valid=0000-01-01", nil, 400, "invalid_time"},
		{"correct unknown user", "POST", "/v1/users/nobody/facts/00000000000000000000000000000000/correct", nil, 404, "not_found"},
		{"no route", "GET", "/v2/whatever", nil, 404, "not_found"},
		{"wrong method", "PUT", "/v1/users/u/state", nil, 405, "method_not_allowed"},
		{"wrong method delete", "GET", "/v1/users/u", nil, 405, "method_not_allowed"},
		// Not redirected to the cleaned path, which names another user.
		{"empty segment", "GET", "/v1/users//u/state", nil, 400, "bad_request"},
		{"dot segment", "DELETE", "/v1/users/x/../u", nil, 400, "bad_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, out := a.do(c.method, c.path, c.body)
			if st != c.status || out["code"] != c.code {
				t.Errorf("%d %v, want %d %s", st, out, c.status, c.code)
			}
			if msg, _ := out["error"].(string); msg == "" || strings.Contains(msg, "goroutine") {
				t.Errorf("error message %q: want a one-line reason", msg)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{memor.ErrInvalidUser, 400, "invalid_user"},
		{memor.ErrInvalidText, 400, "invalid_text"},
		{memor.ErrInvalidFact, 400, "invalid_fact"},
		{memor.ErrInvalidTime, 400, "invalid_time"},
		{memor.ErrTooLarge, 413, "too_large"},
		{&http.MaxBytesError{Limit: 1}, 413, "too_large"},
		{memor.ErrNotFound, 404, "not_found"},
		{memor.ErrNotContested, 409, "not_contested"},
		{memor.ErrClosed, 503, "closed"},
		{memor.ErrStorage, 503, "storage"},
		{memor.ErrExtractionFailed, 502, "extraction_failed"},
		{ErrBadRequest, 400, "bad_request"},
		{ErrUnauthorized, 401, "unauthorized"},
		{context.DeadlineExceeded, 504, "timeout"},
		{errors.New("disk on fire"), 500, "internal"},
	} {
		st, code := Status(fmt.Errorf("wrapped: %w", c.err))
		if st != c.status || code != c.code {
			t.Errorf("Status(%v) = %d %s, want %d %s", c.err, st, code, c.status, c.code)
		}
	}
}

func TestClosedEngine(t *testing.T) {
	a := newAPI(t, Options{})
	a.e.Close()
	st, out := a.do("GET", "/v1/users/u/state", nil)
	if st != 503 || out["code"] != "closed" {
		t.Errorf("closed engine: %d %v, want 503 closed", st, out)
	}
}

func TestToken(t *testing.T) {
	a := newAPI(t, Options{Token: "s3cret"})
	a.must(200, "GET", "/v1/users/u/state", nil)
	a.token = "wrong"
	if st, out := a.do("GET", "/v1/users/u/state", nil); st != 401 || out["code"] != "unauthorized" {
		t.Errorf("wrong token: %d %v", st, out)
	}
	a.token = ""
	if st, _ := a.do("GET", "/v1/users/u/state", nil); st != 401 {
		t.Errorf("no token: %d, want 401", st)
	}
	if st, _ := a.do("POST", "/conformance/reset", `{"user":"u"}`); st != 401 {
		t.Errorf("conformance without token: %d, want 401", st)
	}
	a.must(200, "GET", "/v1/health", nil) // probes need no token
}

func TestHealth(t *testing.T) {
	a := newAPI(t, Options{Version: "v9.9.9"})
	if out := a.must(200, "GET", "/v1/health", nil); out["status"] != "ok" || out["version"] != "v9.9.9" {
		t.Errorf("health = %v", out)
	}
}

func TestQuery(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("me", "I live in San Francisco.", "2026-01-10")
	a.tell("me", "I just moved to Seattle.", "2026-07-11")
	out := a.must(200, "GET", "/v1/users/me/query?q="+url.QueryEscape("Where do I live?")+"&k=3", nil)
	rs := out["results"].([]any)
	if len(rs) == 0 || len(rs) > 3 {
		t.Fatalf("results = %v", rs)
	}
	text := fmt.Sprint(rs)
	if !strings.Contains(text, "Seattle") || strings.Contains(text, "San Francisco") {
		t.Errorf("current query served %v: want Seattle, not San Francisco", text)
	}
	out = a.must(200, "GET", "/v1/users/me/query?q="+url.QueryEscape("Where do I live?")+"&valid=2026-02-01", nil)
	if text := fmt.Sprint(out["results"]); !strings.Contains(text, "San Francisco") {
		t.Errorf("as-of query served %v: want San Francisco", text)
	}
}

func TestConformanceRoutes(t *testing.T) {
	a := newAPI(t, Options{Conformance: true})
	user := memortest.UserPrefix + "c"
	state := "/v1/users/" + url.PathEscape(user) + "/state"
	a.must(200, "POST", "/conformance/add", map[string]any{"user": user, "text": "I live in Oslo.", "at": "2025-01-01T00:00:00Z"})
	// add waited: the fact is current at once.
	if got := objects(a.must(200, "GET", state, nil)); strings.Join(got, ",") != "Oslo" {
		t.Errorf("after /conformance/add: state %v", got)
	}
	a.must(200, "POST", "/conformance/reset", map[string]any{"user": user})
	if got := objects(a.must(200, "GET", state, nil)); len(got) != 0 {
		t.Errorf("after /conformance/reset: state %v", got)
	}
	a.must(200, "POST", "/conformance/add", map[string]any{"user": user, "text": "I live in Lima.", "at": "2025-02-01T00:00:00Z"})
	out := a.must(200, "POST", "/conformance/query", map[string]any{"user": user, "q": "Where do I live?", "k": 5})
	if rs, ok := out["results"].([]any); !ok || len(rs) == 0 || !strings.Contains(fmt.Sprint(rs), "Lima") {
		t.Errorf("/conformance/query = %v, want Lima among the results", out)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost:7420": true, "[::1]:1": true, "127.9.9.9:1": true,
		":7420": false, "0.0.0.0:7420": false, "[::]:1": false, "192.168.1.10:80": false,
		"example.com:80": false, "garbage": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestListenAndServe(t *testing.T) {
	e := openEngine(t, memor.Options{})
	// Every interface without a token: refused before listening.
	err := ListenAndServe(context.Background(), e, ServeOptions{Addr: "0.0.0.0:0"})
	if !errors.Is(err, ErrUnsafeBind) {
		t.Fatalf("non-loopback without token: %v, want ErrUnsafeBind", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServe(ctx, e, ServeOptions{Addr: "127.0.0.1:0", OnListen: func(a net.Addr) { addrc <- a }})
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatal(err)
	}
	// Queue episodes without waiting, then shut down: all are applied.
	for i := range 20 {
		body := strings.NewReader(fmt.Sprintf(`{"text":"I live in City%d."}`, i))
		resp, err := http.Post(base+"/v1/users/u"+fmt.Sprint(i%4)+"/episodes", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for i := range 4 {
		f, err := e.Freshness(context.Background(), fmt.Sprint("u", i))
		if err != nil || f.Pending != 0 || f.Latest != 5 {
			t.Errorf("user u%d after shutdown: %+v %v, want 5 applied", i, f, err)
		}
	}
	if _, err := http.Get(base + "/v1/health"); err == nil {
		t.Error("server still answering after shutdown")
	}
}

// TestPanicIsA500 checks that a bug in a handler answers a plain JSON 500,
// with no stack trace, and the server keeps serving. A nil engine makes
// every engine call panic.
func TestPanicIsA500(t *testing.T) {
	srv := httptest.NewServer(New(nil, Options{}))
	defer srv.Close()
	for range 2 {
		resp, err := http.Get(srv.URL + "/v1/users/u/state")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || strings.TrimSpace(string(body)) != `{"error":"internal error","code":"internal"}` {
			t.Errorf("panic answered %d %s", resp.StatusCode, body)
		}
	}
}

// TestReadTimeout checks that a client that never finishes its request is
// cut off (slowloris).
func TestReadTimeout(t *testing.T) {
	e := openEngine(t, memor.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, e, ln, ServeOptions{ReadTimeout: 200 * time.Millisecond}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /v1/health HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("server kept a half-sent request open for 5s")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connection closed after %v, want about the 200ms read timeout", d)
	}
}

// userRoutes is every route under /v1/users/{user}, with a request that
// would succeed for a valid user.
var userRoutes = []struct{ method, path, body string }{
	{"POST", "/episodes", `{"text":"I live in Oslo."}`},
	{"GET", "/state", ""},
	{"GET", "/history?predicate=lives_in", ""},
	{"GET", "/query?q=where", ""},
	{"GET", "/asof?valid=2026-02-01", ""},
	{"GET", "/conflicts", ""},
	{"GET", "/freshness", ""},
	{"POST", "/facts/00000000000000000000000000000000/correct", ""},
	{"POST", "/facts/00000000000000000000000000000000/accept", ""},
	{"DELETE", "", ""},
}

// TestEveryRouteErrors sends each route the mistakes a client can make:
// an invalid user (400), no token (401), a wrong method (405 with Allow).
func TestEveryRouteErrors(t *testing.T) {
	a := newAPI(t, Options{Token: "tok"})
	for _, r := range userRoutes {
		path, query, _ := strings.Cut(r.path, "?")
		if query != "" {
			query = "?" + query
		}
		t.Run(r.method+" "+path, func(t *testing.T) {
			a.token = "tok"
			// A user ID that is not UTF-8.
			if st, out := a.do(r.method, "/v1/users/%FF"+path+query, r.body); st != 400 || out["code"] != "invalid_user" {
				t.Errorf("invalid user: %d %v, want 400 invalid_user", st, out)
			}
			a.token = ""
			if st, out := a.do(r.method, "/v1/users/u"+path+query, r.body); st != 401 || out["code"] != "unauthorized" {
				t.Errorf("no token: %d %v, want 401 unauthorized", st, out)
			}
			a.token = "tok"
			wrong := "PUT"
			req, _ := http.NewRequest(wrong, a.srv.URL+"/v1/users/u"+path, nil)
			req.Header.Set("Authorization", "Bearer tok")
			resp, err := a.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var eb errorBody
			err = json.NewDecoder(resp.Body).Decode(&eb)
			resp.Body.Close()
			if resp.StatusCode != 405 || err != nil || eb.Code != "method_not_allowed" || resp.Header.Get("Allow") != r.method {
				t.Errorf("PUT: %d %+v Allow=%q, want 405 method_not_allowed Allow=%s", resp.StatusCode, eb, resp.Header.Get("Allow"), r.method)
			}
		})
	}
	a.token = "tok"
	if st, out := a.do("POST", "/v1/users/u/episodes", map[string]any{"text": "   "}); st != 400 || out["code"] != "invalid_text" {
		t.Errorf("blank text: %d %v, want 400 invalid_text", st, out)
	}
	if st, out := a.do("POST", "/v1/users/u/episodes", "{}"); st != 400 || out["code"] != "invalid_text" {
		t.Errorf("no text: %d %v, want 400 invalid_text", st, out)
	}
	if st, out := a.do("POST", "/v1/users/u/episodes", ""); st != 400 || out["code"] != "bad_request" {
		t.Errorf("empty body: %d %v, want 400 bad_request", st, out)
	}
}

// TestConflictsRoute: a same-day disagreement is listed by /conflicts and
// not served by /state.
func TestConflictsRoute(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("c", "I live in Oslo.", "2026-03-01")
	a.tell("c", "I live in Bergen.", "2026-03-01")
	c := a.must(200, "GET", "/v1/users/c/conflicts", nil)
	fs, _ := c["facts"].([]any)
	if len(fs) == 0 {
		t.Fatalf("conflicts = %v, want the contested city", c)
	}
	if st := fs[0].(map[string]any)["status"]; st != "contested" {
		t.Errorf("conflict status %v, want contested", st)
	}
	if got := objects(a.must(200, "GET", "/v1/users/c/state", nil)); len(got) > 1 {
		t.Errorf("state serves both cities: %v", got)
	}
}

// TestAcceptRoute: POST …/facts/{id}/accept puts the contested value in
// force; accepting a fact not contested is 409 not_contested, an unknown
// one 404.
func TestAcceptRoute(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("c", "I live in Oslo.", "2026-03-01")
	a.tell("c", "I live in Bergen.", "2026-03-01")
	fs, _ := a.must(200, "GET", "/v1/users/c/conflicts", nil)["facts"].([]any)
	var bergen string
	for _, f := range fs {
		if f := f.(map[string]any); f["object"] == "Bergen" {
			bergen, _ = f["id"].(string)
		}
	}
	if bergen == "" {
		t.Fatalf("conflicts = %v, want Bergen contested", fs)
	}
	if out := a.must(200, "POST", "/v1/users/c/facts/"+bergen+"/accept", nil); out["accepted"] != bergen {
		t.Errorf("accept = %v", out)
	}
	if got := objects(a.must(200, "GET", "/v1/users/c/state", nil)); len(got) != 1 || got[0] != "Bergen" {
		t.Errorf("state after accept = %v, want [Bergen]", got)
	}
	a.tell("c", "I live in Tromsø.", "2026-04-01")
	var tromso string
	for _, f := range a.must(200, "GET", "/v1/users/c/state", nil)["facts"].([]any) {
		tromso, _ = f.(map[string]any)["id"].(string)
	}
	if st, out := a.do("POST", "/v1/users/c/facts/"+tromso+"/accept", nil); st != 409 || out["code"] != "not_contested" {
		t.Errorf("accept of the value in force: %d %v, want 409 not_contested", st, out)
	}
	if st, out := a.do("POST", "/v1/users/c/facts/"+strings.Repeat("0", 32)+"/accept", nil); st != 404 || out["code"] != "not_found" {
		t.Errorf("accept of an unknown fact: %d %v, want 404 not_found", st, out)
	}
	if st, out := a.do("GET", "/v1/users/c/facts/"+bergen+"/accept", nil); st != 405 || out["code"] != "method_not_allowed" {
		t.Errorf("GET accept: %d %v, want 405", st, out)
	}
}

// TestServeBeyondLoopbackWithToken: with a token, a listener on every
// interface is allowed, and the token is enforced.
func TestServeBeyondLoopbackWithToken(t *testing.T) {
	e := openEngine(t, memor.Options{})
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on every interface here: %v", err)
	}
	// Without a token Serve refuses it (and closes it).
	if err := Serve(context.Background(), e, ln, ServeOptions{}); !errors.Is(err, ErrUnsafeBind) {
		t.Fatalf("Serve on %s without a token: %v, want ErrUnsafeBind", ln.Addr(), err)
	}
	ln, err = net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	const tok = "0123456789abcdef"
	go func() { done <- Serve(ctx, e, ln, ServeOptions{Options: Options{Token: tok}}) }()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	base := "http://127.0.0.1:" + port
	resp, err := http.Get(base + "/v1/users/u/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/v1/users/u/state", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the token: %d, want 200", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestShutdownFinishesInFlight: a request still being received when the
// server is told to stop is completed and answered, and its episode is
// applied before Serve returns.
func TestShutdownFinishesInFlight(t *testing.T) {
	e := openEngine(t, memor.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, e, ln, ServeOptions{}) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"text":"I live in Oslo.","at":"2026-01-10"}`
	head := fmt.Sprintf("POST /v1/users/u/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write([]byte(head + body[:10])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the server has the request's head
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := conn.Write([]byte(body[10:])); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the request in flight: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("in-flight request: %d, want 202", resp.StatusCode)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f, err := e.Freshness(context.Background(), "u"); err != nil || f.Latest != 1 || f.Pending != 0 {
		t.Errorf("after shutdown: %+v %v, want the episode applied", f, err)
	}
}

// TestDefaultBodyLimit: without Options.MaxBodyBytes, a body over 1 MiB is
// refused with 413 before the engine sees it.
func TestDefaultBodyLimit(t *testing.T) {
	a := newAPI(t, Options{})
	huge := `{"text":"` + strings.Repeat("y", DefaultMaxBodyBytes) + `"}`
	st, out := a.do("POST", "/v1/users/u/episodes", huge)
	if msg, _ := out["error"].(string); st != 413 || out["code"] != "too_large" || !strings.Contains(msg, fmt.Sprint(DefaultMaxBodyBytes)) {
		t.Errorf("body over 1 MiB: %d %v, want 413 too_large naming the limit", st, out)
	}
	if f, err := a.e.Freshness(context.Background(), "u"); err != nil || f.Latest != 0 {
		t.Errorf("an oversized body reached the engine: %+v %v", f, err)
	}
}

// TestQueryExplain: ?explain=true makes every result say why it ranked
// where it did; without it the answer carries no explanation.
func TestQueryExplain(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("me", "I live in San Francisco.", "2026-01-10")
	a.tell("me", "I just moved to Seattle.", "2026-07-11")
	path := "/v1/users/me/query?q=" + url.QueryEscape("Where do I live?")
	out := a.must(200, "GET", path+"&explain=true", nil)
	rs := out["results"].([]any)
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rs {
		x, ok := r.(map[string]any)["explanation"].(map[string]any)
		if !ok {
			t.Fatalf("result without explanation: %v", r)
		}
		sigs, _ := x["signals"].([]any)
		q, _ := x["query"].(map[string]any)
		focus, _ := q["focus"].(map[string]any)
		if len(sigs) != 3 || x["score"] != r.(map[string]any)["score"] || focus["by"] != "first person" || q["valid_at_source"] != "now" {
			t.Errorf("explanation %v", x)
		}
	}
	out = a.must(200, "GET", path, nil)
	if s := fmt.Sprint(out); strings.Contains(s, "explanation") {
		t.Errorf("explanation without explain: %s", s)
	}
	if st, body := a.do("GET", path+"&explain=maybe", nil); st != 400 || body["code"] != "bad_request" {
		t.Errorf("explain=maybe: %d %v, want 400 bad_request", st, body)
	}
}
