package studio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/studio"
)

var cities = []string{"Oslo", "Bergen", "Lisbon", "Porto", "Kyoto", "Osaka", "Quito", "Lima"}

// history writes an export (memor's JSON Lines) of n users, each of
// whom says a few things over a year.
func history(n int) *bytes.Buffer {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	start := date("2025-01-01")
	for u := range n {
		says := []string{
			"I live in " + cities[u%len(cities)] + ".",
			fmt.Sprintf("My sister Kim%d plays the cello.", u),
			"I just moved to " + cities[(u+3)%len(cities)] + ".",
		}
		for i, text := range says {
			at := start.AddDate(0, 0, u%300+i*20)
			enc.Encode(map[string]any{"user": fmt.Sprintf("user-%04d", u), "seq": i + 1, "kind": "text",
				"at": at, "recorded_at": at.Add(time.Hour), "text": text})
		}
	}
	return &b
}

// TestThousandUsers: a store of 1,000 users imported from a generated
// history; the users list pages through them, searches them, and every
// view of one of them renders.
func TestThousandUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 3,000 episodes")
	}
	ctx := context.Background()
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	sum, err := e.Import(ctx, history(1000))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %+v in %v", sum, time.Since(start))
	ts := serve(t, e, "", time.Now())
	seen := map[string]bool{}
	for p := 1; ; p++ {
		doc := get(t, ts, fmt.Sprintf("/studio/?page=%d", p))
		rows := find(byID(doc, "users"), func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-user") != "" })
		if len(rows) != studio.PageSize {
			t.Fatalf("page %d: %d rows, want %d", p, len(rows), studio.PageSize)
		}
		for _, r := range rows {
			u := attr(r, "data-user")
			if seen[u] {
				t.Fatalf("page %d lists %s again", p, u)
			}
			seen[u] = true
			st, err := e.State(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if cells := find(r, tag("td")); text(cells[0]) != fmt.Sprint(len(st)) || text(cells[1]) != "3" {
				t.Fatalf("%s: facts %q, episodes %q; want %d, 3", u, text(cells[0]), text(cells[1]), len(st))
			}
		}
		pager := find(doc, func(n *html.Node) bool { return n.Data == "a" && attr(n, "rel") == "next" })
		if len(pager) == 0 {
			if p != 1000/studio.PageSize {
				t.Fatalf("the last page is %d, want %d", p, 1000/studio.PageSize)
			}
			break
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("%d users listed, want 1000", len(seen))
	}
	doc := get(t, ts, "/studio/?q="+url.QueryEscape("USER-09"))
	if rows := find(byID(doc, "users"), func(n *html.Node) bool { return attr(n, "data-user") != "" }); len(rows) != studio.PageSize ||
		!strings.Contains(text(doc), "100 of 1000 users") {
		t.Errorf("search user-09: %d rows, %q", len(rows), text(find(doc, func(n *html.Node) bool { return hasClass(n, "muted") })[0]))
	}
	for _, view := range []string{"", "episodes", "query?q=where+do+I+live", "conflicts", "graph?depth=3", "forget"} {
		get(t, ts, studio.UserURL("user-0777", view))
	}
}

// bigUser opens a store with one user of at least 10,000 fact versions:
// 1,000 people, each moving through six cities (one supersede expires a
// version and records two).
func bigUser(tb testing.TB) (*memor.Engine, int) {
	tb.Helper()
	ctx := context.Background()
	e, err := memor.Open(filepath.Join(tb.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	for move := range 6 {
		for chunk := 0; chunk < 1000; chunk += 250 {
			var fs []memor.FactInput
			for p := chunk; p < chunk+250; p++ {
				fs = append(fs, memor.FactInput{Subject: fmt.Sprintf("person %d", p), Predicate: "lives_in",
					Object: cities[(p+move)%len(cities)], ValidFrom: date("2024-01-01").AddDate(0, move*2, p%28),
					Quote: "moved to " + cities[(p+move)%len(cities)]})
			}
			if _, err := e.AssertBatch(ctx, "big", fs); err != nil {
				tb.Fatal(err)
			}
		}
	}
	vs, err := e.Versions(ctx, "big")
	if err != nil {
		tb.Fatal(err)
	}
	if len(vs) < 10000 {
		tb.Fatalf("%d versions, want at least 10,000", len(vs))
	}
	return e, len(vs)
}

var bigPages = map[string]string{
	"users":         "/studio/",
	"timeline":      studio.UserURL("big", ""),
	"timeline_last": studio.UserURL("big", "") + "?page=1000",
	"timeline_past": studio.UserURL("big", "") + "?valid=2024-05-01&known=2024-05-01",
	"episodes":      studio.UserURL("big", "episodes"),
	"query":         studio.UserURL("big", "query") + "?q=" + url.QueryEscape("where does person 17 live"),
	"conflicts":     studio.UserURL("big", "conflicts"),
	"graph":         studio.UserURL("big", "graph") + "?entity=" + url.QueryEscape("person 17") + "&depth=3",
	"forget":        studio.UserURL("big", "forget"),
}

// TestBigUserPaged: every page of a user with 10,000 versions renders, and
// the timeline draws one page of bars, not all of them.
func TestBigUserPaged(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 versions")
	}
	e, n := bigUser(t)
	ts := serve(t, e, "", time.Now())
	for name, path := range bigPages {
		start := time.Now()
		doc := get(t, ts, path)
		t.Logf("%s: %v", name, time.Since(start))
		if name == "episodes" {
			for _, li := range find(byID(doc, "episodes"), func(n *html.Node) bool { return n.Data == "li" }) {
				if rows := find(li, tag("tr")); len(rows) > studio.DecisionsShown+1 {
					t.Errorf("episode %s lists %d decisions, want at most %d", attr(li, "data-seq"), len(rows)-1, studio.DecisionsShown)
				}
			}
		}
		if strings.HasPrefix(name, "timeline") {
			bars := find(svgOf(t, doc, "timeline"), func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "bar") })
			if len(bars) == 0 || len(bars) > studio.TimelinePage {
				t.Errorf("%s: %d bars of %d versions, want a page of at most %d", name, len(bars), n, studio.TimelinePage)
			}
		}
	}
}

// BenchmarkPages loads every page for a user with 10,000 fact versions
// through the HTTP handler, as a browser would, and reports ms/page.
func BenchmarkPages(b *testing.B) {
	e, n := bigUser(b)
	b.Logf("user with %d versions", n)
	ts := serve(b, e, "", time.Now())
	for _, name := range []string{"users", "timeline", "timeline_last", "timeline_past", "episodes", "query", "conflicts", "graph", "forget"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Get(ts.URL + bigPages[name])
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", name, resp.StatusCode)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
