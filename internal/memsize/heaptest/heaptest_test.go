package heaptest

import "testing"

// TestAdded: a build that keeps 4 MB is measured at 4 MB, within what the
// process allocates or frees meanwhile (the testing package's own, both
// ways: CI measured 16 bytes under), and one that keeps nothing at about
// nothing.
func TestAdded(t *testing.T) {
	const size, slack = 4 << 20, 64 << 10
	b, added := Added(3, func() []byte { return make([]byte, size) })
	if len(b) != size {
		t.Fatalf("Added returned %d bytes, not the build's result", len(b))
	}
	if added < size-slack || added > size+slack {
		t.Fatalf("a 4 MB build added %d bytes to the heap", added)
	}
	_, added = Added(3, func() int { _ = make([]byte, size); return 0 })
	if added < -slack || added > slack {
		t.Fatalf("a build that keeps nothing added %d bytes", added)
	}
}
