package cli

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// stuckExtractor never returns, whatever its context says.
type stuckExtractor struct{ started chan struct{} }

func (s stuckExtractor) Extract(context.Context, string, time.Time) ([]extract.Op, error) {
	close(s.started)
	select {}
}

// TestCloseWithinStuckWrite: serve's close gives up after its bound when
// an operation never returns (here an extractor that ignores its
// context), so that SIGTERM ends the process; Engine.Close alone would
// wait for it forever.
func TestCloseWithinStuckWrite(t *testing.T) {
	ext := stuckExtractor{make(chan struct{})}
	e, err := memor.Open(t.TempDir(), memor.Options{Extractor: ext})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(context.Background(), "u", "I live in Paris."); err != nil {
		t.Fatal(err)
	}
	<-ext.started
	t0 := time.Now()
	if err := closeWithin(e, 500*time.Millisecond); err == nil {
		t.Error("closeWithin returned nil with an operation still running")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("closeWithin took %v", d)
	}
}
