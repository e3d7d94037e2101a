package studio_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/memor-db/memor/studio"
)

// findChromium returns the path of a Chromium or Chrome, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifacts is where the browser test saves its screenshots:
// $MEMOR_ARTIFACTS if set (CI keeps it), else a temporary folder.
func artifacts(t *testing.T) string {
	if d := os.Getenv("MEMOR_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "studio")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestBrowserStudio drives a real headless Chromium through the studio on
// the seed story: it logs in with the token, checks the timeline's bars and
// rule labels, moves each clock slider with the keyboard and checks the
// state shown equals AsOf at the instants the URL then carries, runs a
// query explain, resolves the conflict, and saves screenshots.
//
// It needs Chromium (apt-get install chromium); .ci/run installs it and
// sets MEMOR_REQUIRE_BROWSER=1, which turns the skip into a failure.
func TestBrowserStudio(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		if os.Getenv("MEMOR_REQUIRE_BROWSER") != "" {
			t.Fatal("MEMOR_REQUIRE_BROWSER is set and no chromium is in PATH (apt-get install chromium)")
		}
		t.Skip("no chromium in PATH: the studio's browser test needs a headless Chromium (apt-get install chromium); the html tests of this package check the same pages as documents")
	}
	s := seed(t, "alice")
	token := "browser-test-token-0123456789"
	ts := serve(t, s.e, token, s.Now)
	out := artifacts(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(out, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", p)
	}

	// A headless page has no window focus, and without it Chromium fires
	// no focus events: emulate a focused page, as a person's browser is.
	do("focus emulation", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return chromedp.Void{}, err
	})
	// The printed URL logs the browser in and lands on the users list.
	do("login", chromedp.Navigate(ts.URL+"/studio/login?token="+url.QueryEscape(token)), chromedp.WaitVisible(chromedp.CSS("#users")))
	if got := eval(`document.querySelector('#users tbody tr').dataset.user`); got != "alice" {
		t.Fatalf("users list: first row %q", got)
	}

	// The timeline: a bar per version, each labelled with its rule.
	do("timeline", chromedp.Navigate(ts.URL+"/studio/u/alice/?valid=2026-05-01&known=2026-07-20"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	vs, _ := s.e.Versions(ctx, s.user)
	if n := eval(`String(document.querySelectorAll('#timeline .bar').length)`); n != fmt.Sprint(len(vs)) {
		t.Fatalf("%s bars, %d versions", n, len(vs))
	}
	labels := strings.Split(eval(`[...document.querySelectorAll('#timeline .bar text.label')].map(e => e.textContent).join("\n")`), "\n")
	for _, want := range []string{"Oakland · late", "Seattle · supersede", "Austin · contest · contested", "Initech · correct · retracted", "San Francisco · add · expired"} {
		if !slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("no bar labelled %q among %q", want, labels)
		}
	}
	// A bar focused from the keyboard says its instants, quote and episode.
	do("focus a bar", chromedp.Focus(chromedp.CSS(`#timeline .bar.rule-late.st-active[data-fact] ~ .bar.rule-late`)))
	if d := eval(`document.getElementById('detail').textContent`); !strings.Contains(d, "recorded 2026-08-01") || !strings.Contains(d, "episode") {
		t.Errorf("detail of a focused bar: %q (focused: %s)", d, eval(`document.activeElement.tagName + " " + document.activeElement.getAttribute("class")`))
	}

	// state reads the table the page shows and the instants it was drawn
	// at, and compares it with AsOf there.
	checkState := func(when string) {
		t.Helper()
		valid, err := time.Parse(time.RFC3339, eval(`document.getElementById('view').dataset.valid`))
		if err != nil {
			t.Fatal(err)
		}
		known, err := time.Parse(time.RFC3339, eval(`document.getElementById('view').dataset.known`))
		if err != nil {
			t.Fatal(err)
		}
		q, _ := url.ParseQuery(strings.TrimPrefix(eval(`location.search`), "?"))
		qv, err1 := studio.ParseInstant(q.Get("valid"), time.Time{})
		qk, err2 := studio.ParseInstant(q.Get("known"), time.Time{})
		if err1 != nil || err2 != nil || !qv.Equal(valid) || !qk.Equal(known) {
			t.Errorf("%s: the URL %v does not carry the instants drawn (%s, %s)", when, q, valid, known)
		}
		got := strings.Split(eval(`[...document.querySelectorAll('#state tbody tr')].filter(r => r.cells.length >= 4).map(r => [...r.cells].slice(0, 4).map(c => c.textContent.trim()).join(" ").trim()).join("\n")`), "\n")
		if len(got) == 1 && got[0] == "" {
			got = []string{}
		}
		if want := asOfRows(t, s.e, s.user, valid, known); !slices.Equal(got, want) {
			t.Errorf("%s (valid %s, known %s): the page shows %q, AsOf %q", when, valid, known, got, want)
		}
		t.Logf("%s: valid %s known %s: %q", when, valid.Format(time.DateOnly), known.Format(time.DateOnly), got)
	}
	checkState("loaded")
	if !slices.Contains(strings.Split(eval(`[...document.querySelectorAll('#state td')].map(c => c.textContent).join("\n")`), "\n"), "San Francisco") {
		t.Error("believed on 2026-07-20 about 2026-05-01: San Francisco expected (the late fact was not yet recorded)")
	}
	// moveSlider presses a key n times on a slider and waits for the view
	// drawn at the slider's instant.
	moveSlider := func(id, key string, n int) {
		t.Helper()
		do("focus "+id, chromedp.Focus(chromedp.CSS("#"+id)))
		for range n {
			do("key", chromedp.KeyEvent(key))
		}
		field := map[string]string{"known-range": "known", "valid-range": "valid"}[id]
		want := eval(`new Date(document.getElementById('` + id + `').value * 1000).toISOString().replace('.000Z', 'Z')`)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById('view').dataset.`+field+` === '`+want+`'`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("%s: the view was not redrawn at %s: %v", id, want, err)
		}
	}
	// "As believed on": forward past the late fact's recording (2026-08-01).
	moveSlider("known-range", kb.ArrowRight, 26)
	checkState("as believed on, moved forward")
	if st := eval(`document.getElementById('state').textContent`); !strings.Contains(st, "Oakland") {
		t.Errorf("believed on 2026-08-15 about 2026-05-01: Oakland expected, the page shows %q", st)
	}
	// "True at": back to March: San Francisco again, the brother known.
	moveSlider("valid-range", kb.ArrowLeft, 45)
	checkState("true at, moved back")
	moveSlider("valid-range", kb.ArrowRight, 120)
	checkState("true at, moved forward")
	if f := eval(`document.activeElement.id`); f != "valid-range" {
		t.Errorf("after the redraw the focus is on %q, want the slider", f)
	}
	// The screenshot of the README: believed on 2026-08-15, true at
	// 2026-05-01, the late Oakland in view.
	do("timeline for the screenshot", chromedp.Navigate(ts.URL+"/studio/u/alice/?valid=2026-05-01T00:00:00Z&known=2026-08-15T00:00:00Z"),
		chromedp.WaitVisible(chromedp.CSS("#timeline")), chromedp.Focus(chromedp.CSS(`#timeline .bar.rule-late.st-active[data-fact] ~ .bar.rule-late`)))
	checkState("shared URL")
	shot("studio-timeline.png")

	// Query explain, typed into the form.
	do("query", chromedp.Navigate(ts.URL+"/studio/u/alice/query"), chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SendKeys(chromedp.CSS("#q"), "What kind of dog does my brother have?"),
		chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#results")))
	if r := eval(`document.querySelector('#results .result').textContent`); !strings.Contains(r, "golden retriever") || !strings.Contains(r, "Contribution") {
		t.Errorf("first result of the explain: %q", r)
	}
	if c := eval(`document.getElementById('context').textContent`); !strings.Contains(c, "golden retriever") {
		t.Errorf("Context block: %q", c)
	}
	shot("studio-query.png")

	// The graph around the user with the answer's path drawn on it.
	do("graph", chromedp.Navigate(ts.URL+"/studio/u/alice/graph?entity=user&depth=3&q="+url.QueryEscape("What kind of dog does my brother have?")),
		chromedp.WaitVisible(chromedp.CSS("#graph")))
	if n := eval(`String(document.querySelectorAll('#graph .edge.onpath').length)`); n != "2" {
		t.Errorf("%s edges on the path, want 2", n)
	}
	shot("studio-graph.png")

	// Resolve the conflict by accepting the contested value: Austin is
	// then in force from its valid time, and the timeline says so.
	do("conflicts", chromedp.Navigate(ts.URL+"/studio/u/alice/conflicts"), chromedp.WaitVisible(chromedp.CSS(".conflict .accept")),
		chromedp.Click(chromedp.CSS(".conflict .accept")), chromedp.WaitVisible(chromedp.CSS("#no-conflicts")))
	if cs, _ := s.e.Conflicts(ctx, s.user); len(cs) != 0 {
		t.Errorf("conflicts after accepting Austin in the browser: %v", cs)
	}
	shot("studio-conflicts-resolved.png")
	do("timeline after accept", chromedp.Navigate(ts.URL+"/studio/u/alice/?valid="+
		s.Now.Format(time.RFC3339)+"&known="+s.Now.Format(time.RFC3339)), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	checkState("after accept")
	labels = strings.Split(eval(`[...document.querySelectorAll('#timeline .bar.st-active text.label')].map(e => e.textContent).join("\n")`), "\n")
	if !slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, "Austin · accept") }) {
		t.Errorf("no active bar labelled \"Austin · accept\" among %q", labels)
	}
	if !slices.Contains(strings.Split(eval(`[...document.querySelectorAll('#state td')].map(c => c.textContent).join("\n")`), "\n"), "Austin") {
		t.Error("the state shown after accepting Austin does not hold Austin")
	}
}
