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
//
// It must be the deferred function itself (recover works only there);
// a deferred closure that needs the error calls panicError with the value
// it recovered.
func (e *Engine) recovered(err *error, what, user string) {
	if r := recover(); r != nil {
		*err = e.panicError(r, what, user)
	}
}

// panicError logs panic value r, met in what, and returns it as an
// ErrInternal.
func (e *Engine) panicError(r any, what, user string) error {
	e.log.Error("memor: recovered from a panic", "in", what, "user", user, "panic", r, "stack", string(debug.Stack()))
	return fmt.Errorf("%w: %s panicked: %v", ErrInternal, what, r)
}
