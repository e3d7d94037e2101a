package cli_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics GETs base/metrics (with token if set) and parses the
// Prometheus text format; it returns the status too.
func scrapeMetrics(t *testing.T, base, token string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return 200, fams
}

// sample is the value of the series of name whose labels include want: a
// counter's or gauge's value, a histogram's count (0 if absent).
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// TestServeMetrics: memor serve on loopback answers GET /metrics in the
// Prometheus text format, and its counters move with the requests served:
// requests per route pattern, episodes applied, WAL syncs of the durable
// store, query latency per signal.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, stop := serve(t, e, "--addr", "127.0.0.1:0")
	defer stop(syscall.SIGTERM)
	st, before := scrapeMetrics(t, base, "")
	if st != 200 {
		t.Fatalf("GET /metrics on loopback: %d, want 200", st)
	}
	resp, err := http.Post(base+"/v1/users/alice/episodes", "application/json", strings.NewReader(`{"text":"I live in Oslo.","wait":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for range 2 {
		resp, err := http.Get(base + "/v1/users/alice/query?q=where+do+I+live")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	_, after := scrapeMetrics(t, base, "")
	query := map[string]string{"route": "GET /v1/users/{user}/query", "code": "200"}
	moved := []struct {
		name   string
		labels map[string]string
		by     float64
	}{
		{"memor_http_requests_total", query, 2},
		{"memor_http_requests_total", map[string]string{"route": "POST /v1/users/{user}/episodes", "code": "201"}, 1},
		{"memor_http_requests_total", map[string]string{"route": "GET /metrics"}, 1},
		{"memor_episodes_applied_total", nil, 1},
		{"memor_query_duration_seconds", map[string]string{"outcome": "ok"}, 2},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "bm25"}, 2},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "vector"}, 2},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "entity"}, 2},
	}
	for _, m := range moved {
		if d := sample(after, m.name, m.labels) - sample(before, m.name, m.labels); d != m.by {
			t.Errorf("%s%v moved by %v, want %v", m.name, m.labels, d, m.by)
		}
	}
	if d := sample(after, "memor_wal_syncs_total", nil) - sample(before, "memor_wal_syncs_total", nil); d < 1 {
		t.Errorf("a durable add moved memor_wal_syncs_total by %v", d)
	}
	if sample(after, "memor_index_cache_bytes", nil) <= 0 || after["memor_index_cache_evictions_total"] == nil {
		t.Errorf("index cache metrics missing: %v %v", after["memor_index_cache_bytes"], after["memor_index_cache_evictions_total"])
	}
}

// TestServeWarmsIndexes: memor serve stopped (SIGTERM) and started again
// loads, before any query, the indexes of the users it had loaded; a
// one-shot command in between does not lose the list.
func TestServeWarmsIndexes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, stop := serve(t, e, "--addr", "127.0.0.1:0")
	users := []string{"alice", "bob", "carol"}
	for _, u := range users {
		resp, err := http.Post(base+"/v1/users/"+u+"/episodes", "application/json", strings.NewReader(`{"text":"I live in Oslo and I work at Acme.","wait":true}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Get(base + "/v1/users/" + u + "/query?q=where+do+I+live")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if code := stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("memor serve exited %d", code)
	}
	// A one-shot command: it reads bob only.
	e.ok("query", "--user", "bob", "where do I live?")

	base, stop = serve(t, e, "--addr", "127.0.0.1:0")
	defer stop(syscall.SIGTERM)
	wantWarmed(t, base, len(users))
	resp, err := http.Get(base + "/v1/users/carol/query?q=where+do+I+live")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Oslo") {
		t.Fatalf("query of a warmed user: %d %s", resp.StatusCode, body)
	}
}

// TestServeWarmsImported: a store filled by `memor import` (a one-shot
// command, which does not warm) is served by `memor serve` with the
// imported users' indexes loaded before any query, as the README says.
func TestServeWarmsImported(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	users := []string{"alice", "bob"}
	for _, u := range users {
		a.ok("add", "I live in Oslo and I work at Acme.", "--user", u)
		a.ok("add", "My sister Maya works at Door Dash.", "--user", u)
	}
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	a.ok("export", "--all", "-o", file)
	b := newEnv(t)
	b.ok("import", file)
	base, stop := serve(t, b, "--addr", "127.0.0.1:0")
	defer stop(syscall.SIGTERM)
	wantWarmed(t, base, len(users))
}

// wantWarmed waits for the server at base to finish warming its index
// cache and checks, before any query, that it warmed and holds n users.
func wantWarmed(t *testing.T, base string, n int) {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	for range 200 {
		_, fams = scrapeMetrics(t, base, "")
		if fams["memor_index_cache_warming"] != nil && sample(fams, "memor_index_cache_warming", nil) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := sample(fams, "memor_index_cache_warmed_users_total", nil); got != float64(n) {
		t.Fatalf("memor_index_cache_warmed_users_total %v, want %d", got, n)
	}
	if got := sample(fams, "memor_index_cache_users", nil); got != float64(n) {
		t.Fatalf("memor_index_cache_users %v before any query, want %d", got, n)
	}
}

// TestServeMetricsBeyondLoopback: beyond loopback /metrics is off unless
// --metrics, and then needs the token like every route.
func TestServeMetricsBeyondLoopback(t *testing.T) {
	t.Parallel()
	const tok = "0123456789abcdef0123"
	e := newEnv(t)
	e.vars = append(e.vars, "MEMOR_TOKEN="+tok)
	base, stop := serve(t, e, "--addr", "0.0.0.0:0")
	if st, _ := scrapeMetrics(t, base, tok); st != 404 {
		t.Errorf("beyond loopback without --metrics: %d, want 404", st)
	}
	stop(syscall.SIGTERM)

	base, stop = serve(t, e, "--addr", "0.0.0.0:0", "--metrics")
	defer stop(syscall.SIGTERM)
	if st, _ := scrapeMetrics(t, base, ""); st != 401 {
		t.Errorf("--metrics without the token: %d, want 401", st)
	}
	st, fams := scrapeMetrics(t, base, tok)
	if st != 200 || fams["memor_http_requests_total"] == nil {
		t.Errorf("--metrics with the token: %d, families %d", st, len(fams))
	}
}
