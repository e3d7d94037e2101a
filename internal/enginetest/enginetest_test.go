package enginetest

import (
	"context"
	"testing"

	"github.com/memor-db/memor"
)

// TestOpenChecksAtCleanup: the engine Open returns works, and its cleanup
// runs Check and Close on it (a second Close is ErrClosed).
func TestOpenChecksAtCleanup(t *testing.T) {
	t.Parallel()
	var e *memor.Engine
	t.Run("test", func(t *testing.T) {
		e, _ = Open(t, memor.Options{})
		if _, err := e.Assert(context.Background(), "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo"}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := e.State(context.Background(), "u"); err == nil {
		t.Fatal("the engine is still open after the subtest's cleanup")
	}
}
