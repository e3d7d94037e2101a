package graph

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestDroppedGraphCollected: a graph walked and then dropped (a user the
// cache evicts, an engine closed) is garbage at the next collection. With
// its walk-state pool inside it, the runtime's registry of used pools kept
// the whole graph alive through one more.
func TestDroppedGraphCollected(t *testing.T) {
	collected := make(chan struct{})
	func() {
		g := New([]byte("g"))
		w := kvtest.Map{}
		for doc, obj := range []string{"Alex", "Rex", "Oslo"} {
			if err := g.AddEdge(w, uint32(doc), "user", "knows", obj); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := g.BFS(context.Background(), []string{"user"}, 2, nil); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(g, func(ch chan struct{}) { close(ch) }, collected)
	}()
	runtime.GC()
	select {
	case <-collected:
	case <-time.After(time.Second):
		t.Fatal("a dropped graph outlived a collection")
	}
}
