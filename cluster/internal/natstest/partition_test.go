package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestIsolateCutsEveryRoute: once Isolate returns and the servers notice,
// the isolated server has no route left (none learned by gossip that
// bypasses the proxies), and Heal restores them.
func TestIsolateCutsEveryRoute(t *testing.T) {
	pc := PartitionableCluster(t, 3)
	routes := func(k int) int {
		rz, err := pc.Servers[k].Routez(&server.RoutezOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rz.NumRoutes
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("the mesh", func() bool { return routes(0) > 0 && routes(1) > 0 && routes(2) > 0 })
	// Gossip comes after the first routes: give it time to leak one.
	time.Sleep(time.Second)
	pc.Isolate(2)
	wait("server 3 cut off", func() bool { return routes(2) == 0 })
	// Routes that reconnect (gossiped ones would) must stay cut.
	time.Sleep(1500 * time.Millisecond)
	if n := routes(2); n != 0 {
		t.Fatalf("the isolated server has %d routes", n)
	}
	pc.Heal()
	wait("server 3 routed again", func() bool { return routes(2) > 0 })
}
