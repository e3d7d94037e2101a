package server

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestLoad drives the API on loopback with N concurrent clients × M
// requests each, mixed writes and reads over 100 users, and requires zero
// errors. It reports p50/p99 latency and throughput. The default run is
// short; set MEMOR_LOAD_CLIENTS and MEMOR_LOAD_REQUESTS for a bigger one,
// e.g. MEMOR_LOAD_CLIENTS=32 MEMOR_LOAD_REQUESTS=500.
func TestLoad(t *testing.T) {
	clients, requests := envInt(t, "MEMOR_LOAD_CLIENTS", 8), envInt(t, "MEMOR_LOAD_REQUESTS", 50)
	const users = 100
	// A durable store, as memor serve runs it: concurrent commits share
	// fsyncs.
	e, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv := httptest.NewServer(New(e, Options{}))
	defer srv.Close()

	cities := []string{"Oslo", "Lima", "Quito", "Kyoto", "Cairo", "Perth", "Denver", "Austin"}
	jobs := []string{"Acme", "Globex", "Initech", "Umbrella"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type sample struct {
		d   time.Duration
		err error
	}
	results := make([][]sample, clients)
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			for i := range requests {
				user := "user-" + strconv.Itoa(rng.IntN(users))
				var req *http.Request
				want := http.StatusOK
				switch r := rng.IntN(10); {
				case r < 3: // write: 30%
					text := fmt.Sprintf(`{"text":"I live in %s.","at":"%s"}`, cities[rng.IntN(len(cities))],
						base.Add(time.Duration(c*requests+i)*time.Hour).Format(time.RFC3339))
					if r == 0 {
						text = fmt.Sprintf(`{"text":"I work at %s."}`, jobs[rng.IntN(len(jobs))])
					}
					req, _ = http.NewRequest("POST", srv.URL+"/v1/users/"+user+"/episodes", strings.NewReader(text))
					want = http.StatusAccepted
				case r < 6:
					req, _ = http.NewRequest("GET", srv.URL+"/v1/users/"+user+"/state", nil)
				case r < 7:
					req, _ = http.NewRequest("GET", srv.URL+"/v1/users/"+user+"/asof?valid=2026-02-01", nil)
				case r < 8:
					req, _ = http.NewRequest("GET", srv.URL+"/v1/users/"+user+"/history?predicate=lives_in", nil)
				default:
					req, _ = http.NewRequest("GET", srv.URL+"/v1/users/"+user+"/query?q="+url.QueryEscape("Where do I live?"), nil)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						err = fmt.Errorf("%s %s: status %d", req.Method, req.URL.Path, resp.StatusCode)
					}
				}
				results[c] = append(results[c], sample{time.Since(t0), err})
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var lat []time.Duration
	var errs []error
	for _, rs := range results {
		for _, s := range rs {
			lat = append(lat, s.d)
			if s.err != nil {
				errs = append(errs, s.err)
			}
		}
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d requests failed; first: %v", len(errs), len(lat), errs[0])
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	t.Logf("load: %d clients × %d requests over %d users (30%% writes, 20%% queries): p50 %v, p99 %v, %.0f req/s, 0 errors",
		clients, requests, users, pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		float64(len(lat))/elapsed.Seconds())
	if err := Drain(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(t.Context()); err != nil {
		t.Fatalf("store check after load: %v", err)
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
