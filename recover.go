package memor

import (
	"fmt"
	"runtime/debug"
)

// recovered turns a panic of the call it is deferred in into an
// ErrInternal stored in *err, and logs it with its stack. An index, an
// extractor or an embedder that panics on input the engine accepted must
// not take the caller's process down, nor leave the user's store unusable
// (a durable episode that panics every time it is applied would panic
// every later Open). Writes that end this way do not commit, and a write
// that changed the cached indexes drops them (txn.close), so no partial
// state survives the panic.
func (e *Engine) recovered(err *error, what, user string) {
	r := recover()
	if r == nil {
		return
	}
	e.log.Error("memor: recovered from a panic", "in", what, "user", user, "panic", r, "stack", string(debug.Stack()))
	*err = fmt.Errorf("%w: %s panicked: %v", ErrInternal, what, r)
}
