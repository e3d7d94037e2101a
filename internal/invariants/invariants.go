// Package invariants says whether memor's expensive self-checks run
// (Pebble's internal/invariants is the model): assertions too costly for
// production, such as decoding every episode record right after encoding
// it, are written
//
//	if invariants.Enabled() {
//		...check, and panic on a broken invariant...
//	}
//
// They run in every test binary and in any build with the invariants
// tag (go build -tags invariants), and cost one predictable branch
// elsewhere. A test binary running benchmarks (-test.bench set) leaves
// them off unless built with the tag, so that what a benchmark measures
// is what users run.
package invariants

import (
	"flag"
	"sync"
)

// Enabled reports whether expensive self-checks run: built with the
// invariants tag, or running in a test binary that runs no benchmark.
func Enabled() bool { return tagged || inTest() }

// inTest reports whether this is a test binary. testing.Testing would say
// so, but importing package testing links it (and its flags) into every
// production binary that imports this package; the test.v flag, which
// testing registers in every test binary before any test runs, says the
// same without it.
var inTest = sync.OnceValue(func() bool {
	if flag.Lookup("test.v") == nil {
		return false
	}
	bench := flag.Lookup("test.bench")
	return bench == nil || bench.Value.String() == ""
})
