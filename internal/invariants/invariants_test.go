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

// A benchmark measures what users run: the self-checks are off in a test
// binary running benchmarks, unless it is built with the tag.
func BenchmarkEnabledOnlyWithTheTag(b *testing.B) {
	if Enabled() != tagged {
		b.Fatalf("Enabled() = %v in a benchmark run, built with the tag: %v", Enabled(), tagged)
	}
	for b.Loop() {
		_ = Enabled()
	}
}
