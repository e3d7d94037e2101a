package memor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/memor-db/memor/kv"
)

// A user's projection as raw store records, for a memor cluster's
// snapshots (cluster/snapshot.go): a node that takes a shard over writes
// back the records another node dumped, instead of re-extracting every
// episode, and then copies only the log's tail (CatchUp).
//
// The records are every key of the user's keyspace (episodes, counters,
// claims, fact versions, resolution log, index entries, judge verdicts)
// but its index image, read under the user's write lock, so they are one committed state. They
// are the store's own bytes: a store of the same format reads them as the
// writer did, and the indexes, loaded lazily from them, are the writer's.

// ErrBadProjection: RestoreUser was handed a record outside the user's
// keyspace, or no counters record: nothing was written.
var ErrBadProjection = fmt.Errorf("%w: not a projection of the user", ErrCorrupt)

// DumpUser calls fn with every record of user's keyspace, in key order,
// as of one committed state, and returns the user's last episode
// sequence in it. fn must not keep k or v.
func (e *Engine) DumpUser(ctx context.Context, user string, fn func(k, v []byte) error) (uint64, error) {
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return 0, err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	var seq uint64
	err = e.db.View(func(s *kv.Snapshot) error {
		m, err := loadMeta(s, user)
		if err != nil {
			return err
		}
		seq = m.Seq
		// Without the index image ('p'): built from records the dump
		// holds anyway, which the restoring store builds anew.
		img := kv.UserKey(user, kv.SubImage)
		return s.Scan(ctx, kv.UserRoot(user), func(k, v []byte) error {
			if bytes.HasPrefix(k, img) {
				return nil
			}
			return fn(k, v)
		})
	})
	return seq, err
}

// RestoreUser replaces user's keyspace with records (what DumpUser gave
// another store of the same format) in one batch, and schedules the
// episodes they hold unapplied. A record outside the keyspace, or none
// holding the user's counters, is ErrBadProjection and writes nothing.
func (e *Engine) RestoreUser(ctx context.Context, user string, records iter.Seq2[[]byte, []byte]) error {
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	root := kv.UserRoot(user)
	metaKey := kv.UserKey(user, kv.SubMeta)
	b := e.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(root, kv.PrefixEnd(root)); err != nil {
		return err
	}
	var m userMeta
	found := false
	for k, v := range records {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !bytes.HasPrefix(k, root) {
			return fmt.Errorf("%w: key %x", ErrBadProjection, k)
		}
		if bytes.Equal(k, metaKey) {
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("%w: counters: %v", ErrBadProjection, err)
			}
			found = true
		}
		if err := b.Set(k, v); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("%w: no counters", ErrBadProjection)
	}
	e.commits[stripe(user)].Add(1)
	if err := b.Commit(); err != nil {
		return err
	}
	e.idx.dropUser(user)
	for {
		last := e.lastTick.Load()
		if last >= m.Txn || e.lastTick.CompareAndSwap(last, m.Txn) {
			break
		}
	}
	if m.Applied < m.Seq {
		e.ing.schedule(user)
	}
	return nil
}

// Evict deletes users' projections from this store, as Forget does (the
// bytes compacted and scrubbed out of the files, once for all of them),
// without touching Options.Log: a cluster node drops the users of a shard
// it no longer owns, or a user forgotten through another node, while the
// log stays the truth.
func (e *Engine) Evict(ctx context.Context, users ...string) error {
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	var ranges [][2][]byte
	var markers [][]byte
	for _, u := range users {
		unlock := e.lockUser(u)
		r, m, err := e.deleteStored(ctx, u)
		unlock()
		if err != nil {
			return err
		}
		ranges, markers = append(ranges, r...), append(markers, m...)
	}
	if markers == nil {
		return nil
	}
	return e.finishForget(ctx, ranges, markers)
}
