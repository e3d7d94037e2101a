package memor

import (
	"errors"

	"github.com/memor-db/memor/kv"
)

// Errors returned by the engine. Match them with errors.Is; the returned
// error wraps one of these with the detail.
var (
	ErrClosed       = errors.New("memor: engine is closed")
	ErrInvalidUser  = errors.New("memor: invalid user ID")
	ErrInvalidText  = errors.New("memor: invalid text")
	ErrTooLarge     = errors.New("memor: input too large")
	ErrInvalidTime  = errors.New("memor: invalid time")
	ErrInvalidFact  = errors.New("memor: invalid fact")
	ErrNotFound     = errors.New("memor: not found")
	ErrFormatTooNew = kv.ErrFormatTooNew
	ErrCorrupt      = kv.ErrCorrupt
	ErrReadOnly     = kv.ErrReadOnlyStore
	// ErrLocked: another process has the store open.
	ErrLocked = kv.ErrLocked
	// ErrStorage: the file system failed (a full disk, an I/O error), so a
	// write could not be made durable. The error wraps the cause. The
	// engine refuses every later write with it until it is reopened (see
	// the README, "A full disk").
	ErrStorage = kv.ErrStorage
	// ErrCheck wraps every finding of Check.
	ErrCheck = errors.New("memor: check failed")
	// ErrExtractionFailed: Add with Sync stored the episode, but its
	// extraction (or the judge it needed) failed, so nothing was learned
	// from it. The failure is recorded on the episode (Failed, Freshness)
	// and Retry re-runs it.
	ErrExtractionFailed = errors.New("memor: extraction failed")
)
