package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster"
	"github.com/memor-db/memor/cluster/jslog"
	"github.com/memor-db/memor/server"
)

// clusterFlags are serve's flags for joining a cluster (--cluster and
// the rest).
type clusterFlags struct {
	urls, node, advertise, kekFile string
	shards, replicas               int
	leaseTTL                       time.Duration
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.urls, "cluster", "", "join the memor cluster whose NATS JetStream servers are these (nats://host:port, comma-separated)")
	fs.StringVar(&f.node, "node-id", "", "this node's ID in the cluster, unique and stable (with --cluster; required)")
	fs.IntVar(&f.shards, "shards", cluster.DefaultShards, "number of shards users hash to: the same on every node, for ever (with --cluster)")
	fs.StringVar(&f.advertise, "advertise", "", "base URL other nodes forward this node's users' requests to (with --cluster; default http://<--addr> once bound)")
	fs.IntVar(&f.replicas, "replicas", 0, "replication factor of the log stream and the lease, node and key buckets (with --cluster; default 3 when --cluster names 3 or more servers, else 1)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", cluster.DefaultLeaseTTL, "how long a shard's lease lasts unrenewed: a dead node's shards move after about this long (with --cluster; at least 1s)")
	fs.StringVar(&f.kekFile, "log-kek-file", "", "file holding the key-encryption key of the log's per-user data keys (64 hex digits, 'memor kek new'), the same on every node; default --kek-file (with --cluster; required)")
}

// clusterNode is a serving process's membership of a cluster.
type clusterNode struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *cluster.Log
	node   *cluster.Node
	cfg    cluster.Config
	logger *slog.Logger
}

// joinTimeout bounds connecting to NATS and opening the log: a freshly
// started JetStream cluster elects its meta leader a moment after the
// servers meet.
const joinTimeout = 60 * time.Second

// connectCluster validates f, connects to NATS and opens the episode log
// (the engine is opened on it next; join then joins the cluster).
func (a *app) connectCluster(ctx context.Context, cmd *cobra.Command, f *clusterFlags, bound net.Addr) (*clusterNode, error) {
	if f.node == "" || strings.ContainsAny(f.node, " \t\r\n.*>") {
		return nil, usage(cmd, "--cluster needs --node-id, a unique name for this node without spaces, '.', '*' or '>' (e.g. --node-id m1)")
	}
	if f.shards < 1 {
		return nil, usage(cmd, "--shards must be at least 1, got %d", f.shards)
	}
	if f.leaseTTL < time.Second {
		return nil, usage(cmd, "--lease-ttl must be at least 1s, got %v", f.leaseTTL)
	}
	urls := strings.Split(f.urls, ",")
	for _, u := range urls {
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			return nil, usage(cmd, "--cluster %q: want nats://host:port URLs, comma-separated", u)
		}
	}
	if f.replicas == 0 {
		f.replicas = 1
		if len(urls) >= 3 {
			f.replicas = 3
		}
	}
	addr := f.advertise
	if addr == "" {
		tcp, _ := bound.(*net.TCPAddr)
		if tcp == nil || tcp.IP.IsUnspecified() {
			return nil, usage(cmd, "--addr %s listens on every interface: pass --advertise with the URL other nodes reach this one at (e.g. --advertise http://10.0.0.5:7420)", bound)
		}
		addr = "http://" + bound.String()
	} else if o, err := server.NormalizeOrigin(addr); err != nil || !strings.EqualFold(o, strings.TrimSuffix(addr, "/")) {
		return nil, usage(cmd, "--advertise %q: want http(s)://host:port, e.g. http://10.0.0.5:7420", addr)
	}
	kf := f.kekFile
	if kf == "" {
		c, err := a.loadConfig()
		if err != nil {
			return nil, err
		}
		kf = c.get("store.kek_file")
	}
	if kf == "" {
		return nil, usage(cmd, "--cluster needs --log-kek-file (or --kek-file): the key-encryption key of the log's per-user data keys, the same file on every node; make one with 'memor kek new FILE'")
	}
	kek, err := readKEK(kf)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(f.urls, nats.Name("memor "+f.node), nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, fmt.Errorf("cli: connect to %s: %w", f.urls, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cn := &clusterNode{nc: nc, js: js, cfg: cluster.Config{Node: f.node, Shards: f.shards, LeaseTTL: f.leaseTTL,
		Addr: addr, Replicas: f.replicas}}
	jl, err := retryJoin(ctx, func(ctx context.Context) (*jslog.Log, error) {
		return jslog.Open(ctx, js, jslog.Config{KEK: kek, Replicas: f.replicas})
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cli: open the episode log on %s: %w", f.urls, err)
	}
	cn.log = cluster.NewLog(jl)
	return cn, nil
}

// retryJoin calls open until it succeeds, ctx ends or joinTimeout passes.
func retryJoin[T any](ctx context.Context, open func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(joinTimeout)
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := open(attempt)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// join makes e, opened on cn.log, a node of the cluster.
func (cn *clusterNode) join(ctx context.Context, e *memor.Engine) error {
	cfg := cn.cfg
	cfg.Logger = cn.logger
	var err error
	cn.node, err = retryJoin(ctx, func(ctx context.Context) (*cluster.Node, error) {
		return cluster.Join(ctx, cn.js, e, cn.log, cfg)
	})
	return err
}

// close stops the node if Drain did not run (a failed start) and closes
// the connection.
func (cn *clusterNode) close() {
	if cn.node != nil {
		cn.node.Stop()
	}
	cn.nc.Close()
}

// routeWait bounds how long a request waits for its user's shard to be
// caught up on this node (a takeover) before it is a 503 no_owner.
const routeWait = 10 * time.Second

// nodeRouter is a cluster.Node as the HTTP server's Router; log is the
// episode log the node's engine was opened on.
type nodeRouter struct {
	n   *cluster.Node
	log *cluster.Log
}

// Users lists the users the episode log holds: every user of the
// cluster (server.Handler's GET /v1/users says why the log).
func (r nodeRouter) Users(ctx context.Context) ([]string, error) {
	counts, err := r.log.JS().Users(ctx)
	if err != nil {
		return nil, writeErr(err)
	}
	out := make([]string, 0, len(counts))
	for u := range counts {
		out = append(out, u)
	}
	return out, nil
}

func (r nodeRouter) Node() string { return r.n.ID() }

func (r nodeRouter) Owner(ctx context.Context, user string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, routeWait)
	defer cancel()
	return routeErr(r.n.Route(ctx, user))
}

// routeErr maps a Node's routing error to the server's: "" and nil for
// this node, the owner's address for another.
func routeErr(err error) (string, error) {
	var no *cluster.NotOwnerError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &no):
		if no.Addr == "" {
			return "", fmt.Errorf("%w: node %s owns shard %d but advertises no address", server.ErrNoOwner, no.Node, no.Shard)
		}
		return no.Addr, nil
	case errors.Is(err, cluster.ErrNoOwner), errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("%w: %v", server.ErrNoOwner, err)
	case errors.Is(err, cluster.ErrStopped):
		return "", server.ErrDraining
	}
	return "", err
}

func (r nodeRouter) Read(ctx context.Context, user string, fn func() error) (string, error) {
	// The wait for the shard is bounded as Owner's; fn runs on the
	// request's own context.
	rctx, cancel := context.WithTimeout(ctx, routeWait)
	defer cancel()
	ran := false
	err := r.n.Read(rctx, user, func(*memor.Engine) error {
		ran = true
		return fn()
	})
	if ran {
		return "", err
	}
	return routeErr(err)
}

func (r nodeRouter) Write(ctx context.Context, user string, fn func() error) error {
	return writeErr(r.n.Write(ctx, user, func(*memor.Engine) error { return fn() }))
}

// writeErr maps a Node's write error to the server's.
func writeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jslog.ErrConflict):
		return fmt.Errorf("%w: %v", server.ErrBehind, err)
	case errors.Is(err, cluster.ErrNotOwner), errors.Is(err, cluster.ErrNoOwner), errors.Is(err, cluster.ErrStopped):
		// Ownership moved between routing and writing: nothing written.
		_, rerr := routeErr(err)
		if rerr == nil {
			rerr = fmt.Errorf("%w: %v", server.ErrNoOwner, err)
		}
		return rerr
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("%w: %v", server.ErrLogUnavailable, err)
	}
	return err
}

func (r nodeRouter) Stats(ctx context.Context) (server.ClusterStats, error) {
	s, err := r.n.Stats(ctx)
	return server.ClusterStats{Shards: s.Shards, Lag: s.Lag, Renewals: s.Renewals, RenewFailures: s.RenewFailures,
		Taken: s.Taken, HandedOver: s.HandedOver}, err
}

// clusterCmd is `memor cluster status`.
func (a *app) clusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect a memor cluster (memor serve --cluster)",
	}
	var urls string
	var timeout time.Duration
	status := &cobra.Command{
		Use:   "status --cluster nats://host:port[,...]",
		Short: "Print the cluster's nodes, shard owners, lag and users per shard, and the log's size",
		Long: `status reads the cluster's state from its NATS JetStream servers without
joining it: the live nodes (ID, advertised address, last update), each
shard's owner with its lag (episodes stored, not yet applied) and users,
and the episode log's size. A shard without an owner is being moved (its
owner died and its lease has not expired, or a node is taking it).`,
		Example: `  memor cluster status --cluster nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224
  memor cluster status --cluster nats://127.0.0.1:4222 --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if urls == "" {
				return usage(cmd, "--cluster is required: the NATS servers of the cluster, e.g. --cluster nats://127.0.0.1:4222")
			}
			nc, err := nats.Connect(urls, nats.Name("memor cluster status"), nats.Timeout(timeout))
			if err != nil {
				return fmt.Errorf("cli: connect to %s: %w", urls, err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			st, err := cluster.ReadStatus(ctx, js)
			if err != nil {
				return err
			}
			return a.printClusterStatus(st)
		},
	}
	status.Flags().StringVar(&urls, "cluster", "", "the cluster's NATS servers (nats://host:port, comma-separated)")
	status.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "bound of the whole status read")
	cmd.AddCommand(status)
	return cmd
}

// shardStatus is one shard's row of the status.
type shardStatus struct {
	Shard int    `json:"shard"`
	Owner string `json:"owner,omitempty"`
	Lag   uint64 `json:"lag"`
	Users int    `json:"users"`
}

func (a *app) printClusterStatus(st cluster.ClusterStatus) error {
	var shards []shardStatus
	byNode := map[string]cluster.NodeInfo{}
	for _, n := range st.Nodes {
		byNode[n.Node] = n
	}
	maxShard := -1
	for s := range st.Owners {
		maxShard = max(maxShard, s)
	}
	for _, n := range st.Nodes {
		for _, s := range n.Shards {
			maxShard = max(maxShard, s)
		}
	}
	for s := 0; s <= maxShard; s++ {
		row := shardStatus{Shard: s, Owner: st.Owners[s]}
		if n, ok := byNode[row.Owner]; ok {
			if i := slices.Index(n.Shards, s); i >= 0 {
				if i < len(n.Lag) {
					row.Lag = n.Lag[i]
				}
				if i < len(n.Users) {
					row.Users = n.Users[i]
				}
			}
		}
		shards = append(shards, row)
	}
	if a.json {
		nodes := st.Nodes
		if nodes == nil {
			nodes = []cluster.NodeInfo{}
		}
		return a.printJSON(map[string]any{"nodes": nodes, "shards": shards, "log": map[string]uint64{
			"messages": st.Log.Msgs, "bytes": st.Log.Bytes, "last_seq": st.Log.LastSeq}})
	}
	tw := tabwriter.NewWriter(a.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tSHARDS\tUPDATED")
	now := time.Now()
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s ago\n", n.Node, n.Addr, len(n.Shards), now.Sub(n.Updated).Round(time.Millisecond))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SHARD\tOWNER\tLAG\tUSERS")
	for _, s := range shards {
		owner := s.Owner
		if owner == "" {
			owner = "(none: moving)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", s.Shard, owner, s.Lag, s.Users)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "log: %d episodes, %s bytes\n", st.Log.Msgs, strconv.FormatUint(st.Log.Bytes, 10))
	return tw.Flush()
}
