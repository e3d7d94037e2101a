package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/memor-db/memor/cluster/jslog"
	"github.com/nats-io/nats.go"
)

// ForgetSubject is the core NATS subject on which a node that erased a
// user says so (the message is the user's log subject token), so that the
// user's owner, and any node holding a stale copy, evicts it at once
// rather than at its next lease round. A lost notice costs nothing but
// that wait: the lease round's sweep evicts the user all the same.
const ForgetSubject = "memor.forgotten"

// forgetWait bounds how long a node spends on one notice.
const forgetWait = 10 * time.Second

// forgotten is called by the node's Log once a Forget through its engine
// (any route: HTTP, MCP, the library) erased user from the log: the
// shard's snapshot is rewritten without the user if this node owns it,
// and the other nodes are told.
func (n *Node) forgotten(user string) {
	n.markForgotten(user)
	if err := n.nc.Publish(ForgetSubject, []byte(jslog.Token(user))); err != nil {
		n.lg.Warn("cluster: forget notice not sent (the next lease round evicts the user)", "err", err)
	}
}

// markForgotten marks user's shard, if this node owns it, to be
// snapshotted again without the user.
func (n *Node) markForgotten(user string) {
	s := n.Shard(user)
	n.mu.Lock()
	_, mine := n.owned[s]
	n.mu.Unlock()
	if mine {
		n.snapMu.Lock()
		n.snapDirty[s] = true
		n.snapMu.Unlock()
	}
}

// onForgotten evicts the users of the store whose token a notice names,
// once the log confirms it no longer holds them (a user written again
// since is kept).
func (n *Node) onForgotten(m *nats.Msg) {
	token := string(m.Data)
	ctx, cancel := context.WithTimeout(context.Background(), forgetWait)
	defer cancel()
	local, err := n.e.Users(ctx)
	if err != nil {
		return
	}
	for _, u := range local {
		if jslog.Token(u) == token {
			n.evictForgotten(ctx, u)
		}
	}
}

// evictForgotten evicts user from the store if the log no longer holds
// it. It holds the user's shard's gate from the check to the eviction, as
// the sweep does: a write of the user (written again since the Forget)
// cannot commit between them and be evicted once acknowledged.
func (n *Node) evictForgotten(ctx context.Context, user string) {
	s := n.Shard(user)
	n.gates[s].Lock()
	defer n.gates[s].Unlock()
	_, found, err := n.log.JS().Last(ctx, user)
	if found || (err != nil && !errors.Is(err, jslog.ErrForgotten)) {
		return
	}
	if err := n.evict(ctx, []string{user}); err != nil {
		n.lg.Warn("cluster: evict after a forget notice failed (the next lease round retries)", "err", err)
		return
	}
	n.markForgotten(user)
}
