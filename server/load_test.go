package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/cputime"
	"github.com/memor-db/memor/internal/syncbuf"
)

// TestLoad drives the API as `memor serve` runs it (Serve on a loopback
// listener, a durable store) with N concurrent clients × M requests each,
// mixed writes and reads over 100 users, and requires zero errors. Then it
// shuts the server down gracefully and checks that no write was lost, that
// no user has two current homes or employers, and that the store passes
// Check. It logs p50/p99 latency (overall, writes, reads), requests/s and
// CPU time per request.
//
// The default run is short; set MEMOR_LOAD_CLIENTS and MEMOR_LOAD_REQUESTS
// for a bigger one, e.g.
//
//	MEMOR_LOAD_CLIENTS=32 MEMOR_LOAD_REQUESTS=500 go test -run TestLoad -v ./server/
func TestLoad(t *testing.T) {
	clients, requests := envInt(t, "MEMOR_LOAD_CLIENTS", 8), envInt(t, "MEMOR_LOAD_REQUESTS", 50)
	const users = 100
	e, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	// A failed request's detail is in the server's log, shown on failure.
	var log syncbuf.Buffer
	go func() {
		served <- Serve(ctx, e, ln, ServeOptions{Options: Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))}})
	}()
	base := "http://" + ln.Addr().String()

	cities := []string{"Oslo", "Lima", "Quito", "Kyoto", "Cairo", "Perth", "Denver", "Austin"}
	jobs := []string{"Acme", "Globex", "Initech", "Umbrella"}
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type sample struct {
		d     time.Duration
		write bool
		err   error
	}
	results := make([][]sample, clients)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	cpu0 := cputime.Process()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			for i := range requests {
				user := "user-" + strconv.Itoa(rng.IntN(users))
				var req *http.Request
				want, write := http.StatusOK, false
				switch r := rng.IntN(10); {
				case r < 3: // writes: 30%, one in three waits until applied
					write = true
					body := fmt.Sprintf(`{"text":"I live in %s.","at":"%s"}`, cities[rng.IntN(len(cities))],
						day0.Add(time.Duration(c*requests+i)*time.Hour).Format(time.RFC3339))
					if r == 0 {
						body = fmt.Sprintf(`{"text":"I work at %s."}`, jobs[rng.IntN(len(jobs))])
					}
					path, status := "/episodes", http.StatusAccepted
					if r == 1 {
						path, status = "/episodes?wait=true", http.StatusCreated
					}
					req, _ = http.NewRequest("POST", base+"/v1/users/"+user+path, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					want = status
				case r < 6:
					req, _ = http.NewRequest("GET", base+"/v1/users/"+user+"/state", nil)
				case r < 7:
					req, _ = http.NewRequest("GET", base+"/v1/users/"+user+"/asof?valid=2026-02-01", nil)
				case r < 8:
					req, _ = http.NewRequest("GET", base+"/v1/users/"+user+"/history?predicate=lives_in", nil)
				default:
					req, _ = http.NewRequest("GET", base+"/v1/users/"+user+"/query?q="+url.QueryEscape("Where do I live?"), nil)
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
				results[c] = append(results[c], sample{time.Since(t0), write, err})
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cputime.Process() - cpu0
	var all, writes, reads []time.Duration
	var errs []error
	for _, rs := range results {
		for _, s := range rs {
			all = append(all, s.d)
			if s.write {
				writes = append(writes, s.d)
			} else {
				reads = append(reads, s.d)
			}
			if s.err != nil {
				errs = append(errs, s.err)
			}
		}
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d requests failed; first: %v\nserver log:\n%s", len(errs), len(all), errs[0], log.String())
	}
	t.Logf("load: %d clients × %d requests over %d users, %d writes (30%%) and %d reads, GOMAXPROCS %d: "+
		"p50 %v, p99 %v (writes p50 %v p99 %v; reads p50 %v p99 %v), %.0f req/s, %.0f µs CPU per request, 0 errors",
		clients, requests, users, len(writes), len(reads), runtime.GOMAXPROCS(0),
		pct(all, 0.50), pct(all, 0.99), pct(writes, 0.50), pct(writes, 0.99), pct(reads, 0.50), pct(reads, 0.99),
		float64(len(all))/elapsed.Seconds(), float64(cpu.Microseconds())/float64(len(all)))

	// Graceful shutdown applies every queued episode.
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	var episodes uint64
	for u := range users {
		user := "user-" + strconv.Itoa(u)
		f, err := e.Freshness(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		if f.Pending != 0 || f.Failed != 0 {
			t.Errorf("%s after shutdown: %+v, want every episode applied", user, f)
		}
		episodes += f.Latest
		st, err := e.State(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, f := range st {
			count[f.Predicate]++
		}
		if count["lives_in"] > 1 || count["works_at"] > 1 {
			t.Errorf("%s: %d current homes and %d employers, want at most one each", user, count["lives_in"], count["works_at"])
		}
	}
	if episodes != uint64(len(writes)) {
		t.Errorf("%d episodes stored, %d writes acknowledged", episodes, len(writes))
	}
	if err := e.Check(context.Background()); err != nil {
		t.Fatalf("store check after load: %v", err)
	}
}

// pct returns the p-quantile of ds (sorted in place), to the microsecond.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Microsecond)
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
