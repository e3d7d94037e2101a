package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Headers of a server that is one node of a cluster (Options.Router).
const (
	// NodeHeader, on an answer, names the node whose engine answered.
	NodeHeader = "Memor-Node"
	// ForwardedHeader, on a request, names the node that forwarded it to
	// the user's owner; on the answer, the node that forwarded it back. A
	// request that carries it is never forwarded again.
	ForwardedHeader = "Memor-Forwarded-By"
	// RedirectHeader, sent by a client as "Memor-Redirect: true", asks a
	// node that does not own the user for a 307 redirect to the owner
	// instead of a forward.
	RedirectHeader = "Memor-Redirect"
)

// Errors of a cluster node's routing; each is answered with 503 and
// Retry-After, since each passes once the cluster settles.
var (
	// ErrNoOwner: no node serves the user's shard right now (its owner
	// died and no node has taken it yet, or the owner is still catching
	// it up).
	ErrNoOwner = errors.New("server: the user's shard has no owner right now")
	// ErrDraining: this node is handing its shards over and leaving.
	ErrDraining = errors.New("server: this node is draining")
	// ErrForwardLoop: a request already forwarded by another node reached
	// a node that does not own the user either (ownership moved while it
	// was on its way).
	ErrForwardLoop = errors.New("server: the request was forwarded already and this node does not own the user either")
	// ErrOwnerUnreachable: the owner's advertised address did not answer.
	ErrOwnerUnreachable = errors.New("server: the user's owner did not answer")
	// ErrBehind: a write was refused because another node had appended
	// to the user's log, and the retry after catching up was refused too.
	ErrBehind = errors.New("server: another node is writing this user")
	// ErrLogUnavailable: the cluster's episode log (JetStream) did not
	// answer a write: the write is not acknowledged, and JetStream may or
	// may not have stored it (a retry can then store it twice, unless it
	// carries an IdempotencyHeader).
	ErrLogUnavailable = errors.New("server: the episode log did not answer")
)

// ErrNotInCluster: the route serves one store's users and is not served
// by a cluster node (answered with 501 not_in_cluster).
var ErrNotInCluster = errors.New("server: this route is not served by a cluster node")

// retryAfterSeconds is the Retry-After of the routing 503s: a lease round
// is a third of the lease TTL, so a second is the order of a move.
const retryAfterSeconds = 1

// Router is what a Handler needs of the cluster node it serves (the cli
// adapts cluster.Node to it), so that this package needs no NATS.
type Router interface {
	// Node is this node's ID.
	Node() string
	// Owner says where user is served: "" when by this node (caught up,
	// ready), else the owner's advertised base URL as the cluster's node
	// registry holds it; or an error wrapping ErrNoOwner or ErrDraining.
	Owner(ctx context.Context, user string) (addr string, err error)
	// Write runs fn, a write of user on this node's engine; a write the
	// log refuses because another node appended is retried once after
	// catching up (an error wrapping ErrBehind if that fails too).
	Write(ctx context.Context, user string, fn func() error) error
	// Read runs fn, a read of user on this node's engine, when this node
	// serves the user, and holds the user's shard while fn runs, so that no
	// hand-over, takeover or eviction replaces the user's projection under
	// the read (Owner alone answers for an instant only). When another node
	// serves the user it returns that node's address and does not run fn;
	// when none does, an error as Owner's. fn's own error is returned as is.
	Read(ctx context.Context, user string, fn func() error) (addr string, err error)
	// Stats reports the node for /metrics.
	Stats(ctx context.Context) (ClusterStats, error)
	// Users lists every user of the cluster, in any order: the users the
	// episode log holds (see Handler.users for why the log).
	Users(ctx context.Context) ([]string, error)
}

// ClusterStats is a node's report to its metrics.
type ClusterStats struct {
	Shards                  []int    // owned and serving, ascending
	Lag                     []uint64 // per shard of Shards: episodes stored, not applied
	Renewals, RenewFailures uint64   // lease renewals since the node joined
	Taken, HandedOver       uint64   // shards taken and handed over since it joined
}

// routed serves a route of one user ({user} in its pattern) on a cluster
// node: here when this node owns the user, else forwarded to the owner
// (or redirected there when the client sends RedirectHeader). It runs
// after guard: a request refused here by the host, origin or token checks
// is never forwarded.
func (h *Handler) routed(fn http.HandlerFunc) http.HandlerFunc {
	rt := h.o.Router
	if rt == nil {
		return fn
	}
	return func(w http.ResponseWriter, r *http.Request) {
		h.serveUser(w, r, r.PathValue("user"), fn)
	}
}

// serveUser serves r, a request of user, with fn when this node serves
// the user, else forwards it to the owner (or redirects it there).
func (h *Handler) serveUser(w http.ResponseWriter, r *http.Request, user string, fn http.HandlerFunc) {
	rt := h.o.Router
	var addr string
	var err error
	if gatedRead(r) {
		addr, err = rt.Read(r.Context(), user, func() error {
			w.Header().Set(NodeHeader, rt.Node())
			fn(w, r)
			return nil
		})
	} else {
		// A write goes through rt.Write, which holds the shard itself (a
		// second hold inside Read could deadlock behind a waiting takeover).
		if addr, err = rt.Owner(r.Context(), user); err == nil && addr == "" {
			w.Header().Set(NodeHeader, rt.Node())
			fn(w, r)
			return
		}
	}
	if err != nil {
		w.Header().Set(NodeHeader, rt.Node())
		h.fail(w, r, err)
		return
	}
	if addr != "" {
		h.forward(w, r, addr)
	}
}

// gatedRead reports whether r is a read served while holding the user's
// shard (Router.Read): a GET or HEAD, except an export, which streams for
// as long as the client reads and must not hold a hand-over back that long
// (an export cut by a hand-over ends without its end line, which Import
// refuses).
func gatedRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return !strings.HasSuffix(r.URL.EscapedPath(), "/export")
}

// notInCluster answers a route a cluster node does not serve.
func (h *Handler) notInCluster(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(NodeHeader, h.o.Router.Node())
	h.fail(w, r, fmt.Errorf("%w: %s serves one store's users, and a cluster node holds only its shards' users; use the /v1 routes, which every node routes to the user's owner", ErrNotInCluster, r.URL.Path))
}

// forward sends r to the owner at addr, an address from the cluster's
// node registry (never from the request, so a client cannot aim this
// server at a host of its choosing).
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, addr string) {
	rt := h.o.Router
	if by := r.Header.Get(ForwardedHeader); by != "" {
		w.Header().Set(NodeHeader, rt.Node())
		h.fail(w, r, fmt.Errorf("%w (forwarded by %s)", ErrForwardLoop, by))
		return
	}
	target, err := url.Parse(addr)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" || target.User != nil {
		w.Header().Set(NodeHeader, rt.Node())
		h.fail(w, r, fmt.Errorf("%w: the owner advertises %q, not an http(s) URL", ErrNoOwner, addr))
		return
	}
	if redirectAsked(r) {
		h.o.Metrics.redirected()
		loc := target.Scheme + "://" + target.Host + strings.TrimSuffix(target.EscapedPath(), "/") + r.URL.RequestURI()
		w.Header().Set("Location", loc)
		w.Header().Set(NodeHeader, rt.Node())
		writeErr(w, http.StatusTemporaryRedirect, "redirect", "another node owns this user: send the request to "+loc)
		return
	}
	transport := h.fwd
	if isImport(r) {
		// The owner refuses an import as behind when another node appended
		// to the user meanwhile; the body, read whole within the import
		// limit, is sent again (see behindRetry).
		body, err := readBody(r, importBody)
		if err != nil {
			w.Header().Set(NodeHeader, rt.Node())
			h.fail(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		transport = behindRetry{next: h.fwd, body: body}
	}
	failed := false
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(ForwardedHeader, rt.Node())
			// This node judged the page and Host already (guard); the
			// owner must not judge them again against its own origin,
			// where a page of this node's would look cross-site. The
			// bearer token goes on: the owner checks it too.
			for _, k := range []string{"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User", RedirectHeader} {
				pr.Out.Header.Del(k)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(ForwardedHeader, rt.Node())
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			failed = true
			w.Header().Set(NodeHeader, rt.Node())
			h.fail(w, r, fmt.Errorf("%w: %v", ErrOwnerUnreachable, err))
		},
		Transport: transport,
	}
	p.ServeHTTP(w, r)
	h.o.Metrics.forwarded(!failed)
}

// Retries of a forwarded import the owner refused as behind: after
// behindFirstWait, doubling, behindRetries times (about 1.5 s in all, a
// lease round at the shortest lease).
const (
	behindRetries   = 4
	behindFirstWait = 100 * time.Millisecond
)

// behindRetry sends a forwarded request whose body it holds, and sends it
// again while the owner answers 503 behind: the owner appended nothing
// then, so a repeat is safe, and another node's appends are caught up
// by the owner's next lease round (or its own retry) meanwhile.
type behindRetry struct {
	next http.RoundTripper
	body []byte
}

func (b behindRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	wait := behindFirstWait
	for try := 0; ; try++ {
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(b.body))
		out.ContentLength = int64(len(b.body))
		resp, err := b.next.RoundTrip(out)
		if err != nil || try == behindRetries || !answeredBehind(resp) {
			return resp, err
		}
		resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// answeredBehind reports whether resp is a 503 behind; it leaves the
// body to be read whole either way.
func answeredBehind(resp *http.Response) bool {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	var eb errorBody
	return json.Unmarshal(head, &eb) == nil && eb.Code == "behind"
}

// redirectAsked reports whether the client asked for a redirect rather
// than a forward (RedirectHeader: true).
func redirectAsked(r *http.Request) bool {
	b, err := strconv.ParseBool(r.Header.Get(RedirectHeader))
	return err == nil && b
}

// write runs fn, a write of r's user, through the cluster node if any.
func (h *Handler) write(r *http.Request, fn func() error) error {
	if h.o.Router == nil {
		return fn()
	}
	return h.o.Router.Write(r.Context(), r.PathValue("user"), fn)
}

// retryable reports the errors answered with 503 and Retry-After.
func retryable(err error) bool {
	for _, e := range []error{ErrNoOwner, ErrDraining, ErrForwardLoop, ErrOwnerUnreachable, ErrBehind, ErrLogUnavailable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// forwardTransport is http.DefaultTransport's configuration without its
// proxy: a forward goes straight to another node of the cluster, and an
// HTTP_PROXY of the environment must not see the requests (and their
// bearer token) between nodes. Connecting is bounded, so a dead owner is
// a prompt 503 owner_unreachable.
func forwardTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return t
}
