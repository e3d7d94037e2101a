package memor

import (
	"errors"

	"github.com/memor-db/memor/internal/instant"
	"github.com/memor-db/memor/kv"
)

// Errors returned by the engine. Match them with errors.Is; the returned
// error wraps one of these with the detail.
var (
	ErrClosed      = errors.New("memor: engine is closed")
	ErrInvalidUser = errors.New("memor: invalid user ID")
	ErrInvalidText = errors.New("memor: invalid text")
	ErrTooLarge    = errors.New("memor: input too large")
	// ErrInvalidTime: an instant outside [1678-01-01, 2262-01-01) UTC,
	// or a time that does not parse.
	ErrInvalidTime  = instant.ErrInvalid
	ErrInvalidFact  = errors.New("memor: invalid fact")
	ErrNotFound     = errors.New("memor: not found")
	ErrFormatTooNew = kv.ErrFormatTooNew
	ErrCorrupt      = kv.ErrCorrupt
	ErrReadOnly     = kv.ErrReadOnlyStore
	// ErrLocked: another process has the store open.
	ErrLocked = kv.ErrLocked
	// ErrCheck wraps every finding of Check.
	ErrCheck = errors.New("memor: check failed")
	// ErrExtractionFailed: Add with Sync stored the episode, but its
	// extraction (or the judge it needed) failed, so nothing was learned
	// from it. The failure is recorded on the episode (Failed, Freshness)
	// and Retry re-runs it.
	ErrExtractionFailed = errors.New("memor: extraction failed")
)
