// Package natstest runs NATS JetStream servers in-process for the cluster
// packages' tests: on loopback, random ports, stores under t.TempDir(),
// nothing to download. JSLOG_DEBUG=1 shows the servers' logs.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func quiet() bool { return os.Getenv("JSLOG_DEBUG") == "" }

// Server runs one JetStream server whose store is dir ("" for a new
// temporary one), with edit applied to its options; it is shut down at
// the end of the test.
func Server(t testing.TB, dir string, edit ...func(*server.Options)) *server.Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: quiet()}
	for _, f := range edit {
		f(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	return s
}

func start(t testing.TB, s *server.Server) {
	if !quiet() {
		s.ConfigureLogger()
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
}

// Cluster runs n JetStream servers routed to each other. A clustered
// JetStream server needs its routes configured, so the route ports are
// picked first (free loopback ports).
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	var ports []int
	var routes []*url.URL
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ports = append(ports, p)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var servers []*server.Server
	for i := range n {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: quiet(),
			Cluster: server.ClusterOpts{Name: "memor", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("%s not ready", s.Name())
		}
	}
	return servers
}

// Connect opens a JetStream client on urls (comma-separated for a
// cluster), reconnecting forever; it is closed at the end of the test.
func Connect(t testing.TB, urls string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Restartable is a JetStream cluster whose servers can be shut down and
// started again on the same ports and store directories, as a crashed
// server is restarted by its supervisor.
type Restartable struct {
	t       testing.TB
	Opts    []*server.Options
	Servers []*server.Server
}

// RestartableCluster runs n JetStream servers routed to each other, on
// fixed loopback ports (client and route) picked first.
func RestartableCluster(t testing.TB, n int) *Restartable {
	t.Helper()
	free := func() int { return freePort(t) }
	var routes []*url.URL
	var rports []int
	for range n {
		p := free()
		rports = append(rports, p)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	r := &Restartable{t: t}
	for i := range n {
		r.Opts = append(r.Opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: free(),
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: quiet(),
			Cluster: server.ClusterOpts{Name: "memor", Host: "127.0.0.1", Port: rports[i]},
			Routes:  routes,
		})
		r.Servers = append(r.Servers, nil)
		r.Start(i)
	}
	return r
}

// Start starts server i (again) from its options and store.
func (r *Restartable) Start(i int) {
	r.t.Helper()
	o := *r.Opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		r.t.Fatal(err)
	}
	start(r.t, s)
	if !s.ReadyForConnections(20 * time.Second) {
		r.t.Fatalf("%s not ready", s.Name())
	}
	r.Servers[i] = s
}

// Kill shuts server i down and waits until it is gone.
func (r *Restartable) Kill(i int) {
	r.Servers[i].Shutdown()
	r.Servers[i].WaitForShutdown()
}

// URLs is the comma-separated client URLs of every server.
func (r *Restartable) URLs() string {
	var us []string
	for _, o := range r.Opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
