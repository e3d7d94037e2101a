package studio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/server"
	"github.com/memor-db/memor/studio"
)

// serve mounts the studio of e behind the API's handler, as memor serve
// and memor studio do.
func serve(t testing.TB, e *memor.Engine, token string, now time.Time) *httptest.Server {
	t.Helper()
	st := studio.New(e, studio.Options{Now: func() time.Time { return now }})
	ts := httptest.NewServer(server.New(e, server.Options{Token: token, Studio: st}))
	t.Cleanup(ts.Close)
	return ts
}

// get fetches a studio page and parses it.
func get(t testing.TB, ts *httptest.Server, path string) *html.Node {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// post sends a studio action as the page's script does: JSON, from the
// studio's own origin.
func post(t testing.TB, ts *httptest.Server, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), c)
}

// find lists the elements under n that match.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && match(c) {
			out = append(out, c)
		}
	}
	return out
}

func byID(n *html.Node, id string) *html.Node {
	if xs := find(n, func(c *html.Node) bool { return attr(c, "id") == id }); len(xs) > 0 {
		return xs[0]
	}
	return nil
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data + " ")
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// stateRows reads the state table: subject predicate object (context).
func stateRows(doc *html.Node) []string {
	var out []string
	tb := byID(doc, "state")
	for _, tr := range find(tb, tag("tr")) {
		tds := find(tr, tag("td"))
		if len(tds) < 4 {
			continue
		}
		out = append(out, factRow(text(tds[0]), text(tds[1]), text(tds[2]), text(tds[3])))
	}
	return out
}

func factRow(s, p, o, c string) string { return strings.TrimSpace(s + " " + p + " " + o + " " + c) }

func asOfRows(t testing.TB, e *memor.Engine, user string, valid, known time.Time) []string {
	t.Helper()
	fs, err := e.AsOf(context.Background(), user, valid, known)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, f := range fs {
		out = append(out, factRow(f.Subject, f.Predicate, f.Object, f.Context))
	}
	return out
}

// svgOf re-serialises the page's SVG element and checks it is well-formed
// XML, as a standalone .svg of it would be.
func svgOf(t testing.TB, doc *html.Node, id string) *html.Node {
	t.Helper()
	n := byID(doc, id)
	if n == nil || n.Data != "svg" {
		t.Fatalf("no <svg id=%s>", id)
	}
	var b bytes.Buffer
	if err := html.Render(&b, n); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the %s SVG is not well-formed XML: %v", id, err)
		}
	}
	return n
}

// TestTimelineBarsAndLabels: one focusable bar per version with a <title>,
// the rule in text on every bar, contested and retracted versions said in
// words, and the state at the URL's instants equal to AsOf there.
func TestTimelineBarsAndLabels(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	vs, err := s.e.Versions(context.Background(), s.user)
	if err != nil {
		t.Fatal(err)
	}
	doc := get(t, ts, studio.UserURL(s.user, ""))
	svg := svgOf(t, doc, "timeline")
	bars := find(svg, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "bar") })
	if len(bars) != len(vs) {
		t.Fatalf("%d bars, %d versions", len(bars), len(vs))
	}
	rules := map[string]int{}
	for _, b := range bars {
		if attr(b, "tabindex") != "0" {
			t.Errorf("bar %s is not keyboard-focusable", attr(b, "data-fact"))
		}
		titles := find(b, tag("title"))
		labels := find(b, func(n *html.Node) bool { return n.Data == "text" && hasClass(n, "label") })
		if len(titles) != 1 || len(labels) != 1 {
			t.Fatalf("bar %s: %d titles, %d labels", attr(b, "data-fact"), len(titles), len(labels))
		}
		rule, label, title := attr(b, "data-rule"), text(labels[0]), text(titles[0])
		rules[rule]++
		if !strings.Contains(label, rule) {
			t.Errorf("bar label %q does not name its rule %q", label, rule)
		}
		if st := attr(b, "data-status"); st != "active" && !strings.Contains(label, st) {
			t.Errorf("a %s bar is not labelled so in text: %q", st, label)
		}
		for _, w := range []string{"true from", "recorded", "expired", "confidence", "episode"} {
			if !strings.Contains(title, w) {
				t.Errorf("bar title %q lacks %q", title, w)
			}
		}
	}
	for _, r := range []string{"add", "supersede", "late", "contest", "correct"} {
		if rules[string(r)] == 0 {
			t.Errorf("no %s bar among %v", r, rules)
		}
	}
	if got := attr(byID(doc, "valid-range"), "type"); got != "range" {
		t.Errorf("the true-at slider is %q, want an <input type=range>", got)
	}
	// The two clocks: "what did we believe on ... about ...".
	for _, c := range []struct{ valid, known string }{
		{"2026-05-01", "2026-07-20"}, // before the late fact: San Francisco
		{"2026-05-01", "2026-08-15"}, // after it: Oakland
		{"2026-09-20", "2026-09-20"}, // Seattle, and Initech not yet retracted
		{"2026-09-20", "2026-10-20"}, // Initech retracted
		{"2025-06-01", "2026-10-20"}, // before anything
	} {
		v, k := date(c.valid), date(c.known)
		doc := get(t, ts, studio.UserURL(s.user, "")+"?valid="+c.valid+"&known="+c.known)
		if got, want := stateRows(doc), asOfRows(t, s.e, s.user, v, k); !slices.Equal(got, want) {
			t.Errorf("valid %s known %s: the page shows %q, AsOf %q", c.valid, c.known, got, want)
		}
		inview := find(svgOf(t, doc, "timeline"), func(n *html.Node) bool { return hasClass(n, "inview") })
		if want := len(asOfRows(t, s.e, s.user, v, k)); len(inview) != want {
			t.Errorf("valid %s known %s: %d bars marked in view, want %d", c.valid, c.known, len(inview), want)
		}
	}
	resp, err := http.Get(ts.URL + studio.UserURL(s.user, "") + "?valid=soon")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad instant: %d, want 400", resp.StatusCode)
	}
}

// TestUsersEpisodesRetry: the users list counts, the episode log with its
// decisions and its failed episode, and Retry applying it.
func TestUsersEpisodesRetry(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	doc := get(t, ts, "/studio/")
	rows := find(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-user") == "alice" })
	if len(rows) != 1 {
		t.Fatalf("alice is not listed once: %q", text(byID(doc, "users")))
	}
	st, _ := s.e.State(context.Background(), s.user)
	cells := find(rows[0], tag("td"))
	if got := text(cells[0]); got != fmt.Sprint(len(st)) {
		t.Errorf("facts now %s, State %d", got, len(st))
	}
	if got := text(cells[2]); got != "1" {
		t.Errorf("conflicts %q, want 1", got)
	}
	if got := text(cells[3]); got != "1 failed" {
		t.Errorf("failed %q, want 1 failed", got)
	}

	doc = get(t, ts, studio.UserURL(s.user, "episodes"))
	eps := find(byID(doc, "episodes"), func(n *html.Node) bool { return n.Data == "li" && attr(n, "data-seq") != "" })
	all, _ := s.e.Episodes(context.Background(), s.user)
	if len(eps) != len(all) {
		t.Fatalf("%d episodes shown, %d in the log", len(eps), len(all))
	}
	if first := text(eps[0]); !strings.Contains(first, "failed: ") || !strings.Contains(first, "extractor unavailable") {
		t.Errorf("the newest (failed) episode: %q", first)
	}
	if ep := text(byID(doc, "ep-3")); !strings.Contains(ep, "supersede") || !strings.Contains(ep, "Seattle") {
		t.Errorf("episode 3 does not show its supersede decision: %q", ep)
	}
	if byID(doc, "retry") == nil {
		t.Fatal("no Retry button")
	}
	code, out := post(t, ts, studio.UserURL(s.user, "retry"), map[string]any{})
	if code != http.StatusOK || out["applied"] != 1.0 || out["still_failing"] != 0.0 {
		t.Fatalf("retry: %d %v", code, out)
	}
	doc = get(t, ts, studio.UserURL(s.user, "episodes"))
	if byID(doc, "retry") != nil || strings.Contains(text(byID(doc, "episodes")), "failed:") {
		t.Error("after Retry the episode still shows as failed")
	}
	if !strings.Contains(text(byID(doc, "episodes")), "plays_instrument violin") {
		t.Errorf("the retried episode's decision is not shown: %q", text(eps[0]))
	}
}

// TestQueryExplain: results with each signal's contribution, the query's
// view and focus, what the time filter left out, and the Context block.
func TestQueryExplain(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	doc := get(t, ts, studio.UserURL(s.user, "query")+"?q="+url.QueryEscape("Where do I live?")+"&noep=1")
	res := find(byID(doc, "results"), func(n *html.Node) bool { return hasClass(n, "result") })
	if len(res) == 0 || !strings.Contains(text(res[0]), "Seattle") {
		t.Fatalf("first result: %v", res)
	}
	sig := text(find(res[0], tag("table"))[0])
	for _, w := range []string{"bm25", "vector", "entity", "Contribution"} {
		if !strings.Contains(sig, w) {
			t.Errorf("the signals table lacks %q: %q", w, sig)
		}
	}
	if d := text(byID(doc, "decided")); !strings.Contains(d, "first person") || !strings.Contains(d, "now") {
		t.Errorf("what the query decided: %q", d)
	}
	if rm := text(byID(doc, "removed")); !strings.Contains(rm, "contested") || !strings.Contains(rm, "no longer") {
		t.Errorf("the time filter: %q", rm)
	}
	want, _ := s.e.Context(context.Background(), s.user, "Where do I live?")
	if got := text(byID(doc, "context")); got != strings.Join(strings.Fields(want), " ") {
		t.Errorf("Context block %q, want %q", got, want)
	}
	// The forgetting curve adds the recency multiplier to the explanation.
	doc = get(t, ts, studio.UserURL(s.user, "query")+"?q="+url.QueryEscape("Where do I live?")+"&noep=1&forget=1")
	if r := text(find(byID(doc, "results"), func(n *html.Node) bool { return hasClass(n, "result") })[0]); !strings.Contains(r, "× recency") {
		t.Errorf("with forgetting: first result %q lacks the recency multiplier", r)
	}
	// Back in time: the view moves the answer.
	doc = get(t, ts, studio.UserURL(s.user, "query")+"?q="+url.QueryEscape("Where do I live?")+"&noep=1&valid=2026-02-01")
	if r := text(find(byID(doc, "results"), func(n *html.Node) bool { return hasClass(n, "result") })[0]); !strings.Contains(r, "San Francisco") {
		t.Errorf("valid 2026-02-01: first result %q", r)
	}
}

// TestConflictsResolve: the contested value beside the one in force, and
// each action: keep the value in force (retract the contested one).
func TestConflictsResolve(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	doc := get(t, ts, studio.UserURL(s.user, "conflicts"))
	cs := find(doc, func(n *html.Node) bool { return hasClass(n, "conflict") })
	if len(cs) != 1 || !strings.Contains(text(cs[0]), "Austin") || !strings.Contains(text(cs[0]), "In force Seattle") {
		t.Fatalf("conflicts: %q", text(byID(doc, "conflicts")))
	}
	keep := find(cs[0], func(n *html.Node) bool { return hasClass(n, "keep") })
	if len(keep) != 1 || text(keep[0]) != "Keep Seattle: retract Austin" {
		t.Fatalf("keep button: %v", keep)
	}
	code, out := post(t, ts, studio.UserURL(s.user, "correct"), map[string]string{"fact_id": attr(cs[0], "data-fact")})
	if code != http.StatusOK {
		t.Fatalf("correct: %d %v", code, out)
	}
	if c, _ := s.e.Conflicts(context.Background(), s.user); len(c) != 0 {
		t.Errorf("conflicts after keeping Seattle: %v", c)
	}
	if byID(get(t, ts, studio.UserURL(s.user, "conflicts")), "no-conflicts") == nil {
		t.Error("the page still lists a conflict")
	}
	if code, _ := post(t, ts, studio.UserURL(s.user, "correct"), map[string]string{"fact_id": "nope"}); code != http.StatusNotFound {
		t.Errorf("correct of an unknown fact: %d, want 404", code)
	}
}

// TestConflictsAccept: the other way to settle a conflict: accept the
// contested value, which is then in force from its valid time (the
// timeline labels its bar accept) and leaves the conflicts.
func TestConflictsAccept(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	ctx := context.Background()
	doc := get(t, ts, studio.UserURL(s.user, "conflicts"))
	cs := find(doc, func(n *html.Node) bool { return hasClass(n, "conflict") })
	if len(cs) != 1 {
		t.Fatalf("conflicts: %q", text(byID(doc, "conflicts")))
	}
	acc := find(cs[0], func(n *html.Node) bool { return hasClass(n, "accept") })
	if len(acc) != 1 || text(acc[0]) != "Accept Austin: in force from 2026-09-01" {
		t.Fatalf("accept button: %q", text(cs[0]))
	}
	austin := attr(cs[0], "data-fact")
	if code, out := post(t, ts, studio.UserURL(s.user, "accept"), map[string]string{"fact_id": austin}); code != http.StatusOK || out["redirect"] != studio.UserURL(s.user, "conflicts") {
		t.Fatalf("accept: %d %v", code, out)
	}
	if c, _ := s.e.Conflicts(ctx, s.user); len(c) != 0 {
		t.Errorf("conflicts after accepting Austin: %v", c)
	}
	if byID(get(t, ts, studio.UserURL(s.user, "conflicts")), "no-conflicts") == nil {
		t.Error("the page still lists a conflict")
	}
	st, _ := s.e.State(ctx, s.user)
	if !slices.ContainsFunc(st, func(f memor.Fact) bool { return f.ID == austin && f.Rule == memor.RuleAccept }) {
		t.Errorf("state after accept: %v, want Austin in force by rule accept", st)
	}
	tl := get(t, ts, studio.UserURL(s.user, ""))
	bars := find(byID(tl, "timeline"), func(n *html.Node) bool {
		return hasClass(n, "bar") && hasClass(n, "rule-accept") && hasClass(n, "st-active") && attr(n, "data-fact") == austin
	})
	if len(bars) != 1 || !strings.Contains(text(bars[0]), "Austin · accept") {
		t.Errorf("timeline: %d accept bars of Austin", len(bars))
	}
	// Accepting it again changes nothing; the value it closed is not
	// contested; an unknown fact is not found.
	if code, out := post(t, ts, studio.UserURL(s.user, "accept"), map[string]string{"fact_id": austin}); code != http.StatusOK {
		t.Errorf("accept again: %d %v", code, out)
	}
	var seattle string
	vs, _ := s.e.History(ctx, s.user, "user", "lives_in")
	for _, f := range vs {
		if f.Object == "Seattle" && f.Open() {
			seattle = f.ID
		}
	}
	if code, _ := post(t, ts, studio.UserURL(s.user, "accept"), map[string]string{"fact_id": seattle}); code != http.StatusConflict {
		t.Errorf("accept of a fact not contested: %d, want 409", code)
	}
	if code, _ := post(t, ts, studio.UserURL(s.user, "accept"), map[string]string{"fact_id": "nope"}); code != http.StatusNotFound {
		t.Errorf("accept of an unknown fact: %d, want 404", code)
	}
	if code, _ := post(t, ts, studio.UserURL(s.user, "accept"), map[string]string{}); code != http.StatusBadRequest {
		t.Errorf("accept without fact_id: %d, want 400", code)
	}
}

// TestGraphPath: the entities around the user as SVG, and the path of a
// multi-hop answer drawn and labelled on it.
func TestGraphPath(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	for depth, want := range map[int][]string{1: {"user", "Seattle", "Alex"}, 2: {"user", "Alex", "golden retriever", "Buddy"}} {
		doc := get(t, ts, fmt.Sprintf("%s?entity=user&depth=%d", studio.UserURL(s.user, "graph"), depth))
		svg := svgOf(t, doc, "graph")
		var names []string
		for _, n := range find(svg, func(n *html.Node) bool { return hasClass(n, "nlabel") }) {
			names = append(names, text(n))
		}
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("depth %d: no %q among %q", depth, w, names)
			}
		}
		if depth == 1 && slices.Contains(names, "Buddy") {
			t.Errorf("depth 1 reaches Buddy, two hops away: %q", names)
		}
	}
	doc := get(t, ts, studio.UserURL(s.user, "graph")+"?entity=user&depth=3&q="+url.QueryEscape("What kind of dog does my brother have?"))
	if p := text(byID(doc, "path")); !strings.Contains(p, "user → brother → Alex → has_pet → golden retriever") {
		t.Fatalf("path: %q", p)
	}
	on := find(svgOf(t, doc, "graph"), func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "onpath") })
	if len(on) != 2 {
		t.Errorf("%d edges on the path, want 2 (brother, has_pet)", len(on))
	}
	for _, e := range on {
		if !strings.Contains(text(e), "(on path)") {
			t.Errorf("an edge on the path is not labelled so: %q", text(e))
		}
	}
}

// TestForgetDryRunAndConfirm: the dry run's counts are ForgetPlan's and
// delete nothing; a wrong confirmation deletes nothing; typing the user ID
// forgets the user.
func TestForgetDryRunAndConfirm(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	plan, err := s.e.ForgetPlan(context.Background(), s.user)
	if err != nil {
		t.Fatal(err)
	}
	doc := get(t, ts, studio.UserURL(s.user, "forget"))
	got := text(byID(doc, "plan"))
	for _, w := range []string{fmt.Sprintf("Episodes %d", plan.Episodes), fmt.Sprintf("Decisions %d", plan.Decisions),
		fmt.Sprintf("Expired versions %d", plan.History), fmt.Sprintf("believed now %d", plan.Live)} {
		if !strings.Contains(got, w) {
			t.Errorf("dry run %q lacks %q", got, w)
		}
	}
	if code, _ := post(t, ts, studio.UserURL(s.user, "forget"), map[string]string{"confirm": "alic"}); code != http.StatusBadRequest {
		t.Errorf("a wrong confirmation: %d, want 400", code)
	}
	if again, _ := s.e.ForgetPlan(context.Background(), s.user); again != plan {
		t.Fatalf("something was deleted: %+v, then %+v", plan, again)
	}
	if code, out := post(t, ts, studio.UserURL(s.user, "forget"), map[string]string{"confirm": "alice"}); code != http.StatusOK || out["redirect"] != "/studio/" {
		t.Fatalf("forget: %d %v", code, out)
	}
	if us, _ := s.e.Users(context.Background()); len(us) != 0 {
		t.Errorf("users after Forget: %v", us)
	}
}

// TestStudioGuard: the studio's actions pass the API's checks: a page of
// another site cannot post, a form body is refused, and with a token the
// studio needs the session cookie, which no API route accepts.
func TestStudioGuard(t *testing.T) {
	s := seed(t, "alice")
	ts := serve(t, s.e, "", s.Now)
	forget := ts.URL + studio.UserURL(s.user, "forget")
	accept := ts.URL + studio.UserURL(s.user, "accept")
	cs, _ := s.e.Conflicts(context.Background(), s.user)
	if len(cs) != 1 {
		t.Fatalf("seed conflicts: %v", cs)
	}
	for name, hd := range map[string]map[string]string{
		"cross-site fetch": {"Content-Type": "application/json", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		"cross-site form":  {"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"},
		"same-site":        {"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"},
		"form body":        {"Content-Type": "application/x-www-form-urlencoded"},
		"text/plain":       {"Content-Type": "text/plain"},
	} {
		for path, body := range map[string]string{forget: `{"confirm":"alice"}`, accept: `{"fact_id":"` + cs[0].ID + `"}`} {
			req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(body))
			for k, v := range hd {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("%s %s: %d, want 403 or 415", name, path, resp.StatusCode)
			}
		}
	}
	if us, _ := s.e.Users(context.Background()); len(us) != 1 {
		t.Fatal("a refused request forgot the user")
	}
	if again, _ := s.e.Conflicts(context.Background(), s.user); len(again) != 1 {
		t.Fatal("a refused request accepted the contested fact")
	}
	resp, _ := http.Get(ts.URL + "/studio/")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	resp.Body.Close()

	token := "0123456789abcdef0123"
	tt := serve(t, s.e, token, s.Now)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(c *http.Client, path string, cookie *http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, tt.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := status(noRedirect, "/studio/", nil); c != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", c)
	}
	if c := status(noRedirect, "/studio/login?token=wrong-token-0123456", nil); c != http.StatusUnauthorized {
		t.Errorf("a wrong login token: %d, want 401", c)
	}
	if c := status(noRedirect, "/studio/u/alice/?token="+token, nil); c != http.StatusUnauthorized {
		t.Errorf("the token in the query of a page other than login: %d, want 401", c)
	}
	resp, err := noRedirect.Get(tt.URL + "/studio/login?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "memor_studio" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/studio/" || session == nil ||
		!session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/studio/" {
		t.Fatalf("login: %d Location %q cookie %+v", resp.StatusCode, resp.Header.Get("Location"), session)
	}
	if c := status(noRedirect, "/studio/", session); c != http.StatusOK {
		t.Errorf("with the session cookie: %d, want 200", c)
	}
	if c := status(noRedirect, "/v1/users", session); c != http.StatusUnauthorized {
		t.Errorf("the studio cookie on the API: %d, want 401", c)
	}
	if c := status(noRedirect, "/studio/", &http.Cookie{Name: "memor_studio", Value: "wrong-token-0123456"}); c != http.StatusUnauthorized {
		t.Errorf("a wrong cookie: %d, want 401", c)
	}
}

// TestHostileText: user IDs and texts from the corpus (markup, RTL, CJK,
// emoji, quotes) come out escaped: the pages parse, the SVG is well-formed
// XML, and no script element is injected.
func TestHostileText(t *testing.T) {
	ctx := context.Background()
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	user := `<script>alert("x")</script>/ü & 'q'`
	texts := []string{`I live in <b>"Zürich"</b> & 'Bern'.`, "I live in 東京.", "I live in القاهرة.", "I play the 🎸 guitar."}
	for _, f := range []string{"cjk-zh.txt", "chat-long-turn.txt"} {
		if b, err := os.ReadFile(filepath.Join("..", "testdata", "texts", f)); err == nil {
			texts = append(texts, string(b[:min(len(b), 4000)]))
		}
	}
	for i, s := range texts {
		if _, err := e.Add(ctx, user, s, memor.At(date("2026-01-10").AddDate(0, i, 0)), memor.Sync()); err != nil && !errors.Is(err, memor.ErrInvalidText) {
			t.Fatal(err)
		}
	}
	if _, err := e.Assert(ctx, user, memor.FactInput{Subject: "user", Predicate: "likes", Object: `</text></svg><script>x</script>`}); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, e, "", time.Now())
	for _, view := range []string{"", "episodes", "conflicts", "graph", "forget", "query?q=" + url.QueryEscape("where do I live <b>?")} {
		doc := get(t, ts, studio.UserURL(user, view))
		if s := find(doc, tag("script")); len(s) != 1 || attr(s[0], "src") != "/studio/assets/studio.js" {
			t.Errorf("%q: script elements %d", view, len(s))
		}
		if view == "" {
			svgOf(t, doc, "timeline")
		}
		if view == "graph" {
			svgOf(t, doc, "graph")
		}
	}
	// The clocks form and the pager of a user ID with a slash keep it
	// escaped: they name the same user.
	doc := get(t, ts, studio.UserURL(user, ""))
	if a := attr(byID(doc, "clocks"), "action"); a != studio.UserURL(user, "") {
		t.Errorf("clocks form action %q, want %q", a, studio.UserURL(user, ""))
	}
	doc = get(t, ts, "/studio/?q="+url.QueryEscape("<script>"))
	if rows := find(byID(doc, "users"), func(n *html.Node) bool { return attr(n, "data-user") == user }); len(rows) != 1 {
		t.Errorf("the search for the user's ID does not list it")
	}
}
