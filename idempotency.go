package memor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/memor-db/memor/kv"
)

// MaxIdempotencyKeyBytes bounds an IdempotencyKey.
const MaxIdempotencyKeyBytes = 256

var (
	// ErrInvalidIdempotencyKey: the key given to IdempotencyKey is empty,
	// longer than MaxIdempotencyKeyBytes, not UTF-8, or holds a control
	// character.
	ErrInvalidIdempotencyKey = errors.New("memor: invalid idempotency key")
	// ErrIdempotencyConflict: an Add's IdempotencyKey names an episode of
	// the user with another text or speaker: the key was reused for
	// another request. Nothing is stored.
	ErrIdempotencyConflict = errors.New("memor: idempotency key already names another episode")
)

// IdempotencyKey makes Add idempotent under key, a name the caller gives
// this one request (a UUID, a message ID): when the user already has an
// episode added with key, Add stores nothing and returns that episode,
// as long as its text and speaker are the ones given (else it fails with
// ErrIdempotencyConflict). So a client that does not know whether an Add
// was stored (a timeout, a cut connection, a cluster's ErrLogUnavailable)
// repeats it with the same key and gets one episode whatever happened.
//
// The key is recorded with the episode (Episode.Key): it is in the log
// (a cluster's too, so a node that takes the user over knows it), in an
// export, restored by an import, kept by Rebuild, and erased by Forget.
// A key names one episode of one user for as long as the user exists;
// other users may use the same key. It must be non-empty UTF-8 of at
// most MaxIdempotencyKeyBytes without control characters
// (ErrInvalidIdempotencyKey).
func IdempotencyKey(key string) AddOption { return func(c *addConfig) { c.key = &key } }

// Repeated sets *p, when Add returns without error, to whether Add found
// the episode of its IdempotencyKey stored already and returned it,
// storing nothing.
func Repeated(p *bool) AddOption { return func(c *addConfig) { c.repeated = p } }

// validIdempotencyKey checks a key given to IdempotencyKey: the rule of
// user IDs and speakers' names (checkName), where every rune counts.
func validIdempotencyKey(k string) error {
	return checkName(k, MaxIdempotencyKeyBytes, ErrInvalidIdempotencyKey, "", func(rune) bool { return true })
}

// idemKey is where user's episode added under key is found (layout.go).
func idemKey(user, key string) []byte {
	return kv.AppendString(kv.UserKey(user, kv.SubIdempotency), key)
}

// putIdem records, in b, that user's episode seq was added under key.
func putIdem(b *kv.Batch, user, key string, seq uint64) error {
	if key == "" {
		return nil
	}
	return b.Set(idemKey(user, key), kv.AppendUint64(nil, seq))
}

// repeat looks up ep.Key among user's episodes in r. It returns false
// when no episode has the key; true with *ep set to the stored episode
// when one has it with ep's text and speaker; ErrIdempotencyConflict when
// one has it with others. The caller holds the user's lock for an answer
// that holds until it writes.
func repeat(r kv.Reader, user string, ep *Episode) (bool, error) {
	v, err := r.Get(idemKey(user, ep.Key))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(v) != 8 {
		return false, fmt.Errorf("%w: idempotency key entry of %d bytes", ErrCorrupt, len(v))
	}
	prev, err := getEpisode(r, user, binary.BigEndian.Uint64(v))
	if err != nil {
		return false, err
	}
	if prev.Kind != EpisodeText || prev.Text != ep.Text || prev.Speaker != ep.Speaker {
		return false, fmt.Errorf("%w: key %q names episode %d, said with another text or speaker", ErrIdempotencyConflict, ep.Key, prev.Seq)
	}
	*ep = prev
	return true, nil
}
