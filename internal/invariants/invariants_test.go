package invariants

import "testing"

// TestEnabledInTests: the self-checks run in every test binary, with or
// without the invariants tag.
func TestEnabledInTests(t *testing.T) {
	t.Parallel()
	if !Enabled() {
		t.Fatal("invariants are off in a test binary")
	}
}
