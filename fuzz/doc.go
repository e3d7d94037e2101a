// Package fuzz is memor's correctness harness: a reference model of the
// bitemporal semantics of DESIGN §2–§3 and the tests that hold the engine to
// it.
//
// # The model
//
// The model (internal/model) is a deliberately naive, in-memory implementation of the time
// model and the resolution rules. It shares no code with the engine's
// resolver: it keeps, for every slot, the set of claims (assertions and
// ends) after every transaction that changed it, folds a set with a
// straightforward loop over instants, derives fact versions by diffing
// consecutive folds, and answers AsOf by testing every version against the
// visibility formula of DESIGN §2. It is slow and obviously correct; it is
// meant to be read. It imports the standard library only, not even
// memor's types (TestModelIsIndependent).
//
// # The tests
//
//   - FuzzOps decodes bytes into a sequence of operations (assert, end,
//     correct, forget, prune, rebuild, close-and-reopen, add-episode, clock
//     steps) over a few users, subjects and predicates with colliding times,
//     applies them to an engine and to the model, and after every step
//     compares State, AsOf at instants chosen by the input and History, and
//     runs Check.
//   - FuzzPermutation imports the same claims in two orders and compares the
//     valid-time state.
//   - TestForgetCanary, TestOpenBadStorage and TestSoak cover GDPR erasure at
//     the byte level, damaged or foreign stores, and concurrency under -race.
//     TestCrashRecovery (in package memor: its test binary is the child it
//     kills) covers SIGKILL during writes; MEMOR_CRASH_TRIALS=200 for many.
//
// The seed corpus is in testdata/fuzz; a plain `go test ./fuzz/...` runs it
// plus short property runs. scripts/fuzz.sh runs every fuzz target of the
// module for a long time.
//
// Environment variables:
//
//	MEMOR_SOAK=2m        run TestSoak for that long instead of a few seconds
//	MEMOR_FUZZ_STEPS=n   number of random programs the property tests run
package fuzz
