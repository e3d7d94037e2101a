package cluster

// Snapshots of a shard's projection in a JetStream object store.
//
// # What a snapshot is
//
// One object per shard ("shard-<n>" in the bucket MEMOR_SNAPSHOTS), which
// the shard's owner replaces every Config.SnapshotEvery episodes or
// Config.SnapshotInterval, and when it hands the shard over. It holds,
// for each user of the shard in the owner's store, the user's raw store
// records (memor.Engine.DumpUser: episodes, counters, claims, fact
// versions, resolution log, index entries) and the user's log position
// (the last episode's sequence and stream sequence). A node that takes
// the shard writes the records back (RestoreUser) and copies only the
// episodes the log holds past that position.
//
// Raw records rather than an Export: an export is the episodes alone, and
// importing it re-extracts and re-resolves every one of them (the cost a
// snapshot exists to save), and Import appends to the episode log, which
// already holds them. The records are the projection itself, byte for
// byte, so the restored user equals the owner's (enginetest.SameMemory
// checks it against a single-node store fed the same episodes). The cost:
// a snapshot is read only by a store of the same format version.
//
// # Erasure
//
// Each user's part is sealed (AES-256-GCM) with that user's log data key
// (jslog.SealFor), bound to the shard and the log position; only the part's
// header names the user, by the log's subject token. Forget destroys the
// data key, so every snapshot part of the user — in this bucket, on every
// replica, in any backup of it — no longer opens; and the owner, which
// evicts the forgotten user, replaces the shard's object without it at
// once (the object store purges the old object's chunks). A part that
// does not open (forgotten, damaged, or sealed under a key the user had
// before a Forget and a new first write) is skipped: that user is
// replayed from the log, never restored wrong.
//
// # Format
//
// "memor-snapshot 1\n", then uvarints: the writer's store format
// (kv.FormatVersion: another is refused, so the log is replayed), shard,
// shard count, part count;
// each part: token length, token, episode sequence, stream sequence,
// sealed length, sealed. The plaintext of a part is records, each a
// uvarint key length, key, uvarint value length, value. JetStream's
// object digest (SHA-256) covers the whole object.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"time"

	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/kv"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSnapshotBucket is the snapshots' object store bucket.
const DefaultSnapshotBucket = "MEMOR_SNAPSHOTS"

const snapshotMagic = "memor-snapshot 1\n"

// ErrBadSnapshot: a snapshot object that does not parse, or is another
// shard's.
var ErrBadSnapshot = errors.New("cluster: damaged snapshot")

// snapshotPart is one user's part of a shard's snapshot.
type snapshotPart struct {
	token       string
	seq, stream uint64
	sealed      []byte
}

// snapshot is a shard's snapshot as stored.
type snapshot struct {
	shard, shards int
	parts         []snapshotPart
}

func snapshotName(s int) string { return "shard-" + strconv.Itoa(s) }

// partAD binds a sealed part to its shard and log position.
func partAD(s, shards int, seq, stream uint64) []byte {
	return fmt.Appendf(nil, "memor snapshot shard %d/%d seq %d stream %d", s, shards, seq, stream)
}

func (sn *snapshot) encode() []byte {
	b := []byte(snapshotMagic)
	b = binary.AppendUvarint(b, uint64(kv.FormatVersion))
	b = binary.AppendUvarint(b, uint64(sn.shard))
	b = binary.AppendUvarint(b, uint64(sn.shards))
	b = binary.AppendUvarint(b, uint64(len(sn.parts)))
	for _, p := range sn.parts {
		b = binary.AppendUvarint(b, uint64(len(p.token)))
		b = append(b, p.token...)
		b = binary.AppendUvarint(b, p.seq)
		b = binary.AppendUvarint(b, p.stream)
		b = binary.AppendUvarint(b, uint64(len(p.sealed)))
		b = append(b, p.sealed...)
	}
	return b
}

// reader reads uvarints and byte strings, remembering the first failure.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func decodeSnapshot(b []byte) (*snapshot, error) {
	rest, ok := bytes.CutPrefix(b, []byte(snapshotMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no header", ErrBadSnapshot)
	}
	r := &reader{b: rest}
	if v := r.uvarint(); !r.bad && v != uint64(kv.FormatVersion) {
		return nil, fmt.Errorf("%w: written by a store of format %d, this one's is %d", ErrBadSnapshot, v, kv.FormatVersion)
	}
	sn := &snapshot{shard: int(r.uvarint()), shards: int(r.uvarint())}
	n := r.uvarint()
	for i := uint64(0); i < n && !r.bad; i++ {
		p := snapshotPart{token: string(r.bytes()), seq: r.uvarint(), stream: r.uvarint()}
		p.sealed = r.bytes()
		sn.parts = append(sn.parts, p)
	}
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: truncated or trailing bytes", ErrBadSnapshot)
	}
	return sn, nil
}

func appendRecord(b, k, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// records yields a part's plaintext records; a malformed one ends the
// sequence with ok false (checked by the caller through *bad).
func records(plain []byte, bad *bool) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		r := &reader{b: plain}
		for len(r.b) > 0 {
			k, v := r.bytes(), r.bytes()
			if r.bad {
				*bad = true
				return
			}
			if !yield(k, v) {
				return
			}
		}
	}
}

func openSnapshots(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.ObjectStore, error) {
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: DefaultSnapshotBucket, Replicas: replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot bucket: %w", err)
	}
	return obs, nil
}

// writeSnapshot dumps the users of shard s that this node's store holds,
// seals each user's part with the user's data key, and replaces the
// shard's object. It returns how many users and log episodes it holds.
//
// Only the owner writes it: the snapshot rounds skip a shard no longer
// owned (handing says the caller is the hand-over, which drops the shard
// before it snapshots it, so that no write runs meanwhile).
func (n *Node) writeSnapshot(ctx context.Context, s int, handing bool) (users int, episodes uint64, err error) {
	us, err := n.e.Users(ctx)
	if err != nil {
		return 0, 0, err
	}
	sn := &snapshot{shard: s, shards: n.cfg.Shards}
	for _, u := range us {
		if n.Shard(u) != s {
			continue
		}
		var plain []byte
		seq, err := n.e.DumpUser(ctx, u, func(k, v []byte) error {
			plain = appendRecord(plain, k, v)
			return nil
		})
		if err != nil {
			return 0, 0, fmt.Errorf("cluster: snapshot of shard %d: %w", s, err)
		}
		if seq == 0 {
			continue
		}
		stream := n.log.streamOf(u, seq)
		sealed, err := n.log.JS().SealFor(ctx, u, plain, partAD(s, n.cfg.Shards, seq, stream))
		if errors.Is(err, jslog.ErrForgotten) {
			continue // forgotten meanwhile: this node evicts the user next round
		}
		if err != nil {
			return 0, 0, fmt.Errorf("cluster: snapshot of shard %d: %w", s, err)
		}
		sn.parts = append(sn.parts, snapshotPart{token: jslog.Token(u), seq: seq, stream: stream, sealed: sealed})
		episodes += seq
	}
	n.mu.Lock()
	_, owned := n.owned[s]
	n.mu.Unlock()
	if !owned && !handing {
		return 0, 0, nil // lost meanwhile: the new owner writes the next one
	}
	if _, err := n.snaps.PutBytes(ctx, snapshotName(s), sn.encode()); err != nil {
		return 0, 0, fmt.Errorf("cluster: snapshot of shard %d: %w", s, err)
	}
	return len(sn.parts), episodes, nil
}

// restoreSnapshot writes back the parts of shard s's latest snapshot that
// open, and points the log of each restored user past its position. A
// missing or damaged snapshot, or a part that does not open, restores
// nothing of it: the catch-up that follows replays those users' whole
// logs. It returns how many users it restored and their episodes.
//
// inLog is how many episodes the log holds of the shard's users: a
// missing snapshot is a warning when it is at least SnapshotEvery (a
// snapshot should exist), and normal below.
func (n *Node) restoreSnapshot(ctx context.Context, s int, inLog uint64) (users int, episodes uint64) {
	b, err := n.snaps.GetBytes(ctx, snapshotName(s))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		lvl := slog.LevelInfo
		if n.cfg.SnapshotEvery > 0 && inLog >= uint64(n.cfg.SnapshotEvery) {
			lvl = slog.LevelWarn
		}
		n.lg.Log(ctx, lvl, "cluster: no snapshot of shard: replaying its whole log", "shard", s, "episodes", inLog)
		return 0, 0
	}
	if err != nil {
		n.lg.Warn("cluster: snapshot unreadable: replaying the shard's whole log", "shard", s, "err", err)
		return 0, 0
	}
	sn, err := decodeSnapshot(b)
	if err == nil && (sn.shard != s || sn.shards != n.cfg.Shards) {
		err = fmt.Errorf("%w: it is shard %d of %d", ErrBadSnapshot, sn.shard, sn.shards)
	}
	if err != nil {
		n.lg.Warn("cluster: snapshot damaged: replaying the shard's whole log", "shard", s, "err", err)
		return 0, 0
	}
	for _, p := range sn.parts {
		u, err := jslog.UserOf(p.token)
		if err == nil && n.Shard(u) != s {
			err = fmt.Errorf("%w: a user of shard %d", ErrBadSnapshot, n.Shard(u))
		}
		if err != nil {
			n.lg.Warn("cluster: snapshot part damaged: skipped", "shard", s, "err", err)
			continue
		}
		plain, err := n.log.JS().OpenFor(ctx, u, p.sealed, partAD(s, n.cfg.Shards, p.seq, p.stream))
		if err != nil {
			// The next snapshot round rewrites the object without the
			// part: a forgotten user's token and ciphertext do not stay.
			n.snapMu.Lock()
			n.snapDirty[s] = true
			n.snapMu.Unlock()
		}
		if errors.Is(err, jslog.ErrForgotten) {
			continue // forgotten: nothing to restore, by design
		}
		if err != nil {
			n.lg.Warn("cluster: snapshot part does not open: the user is replayed from the log", "shard", s, "err", err)
			continue
		}
		bad := false
		for range records(plain, &bad) {
		}
		if bad {
			err = fmt.Errorf("%w: a malformed record", ErrBadSnapshot)
		} else {
			err = n.e.RestoreUser(ctx, u, records(plain, &bad))
		}
		if err != nil {
			// RestoreUser writes all or nothing: the user is replayed.
			n.lg.Warn("cluster: snapshot part not restored: the user is replayed from the log", "shard", s, "err", err)
			continue
		}
		n.log.resume(u, p.seq, p.stream)
		users++
		episodes += p.seq
	}
	return users, episodes
}

// snapshotRound, run every lease round beside the lease rounds,
// snapshots each shard this node serves whose log has grown by
// Config.SnapshotEvery episodes since its last snapshot, or changed and is
// older than Config.SnapshotInterval, or lost a forgotten user.
func (n *Node) snapshotRound(ctx context.Context) error {
	owned := n.Owned()
	if len(owned) == 0 {
		return nil
	}
	counts, err := n.log.JS().Users(ctx)
	if err != nil {
		return err
	}
	inLog := map[int]uint64{}
	for u, c := range counts {
		inLog[n.Shard(u)] += c
	}
	for _, s := range owned {
		n.snapMu.Lock()
		mark, at, dirty := n.snapMark[s], n.snapAt[s], n.snapDirty[s]
		n.snapMu.Unlock()
		grown := inLog[s] > mark
		due := dirty ||
			n.cfg.SnapshotEvery > 0 && inLog[s] >= mark+uint64(n.cfg.SnapshotEvery) ||
			n.cfg.SnapshotInterval > 0 && grown && time.Since(at) >= n.cfg.SnapshotInterval
		if !due {
			continue
		}
		n.snapMu.Lock()
		delete(n.snapDirty, s)
		n.snapMu.Unlock()
		users, eps, err := n.writeSnapshot(ctx, s, false)
		if err != nil {
			n.snapMu.Lock()
			n.snapDirty[s] = dirty
			n.snapMu.Unlock()
			return err
		}
		n.snapMu.Lock()
		n.snapMark[s], n.snapAt[s] = eps, time.Now()
		n.snapMu.Unlock()
		n.lg.Info("cluster: shard snapshotted", "shard", s, "users", users, "episodes", eps)
	}
	return nil
}
