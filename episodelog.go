package memor

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/memor-db/memor/kv"
)

// EpisodeLog is where a user's episodes are durable when the store is one
// projection among several (a memor cluster, issue 21): every episode a
// write adds is appended to it, in sequence order and before the write
// commits to the store, and a node that takes a user over copies the
// episodes the log holds past its own last one (CatchUp). Without one
// (Options.Log nil, the default) the store's own 'e' keys are the log, as
// they always were.
//
// Records are the episode records of layout.go, byte for byte: a node
// that copies them applies them through the same path as the node that
// wrote them, so resolution is the same.
type EpisodeLog interface {
	// Append makes episode seq of user durable as record. seq is one past
	// the last episode of user the engine knows of; a log that already
	// holds another episode at seq (another node wrote it) fails with an
	// error, and the write fails with it, storing nothing.
	Append(ctx context.Context, user string, seq uint64, record []byte) error
	// Episodes yields user's episodes with sequence numbers ≥ from, in
	// order, as far as the log holds them when called.
	Episodes(ctx context.Context, user string, from uint64) iter.Seq2[LoggedEpisode, error]
	// Forget erases user from the log. Repeating it is harmless.
	Forget(ctx context.Context, user string) error
}

// LoggedEpisode is one episode as an EpisodeLog holds it.
type LoggedEpisode struct {
	Seq    uint64
	Record []byte
}

// ErrLogGap: the log yielded an episode out of sequence (a log that lost
// or reordered entries): CatchUp copies nothing past the gap.
var ErrLogGap = errors.New("memor: episode log is not contiguous")

// pendingEpisode is an episode record a txn wrote to its batch, to append
// to the log when the txn commits.
type pendingEpisode struct {
	seq    uint64
	record []byte
}

// putEpisode writes ep's record into the batch and, with an EpisodeLog,
// remembers it for commit to append.
func (t *txn) putEpisode(ep *Episode) error {
	rec := episodeBytes(*ep)
	if t.e.opts.Log != nil {
		t.logged = append(t.logged, pendingEpisode{seq: ep.Seq, record: rec})
	}
	if err := putIdem(t.b, t.user, ep.Key, ep.Seq); err != nil {
		return err
	}
	return t.b.Set(seqKey(t.user, kv.SubEpisode, ep.Seq), rec)
}

// appendLogged appends the txn's new episodes to the log, before the
// batch commits: an episode is in a store only once the log has it.
func (t *txn) appendLogged() error {
	for _, p := range t.logged {
		if err := t.e.opts.Log.Append(t.ctx, t.user, p.seq, p.record); err != nil {
			return fmt.Errorf("memor: episode log: %w", err)
		}
	}
	t.logged = nil
	return nil
}

// catchUpBatch bounds the episodes CatchUp commits in one batch.
const catchUpBatch = 256

// CatchUp copies into the store the episodes of user that Options.Log
// holds past the store's last one (written by another node, or by this
// one before a crash between the log and the store) and queues them to be
// applied, in order, by the same path as Add's. It returns how many it
// copied. Without a log it copies nothing.
func (e *Engine) CatchUp(ctx context.Context, user string) (int, error) {
	if e.opts.Log == nil {
		return 0, nil
	}
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return 0, err
	}
	defer release()
	total := 0
	for {
		n, more, err := e.catchUpOnce(ctx, user)
		total += n
		if n > 0 {
			e.ing.schedule(user)
		}
		if err != nil || !more {
			return total, err
		}
	}
}

// catchUpOnce copies up to catchUpBatch episodes in one batch; more says
// the log may hold further ones.
func (e *Engine) catchUpOnce(ctx context.Context, user string) (n int, more bool, err error) {
	unlock := e.lockUser(user)
	defer unlock()
	m, err := loadMeta(e.db, user)
	if err != nil {
		return 0, false, err
	}
	b := e.db.NewBatch()
	defer b.Close()
	for le, err := range e.opts.Log.Episodes(ctx, user, m.Seq+1) {
		if err != nil {
			return 0, false, err
		}
		if le.Seq <= m.Seq {
			continue
		}
		if le.Seq != m.Seq+1 {
			return 0, false, fmt.Errorf("%w: user's episode %d follows %d", ErrLogGap, le.Seq, m.Seq)
		}
		ep, err := decodeEpisode(user, le.Record)
		if err != nil {
			return 0, false, err
		}
		if ep.Seq != le.Seq {
			return 0, false, fmt.Errorf("%w: log entry %d holds episode %d", ErrCorrupt, le.Seq, ep.Seq)
		}
		if err := b.Set(seqKey(user, kv.SubEpisode, le.Seq), le.Record); err != nil {
			return 0, false, err
		}
		if err := putIdem(b, user, ep.Key, ep.Seq); err != nil {
			return 0, false, err
		}
		m.Seq = le.Seq
		m.Txn = max(m.Txn, nanos(ep.RecordedAt))
		if n++; n == catchUpBatch {
			more = true
			break
		}
	}
	if n == 0 {
		return 0, false, nil
	}
	// Transaction time never goes back: later writes here are recorded
	// after what the other node recorded.
	for {
		last := e.lastTick.Load()
		if last >= m.Txn || e.lastTick.CompareAndSwap(last, m.Txn) {
			break
		}
	}
	if err := b.Set(kv.UserKey(user, kv.SubMeta), mustJSON(m)); err != nil {
		return 0, false, err
	}
	e.commits[stripe(user)].Add(1)
	if err := b.Commit(); err != nil {
		return 0, false, err
	}
	return n, more, nil
}
