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
	ErrInvalidTime = instant.ErrInvalid
	ErrInvalidFact = errors.New("memor: invalid fact")
	ErrNotFound    = errors.New("memor: not found")
	// ErrNotContested: Accept of a fact that is not contested (in force,
	// folded into another, closed, or retracted): there is no conflict
	// to resolve.
	ErrNotContested = errors.New("memor: fact is not contested")
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
	// ErrEncrypted: the store is encrypted and Options.Encryption is nil.
	ErrEncrypted = kv.ErrEncrypted
	// ErrNotEncrypted: Options.Encryption is set and the store is plain
	// (a store is encrypted from its creation or never).
	ErrNotEncrypted = kv.ErrNotEncrypted
	// ErrWrongKEK: the store's files are sealed under another KEK than
	// Options.Encryption's (after a rotation: the old one), or the KEK is
	// not 32 bytes.
	ErrWrongKEK = kv.ErrWrongKEK
	// ErrCheck wraps every finding of Check.
	ErrCheck = errors.New("memor: check failed")
	// ErrExtractionFailed: Add with Sync stored the episode, but its
	// extraction, the judge it needed, or applying what was extracted
	// (an embedder or index error) failed, so nothing was learned from
	// it. The error wraps the cause. The failure is recorded on the
	// episode (Failed, Freshness) and Retry re-runs it.
	ErrExtractionFailed = errors.New("memor: extraction failed")

	// ErrInvalidPredicate: a predicate name or alias given to
	// RegisterPredicate or Options.Predicates is not valid UTF-8, too
	// long, or has no letter or digit; or its cardinality is neither One
	// nor Many.
	ErrInvalidPredicate = errors.New("memor: invalid predicate")

	// ErrInvalidSpeaker: the name given to Speaker (or an episode's
	// Speaker, to CheckEpisode) is not a valid speaker name (see
	// ValidSpeaker).
	ErrInvalidSpeaker = errors.New("memor: invalid speaker")

	// ErrInternal: a component panicked while serving the call (an index,
	// the extractor, the embedder, the judge: a bug, in memor or in a
	// component it was given). The process lives: the write was not
	// committed (an episode already in the log is recorded as failed, see
	// Failed), and the user's indexes reload from the store.
	ErrInternal = errors.New("memor: internal error")
)
