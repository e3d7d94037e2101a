package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/memor-db/memor"
)

// scrape GETs url and parses the Prometheus text format.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// metricValue is the value of the series of family name whose labels
// include want (a counter's or gauge's value, a histogram's count), and
// whether there is one.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsCount: /metrics counts requests per route pattern (never per
// path), the engine's episodes, and each query stage when the Metrics are
// the engine's observer.
func TestMetricsCount(t *testing.T) {
	m := NewMetrics()
	e := openEngine(t, memor.Options{Observer: m})
	srv := httptest.NewServer(New(e, Options{Metrics: m}))
	t.Cleanup(srv.Close)
	post := func(path, body string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/v1/users/alice-secret/episodes", `{"text":"I live in Oslo.","wait":true}`)
	post("/v1/users/alice-secret/episodes", `{"text":"I work at Acme."}`)
	for range 3 {
		resp, err := http.Get(srv.URL + "/v1/users/alice-secret/query?q=where+do+I+live")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := e.Flush(context.Background(), "alice-secret"); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, srv.URL+"/metrics", "")
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"memor_http_requests_total", map[string]string{"route": "GET /v1/users/{user}/query", "code": "200"}, 3},
		{"memor_http_request_duration_seconds", map[string]string{"route": "GET /v1/users/{user}/query"}, 3},
		{"memor_http_requests_total", map[string]string{"route": "POST /v1/users/{user}/episodes", "code": "201"}, 1},
		{"memor_http_requests_total", map[string]string{"route": "POST /v1/users/{user}/episodes", "code": "202"}, 1},
		{"memor_query_duration_seconds", map[string]string{"outcome": "ok"}, 3},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "bm25"}, 3},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "vector"}, 3},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "entity"}, 3},
		{"memor_query_stage_duration_seconds", map[string]string{"stage": "rerank"}, 0},
		{"memor_episodes_queued_total", nil, 1}, // with wait the add applies in the call (memor.Decisions), like Sync
		{"memor_episodes_applied_total", nil, 2},
		{"memor_episodes_failed_total", nil, 0},
		{"memor_index_cache_users", nil, 1},
	}
	for _, c := range checks {
		got, ok := metricValue(fams, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if v, _ := metricValue(fams, "memor_index_cache_bytes", nil); v <= 0 {
		t.Errorf("memor_index_cache_bytes = %v, want > 0", v)
	}
	for _, name := range []string{"memor_wal_syncs_total", "memor_file_syncs_total", "memor_index_cache_evictions_total", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	for name, f := range fams {
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if strings.Contains(l.GetValue(), "alice-secret") {
					t.Errorf("%s has the user ID in a label: %v", name, l)
				}
			}
		}
	}
	// Counters move: one more query, one more count.
	resp, _ := http.Get(srv.URL + "/v1/users/alice-secret/query?q=acme")
	resp.Body.Close()
	fams = scrape(t, srv.URL+"/metrics", "")
	if got, _ := metricValue(fams, "memor_http_requests_total", map[string]string{"route": "GET /v1/users/{user}/query", "code": "200"}); got != 4 {
		t.Errorf("after a fourth query: %v", got)
	}
	if got, _ := metricValue(fams, "memor_http_requests_total", map[string]string{"route": "GET /metrics", "code": "200"}); got != 1 {
		t.Errorf("the first scrape counted %v times, want 1", got)
	}
}

// TestMetricsGuarded: /metrics passes the same checks as every route
// (token, origin, method), and is not served without Options.Metrics.
func TestMetricsGuarded(t *testing.T) {
	const tok = "0123456789abcdef"
	m := NewMetrics()
	a := newAPI(t, Options{Metrics: m, Token: tok})
	a.token = ""
	if st, _ := a.do("GET", "/metrics", nil); st != 401 {
		t.Errorf("/metrics without the token: %d, want 401", st)
	}
	a.token = tok
	if st, _, _ := a.raw("GET", "/metrics", "", map[string]string{"Origin": "https://evil.example"}); st != 403 {
		t.Errorf("/metrics from a foreign page: %d, want 403", st)
	}
	if st, _ := a.do("POST", "/metrics", nil); st != 405 {
		t.Errorf("POST /metrics: %d, want 405", st)
	}
	fams := scrape(t, a.srv.URL+"/metrics", tok)
	if got, _ := metricValue(fams, "memor_http_requests_total", map[string]string{"route": "unrouted", "code": "401"}); got != 1 {
		t.Errorf("refused requests counted %v, want 1 (401)", got)
	}
	b := newAPI(t, Options{})
	if st, _ := b.do("GET", "/metrics", nil); st != 404 {
		t.Errorf("/metrics without Options.Metrics: %d, want 404", st)
	}
	// Two servers, two registries: neither sees the other's requests.
	c := newAPI(t, Options{Metrics: NewMetrics()})
	fams = scrape(t, c.srv.URL+"/metrics", "")
	if _, ok := metricValue(fams, "memor_http_requests_total", map[string]string{"route": "unrouted"}); ok {
		t.Errorf("a second server's metrics count the first's requests")
	}
}

// TestMetricsBeyondLoopback: on a listener beyond loopback /metrics is
// served only with ServeOptions.ExposeMetrics.
func TestMetricsBeyondLoopback(t *testing.T) {
	const tok = "0123456789abcdef"
	for _, expose := range []bool{false, true} {
		e := openEngine(t, memor.Options{})
		ln, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Skipf("cannot listen on every interface here: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, e, ln, ServeOptions{Options: Options{Token: tok, Metrics: NewMetrics()}, ExposeMetrics: expose})
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := 404
		if expose {
			want = 200
		}
		if resp.StatusCode != want {
			t.Errorf("ExposeMetrics %v: GET /metrics %d, want %d", expose, resp.StatusCode, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
