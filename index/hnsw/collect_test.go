package hnsw

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestDroppedIndexCollected: an index searched and then dropped (a user
// the cache evicts, an engine closed) is garbage at the next collection.
// With its searcher pool inside it, the runtime's registry of used pools
// kept the whole index (its vectors) alive through one more.
func TestDroppedIndexCollected(t *testing.T) {
	collected := make(chan struct{})
	func() {
		ix := New(8, []byte("n"), Options{})
		w := kvtest.Map{}
		for id := range uint32(50) {
			v := make([]float32, 8)
			v[id%8], v[(id+3)%8] = 1, 0.5
			if err := ix.Add(w, id, v); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ix.Search(context.Background(), []float32{1, 0, 0, 0, 0, 0, 0, 0}, 5, nil); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(ix, func(ch chan struct{}) { close(ch) }, collected)
	}()
	runtime.GC()
	select {
	case <-collected:
	case <-time.After(time.Second):
		t.Fatal("a dropped index outlived a collection")
	}
}
