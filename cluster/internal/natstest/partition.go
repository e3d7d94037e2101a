package natstest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Partitionable is a JetStream cluster whose routes all go through
// proxies, one for each ordered pair of servers, so that a test can cut
// one server off from the others (a real partition of the routes: the
// servers see their route connections fail) and heal it.
type Partitionable struct {
	Servers []*server.Server
	proxies map[[2]int]*Proxy // [from, to]
}

// PartitionableCluster runs n JetStream servers routed through proxies.
// A server tells the servers it meets about the others (route gossip),
// by their advertised cluster address, and they connect there directly
// unless a configured route names that address: each server advertises
// a closed port (127.0.0.1:1), so that such a dial is refused at once
// and every route goes through a proxy. Advertising nothing would let
// them gossip the real route ports, and an isolated server would keep
// its gossiped routes (TestIsolateCutsEveryRoute).
func PartitionableCluster(t testing.TB, n int) *Partitionable {
	t.Helper()
	var rports []int
	for range n {
		rports = append(rports, freePort(t))
	}
	p := &Partitionable{proxies: map[[2]int]*Proxy{}}
	for i := range n {
		var routes []*url.URL
		for j := range n {
			if j == i {
				continue
			}
			px := NewProxy(t, fmt.Sprintf("127.0.0.1:%d", rports[j]))
			p.proxies[[2]int{i, j}] = px
			routes = append(routes, &url.URL{Scheme: "nats", Host: px.Addr()})
		}
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: quiet(),
			Cluster: server.ClusterOpts{Name: "memor", Host: "127.0.0.1", Port: rports[i], NoAdvertise: true, Advertise: gossipSink},
			Routes:  routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		p.Servers = append(p.Servers, s)
	}
	for _, s := range p.Servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("%s not ready", s.Name())
		}
	}
	return p
}

// gossipSink is the cluster address every server of a Partitionable
// advertises: a port nothing listens on.
const gossipSink = "127.0.0.1:1"

// Isolate cuts server k's routes to and from every other server.
func (p *Partitionable) Isolate(k int) {
	for pair, px := range p.proxies {
		if pair[0] == k || pair[1] == k {
			px.Sever()
		}
	}
}

// Heal restores every route.
func (p *Partitionable) Heal() {
	for _, px := range p.proxies {
		px.Heal()
	}
}
