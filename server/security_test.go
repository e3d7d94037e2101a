package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/syncbuf"
	"github.com/memor-db/memor/memortest"
)

// raw sends one request with exactly the given headers (no Content-Type
// unless given) and returns the status, the error code of a JSON error
// body, and the response headers.
func (a *api) raw(method, path, body string, headers map[string]string) (int, string, http.Header) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if a.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var eb errorBody
	// /conformance/ speaks memortest's plain-text errors.
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(data, &eb); (err != nil || eb.Code == "" || eb.Error == "") && !strings.HasPrefix(path, "/conformance/") {
			a.t.Errorf("%s %s: status %d without the JSON error shape: %q", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, eb.Code, resp.Header
}

func (a *api) users() []string {
	a.t.Helper()
	us, err := a.e.Users(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return us
}

// TestIssueCurlsRefused sends the three requests of issue 15.3: a
// cross-site text/plain episode, a DNS-rebinding Host reading the profile,
// and a text/plain conformance reset of the real user. Each is refused and
// nothing is written or forgotten.
func TestIssueCurlsRefused(t *testing.T) {
	a := newAPI(t, Options{Conformance: true})
	a.tell("me", "I live in Oslo.", "2026-01-01")

	// curl -XPOST 127.0.0.1:7433/v1/users/me/episodes -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' -d '{"text":"I just moved to Mordor.","wait":true}'
	st, code, _ := a.raw("POST", "/v1/users/me/episodes", `{"text":"I just moved to Mordor.","wait":true}`,
		map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"})
	if st != http.StatusForbidden || code != "forbidden_origin" {
		t.Errorf("cross-site text/plain episode: %d %s, want 403 forbidden_origin", st, code)
	}
	// The same without the Origin (curl itself): still not JSON.
	st, code, _ = a.raw("POST", "/v1/users/me/episodes", `{"text":"I just moved to Mordor.","wait":true}`,
		map[string]string{"Content-Type": "text/plain"})
	if st != http.StatusUnsupportedMediaType || code != "unsupported_media_type" {
		t.Errorf("text/plain episode: %d %s, want 415 unsupported_media_type", st, code)
	}
	// curl -H 'Host: attacker.example' 127.0.0.1:7433/v1/users/me/state
	st, code, _ = a.raw("GET", "/v1/users/me/state", "", map[string]string{"Host": "attacker.example"})
	if st != http.StatusForbidden || code != "forbidden_host" {
		t.Errorf("rebinding Host: %d %s, want 403 forbidden_host", st, code)
	}
	// curl -XPOST 127.0.0.1:7433/conformance/reset -H 'Content-Type: text/plain' -d '{"user":"me"}'
	st, code, _ = a.raw("POST", "/conformance/reset", `{"user":"me"}`, map[string]string{"Content-Type": "text/plain"})
	if st != http.StatusUnsupportedMediaType || code != "unsupported_media_type" {
		t.Errorf("text/plain conformance reset: %d %s, want 415", st, code)
	}
	// With the right type it is still refused: me is not a suite user.
	st, _, _ = a.raw("POST", "/conformance/reset", `{"user":"me"}`, map[string]string{"Content-Type": "application/json"})
	if st != http.StatusBadRequest {
		t.Errorf("conformance reset of me: %d, want 400", st)
	}
	if got := objects(a.must(200, "GET", "/v1/users/me/state", nil)); strings.Join(got, ",") != "Oslo" {
		t.Errorf("after the refused requests me's state is %v, want Oslo", got)
	}
	if eps, err := a.e.Episodes(context.Background(), "me"); err != nil || len(eps) != 1 {
		t.Errorf("me's episodes after the refused requests: %d %v, want 1", len(eps), err)
	}
}

// TestBrowserNoCorsPost sends exactly what Chromium sends for
//
//	fetch("http://127.0.0.1:7420/v1/users/me/episodes", {method: "POST", mode: "no-cors", body: JSON.stringify({...})})
//
// from a page at http://evil.example: no preflight, a text/plain body, the
// page's Origin and the Sec-Fetch-* headers. (cli's TestBrowserCrossSite
// does it with a real Chromium.)
func TestBrowserNoCorsPost(t *testing.T) {
	a := newAPI(t, Options{})
	browser := map[string]string{
		"Content-Type":       "text/plain;charset=UTF-8",
		"Origin":             "http://evil.example",
		"Sec-Fetch-Site":     "cross-site",
		"Sec-Fetch-Mode":     "no-cors",
		"Sec-Fetch-Dest":     "empty",
		"Referer":            "http://evil.example/",
		"User-Agent":         "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
		"Accept":             "*/*",
		"Sec-Ch-Ua-Platform": `"Linux"`,
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/users/me/episodes", `{"text":"I just moved to Mordor.","wait":true}`},
		{"POST", "/v1/users/me/facts/00000000000000000000000000000000/correct", ""},
		{"POST", "/v1/users/me/facts/00000000000000000000000000000000/accept", ""},
		{"DELETE", "/v1/users/me", ""},
		{"GET", "/v1/users/me/state", ""},
	} {
		h := browser
		if c.body == "" {
			h = map[string]string{"Origin": browser["Origin"], "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
		}
		st, code, hd := a.raw(c.method, c.path, c.body, h)
		if st != http.StatusForbidden || code != "forbidden_origin" {
			t.Errorf("%s %s from a page: %d %s, want 403 forbidden_origin", c.method, c.path, st, code)
		}
		if hd.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: refused yet answered with CORS headers", c.method, c.path)
		}
	}
	// A GET in no-cors mode carries no Origin, only Sec-Fetch-Site.
	for _, site := range []string{"cross-site", "same-site"} {
		st, code, _ := a.raw("GET", "/v1/users/me/state", "", map[string]string{"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"})
		if st != http.StatusForbidden || code != "forbidden_origin" {
			t.Errorf("GET with Sec-Fetch-Site %s: %d %s, want 403", site, st, code)
		}
	}
	// Typed in the address bar (none) or same-origin: a person reading
	// their own store in the browser.
	for _, site := range []string{"none", "same-origin"} {
		if st, _, _ := a.raw("GET", "/v1/users/me/state", "", map[string]string{"Sec-Fetch-Site": site}); st != 200 {
			t.Errorf("GET with Sec-Fetch-Site %s: %d, want 200", site, st)
		}
	}
	if us := a.users(); len(us) != 0 {
		t.Errorf("users after the page's requests: %q, want none", us)
	}
}

// TestOrigins: a foreign origin (another host, another port of loopback,
// "null") is refused; an origin of this very server is not; an origin
// allowed on purpose passes, with CORS headers and a preflight answer.
func TestOrigins(t *testing.T) {
	a := newAPI(t, Options{AllowOrigins: []string{"https://App.Example:443/"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.srv.URL, "http://"))
	body := `{"text":"I live in Lima.","wait":true}`
	js := "application/json"
	for _, c := range []struct {
		origin string
		status int
	}{
		{"http://evil.example", 403},
		{"null", 403},
		{"http://localhost:1", 403},
		{"http://127.0.0.1:" + port + "0", 403},
		{"https://app.example.evil", 403},
		{"http://app.example", 403}, // the scheme is part of the origin
		{"https://app.example", 201},
		{"http://127.0.0.1:" + port, 201},
		{"http://localhost:" + port, 201},
		{"http://[::1]:" + port, 201},
	} {
		st, code, hd := a.raw("POST", "/v1/users/u/episodes", body, map[string]string{"Content-Type": js, "Origin": c.origin})
		if st != c.status {
			t.Errorf("Origin %s: %d %s, want %d", c.origin, st, code, c.status)
		}
		if c.origin == "https://app.example" && hd.Get("Access-Control-Allow-Origin") != c.origin {
			t.Errorf("allowed origin answered without Access-Control-Allow-Origin: %v", hd)
		}
	}
	// A preflight from the allowed origin, as a browser sends it for a
	// JSON POST with a token.
	st, _, hd := a.raw("OPTIONS", "/v1/users/u/episodes", "", map[string]string{
		"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization,content-type", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "cross-site",
	})
	if st != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(hd.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(strings.ToLower(hd.Get("Access-Control-Allow-Headers")), "content-type") {
		t.Errorf("preflight from the allowed origin: %d %v", st, hd)
	}
	st, code, _ := a.raw("OPTIONS", "/v1/users/u/episodes", "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
	if st != http.StatusForbidden || code != "forbidden_origin" {
		t.Errorf("preflight from a foreign origin: %d %s, want 403", st, code)
	}
	// The allowed origin's cross-site request is served.
	if st, _, _ := a.raw("GET", "/v1/users/u/state", "", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}); st != 200 {
		t.Errorf("allowed origin, cross-site GET: %d", st)
	}
}

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://App.Example":      "https://app.example",
		"https://app.example:443/": "https://app.example",
		"http://app.example:80":    "http://app.example",
		"http://localhost:3000":    "http://localhost:3000",
		"http://[::1]:8080":        "http://[::1]:8080",
	} {
		if got, err := NormalizeOrigin(in); err != nil || got != want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "*", "null", "app.example", "ftp://x", "https://x/path", "https://x?q", "https://", "https://u@x", "https://x#f"} {
		if got, err := NormalizeOrigin(in); !errors.Is(err, ErrInvalidOrigin) {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want ErrInvalidOrigin", in, got, err)
		}
	}
}

// TestHosts: on a loopback handler only loopback names and addresses are
// served, with or without a port; AnyHost (a listener beyond loopback,
// behind a token) serves any.
func TestHosts(t *testing.T) {
	a := newAPI(t, Options{})
	for host, want := range map[string]int{
		"127.0.0.1": 200, "127.0.0.1:7420": 200, "127.1.2.3:7420": 200, "localhost": 200, "LOCALHOST:7420": 200,
		"[::1]": 200, "[::1]:7420": 200,
		"attacker.example": 403, "attacker.example:7420": 403, "localhost.attacker.example": 403,
		"127.0.0.1.nip.io:7420": 403, "10.0.0.1:7420": 403, "[::ffff:10.0.0.1]:7420": 403, "0.0.0.0:7420": 403,
	} {
		st, code, _ := a.raw("GET", "/v1/users/me/state", "", map[string]string{"Host": host})
		if st != want || (want == 403 && code != "forbidden_host") {
			t.Errorf("Host %s: %d %s, want %d", host, st, code, want)
		}
	}
	// /v1/health is checked too: a rebinding page learns nothing.
	if st, _, _ := a.raw("GET", "/v1/health", "", map[string]string{"Host": "attacker.example"}); st != 403 {
		t.Errorf("health with a foreign Host: %d, want 403", st)
	}
	b := newAPI(t, Options{AnyHost: true, Token: "0123456789abcdef"})
	if st, _, _ := b.raw("GET", "/v1/users/me/state", "", map[string]string{"Host": "memor.internal:7420"}); st != 200 {
		t.Errorf("AnyHost: Host memor.internal: %d, want 200", st)
	}
	// Beyond loopback a page is refused all the same, token or not.
	if st, code, _ := b.raw("GET", "/v1/users/me/state", "", map[string]string{"Host": "memor.internal:7420", "Origin": "http://evil.example"}); st != 403 || code != "forbidden_origin" {
		t.Errorf("AnyHost: foreign Origin: %d %s, want 403", st, code)
	}
}

func TestContentType(t *testing.T) {
	a := newAPI(t, Options{})
	body := `{"text":"I live in Lima.","wait":true}`
	for ct, want := range map[string]int{
		"application/json":                  201,
		"application/json; charset=utf-8":   201,
		"Application/JSON;Charset=UTF-8":    201,
		"":                                  415,
		"text/plain":                        415,
		"text/plain;charset=UTF-8":          415,
		"application/x-www-form-urlencoded": 415,
		"multipart/form-data; boundary=x":   415,
		"application/json; charset=latin1":  415,
		"application/jsonx":                 415,
		"application/json;":                 415,
	} {
		h := map[string]string{}
		if ct != "" {
			h["Content-Type"] = ct
		}
		st, code, _ := a.raw("POST", "/v1/users/u/episodes", body, h)
		if st != want || (want == 415 && code != "unsupported_media_type") {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, st, code, want)
		}
	}
	// A POST without a body needs no type.
	if st, _, _ := a.raw("POST", "/v1/users/nobody/facts/00000000000000000000000000000000/correct", "", nil); st != 404 {
		t.Errorf("correct without a body: %d, want 404 (no such user)", st)
	}
}

// TestConformanceMount: /conformance/ exists only when asked for, and then
// serves only users under memortest.UserPrefix; a suite user's reset leaves
// a real user alone, and status counts the users outside the prefix.
func TestConformanceMount(t *testing.T) {
	off := newAPI(t, Options{})
	off.tell("me", "I live in Oslo.", "2026-01-01")
	for _, p := range []string{"/conformance/reset", "/conformance/add", "/conformance/query"} {
		if st, out := off.do("POST", p, `{"user":"me"}`); st != 404 || out["code"] != "not_found" {
			t.Errorf("%s without Options.Conformance: %d %v, want 404", p, st, out)
		}
	}
	if st, _ := off.do("GET", "/conformance/status", nil); st != 404 {
		t.Errorf("status without Options.Conformance: %d", st)
	}

	a := newAPI(t, Options{Conformance: true})
	a.tell("me", "I live in Oslo.", "2026-01-01")
	a.tell("memortest", "I live in Rome.", "2026-01-01") // the prefix without its slash is not the prefix
	suite := memortest.UserPrefix + "me"
	for _, c := range []struct{ path, body string }{
		{"/conformance/reset", `{"user":"me"}`},
		{"/conformance/reset", `{"user":"memortest"}`},
		{"/conformance/reset", `{"user":"` + strings.ToUpper(memortest.UserPrefix) + `me"}`},
		{"/conformance/add", `{"user":"me","text":"I moved to Mordor.","at":"2026-02-01T00:00:00Z"}`},
		{"/conformance/query", `{"user":"me","q":"Where do I live?","k":5}`},
		// U+FFFD would be what encoding/json makes of the byte.
		{"/conformance/add", "{\"user\":\"" + memortest.UserPrefix + "\xff\",\"text\":\"I live in Oslo.\",\"at\":\"2026-02-01T00:00:00Z\"}"},
		{"/conformance/add", `{"user":"` + memortest.UserPrefix + `\udcff","text":"I live in Oslo.","at":"2026-02-01T00:00:00Z"}`},
	} {
		st, out := a.do("POST", c.path, c.body)
		if st != 400 {
			t.Errorf("%s %q: %d %v, want 400", c.path, c.body, st, out)
		}
	}
	a.must(200, "POST", "/conformance/add", map[string]any{"user": suite, "text": "I live in Lima.", "at": "2026-01-01T00:00:00Z"})
	if st, _ := a.do("GET", "/conformance/status", nil); st != 200 {
		t.Fatalf("status: %d", st)
	}
	out := a.must(200, "GET", "/conformance/status", nil)
	if out["prefix"] != memortest.UserPrefix || out["suite_users"] != 1.0 || out["other_users"] != 2.0 {
		t.Errorf("status = %v, want the prefix, 1 suite user, 2 others", out)
	}
	a.must(200, "POST", "/conformance/reset", map[string]any{"user": suite})
	if us := a.users(); strings.Join(us, ",") != "me,memortest" {
		t.Errorf("users after the suite's reset: %q, want me and memortest", us)
	}
	if got := objects(a.must(200, "GET", "/v1/users/me/state", nil)); strings.Join(got, ",") != "Oslo" {
		t.Errorf("me after the refused conformance calls: %v", got)
	}
}

// TestEncodedDotSegments: %2E%2E and %2e are the segments .. and . (RFC
// 3986 §2.3 and §6.2.2.2): refused like the literal ones, never handed to
// the engine as a user named "..".
func TestEncodedDotSegments(t *testing.T) {
	a := newAPI(t, Options{})
	a.tell("u", "I live in Oslo.", "2026-01-01")
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/users/%2E%2E/state"},
		{"GET", "/v1/users/%2e%2e/state"},
		{"GET", "/v1/users/%2e/state"},
		{"GET", "/v1/users/.%2E/state"},
		{"GET", "/v1/users/%2E./state"},
		{"DELETE", "/v1/users/%2E%2E"},
		{"DELETE", "/v1/users/x/%2E%2E/u"},
		{"GET", "/v1/users/u/%2E/state"},
		{"POST", "/v1/users/u/facts/%2E%2E/correct"},
		{"GET", "/%2E%2E/v1/health"},
	} {
		st, code, _ := a.raw(c.method, c.path, "", nil)
		if st != 400 || code != "bad_request" {
			t.Errorf("%s %s: %d %s, want 400 bad_request", c.method, c.path, st, code)
		}
	}
	// A dot inside a user ID is only a character.
	for _, user := range []string{"a.b", "...", "%2E%2E%2Fx", ".x"} {
		if st, _, _ := a.raw("GET", "/v1/users/"+user+"/state", "", nil); st != 200 {
			t.Errorf("user %q: %d, want 200", user, st)
		}
	}
	if us := a.users(); strings.Join(us, ",") != "u" {
		t.Errorf("users = %q", us)
	}
}

// TestBearerSchemeAnyCase: the auth scheme is case-insensitive (RFC 7235
// §2.1); the token itself is not.
func TestBearerSchemeAnyCase(t *testing.T) {
	const tok = "0123456789abcdef-S3cret"
	a := newAPI(t, Options{Token: tok})
	for auth, want := range map[string]int{
		"Bearer " + tok:                  200,
		"bearer " + tok:                  200,
		"BEARER " + tok:                  200,
		"bEaReR " + tok:                  200,
		"Bearer  " + tok:                 200, // 1*SP
		"Bearer " + strings.ToLower(tok): 401,
		"Bearer " + tok + "x":            401,
		"Basic " + tok:                   401,
		"Bearer":                         401,
		"Bearer" + tok:                   401,
		tok:                              401,
	} {
		st, code, _ := a.raw("GET", "/v1/users/u/state", "", map[string]string{"Authorization": auth})
		if st != want || (want == 401 && code != "unauthorized") {
			t.Errorf("Authorization %q: %d %s, want %d", auth, st, code, want)
		}
	}
}

// TestShortTokenRefused: Serve refuses a token shorter than MinTokenBytes
// before it answers anything.
func TestShortTokenRefused(t *testing.T) {
	e := openEngine(t, memor.Options{})
	for _, tok := range []string{"x", "s3cret", strings.Repeat("a", MinTokenBytes-1)} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Bounded, so that a Serve that accepts the token ends the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = Serve(ctx, e, ln, ServeOptions{Options: Options{Token: tok}})
		if !errors.Is(err, ErrWeakToken) || !strings.Contains(err.Error(), "16") {
			t.Errorf("Serve with a %d-byte token: %v, want ErrWeakToken naming the minimum", len(tok), err)
		}
		if err := ListenAndServe(ctx, e, ServeOptions{Addr: "127.0.0.1:0", Options: Options{Token: tok}}); !errors.Is(err, ErrWeakToken) {
			t.Errorf("ListenAndServe with a %d-byte token: %v", len(tok), err)
		}
	}
}

// TestInvalidUTF8Text: a JSON string that is not valid UTF-8 (a raw byte,
// or an escaped lone surrogate) is refused with 400 invalid_text; it used
// to be stored with U+FFFD in its place.
func TestInvalidUTF8Text(t *testing.T) {
	a := newAPI(t, Options{})
	js := map[string]string{"Content-Type": "application/json"}
	for _, body := range []string{
		"{\"text\":\"I live in Oslo.\xff\",\"wait\":true}",
		"{\"text\":\"I live in \xc3\",\"wait\":true}",
		"{\"text\":\"I live in Oslo.\",\"at\":\"2026-01-01\xfe\",\"wait\":true}",
		`{"text":"I live in Oslo.\udcff","wait":true}`,
		`{"text":"I live in Oslo.\ud83d","wait":true}`,
		`{"text":"I live in Oslo.\ud83d\u0041","wait":true}`,
		`{"text":"I live in Oslo.","\ud800":1}`,
	} {
		st, code, _ := a.raw("POST", "/v1/users/u/episodes", body, js)
		if st != 400 || code != "invalid_text" {
			t.Errorf("body %q: %d %s, want 400 invalid_text", body, st, code)
		}
	}
	for _, body := range []string{
		`{"text":"I live in Oslo. \ud83d\ude00","wait":true}`, // a pair is fine
		`{"text":"I live in Oslo. \\ud800","wait":true}`,      // an escaped backslash, then text
		`{"text":"I live in Oslo. ` + "\uFFFD" + `","wait":true}`,
		`{"text":"I live in Oslo. \ufffd","wait":true}`,
	} {
		if st, code, _ := a.raw("POST", "/v1/users/v/episodes", body, js); st != 201 {
			t.Errorf("body %q: %d %s, want 201", body, st, code)
		}
	}
	if us := a.users(); strings.Join(us, ",") != "v" {
		t.Errorf("users = %q, want only v", us)
	}
	// Query parameters are text too.
	for _, p := range []string{"/v1/users/v/query?q=Oslo%FF", "/v1/users/v/history?predicate=lives%C3", "/v1/users/v/history?predicate=lives_in&subject=%FE"} {
		if st, code, _ := a.raw("GET", p, "", nil); st != 400 || code != "invalid_text" {
			t.Errorf("GET %s: %d %s, want 400 invalid_text", p, st, code)
		}
	}
}

func TestWaitParameter(t *testing.T) {
	a := newAPI(t, Options{})
	js := map[string]string{"Content-Type": "application/json"}
	body := `{"text":"I live in Oslo."}`
	for q, want := range map[string]int{
		"":                  202,
		"?wait=true":        201,
		"?wait=1":           201,
		"?wait=false":       202,
		"?wait=0":           202,
		"?wait=maybe":       400,
		"?wait=":            400,
		"?wait=yes":         400,
		"?wait=true&wait=0": 400,
	} {
		st, code, _ := a.raw("POST", "/v1/users/u/episodes"+q, body, js)
		if st != want || (want == 400 && code != "bad_request") {
			t.Errorf("%q: %d %s, want %d", q, st, code, want)
		}
	}
	if eps, _ := a.e.Episodes(context.Background(), "u"); len(eps) != 5 {
		t.Errorf("%d episodes stored, want 5 (none for the refused waits)", len(eps))
	}
}

// TestUnknownQueryParameters: a query parameter a route does not read, or
// one it reads given twice, is 400 bad_request and changes nothing; the
// parameters each route documents are taken.
func TestUnknownQueryParameters(t *testing.T) {
	a := newAPI(t, Options{})
	js := map[string]string{"Content-Type": "application/json"}
	a.must(http.StatusCreated, "POST", "/v1/users/u/episodes?wait=true", map[string]any{"text": "I live in Oslo.", "at": "2026-01-10"})
	id := factID(t, a.must(http.StatusOK, "GET", "/v1/users/u/state", nil), "Oslo")
	refused := []struct{ method, path, body string }{
		{"GET", "/v1/health?verbose=1", ""},
		{"GET", "/v1/users?limit=5&page=2", ""},
		{"GET", "/v1/users?limit=5&limit=6", ""},
		{"POST", "/v1/users/u/episodes?wiat=true", `{"text":"I live in Rome."}`},
		{"POST", "/v1/users/u/episodes?speaker=Ann", `{"text":"I live in Rome."}`},
		{"GET", "/v1/users/u/state?valid=2026-01-01", ""},
		{"GET", "/v1/users/u/history?predicate=lives_in&valid=2026-01-01", ""},
		{"GET", "/v1/users/u/query?q=where+do+I+live&valid_at=2025-01-01", ""},
		{"GET", "/v1/users/u/query?q=where&q=live", ""},
		{"GET", "/v1/users/u/query?q=where+do+I+live&k=1&k=20", ""},
		{"GET", "/v1/users/u/asof?valid_at=2025-01-01", ""},
		{"GET", "/v1/users/u/asof?valid=2025-01-01&valid=2027-01-01", ""},
		{"GET", "/v1/users/u/conflicts?all=1", ""},
		{"GET", "/v1/users/u/freshness?x", ""},
		{"GET", "/v1/users/u/export?format=2", ""},
		{"POST", "/v1/users/u/facts/" + id + "/correct?reason=typo", ""},
		{"POST", "/v1/users/u/facts/" + id + "/accept?x=1", ""},
		{"DELETE", "/v1/users/u?confirm=yes", ""},
	}
	for _, c := range refused {
		var h map[string]string
		if c.body != "" {
			h = js
		}
		if st, code, _ := a.raw(c.method, c.path, c.body, h); st != 400 || code != "bad_request" {
			t.Errorf("%s %s: %d %s, want 400 bad_request", c.method, c.path, st, code)
		}
	}
	if eps, _ := a.e.Episodes(context.Background(), "u"); len(eps) != 1 {
		t.Errorf("%d episodes after the refused requests, want 1", len(eps))
	}
	if st, _ := a.e.State(context.Background(), "u"); len(st) != 1 || st[0].Object != "Oslo" {
		t.Errorf("state after the refused requests: %v, want Oslo only (nothing corrected or forgotten)", st)
	}
	for _, p := range []string{
		"/v1/health", "/v1/users?limit=5&after=a",
		"/v1/users/u/history?predicate=lives_in&subject=user",
		"/v1/users/u/query?q=where+do+I+live&k=3&valid=2026-02-01&known=2027-01-01&explain=true&min_support=0.3",
		"/v1/users/u/asof?valid=2026-02-01&known=2027-01-01",
	} {
		if st, code, _ := a.raw("GET", p, "", nil); st != 200 {
			t.Errorf("GET %s: %d %s, want 200", p, st, code)
		}
	}
}

// refusalLog: a refused page request is logged once per origin, so that a
// person sees which page tried, and a page cannot flood the log.
func TestRefusalIsLogged(t *testing.T) {
	var buf syncbuf.Buffer
	a := newAPI(t, Options{Logger: slogTo(&buf)})
	for range 50 {
		a.raw("POST", "/v1/users/me/episodes", `{"text":"x"}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"})
	}
	a.raw("GET", "/v1/users/me/state", "", map[string]string{"Host": "rebind.example"})
	log := buf.String()
	if n := strings.Count(log, "http://evil.example"); n != 1 {
		t.Errorf("the refused origin is logged %d times, want once:\n%s", n, log)
	}
	if !strings.Contains(log, "rebind.example") {
		t.Errorf("the refused Host is not logged:\n%s", log)
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
