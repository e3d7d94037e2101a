package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memor-db/memor"
)

// fakeRouter routes users by a table: owners[user] is the node's ID,
// addrs[node] its advertised address; a user missing from owners has no
// owner. log, shared by the nodes of a pair, stands for the cluster's
// episode log: the users written through any node. behind makes that
// many writes fail with ErrBehind, as a node whose user another node
// appended to answers.
type fakeRouter struct {
	id     string
	mu     sync.Mutex
	owners map[string]string
	addrs  map[string]string
	log    *fakeLog
	writes atomic.Int64
	behind atomic.Int64
	reads  atomic.Int64 // reads run through Read (the shard held)
}

// fakeLog is the users written through a pair's routers.
type fakeLog struct {
	mu    sync.Mutex
	users map[string]bool
}

func (f *fakeRouter) Users(context.Context) ([]string, error) {
	if f.log == nil {
		return nil, nil
	}
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	var out []string
	for u := range f.log.users {
		out = append(out, u)
	}
	return out, nil
}

func (f *fakeRouter) Node() string { return f.id }

func (f *fakeRouter) Owner(_ context.Context, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.owners[user]
	if !ok {
		return "", ErrNoOwner
	}
	if o == f.id {
		return "", nil
	}
	return f.addrs[o], nil
}

func (f *fakeRouter) Read(ctx context.Context, user string, fn func() error) (string, error) {
	addr, err := f.Owner(ctx, user)
	if err != nil || addr != "" {
		return addr, err
	}
	f.reads.Add(1)
	return "", fn()
}

func (f *fakeRouter) Write(_ context.Context, user string, fn func() error) error {
	f.writes.Add(1)
	if f.behind.Add(-1) >= 0 {
		return ErrBehind
	}
	if err := fn(); err != nil {
		return err
	}
	if f.log != nil {
		f.log.mu.Lock()
		f.log.users[user] = true
		f.log.mu.Unlock()
	}
	return nil
}

func (f *fakeRouter) Stats(context.Context) (ClusterStats, error) {
	return ClusterStats{Shards: []int{3}, Lag: []uint64{7}, Renewals: 5}, nil
}

// pair is two nodes, a and b, of a cluster where b owns "bob", a owns
// "alice", and "nobody" has no owner. Each node counts the requests that
// reach it.
type pair struct {
	a, b       *api
	ra, rb     *fakeRouter
	hitA, hitB atomic.Int64
}

// Each of mods, if any, adjusts a node's Options given its engine and
// router (to mount the MCP tools over them, for instance).
func newPair(t *testing.T, o Options, mods ...func(*Options, *memor.Engine, Router)) *pair {
	p := &pair{}
	owners := map[string]string{"alice": "a", "bob": "b"}
	addrs := map[string]string{}
	log := &fakeLog{users: map[string]bool{}}
	mk := func(id string, hits *atomic.Int64) (*api, *fakeRouter) {
		r := &fakeRouter{id: id, owners: owners, addrs: addrs, log: log}
		oo := o
		oo.Router = r
		oo.Metrics = NewMetrics()
		e := openEngine(t, memor.Options{})
		for _, m := range mods {
			m(&oo, e, r)
		}
		h := New(e, oo)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return &api{t: t, srv: srv, e: e, token: o.Token}, r
	}
	p.a, p.ra = mk("a", &p.hitA)
	p.b, p.rb = mk("b", &p.hitB)
	addrs["a"], addrs["b"] = p.a.srv.URL, p.b.srv.URL
	return p
}

// TestForwardToOwner: a write and a read of bob sent to a are served by
// b's engine (through its Router.Write), answered with b's freshness
// headers and Memor-Node: b, and a's store holds nothing of bob.
func TestForwardToOwner(t *testing.T) {
	p := newPair(t, Options{})
	st, _, hd := p.a.raw("POST", "/v1/users/bob/episodes?wait=true", `{"text":"I live in Oslo."}`, map[string]string{"Content-Type": "application/json"})
	if st != http.StatusCreated || hd.Get(NodeHeader) != "b" || hd.Get(ForwardedHeader) != "a" {
		t.Fatalf("write of bob through a: %d, %s=%q %s=%q", st, NodeHeader, hd.Get(NodeHeader), ForwardedHeader, hd.Get(ForwardedHeader))
	}
	if p.rb.writes.Load() != 1 || p.ra.writes.Load() != 0 {
		t.Fatalf("writes through b's router %d, a's %d; want 1, 0", p.rb.writes.Load(), p.ra.writes.Load())
	}
	if us := p.a.users(); len(us) != 0 {
		t.Fatalf("a's store holds %v", us)
	}
	st, _, hd = p.a.raw("GET", "/v1/users/bob/state", "", nil)
	if st != http.StatusOK || hd.Get(NodeHeader) != "b" || hd.Get("Memor-Applied") != "1" || hd.Get("Memor-Latest") != "1" {
		t.Fatalf("read of bob through a: %d %v", st, hd)
	}
	// alice is a's: served locally.
	st, _, hd = p.a.raw("GET", "/v1/users/alice/state", "", nil)
	if st != http.StatusOK || hd.Get(NodeHeader) != "a" || hd.Get(ForwardedHeader) != "" {
		t.Fatalf("read of alice on a: %d %v", st, hd)
	}
	body := scrapeText(t, p.a)
	for _, want := range []string{`memor_cluster_forwards_total{outcome="ok"} 2`, "memor_cluster_shards_owned 1", `memor_cluster_shard_lag{shard="3"} 7`, "memor_cluster_lease_renewals_total 5"} {
		if !strings.Contains(body, want) {
			t.Errorf("a's /metrics lacks %q", want)
		}
	}
}

// TestReadsHoldTheShard: a read of a user this node serves runs through
// Router.Read (which holds the user's shard against a hand-over or an
// eviction for as long as it runs), whether it reached the owner first or
// was forwarded there; a write runs through Router.Write instead, and an
// export, which streams for as long as its client reads, through neither.
func TestReadsHoldTheShard(t *testing.T) {
	p := newPair(t, Options{})
	if st, _, _ := p.b.raw("POST", "/v1/users/bob/episodes?wait=true", `{"text":"I live in Oslo."}`, map[string]string{"Content-Type": "application/json"}); st != http.StatusCreated {
		t.Fatalf("write of bob: %d", st)
	}
	if r, w := p.rb.reads.Load(), p.rb.writes.Load(); r != 0 || w != 1 {
		t.Fatalf("after a write: %d reads, %d writes through b's router; want 0, 1", r, w)
	}
	for i, via := range []*api{p.b, p.a} {
		if st, _, hd := via.raw("GET", "/v1/users/bob/state", "", nil); st != http.StatusOK || hd.Get(NodeHeader) != "b" {
			t.Fatalf("read of bob: %d %v", st, hd)
		}
		if got := p.rb.reads.Load(); got != int64(i+1) {
			t.Fatalf("reads through b's router: %d, want %d", got, i+1)
		}
	}
	if got := p.ra.reads.Load(); got != 0 {
		t.Fatalf("a ran %d reads of bob, b's user", got)
	}
	if st, _, _ := p.b.raw("GET", "/v1/users/bob/export", "", nil); st != http.StatusOK {
		t.Fatalf("export of bob: %d", st)
	}
	if got := p.rb.reads.Load(); got != 2 {
		t.Fatalf("an export held the shard (reads %d, want 2)", got)
	}
}

func scrapeText(t *testing.T, a *api) string {
	t.Helper()
	resp, err := a.srv.Client().Get(a.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// TestForwardGuards: what a refuses for a local user it refuses for a
// forwarded one, before forwarding (b never sees it): a wrong token, a
// cross-site page, a rebound Host. A page a allows is forwarded, and its
// answer carries a's CORS headers.
func TestForwardGuards(t *testing.T) {
	const tok = "0123456789abcdef0123"
	p := newPair(t, Options{Token: tok, AllowOrigins: []string{"http://app.example"}})
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
		code    string
	}{
		{"no token", map[string]string{"Authorization": "Bearer wrong-token-0000000"}, http.StatusUnauthorized, "unauthorized"},
		{"cross-site page", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "forbidden_origin"},
		{"sec-fetch-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "forbidden_origin"},
		{"rebound host", map[string]string{"Host": "evil.example"}, http.StatusForbidden, "forbidden_host"},
	} {
		for _, user := range []string{"alice", "bob"} {
			before := p.hitB.Load()
			h := map[string]string{"Content-Type": "application/json"}
			for k, v := range c.headers {
				h[k] = v
			}
			st, code, _ := p.a.raw("POST", "/v1/users/"+user+"/episodes", `{"text":"I live in Mordor."}`, h)
			if st != c.status || code != c.code {
				t.Errorf("%s, user %s: %d %s; want %d %s", c.name, user, st, code, c.status, c.code)
			}
			if p.hitB.Load() != before {
				t.Errorf("%s, user %s: the refused request reached b", c.name, user)
			}
		}
	}
	if us := p.b.users(); len(us) != 0 {
		t.Fatalf("b's store holds %v after refused writes", us)
	}
	st, _, hd := p.a.raw("POST", "/v1/users/bob/episodes", `{"text":"I live in Oslo."}`, map[string]string{"Content-Type": "application/json", "Origin": "http://app.example"})
	if st != http.StatusAccepted || hd.Get("Access-Control-Allow-Origin") != "http://app.example" || hd.Get(NodeHeader) != "b" {
		t.Fatalf("allowed page's write of bob through a: %d %v", st, hd)
	}
	// b checks the token itself: a request sent straight to b as if
	// forwarded, without it, is refused there.
	st, code, _ := p.b.raw("GET", "/v1/users/bob/state", "", map[string]string{ForwardedHeader: "a", "Authorization": "Bearer nope-nope-nope-nope"})
	if st != http.StatusUnauthorized || code != "unauthorized" {
		t.Fatalf("forged forward without the token: %d %s", st, code)
	}
}

// TestForwardLoopRedirectNoOwner: a request already forwarded is not
// forwarded again (503 forward_loop, Retry-After); Memor-Redirect: true
// gets a 307 to the owner's registered address, which Go's client
// follows; a user without an owner is 503 no_owner; an owner that does
// not answer is 503 owner_unreachable.
func TestForwardLoopRedirectNoOwner(t *testing.T) {
	p := newPair(t, Options{})
	st, code, hd := p.a.raw("GET", "/v1/users/bob/state", "", map[string]string{ForwardedHeader: "c"})
	if st != http.StatusServiceUnavailable || code != "forward_loop" || hd.Get("Retry-After") == "" {
		t.Fatalf("a second forward: %d %s %v", st, code, hd)
	}
	req, _ := http.NewRequest("POST", p.a.srv.URL+"/v1/users/bob/episodes?wait=true", strings.NewReader(`{"text":"I live in Rome."}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(RedirectHeader, "true")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != p.b.srv.URL+"/v1/users/bob/episodes?wait=true" {
		t.Fatalf("redirect: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, _ = http.NewRequest("POST", p.a.srv.URL+"/v1/users/bob/episodes?wait=true", strings.NewReader(`{"text":"I live in Rome."}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(RedirectHeader, "true")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(NodeHeader) != "b" {
		t.Fatalf("redirect followed: %d %s=%q", resp.StatusCode, NodeHeader, resp.Header.Get(NodeHeader))
	}
	if !strings.Contains(scrapeText(t, p.a), "memor_cluster_redirects_total 2") {
		t.Error("a's /metrics does not count the two redirects")
	}
	st, code, hd = p.a.raw("GET", "/v1/users/nobody/state", "", nil)
	if st != http.StatusServiceUnavailable || code != "no_owner" || hd.Get("Retry-After") != "1" || hd.Get(NodeHeader) != "a" {
		t.Fatalf("no owner: %d %s %v", st, code, hd)
	}
	p.b.srv.Close()
	st, code, hd = p.a.raw("GET", "/v1/users/bob/state", "", nil)
	if st != http.StatusServiceUnavailable || code != "owner_unreachable" || hd.Get("Retry-After") == "" {
		t.Fatalf("owner down: %d %s %v", st, code, hd)
	}
}

// TestForwardTransportNoProxy: forwards go straight to the owner, never
// through the environment's HTTP proxy.
func TestForwardTransportNoProxy(t *testing.T) {
	h := New(openEngine(t, memor.Options{}), Options{Router: &fakeRouter{id: "a"}})
	tr, ok := h.fwd.(*http.Transport)
	if !ok || tr.Proxy != nil || tr.DialContext == nil {
		t.Fatalf("forward transport %T: a proxy or no bounded dial", h.fwd)
	}
}
