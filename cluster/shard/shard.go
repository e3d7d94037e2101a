// Package shard maps memor users to a fixed number of shards and decides,
// with leases in a NATS JetStream KV bucket, which node owns each shard.
//
// A lease is a key of the bucket ("shard-<n>") whose value is the owner's
// node ID. The bucket's TTL is the lease's: a key not written for TTL
// expires, and the next Acquire by any node creates it anew. An owner
// renews by updating its key at the revision it last wrote, so a renewal
// after the lease expired and was taken by another node fails (ErrLost)
// instead of stealing it back. Two nodes may still briefly both believe
// they own a shard (a paused process whose lease expired); the episode
// log's expected-sequence append (cluster/jslog) is what stops the second
// writer, not the lease.
package shard

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Of is user's shard among n (n > 0): FNV-1a over the ID's bytes, modulo
// n. It must never change: it is where every existing user's projection
// lives (TestOfIsStable pins it).
func Of(user string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(user))
	return int(h.Sum64() % uint64(n))
}

// Errors returned by this package; match them with errors.Is.
var (
	// ErrHeld: another node holds the lease (the error is a *HeldError).
	ErrHeld = errors.New("shard: lease held by another node")
	// ErrLost: the lease expired, or another node took it since.
	ErrLost = errors.New("shard: lease lost")
	// ErrConfig: invalid options.
	ErrConfig = errors.New("shard: invalid configuration")
)

// HeldError names the node that holds a lease.
type HeldError struct {
	Shard int
	Node  string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("shard: shard %d is held by node %q", e.Shard, e.Node)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// DefaultBucket is the leases' KV bucket.
const DefaultBucket = "MEMOR_LEASES"

// Config configures OpenLeases.
type Config struct {
	// Node is this node's ID (required; no spaces).
	Node string
	// TTL is how long a lease lasts without renewal (at least 1 s). Renew
	// well within it (a third of it is usual).
	TTL time.Duration
	// Bucket is the KV bucket (default MEMOR_LEASES).
	Bucket string
	// Replicas is the bucket's replication factor (default 1).
	Replicas int
}

// Leases acquires, renews and releases shard leases for one node.
type Leases struct {
	kv  jetstream.KeyValue
	cfg Config
}

// Lease is a held lease: the revision is what the next renewal expects.
type Lease struct {
	Shard    int
	Node     string
	Revision uint64
}

// OpenLeases creates or opens the bucket.
func OpenLeases(ctx context.Context, js jetstream.JetStream, cfg Config) (*Leases, error) {
	if cfg.Node == "" || strings.ContainsAny(cfg.Node, " \t\r\n") {
		return nil, fmt.Errorf("%w: node ID %q", ErrConfig, cfg.Node)
	}
	if cfg.TTL < time.Second {
		return nil, fmt.Errorf("%w: lease TTL %v is under 1 s", ErrConfig, cfg.TTL)
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: cfg.Bucket, TTL: cfg.TTL, History: 1, Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("shard: lease bucket: %w", err)
	}
	return &Leases{kv: kv, cfg: cfg}, nil
}

func key(shard int) string { return "shard-" + strconv.Itoa(shard) }

// Acquire takes shard's lease if no node holds it. Held by this node
// already, it is renewed.
func (l *Leases) Acquire(ctx context.Context, shard int) (Lease, error) {
	rev, err := l.kv.Create(ctx, key(shard), []byte(l.cfg.Node))
	if err == nil {
		return Lease{Shard: shard, Node: l.cfg.Node, Revision: rev}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return Lease{}, fmt.Errorf("shard: acquire %d: %w", shard, err)
	}
	e, gerr := l.kv.Get(ctx, key(shard))
	if errors.Is(gerr, jetstream.ErrKeyNotFound) {
		return l.Acquire(ctx, shard) // expired between the two calls
	}
	if gerr != nil {
		return Lease{}, fmt.Errorf("shard: acquire %d: %w", shard, gerr)
	}
	if string(e.Value()) == l.cfg.Node {
		return l.Renew(ctx, Lease{Shard: shard, Node: l.cfg.Node, Revision: e.Revision()})
	}
	return Lease{}, &HeldError{Shard: shard, Node: string(e.Value())}
}

// Renew extends a held lease by TTL. It fails with ErrLost when the lease
// expired or another node holds it now.
func (l *Leases) Renew(ctx context.Context, le Lease) (Lease, error) {
	rev, err := l.kv.Update(ctx, key(le.Shard), []byte(l.cfg.Node), le.Revision)
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || errors.Is(err, jetstream.ErrKeyExists) {
			return Lease{}, fmt.Errorf("%w: shard %d", ErrLost, le.Shard)
		}
		return Lease{}, fmt.Errorf("shard: renew %d: %w", le.Shard, err)
	}
	le.Revision = rev
	return le, nil
}

// Release gives a held lease up at once (a graceful drain), so that
// another node need not wait for it to expire. A lease already lost is
// left to its new owner.
func (l *Leases) Release(ctx context.Context, le Lease) error {
	err := l.kv.Delete(ctx, key(le.Shard), jetstream.LastRevision(le.Revision))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("%w: shard %d", ErrLost, le.Shard)
		}
		return fmt.Errorf("shard: release %d: %w", le.Shard, err)
	}
	return nil
}

// Owners returns the node holding each leased shard.
func (l *Leases) Owners(ctx context.Context) (map[int]string, error) {
	out := map[int]string{}
	lister, err := l.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("shard: owners: %w", err)
	}
	defer lister.Stop()
	for k := range lister.Keys() {
		n, err := strconv.Atoi(strings.TrimPrefix(k, "shard-"))
		if err != nil {
			continue
		}
		e, err := l.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shard: owners: %w", err)
		}
		out[n] = string(e.Value())
	}
	return out, nil
}
