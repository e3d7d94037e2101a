package cli_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

var clusterLong = flag.Bool("cli.cluster-long", false, "run the long version of TestClusterDeployment")

// freePorts returns n free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startDeployedNATS starts the three NATS servers of docs/deploy/cluster
// in this process, each from its sample config file as nats-server's own
// loader reads it, with only the ports and store folders moved to free
// ones. It returns their client URLs.
func startDeployedNATS(t *testing.T) ([]string, []*natsserver.Server) {
	t.Helper()
	ports := freePorts(t, 6) // three client, three route ports
	var routes []*url.URL
	for i := range 3 {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[3+i])})
	}
	var urls []string
	var servers []*natsserver.Server
	for i := range 3 {
		o, err := natsserver.ProcessConfigFile(filepath.Join("..", "docs", "deploy", "cluster", fmt.Sprintf("nats-%d.conf", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if !o.JetStream || o.Cluster.Name != "memor" || len(o.Routes) != 3 || o.ServerName != fmt.Sprintf("n%d", i+1) {
			t.Fatalf("nats-%d.conf: JetStream %v, cluster %q, %d routes, name %q; want JetStream in cluster memor with 3 routes", i+1, o.JetStream, o.Cluster.Name, len(o.Routes), o.ServerName)
		}
		o.Port, o.Cluster.Port, o.Routes = ports[i], ports[3+i], routes
		o.StoreDir = t.TempDir()
		o.HTTPPort = 0 // no monitoring port
		o.NoSigs, o.NoLog = true, true
		s, err := natsserver.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("%s not ready", s.Name())
		}
	}
	return urls, servers
}

// memorNode is one `memor serve --cluster` process.
type memorNode struct {
	id, base string
	stop     func(syscall.Signal) int
	dead     bool
}

type clusterStatus struct {
	Nodes []struct {
		Node   string   `json:"node"`
		Addr   string   `json:"addr"`
		Shards []int    `json:"shards"`
		Lag    []uint64 `json:"lag"`
	} `json:"nodes"`
	Shards []struct {
		Shard int    `json:"shard"`
		Owner string `json:"owner"`
		Users int    `json:"users"`
	} `json:"shards"`
	Log struct {
		Messages uint64 `json:"messages"`
	} `json:"log"`
}

// TestClusterDeployment runs the documented deployment
// (docs/deploy/cluster, README "Running a cluster") through the built
// binary: the three sample NATS configs, three `memor serve --cluster`
// nodes, writes to many users through any node, reads of every user from
// every node (forwarded to the owner), `memor cluster status`, then kill
// -9 of one node together with one of the three NATS servers (its shards
// move; every acknowledged write is served by the survivors) and SIGTERM of another (it drains: exit 0, its shards
// move at once, nothing acknowledged is lost), then a fourth node joining
// (it takes half the shards from the last one; every write still served).
func TestClusterDeployment(t *testing.T) {
	users, rounds := 24, 2
	if *clusterLong {
		users, rounds = 200, 6
	}
	const shards = 8
	natsURLs, natsServers := startDeployedNATS(t)
	urls := strings.Join(natsURLs, ",")
	e := newEnv(t)
	kek := filepath.Join(t.TempDir(), "log.kek")
	e.ok("kek", "new", kek)

	// The nodes are started as the README's "Running a cluster" starts
	// them, with free ports, temporary stores and the test's NATS URLs in
	// place of the README's, and a shorter lease and fewer shards.
	var serveLines [][]string
	sawNATS := 0
	for _, b := range codeBlocks(readmeSection(t, "Running a cluster")) {
		for _, c := range shellCommands(t, b.body) {
			switch {
			case len(c.args) >= 3 && c.args[0] == "nats-server" && c.args[1] == "-c":
				sawNATS++
			case len(c.args) > 2 && c.args[0] == "memor" && c.args[1] == "serve":
				serveLines = append(serveLines, c.args[2:])
			}
		}
	}
	if len(serveLines) != 3 {
		t.Fatalf("README Running a cluster starts %d memor nodes; this test runs three", len(serveLines))
	}
	nodes := map[string]*memorNode{}
	var order []*memorNode
	for _, argv := range serveLines {
		id, args := nodeArgs(t, argv, "", urls, kek, shards)
		base, stop := serve(t, e, args...)
		n := &memorNode{id: id, base: base, stop: stop}
		nodes[id] = n
		order = append(order, n)
	}
	// The README's loop below names the nodes m1, m2 and m3.
	for _, id := range []string{"m1", "m2", "m3"} {
		if nodes[id] == nil {
			t.Fatalf("README's nodes are not m1, m2, m3: %v", serveLines)
		}
	}
	if sawNATS != 3 {
		t.Fatalf("README Running a cluster starts %d nats-server; want the three sample configs", sawNATS)
	}
	status := func() clusterStatus {
		t.Helper()
		r := e.run("", "cluster", "status", "--cluster", urls, "--json")
		var st clusterStatus
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			t.Fatalf("memor cluster status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		return st
	}
	// ownedBy reports whether every shard is owned by one of ids.
	ownedBy := func(st clusterStatus, ids ...string) bool {
		if len(st.Shards) != shards {
			return false
		}
		for _, s := range st.Shards {
			if !contains(ids, s.Owner) {
				return false
			}
		}
		return true
	}
	waitUntil(t, "every shard owned, spread over the three nodes", 30*time.Second, func() bool {
		st := status()
		if !ownedBy(st, "m1", "m2", "m3") || len(st.Nodes) != 3 {
			return false
		}
		for _, n := range st.Nodes {
			if len(n.Shards) == 0 {
				return false
			}
		}
		return true
	})

	client := &http.Client{Timeout: 20 * time.Second}
	r := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	// retried: a write answered 503 log_unavailable was retried, and may
	// have been stored twice (at-least-once): a user may then hold more
	// episodes than were acknowledged, never fewer.
	retried := false
	live := func() []*memorNode {
		mu.Lock()
		defer mu.Unlock()
		var out []*memorNode
		for _, n := range order {
			if !n.dead {
				out = append(out, n)
			}
		}
		return out
	}
	pick := func() *memorNode {
		l := live()
		mu.Lock()
		defer mu.Unlock()
		return l[r.IntN(len(l))]
	}
	// do sends a request to a random live node, retrying a 503 (a shard
	// moving) and a refused connection (a node just killed).
	send := func(method, path, ct, body string) (int, http.Header, []byte) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			n := pick()
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req, _ := http.NewRequest(method, n.base+path, rd)
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := client.Do(req)
			if err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					return resp.StatusCode, resp.Header, data
				}
				if resp.Header.Get("Retry-After") == "" {
					t.Fatalf("%s %s on %s: 503 without Retry-After: %s", method, path, n.id, data)
				}
				if strings.Contains(string(data), "log_unavailable") {
					mu.Lock()
					retried = true
					mu.Unlock()
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s: no answer but 503 or a refused connection for 30 s (last %v)", method, path, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	do := func(method, path, body string) (int, http.Header, []byte) {
		t.Helper()
		ct := ""
		if body != "" {
			ct = "application/json"
		}
		return send(method, path, ct, body)
	}
	acked := map[string][]string{}
	userName := func(i int) string { return fmt.Sprintf("user-%03d", i) }
	writeRound := func(round int) {
		var wg sync.WaitGroup
		for i := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u := userName(i)
				city := cities[(i+round)%len(cities)]
				st, _, data := do("POST", "/v1/users/"+u+"/episodes?wait=true", fmt.Sprintf(`{"text":"I live in %s."}`, city))
				if st != http.StatusCreated {
					t.Errorf("write %s round %d: %d %s", u, round, st, data)
					return
				}
				mu.Lock()
				acked[u] = append(acked[u], city)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	// check reads every user from every live node: each answer names the
	// node that served it and holds every acknowledged write.
	check := func(what string) {
		t.Helper()
		for _, n := range live() {
			for i := range users {
				u := userName(i)
				var f struct{ Latest, Pending uint64 }
				var hd http.Header
				waitUntil(t, what+": "+u+" caught up on its owner", 20*time.Second, func() bool {
					resp, err := client.Get(n.base + "/v1/users/" + u + "/freshness")
					if err != nil {
						return false
					}
					defer resp.Body.Close()
					hd = resp.Header
					return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&f) == nil && f.Latest >= uint64(len(acked[u])) && f.Pending == 0 && (f.Latest == uint64(len(acked[u])) || retried)
				})
				if hd.Get("Memor-Node") == "" {
					t.Fatalf("%s: the answer for %s from %s names no node", what, u, n.id)
				}
				resp, err := client.Get(n.base + "/v1/users/" + u + "/state")
				if err != nil {
					t.Fatal(err)
				}
				var body struct{ Facts []fact }
				json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				want := acked[u][len(acked[u])-1]
				if len(body.Facts) != 1 || body.Facts[0].Object != want || resp.Header.Get("Memor-Latest") != fmt.Sprint(f.Latest) {
					t.Fatalf("%s: %s read from %s (served by %s): %+v, Memor-Latest %s; want lives in %s after %d episodes",
						what, u, n.id, resp.Header.Get("Memor-Node"), body.Facts, resp.Header.Get("Memor-Latest"), want, len(acked[u]))
				}
			}
		}
	}
	for round := range rounds {
		writeRound(round)
	}
	check("three nodes")

	// A single-node store's user moves into the cluster as the README
	// says: memor export, then an import through any node (forwarded to
	// the owner, whose import appends to the log like any write).
	single := *e
	single.vars = append(append([]string(nil), e.vars...), "MEMOR_DB="+filepath.Join(t.TempDir(), "single"))
	single.ok("--user", "moved", "add", "I live in Bern.", "--at", "2026-01-01")
	single.ok("--user", "moved", "add", "I moved to Rome.", "--at", "2026-03-01")
	backup := single.ok("--user", "moved", "export")
	if st, hd, data := send("POST", "/v1/users/moved/import", "application/x-ndjson", backup); st != http.StatusOK || hd.Get("Memor-Node") == "" {
		t.Fatalf("import of moved through the cluster: %d %s", st, data)
	}
	movedIn := func(what string) {
		t.Helper()
		for _, n := range live() {
			var body struct{ Facts []fact }
			waitUntil(t, what+": moved's import served by "+n.id, 20*time.Second, func() bool {
				resp, err := client.Get(n.base + "/v1/users/moved/state")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Facts) == 1 && body.Facts[0].Object == "Rome"
			})
		}
	}
	movedIn("three nodes")
	clusterRoutes(t, client, order, users+1, func(u, city string) {
		mu.Lock()
		acked[u] = append(acked[u], city)
		mu.Unlock()
	})
	check("after MCP writes")

	// Forwarding and redirects happened, and show in each node's metrics.
	forwarded := 0
	for _, n := range order {
		_, mb := get(t, n.base+"/metrics", "")
		m := string(mb)
		if !strings.Contains(m, "memor_cluster_shards_owned") || !strings.Contains(m, "memor_cluster_lease_renewals_total") {
			t.Fatalf("%s's /metrics lacks the cluster gauges", n.id)
		}
		if strings.Contains(m, `memor_cluster_forwards_total{outcome="ok"}`) {
			forwarded++
		}
	}
	if forwarded == 0 {
		t.Fatal("no node counts a forward")
	}
	// A user's request to a node that does not own it: Memor-Redirect
	// gets a 307 to the owner's advertised address; a cross-site page
	// and a rebound Host are refused there, before any forward.
	u0 := userName(0)
	var owner string
	for _, n := range order {
		resp, err := client.Get(n.base + "/v1/users/" + u0 + "/freshness")
		if err == nil {
			resp.Body.Close()
			owner = resp.Header.Get("Memor-Node")
		}
	}
	for _, n := range order {
		if n.id == owner {
			continue
		}
		req, _ := http.NewRequest("GET", n.base+"/v1/users/"+u0+"/state", nil)
		req.Header.Set("Memor-Redirect", "true")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != nodes[owner].base+"/v1/users/"+u0+"/state" {
			t.Fatalf("redirect from %s: %d to %q; want 307 to %s", n.id, resp.StatusCode, resp.Header.Get("Location"), nodes[owner].base)
		}
		for h, v := range map[string]string{"Origin": "http://evil.example", "Host": "evil.example"} {
			req, _ := http.NewRequest("POST", n.base+"/v1/users/"+u0+"/episodes", strings.NewReader(`{"text":"I live in Mordor."}`))
			req.Header.Set("Content-Type", "application/json")
			if h == "Host" {
				req.Host = v
			} else {
				req.Header.Set(h, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%s %s to %s for %s (owned by %s): %d; want 403", h, v, n.id, u0, owner, resp.StatusCode)
			}
		}
		break
	}

	// kill -9 one node: its leases expire, the others take its shards and
	// serve every acknowledged write.
	victim := order[0]
	start := time.Now()
	victim.stop(syscall.SIGKILL)
	mu.Lock()
	victim.dead = true
	mu.Unlock()
	// And one of the three NATS servers goes too: the R3 log and buckets
	// keep a quorum, and the memor nodes reconnect to the other two.
	natsServers[0].Shutdown()
	urls = strings.Join(natsURLs[1:], ",")
	writeRound(rounds)
	waitUntil(t, "m1's shards to move to m2 and m3", 30*time.Second, func() bool { return ownedBy(status(), "m2", "m3") })
	t.Logf("kill -9 %s (and NATS n1): all its leases held by the others %v after the kill", victim.id, time.Since(start).Round(time.Millisecond))
	check("after kill -9 of m1")

	// SIGTERM another: it drains (exit 0) and the last node owns every
	// shard within a bound, with every acknowledged write.
	leaver := order[1]
	start = time.Now()
	if code := leaver.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM; want 0", leaver.id, code)
	}
	mu.Lock()
	leaver.dead = true
	mu.Unlock()
	waitUntil(t, "m2's shards to move to m3", 10*time.Second, func() bool { return ownedBy(status(), "m3") })
	t.Logf("SIGTERM %s: drained, all its leases held by m3 %v after the signal", leaver.id, time.Since(start).Round(time.Millisecond))
	writeRound(rounds + 1)
	check("after SIGTERM of m2")
	movedIn("after SIGTERM of m2")
	if retried {
		t.Log("a write was answered 503 log_unavailable and retried while the NATS server was down")
	}
	st := status()
	total := uint64(2) // moved's two imported episodes
	for _, a := range acked {
		total += uint64(len(a))
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Node != "m3" || st.Log.Messages < total || (!retried && st.Log.Messages != total) {
		t.Fatalf("status at the end: %+v; want m3 alone and %d episodes in the log", st, total)
	}
	// Each node republishes its users per shard every lease round.
	waitUntil(t, "status to count every user in m3's shards", 5*time.Second, func() bool {
		inShards := 0
		for _, sh := range status().Shards {
			inShards += sh.Users
		}
		return inShards == users+1 // and moved
	})
	out := e.ok("cluster", "status", "--cluster", urls)
	for _, want := range []string{"NODE", "m3  ", nodes["m3"].base, "SHARD", fmt.Sprintf("log: %d episodes", st.Log.Messages)} {
		if !strings.Contains(out, want) {
			t.Errorf("memor cluster status lacks %q:\n%s", want, out)
		}
	}

	// A new node joins (as the deployment notes say: its own --db, --addr
	// and --node-id): it takes its share of the shards from m3, one a
	// lease round, and every user is still served with every write.
	_, args := nodeArgs(t, serveLines[0], "m4", urls, kek, shards)
	base, stop := serve(t, e, args...)
	joined := &memorNode{id: "m4", base: base, stop: stop}
	mu.Lock()
	order = append(order, joined)
	mu.Unlock()
	start = time.Now()
	waitUntil(t, "m4 to take half the shards from m3", 30*time.Second, func() bool {
		st := status()
		if !ownedBy(st, "m3", "m4") {
			return false
		}
		for _, n := range st.Nodes {
			if len(n.Shards) != shards/2 {
				return false
			}
		}
		return len(st.Nodes) == 2
	})
	t.Logf("m4 joined: shards split 4/4 with m3 %v after it announced it was serving", time.Since(start).Round(time.Millisecond))
	writeRound(rounds + 2)
	check("after m4 joined")
	if code := joined.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("m4 exited %d after SIGTERM", code)
	}
	mu.Lock()
	joined.dead = true
	mu.Unlock()

}

// nodeArgs turns the flags of one of the README's memor serve lines into
// a test node's: a free port, a temporary store, the test's NATS URLs
// for $NATS and its KEK file, a shorter lease and shards; id, if not
// empty, replaces the node's ID. It returns the node's ID and the flags.
func nodeArgs(t *testing.T, argv []string, id, urls, kek string, shards int) (string, []string) {
	t.Helper()
	args := append([]string(nil), argv...)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--db":
			args[i+1] = filepath.Join(t.TempDir(), args[i+1])
		case "--addr":
			args[i+1] = "127.0.0.1:0"
		case "--cluster":
			if args[i+1] != "$NATS" {
				t.Fatalf("README: memor serve --cluster %s; want $NATS", args[i+1])
			}
			args[i+1] = urls
		case "--log-kek-file":
			args[i+1] = kek
		case "--node-id":
			if id == "" {
				id = args[i+1]
			}
			args[i+1] = id
		}
	}
	return id, append(args, "--shards", fmt.Sprint(shards), "--lease-ttl", "1s")
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var cities = []string{"Paris", "Lyon", "Nice", "Oslo", "Rome", "Bern"}

// TestClusterUsage: serve --cluster without what it needs, and cluster
// status without --cluster, are usage errors (exit 2) that name the
// missing flag, before any store is created; status against a JetStream
// no node has joined says so (exit 1).
func TestClusterUsage(t *testing.T) {
	e := newEnv(t)
	kek := filepath.Join(t.TempDir(), "log.kek")
	e.ok("kek", "new", kek)
	e.vars = append(e.vars, "MEMOR_TOKEN=0123456789abcdef0123")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1"}, "--node-id"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "a.b"}, "--node-id"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1"}, "--log-kek-file"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "http://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek}, "nats://"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek, "--shards", "0"}, "--shards"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek, "--lease-ttl", "100ms"}, "--lease-ttl"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek}, "--advertise"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek, "--advertise", "http://h:1/path"}, "--advertise"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--cluster", "nats://127.0.0.1:1", "--node-id", "m1", "--log-kek-file", kek, "--conformance"}, "--conformance"},
		{[]string{"cluster", "status"}, "--cluster"},
	} {
		r := e.run("", c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("memor %s: exit %d, stderr %q; want 2 naming %s", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(e.db); !os.IsNotExist(err) {
		t.Errorf("a refused serve --cluster created the store: %v", err)
	}
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	r := e.run("", "cluster", "status", "--cluster", s.ClientURL())
	if r.code != 1 || !strings.Contains(r.stderr, "no memor cluster") {
		t.Errorf("cluster status on an empty JetStream: exit %d, %q", r.code, r.stderr)
	}
}

// clusterRoutes checks, on every node of a cluster holding nUsers users
// (user-000 …), the routes that serve more than one user's own: GET
// /v1/users lists the whole cluster's users; an MCP tools/call of a user
// sent to a node that does not own it is answered by the owner (its
// add_memory is acknowledged there, and added reports it); studio is
// refused with 501 not_in_cluster; an Add repeated under its
// Idempotency-Key through another node stores nothing.
func clusterRoutes(t *testing.T, client *http.Client, nodes []*memorNode, nUsers int, added func(user, city string)) {
	t.Helper()
	for i, n := range nodes {
		resp, err := client.Get(n.base + "/v1/users?limit=1000")
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Users []string }
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(page.Users) != nUsers {
			t.Fatalf("GET /v1/users on %s: %d, %d users; want the cluster's %d", n.id, resp.StatusCode, len(page.Users), nUsers)
		}
		resp, err = client.Get(n.base + "/studio/")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(data), "not_in_cluster") {
			t.Fatalf("GET /studio/ on %s: %d %s; want 501 not_in_cluster", n.id, resp.StatusCode, data)
		}
		// A user each node does not own, told and asked through MCP.
		for j := range nUsers - 1 {
			u := fmt.Sprintf("user-%03d", j)
			owner := ownerOf(t, client, n.base, u)
			if owner == n.id {
				continue
			}
			city := cities[(i+j)%len(cities)]
			st, hd, out := mcpCall(t, client, n.base, "add_memory", u, "I live in "+city+".")
			if st != http.StatusOK || hd.Get("Memor-Node") != owner || hd.Get("Memor-Forwarded-By") != n.id || !strings.Contains(out, "Remembered") {
				t.Fatalf("MCP add_memory of %s (owned by %s) sent to %s: %d, served by %q via %q: %s", u, owner, n.id, st, hd.Get("Memor-Node"), hd.Get("Memor-Forwarded-By"), out)
			}
			added(u, city)
			if st, _, out := mcpCall(t, client, n.base, "get_user_profile", u, ""); st != http.StatusOK || !strings.Contains(out, city) {
				t.Fatalf("MCP get_user_profile of %s sent to %s: %d %s; want lives in %s", u, n.id, st, out, city)
			}
			// An Add retried under its Idempotency-Key, through another
			// node, is answered with the first episode and stores nothing.
			key := fmt.Sprintf("retry-%s-%d", n.id, j)
			body := fmt.Sprintf(`{"text":"I live in %s."}`, city)
			var seqs []float64
			for try, via := range []*memorNode{n, nodes[(i+1)%len(nodes)]} {
				req, _ := http.NewRequest("POST", via.base+"/v1/users/"+u+"/episodes?wait=true", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Episode  struct{ Seq float64 }
					Repeated bool
				}
				json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				want := []int{http.StatusCreated, http.StatusOK}[try]
				if resp.StatusCode != want || got.Repeated != (try == 1) {
					t.Fatalf("Add of %s under Idempotency-Key through %s (try %d): %d, repeated %v; want %d", u, via.id, try, resp.StatusCode, got.Repeated, want)
				}
				seqs = append(seqs, got.Episode.Seq)
			}
			if seqs[0] != seqs[1] {
				t.Fatalf("the repeat of %s's Add answered episode %v, the first %v", u, seqs[1], seqs[0])
			}
			added(u, city)
			break
		}
	}
}

// ownerOf is the node that answers for user (Memor-Node), asked through
// base.
func ownerOf(t *testing.T, client *http.Client, base, user string) string {
	t.Helper()
	resp, err := client.Get(base + "/v1/users/" + user + "/freshness")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Memor-Node")
}

// mcpCall sends one MCP tools/call, as a raw JSON-RPC POST to base's /mcp
// (the transport is stateless: no session to initialize), and returns
// the status, the headers and the result's text.
func mcpCall(t *testing.T, client *http.Client, base, tool, user, text string) (int, http.Header, string) {
	t.Helper()
	args := map[string]any{"user_id": user}
	if text != "" {
		args["text"] = text
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rpc struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
		Error *struct{ Message string }
	}
	data, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(data, &rpc) != nil || rpc.Error != nil || rpc.Result.IsError {
		return resp.StatusCode, resp.Header, "not a tool result: " + string(data)
	}
	var out strings.Builder
	for _, c := range rpc.Result.Content {
		out.WriteString(c.Text)
	}
	return resp.StatusCode, resp.Header, out.String()
}
