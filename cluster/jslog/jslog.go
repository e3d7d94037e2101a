// Package jslog keeps memor's episode log on NATS JetStream: each user's
// episodes are the messages of one subject of one stream, in order,
// replicated by JetStream's Raft (R1 or R3), and encrypted with a data key
// of that user's own, so that erasing a user is purging the subject and
// destroying the key.
//
// It is the log half of a memor cluster (issue 21): nodes append a user's
// episodes here and materialise the projection (facts, indexes) in their
// own Pebble store by replaying them. The package writes no consensus of
// its own; what it relies on, per JetStream's documentation:
//
//   - Per-subject order: messages of a subject are stored in publish order
//     and replayed in stream-sequence order.
//   - Optimistic appends: every Append carries the stream sequence of the
//     user's last entry as the writer knows it
//     (Nats-Expected-Last-Subject-Sequence), so two writers that both
//     believe they own a user cannot interleave: the second gets
//     ErrConflict.
//   - Idempotent appends: the message ID (Nats-Msg-Id) is the user's
//     subject token, the episode sequence and an HMAC of the record under
//     the user's data key, so a retry of the same append inside the
//     stream's duplicate window is acknowledged once; outside it, Append
//     recognises its own record as the user's last entry.
//
// # Subjects
//
// A user ID is arbitrary bytes; its subject is prefix + "." + the base32
// (RFC 4648 extended hex alphabet, lower case, no padding) of the ID. The
// token holds only [0-9a-v]: no '.', '*', '>' or space can reach the
// subject, and two IDs never share one (base32 is injective).
//
// # Encryption
//
// A user's first append creates a 32-byte random data key, stored in a
// JetStream KV bucket wrapped (AES-256-GCM) by the key-encryption key the
// operator supplies (Config.KEK), with the KEK's ID in front. Every record
// is sealed with AES-256-GCM under the data key, a random nonce, and the
// subject token and episode sequence as additional data, so a ciphertext
// moved to another user or position does not open. Forget purges the
// subject and the key. JetStream does not overwrite purged bytes in place,
// and replicas or backups may hold copies of both the ciphertexts and the
// wrapped key; RotateKEK re-wraps every remaining data key under a new KEK,
// after which destroying the old KEK leaves any copy of an erased user's
// wrapped key unreadable, and with it the user's ciphertexts.
package jslog

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults for zero Config fields.
const (
	DefaultStream        = "MEMOR_LOG"
	DefaultSubjectPrefix = "memor.log"
	DefaultKeyBucket     = "MEMOR_KEYS"
	DefaultDuplicates    = 2 * time.Minute
)

// Headers memor sets on each log message.
const (
	// SeqHeader is the episode's sequence within its user (1, 2, ...).
	SeqHeader = "Memor-Seq"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrConfig: the configuration is invalid (a KEK that is not 32 bytes).
	ErrConfig = errors.New("jslog: invalid configuration")
	// ErrConflict: the user's subject has moved past the sequence the
	// writer expected: another writer appended (or this one's view is
	// stale). Nothing was appended.
	ErrConflict = errors.New("jslog: another writer appended to this user's log")
	// ErrForgotten: the user's data key is gone (the user was forgotten)
	// while their messages were being read.
	ErrForgotten = errors.New("jslog: the user's data key does not exist")
	// ErrCorrupt: a message or wrapped key does not open: tampered with,
	// moved, or wrapped by another KEK.
	ErrCorrupt = errors.New("jslog: message does not authenticate")
	// ErrInvalidUser: an empty user ID.
	ErrInvalidUser = errors.New("jslog: invalid user ID")
)

// Config configures Open.
type Config struct {
	// Stream is the stream's name (default MEMOR_LOG).
	Stream string
	// SubjectPrefix is the subjects' prefix (default memor.log); the
	// stream holds SubjectPrefix + ".>".
	SubjectPrefix string
	// Replicas is the stream's and key bucket's replication factor
	// (default 1; 3 on a three-server cluster).
	Replicas int
	// KeyBucket names the KV bucket of wrapped data keys (default
	// MEMOR_KEYS).
	KeyBucket string
	// KEK is the 32-byte key-encryption key. Required. Kept by the
	// operator (a file, a secret store), never in JetStream.
	KEK []byte
	// Duplicates is the stream's duplicate window (default 2 min).
	Duplicates time.Duration
}

// Log is a JetStream episode log. It is safe for concurrent use.
type Log struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	keys   jetstream.KeyValue
	cfg    Config
	kek    cipher.AEAD
	kekID  [8]byte
}

// Entry is one episode as the log holds it.
type Entry struct {
	// Seq is the episode's sequence within its user.
	Seq uint64
	// StreamSeq is the message's stream sequence: what the next Append
	// for this user expects.
	StreamSeq uint64
	// Record is the episode record, decrypted.
	Record []byte
	// Time is when JetStream stored it.
	Time time.Time
}

// Open creates or updates the stream and key bucket and returns the log.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Log, error) {
	if len(cfg.KEK) != 32 {
		return nil, fmt.Errorf("%w: the KEK is %d bytes, want 32", ErrConfig, len(cfg.KEK))
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = DefaultSubjectPrefix
	}
	if cfg.KeyBucket == "" {
		cfg.KeyBucket = DefaultKeyBucket
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Duplicates <= 0 {
		cfg.Duplicates = DefaultDuplicates
	}
	kek, err := newAEAD(cfg.KEK)
	if err != nil {
		return nil, err
	}
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       cfg.Stream,
		Subjects:   []string{cfg.SubjectPrefix + ".>"},
		Storage:    jetstream.FileStorage,
		Replicas:   cfg.Replicas,
		Duplicates: cfg.Duplicates,
		// A user's log is never trimmed by age or size: it is the truth.
		Retention: jetstream.LimitsPolicy,
		Discard:   jetstream.DiscardNew,
	})
	if err != nil {
		return nil, fmt.Errorf("jslog: stream %s: %w", cfg.Stream, err)
	}
	keys, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   cfg.KeyBucket,
		History:  1,
		Replicas: cfg.Replicas,
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("jslog: key bucket %s: %w", cfg.KeyBucket, err)
	}
	l := &Log{js: js, stream: st, keys: keys, cfg: cfg, kek: kek}
	l.kekID = kekID(cfg.KEK)
	return l, nil
}

var tokenEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// Token is the subject token of user: base32 of its bytes, [0-9a-v] only.
func Token(user string) string { return strings.ToLower(tokenEncoding.EncodeToString([]byte(user))) }

// Subject is user's subject in l's stream.
func (l *Log) Subject(user string) string { return l.cfg.SubjectPrefix + "." + Token(user) }

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return cipher.NewGCM(b)
}

func kekID(kek []byte) (id [8]byte) {
	sum := sha256.Sum256(append([]byte("memor kek id\x00"), kek...))
	copy(id[:], sum[:8])
	return id
}

// dataKey returns user's data key, creating it when create is set and
// there is none. Without create, a missing key is ErrForgotten.
func (l *Log) dataKey(ctx context.Context, user string, create bool) ([]byte, error) {
	name := Token(user)
	for {
		e, err := l.keys.Get(ctx, name)
		if err == nil {
			return l.unwrap(name, e.Value())
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("jslog: data key: %w", err)
		}
		if !create {
			return nil, ErrForgotten
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if _, err := l.keys.Create(ctx, name, l.wrap(name, key)); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // another writer created it first: use theirs
			}
			return nil, fmt.Errorf("jslog: data key: %w", err)
		}
		return key, nil
	}
}

// wrap seals a data key under the KEK: kekID(8) nonce(12) sealed.
func (l *Log) wrap(name string, key []byte) []byte {
	out := append([]byte(nil), l.kekID[:]...)
	nonce := make([]byte, l.kek.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	out = append(out, nonce...)
	return l.kek.Seal(out, nonce, key, []byte(name))
}

func (l *Log) unwrap(name string, v []byte) ([]byte, error) {
	return unwrapWith(l.kek, l.kekID, name, v)
}

func unwrapWith(kek cipher.AEAD, id [8]byte, name string, v []byte) ([]byte, error) {
	n := kek.NonceSize()
	if len(v) < 8+n || !bytes.Equal(v[:8], id[:]) {
		return nil, fmt.Errorf("%w: data key of %s is not wrapped by this KEK", ErrCorrupt, name)
	}
	key, err := kek.Open(nil, v[8:8+n], v[8+n:], []byte(name))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%w: data key of %s", ErrCorrupt, name)
	}
	return key, nil
}

func aad(token string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(token+"\x00"), seq)
}

// msgID is the append's deduplication ID: equal for a retry of the same
// record at the same position, different for any other record, and
// meaningless without the data key.
func msgID(key []byte, token string, seq uint64, record []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(aad(token, seq))
	m.Write(record)
	return token + "." + strconv.FormatUint(seq, 10) + "." + hex.EncodeToString(m.Sum(nil)[:16])
}

// Append adds record as user's episode seq. expect is the stream sequence
// of the user's last entry as the writer knows it (0 when it knows of
// none). A retried Append of the same record and seq returns the entry
// already stored; another writer's append in between is ErrConflict.
func (l *Log) Append(ctx context.Context, user string, seq uint64, record []byte, expect uint64) (Entry, error) {
	if user == "" {
		return Entry{}, ErrInvalidUser
	}
	key, err := l.dataKey(ctx, user, true)
	if err != nil {
		return Entry{}, err
	}
	token := Token(user)
	aead, err := newAEAD(key)
	if err != nil {
		return Entry{}, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Entry{}, err
	}
	sealed := aead.Seal(append([]byte(nil), nonce...), nonce, record, aad(token, seq))
	id := msgID(key, token, seq, record)
	msg := &natsMsg{subject: l.cfg.SubjectPrefix + "." + token, data: sealed, seq: seq}
	ack, err := l.js.PublishMsg(ctx, msg.nats(), jetstream.WithMsgID(id), jetstream.WithExpectLastSequencePerSubject(expect), jetstream.WithExpectStream(l.cfg.Stream))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			// Outside the duplicate window a retry meets its own earlier
			// append as the user's last entry.
			last, ok, lerr := l.lastRaw(ctx, user)
			if lerr != nil {
				// Not known whose entry is last: maybe this append's, stored
				// by an attempt whose acknowledgement was lost. Not a
				// conflict (after which the caller would write the record
				// again, at the next sequence): the outcome is unknown.
				return Entry{}, fmt.Errorf("jslog: append: %w", lerr)
			}
			if ok && last.Header.Get(jetstream.MsgIDHeader) == id {
				return Entry{Seq: seq, StreamSeq: last.Sequence, Record: record, Time: last.Time}, nil
			}
			return Entry{}, fmt.Errorf("%w (expected last sequence %d)", ErrConflict, expect)
		}
		return Entry{}, fmt.Errorf("jslog: append: %w", err)
	}
	return Entry{Seq: seq, StreamSeq: ack.Sequence, Record: record}, nil
}

func (l *Log) lastRaw(ctx context.Context, user string) (*jetstream.RawStreamMsg, bool, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, l.Subject(user))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("jslog: last entry: %w", err)
	}
	return m, true, nil
}

// Last returns user's last entry, and false when the user has none.
func (l *Log) Last(ctx context.Context, user string) (Entry, bool, error) {
	m, ok, err := l.lastRaw(ctx, user)
	if err != nil || !ok {
		return Entry{}, false, err
	}
	key, err := l.dataKey(ctx, user, false)
	if err != nil {
		return Entry{}, false, err
	}
	e, err := open(key, Token(user), m.Sequence, m.Header.Get(SeqHeader), m.Data, m.Time)
	return e, err == nil, err
}

func open(key []byte, token string, streamSeq uint64, seqHeader string, data []byte, at time.Time) (Entry, error) {
	seq, err := strconv.ParseUint(seqHeader, 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: stream message %d has no episode sequence", ErrCorrupt, streamSeq)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return Entry{}, err
	}
	n := aead.NonceSize()
	if len(data) < n {
		return Entry{}, fmt.Errorf("%w: stream message %d is short", ErrCorrupt, streamSeq)
	}
	rec, err := aead.Open(nil, data[:n], data[n:], aad(token, seq))
	if err != nil {
		return Entry{}, fmt.Errorf("%w: stream message %d", ErrCorrupt, streamSeq)
	}
	return Entry{Seq: seq, StreamSeq: streamSeq, Record: rec, Time: at}, nil
}

// Read yields user's entries whose stream sequence is after after, in
// order, up to the last one stored when Read began. Breaking out of the
// loop releases the consumer.
func (l *Log) Read(ctx context.Context, user string, after uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		last, ok, err := l.lastRaw(ctx, user)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		if !ok || last.Sequence <= after {
			return
		}
		key, err := l.dataKey(ctx, user, false)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		token := Token(user)
		cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{l.cfg.SubjectPrefix + "." + token},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    after + 1,
			// Every Fetch of an ordered consumer recreates it, retrying
			// without end and without ctx by default: one attempt, so that
			// a read without a JetStream quorum fails and its caller (a
			// takeover, a catch-up round) retries under its own deadline.
			MaxResetAttempts: 1,
		})
		if err != nil {
			yield(Entry{}, fmt.Errorf("jslog: read: %w", err))
			return
		}
		for {
			batch, err := cons.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				yield(Entry{}, fmt.Errorf("jslog: read: %w", err))
				return
			}
			got := 0
			for m := range batch.Messages() {
				got++
				meta, err := m.Metadata()
				if err != nil {
					yield(Entry{}, fmt.Errorf("jslog: read: %w", err))
					return
				}
				e, err := open(key, token, meta.Sequence.Stream, m.Headers().Get(SeqHeader), m.Data(), meta.Timestamp)
				if !yield(e, err) || err != nil {
					return
				}
				if meta.Sequence.Stream >= last.Sequence {
					return
				}
			}
			if err := batch.Error(); err != nil {
				yield(Entry{}, fmt.Errorf("jslog: read: %w", err))
				return
			}
			if got == 0 {
				if err := ctx.Err(); err != nil {
					yield(Entry{}, err)
					return
				}
				// The user was purged under us, or the stream lost the
				// tail: stop at what is there.
				if _, ok, err := l.lastRaw(ctx, user); err != nil || !ok {
					if err == nil {
						err = ErrForgotten
					}
					yield(Entry{}, err)
					return
				}
			}
		}
	}
}

// Forget erases user from the log: it purges the user's subject on every
// replica and destroys the user's data key. Safe to repeat.
func (l *Log) Forget(ctx context.Context, user string) error {
	if user == "" {
		return ErrInvalidUser
	}
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(l.Subject(user))); err != nil {
		return fmt.Errorf("jslog: forget: purge: %w", err)
	}
	if err := l.keys.Purge(ctx, Token(user)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("jslog: forget: key: %w", err)
	}
	return nil
}

// RotateKEK re-wraps every data key under next and returns a Log that uses
// it; l's KEK then wraps nothing that is still needed, and the operator
// destroys it. Keys already wrapped by next are left as they are, so an
// interrupted rotation is finished by running it again.
func (l *Log) RotateKEK(ctx context.Context, next []byte) (*Log, error) {
	if len(next) != 32 {
		return nil, fmt.Errorf("%w: the KEK is %d bytes, want 32", ErrConfig, len(next))
	}
	kek, err := newAEAD(next)
	if err != nil {
		return nil, err
	}
	nl := *l
	nl.kek, nl.kekID = kek, kekID(next)
	nl.cfg.KEK = bytes.Clone(next)
	lister, err := l.keys.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("jslog: rotate: %w", err)
	}
	defer lister.Stop()
	for name := range lister.Keys() {
		e, err := l.keys.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("jslog: rotate %s: %w", name, err)
		}
		if _, err := unwrapWith(nl.kek, nl.kekID, name, e.Value()); err == nil {
			continue
		}
		key, err := l.unwrap(name, e.Value())
		if err != nil {
			return nil, err
		}
		if _, err := l.keys.Update(ctx, name, nl.wrap(name, key), e.Revision()); err != nil {
			return nil, fmt.Errorf("jslog: rotate %s: %w", name, err)
		}
	}
	return &nl, nil
}

// Users returns every user with entries in the log, decoded from the
// stream's subjects, with how many entries each has: one request for the
// whole stream, which is how a node finds the users it must catch up.
func (l *Log) Users(ctx context.Context) (map[string]uint64, error) {
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(l.cfg.SubjectPrefix+".>"))
	if err != nil {
		return nil, fmt.Errorf("jslog: users: %w", err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for s, n := range info.State.Subjects {
		tok, ok := strings.CutPrefix(s, l.cfg.SubjectPrefix+".")
		if !ok {
			continue
		}
		u, err := tokenEncoding.DecodeString(strings.ToUpper(tok))
		if err != nil {
			continue // not a subject this package wrote
		}
		out[string(u)] = n
	}
	return out, nil
}

// Size is the stream's size: messages, bytes, and its last sequence.
type Size struct {
	Msgs, Bytes, LastSeq uint64
}

// Size reports the stream's size.
func (l *Log) Size(ctx context.Context) (Size, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return Size{}, fmt.Errorf("jslog: size: %w", err)
	}
	return Size{Msgs: info.State.Msgs, Bytes: info.State.Bytes, LastSeq: info.State.LastSeq}, nil
}

// sealedDomain prefixes the additional data of SealFor, so that nothing
// it seals opens as a log message or the other way round.
const sealedDomain = "memor jslog sealed\x00"

// SealFor seals plain with user's data key (AES-256-GCM, a random nonce,
// ad as additional data): for what is kept outside the log but must
// become unreadable when the user is forgotten (a cluster's snapshots).
// A user without a data key (never written, or forgotten) is
// ErrForgotten.
func (l *Log) SealFor(ctx context.Context, user string, plain, ad []byte) ([]byte, error) {
	key, err := l.dataKey(ctx, user, false)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, append([]byte(sealedDomain+Token(user)+"\x00"), ad...)), nil
}

// OpenFor opens what SealFor sealed for user with ad: ErrForgotten when
// the user's data key is gone, ErrCorrupt when sealed does not
// authenticate (damaged, another user's, or sealed under a data key the
// user had before being forgotten and written again).
func (l *Log) OpenFor(ctx context.Context, user string, sealed, ad []byte) ([]byte, error) {
	key, err := l.dataKey(ctx, user, false)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("%w: sealed data is short", ErrCorrupt)
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], append([]byte(sealedDomain+Token(user)+"\x00"), ad...))
	if err != nil {
		return nil, fmt.Errorf("%w: sealed data of %s", ErrCorrupt, Token(user))
	}
	return plain, nil
}

// UserOf is the user whose subject token is token (Token's inverse).
func UserOf(token string) (string, error) {
	u, err := tokenEncoding.DecodeString(strings.ToUpper(token))
	if err != nil || len(u) == 0 {
		return "", fmt.Errorf("%w: subject token %q", ErrInvalidUser, token)
	}
	return string(u), nil
}
