package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/cluster/shard"
	"github.com/nats-io/nats.go/jetstream"
)

// counters are a node's lease events, for its metrics (Stats).
type counters struct {
	renewals, renewFailures, taken, handedOver atomic.Uint64
}

// renewed counts one renewal's outcome.
func (c *counters) renewed(err error) {
	if err == nil {
		c.renewals.Add(1)
	} else {
		c.renewFailures.Add(1)
	}
}

// Stats is what a node reports about itself to its metrics.
type Stats struct {
	// Shards are the shards the node owns and serves, ascending.
	Shards []int
	// Lag is, per shard of Shards, the episodes stored and not yet
	// applied.
	Lag []uint64
	// Renewals and RenewFailures count lease renewals since Join (a
	// failure is a lease lost or a renewal JetStream refused).
	Renewals, RenewFailures uint64
	// Taken and HandedOver count shards taken and handed over since Join.
	Taken, HandedOver uint64
}

// Stats reports the node's shards, their lag and its lease counters.
func (n *Node) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Shards: n.Owned(), Renewals: n.stats.renewals.Load(), RenewFailures: n.stats.renewFailures.Load(),
		Taken: n.stats.taken.Load(), HandedOver: n.stats.handedOver.Load()}
	lag, _, err := n.lag(ctx, st.Shards)
	if err != nil {
		return st, err
	}
	for _, s := range st.Shards {
		st.Lag = append(st.Lag, lag[s])
	}
	return st, nil
}

// ClusterStatus is a cluster as its buckets and stream describe it:
// what `memor cluster status` prints.
type ClusterStatus struct {
	// Nodes are the live nodes (those whose NodeInfo has not expired), by ID.
	Nodes []NodeInfo `json:"nodes"`
	// Owners maps each leased shard to its owner's node ID.
	Owners map[int]string `json:"owners"`
	// Log is the episode log stream's size.
	Log jslog.Size `json:"log"`
}

// ReadStatus reads the cluster's state from JetStream without joining it
// or creating anything: the node bucket, the lease bucket and the log
// stream (jslog.DefaultStream) must exist (a node has joined), or the
// error wraps ErrNoCluster.
func ReadStatus(ctx context.Context, js jetstream.JetStream) (ClusterStatus, error) {
	var st ClusterStatus
	nodes, err := js.KeyValue(ctx, DefaultNodeBucket)
	if err != nil {
		return st, noCluster("node bucket "+DefaultNodeBucket, err)
	}
	if st.Nodes, err = listNodes(ctx, nodes); err != nil {
		return st, err
	}
	leases, err := js.KeyValue(ctx, shard.DefaultBucket)
	if err != nil {
		return st, noCluster("lease bucket "+shard.DefaultBucket, err)
	}
	if st.Owners, err = listOwners(ctx, leases); err != nil {
		return st, err
	}
	stream, err := js.Stream(ctx, jslog.DefaultStream)
	if err != nil {
		return st, noCluster("stream "+jslog.DefaultStream, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("cluster: status: %w", err)
	}
	st.Log = jslog.Size{Msgs: info.State.Msgs, Bytes: info.State.Bytes, LastSeq: info.State.LastSeq}
	return st, nil
}

// ErrNoCluster: no node has joined a cluster on this JetStream yet.
var ErrNoCluster = errors.New("cluster: no memor cluster on this JetStream (no node has joined)")

func noCluster(what string, err error) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: %s not found", ErrNoCluster, what)
	}
	return fmt.Errorf("cluster: status: %s: %w", what, err)
}

func listNodes(ctx context.Context, kv jetstream.KeyValue) ([]NodeInfo, error) {
	var out []NodeInfo
	err := eachKey(ctx, kv, func(_ string, v []byte) {
		var info NodeInfo
		if json.Unmarshal(v, &info) == nil {
			out = append(out, info)
		}
	})
	slices.SortFunc(out, func(a, b NodeInfo) int { return strings.Compare(a.Node, b.Node) })
	return out, err
}

func listOwners(ctx context.Context, kv jetstream.KeyValue) (map[int]string, error) {
	out := map[int]string{}
	err := eachKey(ctx, kv, func(k string, v []byte) {
		if s, err := strconv.Atoi(strings.TrimPrefix(k, "shard-")); err == nil {
			out[s] = string(v)
		}
	})
	return out, err
}

// eachKey calls fn with every live key of kv and its value.
func eachKey(ctx context.Context, kv jetstream.KeyValue, fn func(k string, v []byte)) error {
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("cluster: status: %w", err)
	}
	defer lister.Stop()
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired since listed
		}
		if err != nil {
			return fmt.Errorf("cluster: status: %w", err)
		}
		fn(k, e.Value())
	}
	return nil
}
