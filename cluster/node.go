package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/cluster/shard"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults for zero Config fields.
const (
	DefaultShards     = 16
	DefaultLeaseTTL   = 10 * time.Second
	DefaultNodeBucket = "MEMOR_NODES"
	// DefaultSnapshotEvery is Config.SnapshotEvery's default.
	DefaultSnapshotEvery = 1000
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotOwner: another node owns the user's shard (the error is a
	// *NotOwnerError naming it).
	ErrNotOwner = errors.New("cluster: another node owns the user's shard")
	// ErrNoOwner: no node holds the user's shard's lease right now (its
	// owner died and no node has taken it yet): retry shortly.
	ErrNoOwner = errors.New("cluster: the user's shard has no owner yet")
	// ErrStopped: the node is draining or stopped.
	ErrStopped = errors.New("cluster: node stopped")
	// ErrConfig: invalid configuration.
	ErrConfig = errors.New("cluster: invalid configuration")
)

// NotOwnerError names the node that owns a user's shard, and where it
// serves (its advertised address; empty if it did not give one).
type NotOwnerError struct {
	Shard int
	Node  string
	Addr  string
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("cluster: shard %d is owned by node %q at %q", e.Shard, e.Node, e.Addr)
}

// Is makes errors.Is(err, ErrNotOwner) true.
func (e *NotOwnerError) Is(target error) bool { return target == ErrNotOwner }

// Config configures Join.
type Config struct {
	// Node is this node's ID, unique in the cluster (required; no spaces).
	Node string
	// Shards is the fixed number of shards users hash to (default 16).
	// Every node of a cluster must use the same number, for ever: it is
	// where each user's projection lives.
	Shards int
	// LeaseTTL is how long a shard's lease lasts unrenewed (default 10
	// s, at least 1 s): a dead owner's shards move after about this long.
	// The node renews every third of it.
	LeaseTTL time.Duration
	// Addr is the address other nodes send this node's users' clients to
	// (for instance http://10.0.0.5:7070).
	Addr string
	// Replicas is the replication factor of the lease and node buckets
	// (default 1; 3 on a three-server cluster).
	Replicas int
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
	// SnapshotEvery: the owner of a shard snapshots it (snapshot.go) once
	// the log holds this many episodes of the shard's users past its last
	// snapshot (default 1000; negative: never by count).
	SnapshotEvery int
	// SnapshotInterval: and at least this often while the shard changes
	// (0: by count only). A shard is also snapshotted when handed over,
	// and after one of its users is forgotten.
	SnapshotInterval time.Duration
	// MovesPerRound bounds the shards a node above its fair share hands
	// over in one lease round (default 1), so that a node joining moves
	// few shards at a time and the cluster stays served.
	MovesPerRound int

	hooks *hooks // tests only
}

// hooks let this package's tests act at chosen points of a takeover.
type hooks struct {
	// caughtUp is called during a takeover after each user of the shard
	// is caught up.
	caughtUp func(shard int, user string)
	// handedOver is called once a lease round with the shards it handed
	// over.
	handedOver func(shards int)
}

// Takeover is what a node did to serve a shard it took.
type Takeover struct {
	Shard int
	// RestoredUsers and RestoredEpisodes came from the shard's snapshot.
	RestoredUsers    int
	RestoredEpisodes uint64
	// Replayed episodes were copied from the log (the tail past the
	// snapshot, or everything without one).
	Replayed int
	Took     time.Duration
}

// NodeInfo is what a node publishes about itself in the node bucket,
// renewed with its leases; cluster status reads it.
type NodeInfo struct {
	Node    string    `json:"node"`
	Addr    string    `json:"addr,omitempty"`
	Shards  []int     `json:"shards"`
	Lag     []uint64  `json:"lag"` // per owned shard: episodes in the store not yet applied
	Users   []int     `json:"users"`
	Updated time.Time `json:"updated"`
}

// Node is a memor engine serving as one node of a cluster. Its engine
// must have been opened with the Log returned by NewLog over the same
// stream.
type Node struct {
	cfg    Config
	e      *memor.Engine
	log    *Log
	leases *shard.Leases
	nodes  jetstream.KeyValue
	snaps  jetstream.ObjectStore
	lg     *slog.Logger

	mu      sync.Mutex
	owned   map[int]shard.Lease
	valid   map[int]time.Time     // per owned shard: until when its lease surely holds
	ready   map[int]chan struct{} // closed once the shard's users are caught up
	owners  map[int]string        // as last listed
	addrs   map[string]string     // node → address, as last listed
	changed chan struct{}         // closed and replaced whenever ownership changes
	stopped bool
	// gates, one per shard, kept across ownerships: a read or write of a
	// user (Read, Write) holds its shard's for reading, and whatever
	// evicts or restores the shard's users holds it for writing, so that
	// no served read or write meets a projection being replaced.
	gates []sync.RWMutex

	snapMu    sync.Mutex
	snapMark  map[int]uint64    // per shard: episodes its last snapshot (or restore) held
	snapAt    map[int]time.Time // per shard: when
	snapDirty map[int]bool      // per shard: a user was forgotten since
	takeovers []Takeover

	nc     *nats.Conn
	sub    *nats.Subscription // ForgetSubject (forget.go)
	loop   context.Context    // ends when the node stops: bounds its takeovers
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ops    sync.WaitGroup // takeovers running
	stats  counters       // for Stats (stats.go)
}

// Join starts node cfg.Node of the cluster whose JetStream is js, serving
// e (opened with Options.Log = l). It takes shards at once if any are
// free and keeps its leases renewed until Drain or Stop.
func Join(ctx context.Context, js jetstream.JetStream, e *memor.Engine, l *Log, cfg Config) (*Node, error) {
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.Shards < 1 {
		return nil, fmt.Errorf("%w: %d shards", ErrConfig, cfg.Shards)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.MovesPerRound <= 0 {
		cfg.MovesPerRound = 1
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	leases, err := shard.OpenLeases(ctx, js, shard.Config{Node: cfg.Node, TTL: cfg.LeaseTTL, Replicas: cfg.Replicas})
	if err != nil {
		return nil, err
	}
	nodes, err := openNodes(ctx, js, cfg.LeaseTTL, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	snaps, err := openSnapshots(ctx, js, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, e: e, log: l, leases: leases, nodes: nodes, snaps: snaps, lg: lg.With("node", cfg.Node),
		owned: map[int]shard.Lease{}, valid: map[int]time.Time{}, ready: map[int]chan struct{}{}, changed: make(chan struct{}),
		gates: make([]sync.RWMutex, cfg.Shards), snapMark: map[int]uint64{}, snapAt: map[int]time.Time{}, snapDirty: map[int]bool{}}
	n.nc = js.Conn()
	if n.sub, err = n.nc.Subscribe(ForgetSubject, n.onForgotten); err != nil {
		return nil, fmt.Errorf("cluster: forget notices: %w", err)
	}
	l.onForget(n.forgotten)
	n.loop, n.cancel = context.WithCancel(context.Background())
	if err := n.tick(ctx); err != nil {
		n.stopLoop()
		return nil, err
	}
	n.wg.Add(2)
	go n.rounds(n.loop, "lease", true, n.tick)
	// Beside the lease rounds: a catch-up or an eviction waits for the
	// user's write running (a write whose append is being retried holds
	// the user for seconds), and a renewal must never wait for that.
	go n.rounds(n.loop, "follow", false, n.followRound)
	if cfg.SnapshotEvery > 0 || cfg.SnapshotInterval > 0 {
		// Beside them too, so that a long snapshot never delays a renewal.
		n.wg.Add(1)
		go n.rounds(n.loop, "snapshot", false, n.snapshotRound)
	}
	return n, nil
}

func openNodes(ctx context.Context, js jetstream.JetStream, ttl time.Duration, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: DefaultNodeBucket, TTL: ttl, History: 1, Replicas: replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: node bucket: %w", err)
	}
	return kv, nil
}

// Engine is the node's engine.
func (n *Node) Engine() *memor.Engine { return n.e }

// ID is the node's ID.
func (n *Node) ID() string { return n.cfg.Node }

// Shard is user's shard.
func (n *Node) Shard(user string) int { return shard.Of(user, n.cfg.Shards) }

// rounds runs round every lease round (a third of LeaseTTL) until ctx
// ends, and logs its failures; bounded gives each round a round's time.
func (n *Node) rounds(ctx context.Context, what string, bounded bool, round func(context.Context) error) {
	defer n.wg.Done()
	every := n.cfg.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if bounded {
			rctx, cancel = context.WithTimeout(ctx, every)
		}
		err := round(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			n.lg.Warn("cluster: "+what+" round failed", "err", err)
		}
	}
}

// tick is one round: publish this node, renew its leases, hand over
// shards above its fair share, take free shards up to it.
func (n *Node) tick(ctx context.Context) error {
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		return nil
	}
	// Renewals first, and each one tried: they are what keeps the shards
	// served.
	if err := n.renew(ctx); err != nil {
		return err
	}
	live, err := n.liveNodes(ctx)
	if err != nil {
		return err
	}
	live[n.cfg.Node] = n.cfg.Addr
	target := (n.cfg.Shards + len(live) - 1) / len(live)
	owners, err := n.leases.Owners(ctx)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.owners, n.addrs = owners, live
	mine := len(n.owned)
	n.mu.Unlock()
	// Above the fair share (a node joined): hand the highest shards over,
	// at most MovesPerRound a round, so that moves stay few and the
	// cluster stays served.
	// The hand-over runs beside the round: it waits for the shard's
	// writes running, and the round must go on renewing the others.
	moves := 0
	for ; mine > target && moves < n.cfg.MovesPerRound; moves++ {
		s := n.highestReady()
		if s < 0 {
			break
		}
		le, ok := n.give(s)
		if !ok {
			break
		}
		n.ops.Add(1)
		go func() {
			defer n.ops.Done()
			// Not ended by Stop or Drain: a hand-over begun is finished.
			hctx, cancel := context.WithTimeout(context.Background(), handOverTimeout)
			defer cancel()
			n.handOver(hctx, s, le)
		}()
		mine--
	}
	if n.cfg.hooks != nil && n.cfg.hooks.handedOver != nil {
		n.cfg.hooks.handedOver(moves)
	}
	// Free shards, up to the fair share, starting from a place of this
	// node's own so that nodes starting together do not contend for the
	// same ones.
	start := int(hash(n.cfg.Node) % uint64(n.cfg.Shards))
	for i := range n.cfg.Shards {
		if mine >= target {
			break
		}
		s := (start + i) % n.cfg.Shards
		if owner, taken := owners[s]; taken && owner != n.cfg.Node {
			continue
		}
		if n.owns(s) {
			continue
		}
		// Free, or still this node's (a lease it dropped unrenewed, or
		// held before a restart): Acquire takes it, or renews it.
		acquired := time.Now()
		le, err := n.leases.Acquire(ctx, s)
		if errors.Is(err, shard.ErrHeld) {
			continue
		}
		if err != nil {
			return err
		}
		mine++
		n.take(le, acquired.Add(n.cfg.LeaseTTL))
	}
	return n.publish(ctx)
}

// owns says whether the node holds shard s's lease (serving it or
// catching it up).
func (n *Node) owns(s int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.owned[s]
	return ok
}

// followRound, run every lease round, copies the log's new episodes of
// the shards the node serves and evicts the users it must not hold.
func (n *Node) followRound(ctx context.Context) error {
	// The store's users are listed before the log's: a user in the store
	// is in the log unless forgotten (an episode is appended before it
	// commits), so one missing from the later listing was forgotten.
	local, err := n.e.Users(ctx)
	if err != nil {
		return err
	}
	counts, err := n.log.JS().Users(ctx)
	if err != nil {
		return err
	}
	for _, s := range n.Owned() {
		if err := n.followShard(ctx, s, counts); err != nil {
			return err
		}
	}
	return n.sweep(ctx, local, counts)
}

// followShard catches shard s's users up from the log if the node still
// serves it, holding its gate so that no eviction interleaves.
func (n *Node) followShard(ctx context.Context, s int, counts map[string]uint64) error {
	n.gates[s].RLock()
	defer n.gates[s].RUnlock()
	if !n.serves(s) {
		return nil
	}
	_, _, err := n.follow(ctx, counts, func(shard int) bool { return shard == s })
	return err
}

// renew renews every lease the node holds. A lease lost, or not renewed
// for a whole TTL, is dropped; the first other failure is returned.
func (n *Node) renew(ctx context.Context) error {
	n.mu.Lock()
	held := make([]shard.Lease, 0, len(n.owned))
	for _, le := range n.owned {
		held = append(held, le)
	}
	n.mu.Unlock()
	slices.SortFunc(held, func(a, b shard.Lease) int { return cmp.Compare(a.Shard, b.Shard) })
	var failed error
	for _, le := range held {
		start := time.Now()
		next, err := n.leases.Renew(ctx, le)
		n.stats.renewed(err)
		switch {
		case errors.Is(err, shard.ErrLost):
			n.lg.Warn("cluster: lease lost", "shard", le.Shard)
			n.drop(le.Shard)
		case err != nil:
			n.mu.Lock()
			expired := !time.Now().Before(n.valid[le.Shard])
			n.mu.Unlock()
			if !expired {
				if failed == nil {
					failed = err
				}
				continue
			}
			// Unrenewed for a whole TTL: another node may hold the lease
			// now. The shard is not served from here until a round takes
			// it again (Acquire renews a lease still this node's).
			n.lg.Warn("cluster: lease expired unrenewed", "shard", le.Shard, "err", err)
			n.drop(le.Shard)
		default:
			n.mu.Lock()
			if _, ok := n.owned[le.Shard]; ok {
				n.owned[le.Shard] = next
				n.valid[le.Shard] = start.Add(n.cfg.LeaseTTL)
			}
			n.mu.Unlock()
		}
	}
	return failed
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func (n *Node) liveNodes(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	lister, err := n.nodes.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: nodes: %w", err)
	}
	defer lister.Stop()
	for k := range lister.Keys() {
		e, err := n.nodes.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: nodes: %w", err)
		}
		var info NodeInfo
		if json.Unmarshal(e.Value(), &info) == nil {
			out[k] = info.Addr
		}
	}
	return out, nil
}

// publish writes this node's NodeInfo (which also keeps it counted live).
func (n *Node) publish(ctx context.Context) error {
	info := NodeInfo{Node: n.cfg.Node, Addr: n.cfg.Addr, Updated: time.Now().UTC()}
	n.mu.Lock()
	for s := range n.owned {
		info.Shards = append(info.Shards, s)
	}
	n.mu.Unlock()
	slices.Sort(info.Shards)
	lag, users, err := n.lag(ctx, info.Shards)
	if err != nil {
		return err
	}
	for _, s := range info.Shards {
		info.Lag = append(info.Lag, lag[s])
		info.Users = append(info.Users, users[s])
	}
	b, _ := json.Marshal(info)
	if _, err := n.nodes.Put(ctx, n.cfg.Node, b); err != nil {
		return fmt.Errorf("cluster: publish: %w", err)
	}
	return nil
}

// lag sums, per owned shard, the episodes stored and not yet applied.
func (n *Node) lag(ctx context.Context, owned []int) (map[int]uint64, map[int]int, error) {
	lag, users := map[int]uint64{}, map[int]int{}
	if len(owned) == 0 {
		return lag, users, nil
	}
	us, err := n.e.Users(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range us {
		s := n.Shard(u)
		if !slices.Contains(owned, s) {
			continue
		}
		f, err := n.e.Freshness(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		lag[s] += f.Pending
		users[s]++
	}
	return lag, users, nil
}

func (n *Node) notify() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// take records a new lease, valid until valid, and catches the shard's
// users up from the log before serving them.
func (n *Node) take(le shard.Lease, valid time.Time) {
	ready := make(chan struct{})
	n.mu.Lock()
	n.owned[le.Shard] = le
	n.valid[le.Shard] = valid
	n.ready[le.Shard] = ready
	n.notify()
	n.mu.Unlock()
	n.lg.Info("cluster: shard taken", "shard", le.Shard)
	n.stats.taken.Add(1)
	n.ops.Add(1)
	go func() {
		defer n.ops.Done()
		start := time.Now()
		n.gates[le.Shard].Lock()
		tk, err := n.restoreShard(n.loop, le.Shard)
		n.gates[le.Shard].Unlock()
		if err != nil {
			// Not served half caught up: the lease goes, another node (or
			// this one, next round) tries again.
			n.lg.Error("cluster: takeover failed", "shard", le.Shard, "err", err)
			n.mu.Lock()
			cur, ok := n.owned[le.Shard]
			n.mu.Unlock()
			if ok {
				n.drop(le.Shard)
				rctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaseTTL)
				_ = n.leases.Release(rctx, cur)
				cancel()
			}
			return
		}
		tk.Took = time.Since(start)
		n.lg.Info("cluster: shard serving", "shard", le.Shard, "restored_users", tk.RestoredUsers,
			"restored_episodes", tk.RestoredEpisodes, "replayed", tk.Replayed, "took", tk.Took)
		n.snapMu.Lock()
		n.takeovers = append(n.takeovers, tk)
		n.snapMark[le.Shard], n.snapAt[le.Shard] = tk.RestoredEpisodes, time.Now()
		n.snapMu.Unlock()
		n.mu.Lock()
		if n.ready[le.Shard] == ready {
			close(ready)
			n.notify()
		}
		n.mu.Unlock()
	}()
}

// restoreShard makes the store hold shard s as the log does (the caller
// holds the shard's gate): it evicts
// what the store held of s from an earlier ownership (possibly stale:
// a user forgotten and written again since), restores the shard's latest
// snapshot, and copies the log's tail.
func (n *Node) restoreShard(ctx context.Context, s int) (Takeover, error) {
	tk := Takeover{Shard: s}
	old, err := n.shardUsers(ctx, s)
	if err != nil {
		return tk, err
	}
	if err := n.evict(ctx, old); err != nil {
		return tk, err
	}
	counts, err := n.log.JS().Users(ctx)
	if err != nil {
		return tk, err
	}
	var inLog uint64
	for u, c := range counts {
		if n.Shard(u) == s {
			inLog += c
		}
	}
	tk.RestoredUsers, tk.RestoredEpisodes = n.restoreSnapshot(ctx, s, inLog)
	_, tk.Replayed, err = n.catchUpShard(ctx, s)
	return tk, err
}

// Takeovers lists the shards this node took and how (oldest first).
func (n *Node) Takeovers() []Takeover {
	n.snapMu.Lock()
	defer n.snapMu.Unlock()
	return slices.Clone(n.takeovers)
}

// catchUpShard copies every episode the log holds past the store's for
// every user of shard s.
func (n *Node) catchUpShard(ctx context.Context, s int) (users, copied int, err error) {
	counts, err := n.log.JS().Users(ctx)
	if err != nil {
		return 0, 0, err
	}
	return n.follow(ctx, counts, func(shard int) bool { return shard == s })
}

// follow copies, for the users of the shards mine accepts, the episodes
// the log holds past the store's: the log's per-subject counts come in
// one request, and only users whose count is past the store's latest
// episode are read. It is how an owner consumes its shards' subjects: a
// takeover runs it, and so does every follow round, which catches the
// appends of a node that still believed it owned a shard.
func (n *Node) follow(ctx context.Context, counts map[string]uint64, mine func(int) bool) (users, copied int, err error) {
	for u, count := range counts {
		if !mine(n.Shard(u)) {
			continue
		}
		users++
		f, err := n.e.Freshness(ctx, u)
		if err != nil {
			return users, copied, err
		}
		if count > f.Latest {
			c, err := n.e.CatchUp(ctx, u)
			if err != nil {
				return users, copied, fmt.Errorf("catch up: %w", err)
			}
			copied += c
		}
		if n.cfg.hooks != nil && n.cfg.hooks.caughtUp != nil {
			n.cfg.hooks.caughtUp(n.Shard(u), u)
		}
	}
	return users, copied, nil
}

// sweep evicts from the store the users listed in local (the store's,
// listed before counts, the log's) that the node must not hold: those
// the log no longer has (forgotten, through any node), and those of
// shards the node does not own (a shard it lost, or held before a
// restart). A node's store holds only the shards it owns: the log and
// the snapshots are the truth, and a projection left behind would keep a
// forgotten user's data on a disk nobody erases.
//
// A shard not owned is evicted under its gate, its ownership checked
// again there: a takeover of it that began meanwhile evicts and restores
// the shard itself, and must not have its restored users evicted after.
func (n *Node) sweep(ctx context.Context, local []string, counts map[string]uint64) error {
	var gone []string
	notOwned := map[int][]string{}
	for _, u := range local {
		s := n.Shard(u)
		if _, ok := counts[u]; !ok {
			gone = append(gone, u)
			if n.owns(s) {
				n.snapMu.Lock()
				n.snapDirty[s] = true // rewrite the shard's snapshot without the user
				n.snapMu.Unlock()
			}
			continue
		}
		if !n.owns(s) {
			notOwned[s] = append(notOwned[s], u)
		}
	}
	if err := n.evict(ctx, gone); err != nil {
		return err
	}
	for s, us := range notOwned {
		if err := n.evictShard(ctx, s, us); err != nil {
			return err
		}
	}
	return nil
}

// evictShard evicts users of shard s unless the node owns s again.
func (n *Node) evictShard(ctx context.Context, s int, users []string) error {
	n.gates[s].Lock()
	defer n.gates[s].Unlock()
	if n.owns(s) {
		return nil
	}
	return n.evict(ctx, users)
}

func (n *Node) evict(ctx context.Context, users []string) error {
	if len(users) == 0 {
		return nil
	}
	if err := n.e.Evict(ctx, users...); err != nil {
		return fmt.Errorf("cluster: evict: %w", err)
	}
	for _, u := range users {
		n.log.drop(u)
	}
	n.lg.Info("cluster: evicted users", "users", len(users))
	return nil
}

// shardUsers lists the store's users of shard s.
func (n *Node) shardUsers(ctx context.Context, s int) ([]string, error) {
	us, err := n.e.Users(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range us {
		if n.Shard(u) == s {
			out = append(out, u)
		}
	}
	return out, nil
}

// Forget erases user from the cluster, from any node: the log's subject
// and data key (so every snapshot part of the user stops opening), and
// this node's copy. The owner, wherever it is, evicts its copy when the
// node's notice reaches it (forget.go), or at its next lease round
// (sweep: the log no longer has the user), and rewrites the shard's
// snapshot without the user; so does any node still holding a stale
// copy. A Forget through the node's engine (Engine.Forget) does the same.
func (n *Node) Forget(ctx context.Context, user string) error {
	if err := n.e.Forget(ctx, user); err != nil {
		return err
	}
	n.log.drop(user)
	return nil
}

// Write runs fn, a write of user on the node's engine, once the node
// serves user (see Route). When the log refuses the write because
// another writer appended to the user (a node that still believed it
// owned the shard), it copies the log's new episodes and runs fn once
// more.
func (n *Node) Write(ctx context.Context, user string, fn func(*memor.Engine) error) error {
	done, err := n.enter(ctx, user)
	if err != nil {
		return err
	}
	err = fn(n.e)
	done()
	if !errors.Is(err, jslog.ErrConflict) {
		return err
	}
	n.lg.Info("cluster: the log refused a write (another writer appended): catching up, writing again", "user", user, "err", err)
	if _, cerr := n.e.CatchUp(ctx, user); cerr != nil {
		return errors.Join(err, cerr)
	}
	if done, err = n.enter(ctx, user); err != nil {
		return err
	}
	defer done()
	return fn(n.e)
}

// Read runs fn, a read of user on the node's engine, once the node serves
// user (see Route), and holds the user's shard meanwhile: the shard's
// users are not evicted or restored under the read, so a served read
// never sees a projection that is being replaced.
func (n *Node) Read(ctx context.Context, user string, fn func(*memor.Engine) error) error {
	done, err := n.enter(ctx, user)
	if err != nil {
		return err
	}
	defer done()
	return fn(n.e)
}

// enter waits until the node serves user (Route) and holds the user's
// shard's gate for reading until done is called: a hand-over, a takeover
// and an eviction wait for it, so that every write acknowledged here is
// in the log (and the store) before the shard's users are evicted, and
// no read sees them half gone.
func (n *Node) enter(ctx context.Context, user string) (done func(), err error) {
	s := n.Shard(user)
	for {
		if err := n.Route(ctx, user); err != nil {
			return nil, err
		}
		n.gates[s].RLock()
		if n.serves(s) {
			return n.gates[s].RUnlock, nil
		}
		n.gates[s].RUnlock()
	}
}

// serves says whether the node serves shard s now: it holds the lease,
// the lease has not run out unrenewed, and the shard is caught up.
func (n *Node) serves(s int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.servesLocked(s, time.Now())
}

// servesLocked is serves at now, n.mu held.
func (n *Node) servesLocked(s int, now time.Time) bool {
	ready, ok := n.ready[s]
	return ok && isClosed(ready) && now.Before(n.valid[s])
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (n *Node) drop(s int) {
	n.mu.Lock()
	delete(n.owned, s)
	delete(n.valid, s)
	delete(n.ready, s)
	n.notify()
	n.mu.Unlock()
}

// handOverTimeout bounds a rebalancing hand-over's snapshot and release;
// past it the lease expires on its own and the next owner replays the
// log.
const handOverTimeout = 30 * time.Second

// give drops shard s, if the node owns it, and returns its lease.
func (n *Node) give(s int) (shard.Lease, bool) {
	n.mu.Lock()
	le, ok := n.owned[s]
	n.mu.Unlock()
	if ok {
		n.drop(s)
	}
	return le, ok
}

func (n *Node) highestReady() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	best := -1
	for s, ch := range n.ready {
		select {
		case <-ch:
			best = max(best, s)
		default:
		}
	}
	return best
}

// handOver drains shard s and gives it up: it stops taking writes of
// the shard (Route answers with the next owner, or ErrNoOwner meanwhile),
// waits for the writes running to finish (each appends to the log before
// it is acknowledged, so then every acknowledged episode of the shard is
// in the log), snapshots the shard (the next owner restores it and
// replays next to nothing), releases the lease so the next owner need not
// wait for it to expire, and evicts the shard's users from the store.
//
// give does the first step (Route stops sending the shard's users here)
// and returns the lease; handOver the rest.
func (n *Node) handOver(ctx context.Context, s int, le shard.Lease) {
	start := time.Now()
	n.gates[s].Lock()
	defer n.gates[s].Unlock()
	if n.cfg.SnapshotEvery > 0 || n.cfg.SnapshotInterval > 0 {
		if _, _, err := n.writeSnapshot(ctx, s, true); err != nil {
			n.lg.Warn("cluster: snapshot at hand-over failed", "shard", s, "err", err)
		}
	}
	if err := n.leases.Release(ctx, le); err != nil && !errors.Is(err, shard.ErrLost) {
		n.lg.Warn("cluster: release failed", "shard", s, "err", err)
	}
	if us, err := n.shardUsers(ctx, s); err == nil {
		err = n.evict(ctx, us)
		if err != nil {
			n.lg.Warn("cluster: evict after hand-over failed (the next lease round retries)", "shard", s, "err", err)
		}
	}
	n.lg.Info("cluster: shard handed over", "shard", s, "took", time.Since(start))
	n.stats.handedOver.Add(1)
}

// Route says whether this node serves user now. It waits while the
// user's shard is being caught up here; for a shard another node owns it
// returns a *NotOwnerError, and ErrNoOwner for one nobody holds, or one
// whose lease this node could not renew for a whole TTL.
func (n *Node) Route(ctx context.Context, user string) error {
	s := n.Shard(user)
	for {
		n.mu.Lock()
		if n.stopped {
			n.mu.Unlock()
			return ErrStopped
		}
		ready, mine := n.ready[s]
		valid := n.valid[s]
		owner, addr := n.owners[s], n.addrs[n.owners[s]]
		changed := n.changed
		n.mu.Unlock()
		if !mine {
			if owner == "" || owner == n.cfg.Node {
				return fmt.Errorf("%w: shard %d", ErrNoOwner, s)
			}
			return &NotOwnerError{Shard: s, Node: owner, Addr: addr}
		}
		if !time.Now().Before(valid) {
			// Not renewed for a whole TTL (JetStream unreachable): another
			// node may own the shard by now, so this one serves nothing of
			// it until a renewal or a new lease.
			return fmt.Errorf("%w: shard %d: its lease here ran out unrenewed", ErrNoOwner, s)
		}
		select {
		case <-ready:
			return nil
		default:
		}
		select {
		case <-ready:
			continue // checked again: the lease may have run out meanwhile
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Owned lists the shards this node owns and serves (caught up, and the
// lease renewed within its TTL).
func (n *Node) Owned() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int
	now := time.Now()
	for s := range n.ready {
		if n.servesLocked(s, now) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Drain hands every shard over and leaves the cluster: the graceful
// stop (SIGTERM). The engine stays open; the caller closes it.
func (n *Node) Drain(ctx context.Context) error {
	n.stopLoop()
	n.mu.Lock()
	var held []int
	for s := range n.owned {
		held = append(held, s)
	}
	n.mu.Unlock()
	for _, s := range held {
		if le, ok := n.give(s); ok {
			n.handOver(ctx, s, le)
		}
	}
	n.mu.Lock()
	n.stopped = true
	n.notify()
	n.mu.Unlock()
	if err := n.nodes.Delete(ctx, n.cfg.Node); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("cluster: drain: %w", err)
	}
	return nil
}

// Stop stops renewing without handing anything over, as if the process
// died: the leases expire after LeaseTTL and other nodes take the shards.
func (n *Node) Stop() {
	n.stopLoop()
	n.mu.Lock()
	n.stopped = true
	n.notify()
	n.mu.Unlock()
}

func (n *Node) stopLoop() {
	n.cancel()
	n.wg.Wait()
	n.ops.Wait()
	n.stopForgets()
}

// stopForgets stops the forget notices, both ways.
func (n *Node) stopForgets() {
	n.log.onForget(nil)
	if n.sub != nil {
		_ = n.sub.Unsubscribe()
	}
}
