// Package cluster runs a memor engine as one node of a cluster (issue
// 21): the episode log is a NATS JetStream stream (cluster/jslog), users
// hash to a fixed number of shards (cluster/shard), each shard has one
// owner at a time chosen by a lease, and the owner holds the projection
// (facts, indexes) of its shards' users in its own Pebble store, applied
// by the engine's ordinary path.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/jslog"
)

// ErrBehind: the log holds episodes of the user this node has not copied
// (another node wrote them): nothing was appended; CatchUp and write
// again. It wraps jslog.ErrConflict.
var ErrBehind = fmt.Errorf("cluster: node is behind the user's log: %w", jslog.ErrConflict)

// ErrLogUnavailable: the log did not acknowledge an append, repeated
// for a while (no JetStream quorum reachable): nothing was committed to
// the store, but the episode may be in the log, and the node's next
// catch-up copies it if so.
var ErrLogUnavailable = errors.New("cluster: the episode log did not acknowledge the append")

// Log is a memor.EpisodeLog on a jslog.Log. It remembers, per user, the
// stream sequence of the last entry it appended or read, which is what
// the next append expects (Nats-Expected-Last-Subject-Sequence): an
// append after another node's is refused, never interleaved.
type Log struct {
	jl     *jslog.Log
	mu     sync.Mutex
	last   map[string]position
	forgot func(user string) // the node's, once it joined (onForget)
}

// onForget sets the function Forget calls once the log has erased a
// user (nil: none).
func (l *Log) onForget(fn func(user string)) {
	l.mu.Lock()
	l.forgot = fn
	l.mu.Unlock()
}

type position struct{ seq, stream uint64 }

// NewLog returns the EpisodeLog over jl.
func NewLog(jl *jslog.Log) *Log { return &Log{jl: jl, last: map[string]position{}} }

// JS is the underlying log.
func (l *Log) JS() *jslog.Log { return l.jl }

func (l *Log) position(ctx context.Context, user string) (position, error) {
	l.mu.Lock()
	p, ok := l.last[user]
	l.mu.Unlock()
	if ok {
		return p, nil
	}
	e, found, err := l.jl.Last(ctx, user)
	if err != nil && !errors.Is(err, jslog.ErrForgotten) {
		return position{}, err
	}
	if found {
		p = position{seq: e.Seq, stream: e.StreamSeq}
	}
	return p, nil
}

func (l *Log) remember(user string, p position) {
	l.mu.Lock()
	l.last[user] = p
	l.mu.Unlock()
}

func (l *Log) drop(user string) {
	l.mu.Lock()
	delete(l.last, user)
	l.mu.Unlock()
}

// Append implements memor.EpisodeLog.
func (l *Log) Append(ctx context.Context, user string, seq uint64, record []byte) error {
	p, err := l.position(ctx, user)
	if err != nil {
		return err
	}
	if p.seq+1 != seq {
		l.drop(user)
		return fmt.Errorf("%w (log at episode %d, append of %d)", ErrBehind, p.seq, seq)
	}
	e, err := l.appendRetried(ctx, user, seq, record, p.stream)
	if err != nil {
		l.drop(user)
		return err
	}
	l.remember(user, position{seq: seq, stream: e.StreamSeq})
	return nil
}

// Retries of an append whose outcome is unknown.
const (
	appendAttempt = 2 * time.Second
	appendGiveUp  = 30 * time.Second
)

// appendRetried appends, and repeats the same append (same record, same
// Nats-Msg-Id, same expected sequence) while the outcome is unknown: a
// timeout, a cut connection, a stream without a leader during an
// election. The append may have been stored with its acknowledgement
// lost; JetStream's deduplication (or jslog's check of the user's last
// entry) makes the repeat return that entry, so one write is one episode.
// Without the repeat the engine would fail the write, the client would
// write it again at the next sequence, and the log would hold it twice.
func (l *Log) appendRetried(ctx context.Context, user string, seq uint64, record []byte, expect uint64) (jslog.Entry, error) {
	deadline := time.Now().Add(appendGiveUp)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		attempt, cancel := context.WithTimeout(ctx, appendAttempt)
		e, err := l.jl.Append(attempt, user, seq, record, expect)
		cancel()
		if err == nil || definite(err) {
			return e, err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return jslog.Entry{}, fmt.Errorf("%w: %w", ErrLogUnavailable, err)
		}
		select {
		case <-ctx.Done():
			return jslog.Entry{}, fmt.Errorf("%w: %w", ErrLogUnavailable, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// definite says whether an append error is an answer (nothing was
// appended, or never will be) rather than an unknown outcome.
func definite(err error) bool {
	for _, target := range []error{jslog.ErrConflict, jslog.ErrForgotten, jslog.ErrInvalidUser, jslog.ErrCorrupt, jslog.ErrConfig} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Episodes implements memor.EpisodeLog.
func (l *Log) Episodes(ctx context.Context, user string, from uint64) iter.Seq2[memor.LoggedEpisode, error] {
	return func(yield func(memor.LoggedEpisode, error) bool) {
		var after uint64
		l.mu.Lock()
		if p, ok := l.last[user]; ok && p.seq < from {
			after = p.stream // read on from where this node last was
		}
		l.mu.Unlock()
		for e, err := range l.jl.Read(ctx, user, after) {
			if errors.Is(err, jslog.ErrForgotten) {
				return // forgotten: nothing to copy
			}
			if err != nil {
				yield(memor.LoggedEpisode{}, err)
				return
			}
			l.remember(user, position{seq: e.Seq, stream: e.StreamSeq})
			if e.Seq < from {
				continue
			}
			if !yield(memor.LoggedEpisode{Seq: e.Seq, Record: e.Record}, nil) {
				return
			}
		}
	}
}

// Forget implements memor.EpisodeLog.
func (l *Log) Forget(ctx context.Context, user string) error {
	l.drop(user)
	if err := l.jl.Forget(ctx, user); err != nil {
		return err
	}
	l.mu.Lock()
	fn := l.forgot
	l.mu.Unlock()
	if fn != nil {
		fn(user)
	}
	return nil
}

var _ memor.EpisodeLog = (*Log)(nil)

// streamOf is the stream sequence of user's episode seq, if it is the
// last one this log appended or read for user (0 otherwise): what a
// snapshot records so that a restore reads the log on from there.
func (l *Log) streamOf(user string, seq uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.last[user]; ok && p.seq == seq {
		return p.stream
	}
	return 0
}

// resume makes the next read of user's episodes start after stream
// sequence stream, where episode seq is (a restored snapshot's position).
func (l *Log) resume(user string, seq, stream uint64) {
	if stream == 0 {
		l.drop(user)
		return
	}
	l.remember(user, position{seq: seq, stream: stream})
}
