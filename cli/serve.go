package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/mcpserver"
	"github.com/memor-db/memor/memortest/backend"
	"github.com/memor-db/memor/memortest/suite"
	"github.com/memor-db/memor/server"
	"github.com/memor-db/memor/studio"
)

func (a *app) serveCmd() *cobra.Command {
	var addr string
	var origins []string
	var conformance, exposeMetrics bool
	var cf clusterFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and MCP over HTTP (loopback only unless MEMOR_TOKEN is set)",
		Long: `serve answers the JSON API under /v1, and MCP's tools (those of 'memor mcp')
over the streamable HTTP transport at /mcp, so that several MCP hosts share
one store. It listens on loopback by default; any other address needs a
bearer token of at least 16 bytes in MEMOR_TOKEN, which every request but
/v1/health (/mcp included) must then send as "Authorization: Bearer
<token>". Bodies must be sent as Content-Type: application/json.

Web pages cannot use it: a request from a page (an Origin header that is not
this server's, or Sec-Fetch-Site cross-site) is refused with 403 unless
--allow-origin names the page's origin, and on loopback a request whose Host
is not localhost, 127.0.0.1 or [::1] is refused (DNS rebinding).

/studio/ serves memor studio, the web inspector (see 'memor studio'),
except on a cluster node.

--conformance also serves memortest's contract under /conformance/ for
'memor conformance', for suite users (memortest/...) only.

GET /metrics answers in the Prometheus text format (requests per route,
episodes, fsyncs, index cache, query latency per signal), behind the same
token and origin checks; beyond loopback only with --metrics.

On SIGINT or SIGTERM it stops accepting, finishes requests in flight and
applies every queued episode.

--cluster joins a memor cluster (see the README, Running a cluster): the
episode log is a NATS JetStream stream, users hash to --shards shards, and
this node serves the shards whose leases it holds. A request for a user of
another node's shard is forwarded to that node's advertised address (from
the cluster's node registry), or answered with a 307 redirect to it when
the request carries "Memor-Redirect: true"; answers name the node that
served them (Memor-Node). So is an MCP tool call naming a user, and
GET /v1/users lists every user of the cluster; a cluster node answers
/studio/ and /conformance/ with 501 not_in_cluster. Every node needs the same --shards,
--log-kek-file and MEMOR_TOKEN. On SIGINT or SIGTERM a cluster node also
hands its shards over (drain) before exiting.`,
		Example: `  memor serve
  memor serve --allow-origin http://localhost:3000
  MEMOR_TOKEN=$(openssl rand -hex 16) memor serve --addr 0.0.0.0:7420
  memor serve --db n1 --addr 127.0.0.1:7421 --cluster nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224 --node-id m1 --log-kek-file log.kek`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := a.io.Getenv("MEMOR_TOKEN")
			if !server.Loopback(addr) && token == "" {
				return usage(cmd, "--addr %s is reachable from other machines: set MEMOR_TOKEN to a secret bearer token, or bind 127.0.0.1", addr)
			}
			if cf.urls != "" && conformance {
				return usage(cmd, "--conformance is not served by a cluster node (/conformance/ answers 501 not_in_cluster): run the suite against a single-node store")
			}
			if token != "" && len(token) < server.MinTokenBytes {
				return usage(cmd, "MEMOR_TOKEN is %d bytes, shorter than %d: use a random one, e.g. MEMOR_TOKEN=$(openssl rand -hex 16)", len(token), server.MinTokenBytes)
			}
			for i, o := range origins {
				n, err := server.NormalizeOrigin(o)
				if err != nil {
					return usage(cmd, "--allow-origin %q is not an origin: want scheme://host[:port], e.g. https://app.example or http://localhost:3000", o)
				}
				origins[i] = n
			}
			logger, err := a.logger(cmd)
			if err != nil {
				return err
			}
			metrics := serveMetrics(addr, exposeMetrics)
			eo := memor.Options{Logger: logger}
			if metrics != nil {
				eo.Observer = metrics
			}
			// Listen first: a store is created only for a server that
			// could start.
			ln, err := (&net.ListenConfig{}).Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w", addr, err)
			}
			var cn *clusterNode
			if cf.urls != "" {
				if cn, err = a.connectCluster(cmd.Context(), cmd, &cf, ln.Addr()); err != nil {
					ln.Close()
					return err
				}
				defer cn.close()
				cn.logger = logger
				eo.Log = cn.log
			}
			e, err := a.open(eo)
			if err != nil {
				ln.Close()
				return err
			}
			so := server.ServeOptions{
				Options: server.Options{Token: token, Logger: logger, Version: version(),
					AllowOrigins: origins, Conformance: conformance, Metrics: metrics},
				ExposeMetrics: exposeMetrics,
			}
			mo := mcpserver.Options{Version: version(), Logger: logger}
			dir, _ := a.dbPath()
			announce := fmt.Sprintf("store %s", dir)
			if cn != nil {
				if err := cn.join(cmd.Context(), e); err != nil {
					ln.Close()
					return errors.Join(fmt.Errorf("cli: join the cluster: %w", err), closeWithin(e, closeTimeout))
				}
				rt := nodeRouter{n: cn.node, log: cn.log}
				so.Router = rt
				so.Leave = cn.node.Drain
				mo.Through = server.MCPThrough(rt)
				announce += fmt.Sprintf(", cluster node %s of %s, advertised at %s", cf.node, cf.urls, cn.cfg.Addr)
			} else {
				// A cluster node serves no studio (server.ErrNotInCluster).
				so.Studio = studio.New(e, studio.Options{Logger: logger})
			}
			so.MCP = mcpserver.NewHTTPHandler(e, mo)
			so.OnListen = func(ad net.Addr) {
				fmt.Fprintf(a.io.Err, "memor: serving http://%s (%s); Ctrl-C to stop\n", ad, announce)
			}
			serr := server.Serve(cmd.Context(), e, ln, so)
			// The shutdown is bounded (ServeOptions.ShutdownTimeout);
			// closing must be too, or a write that never returns would
			// keep the process alive after SIGTERM.
			if cerr := closeWithin(e, closeTimeout); serr == nil {
				serr = cerr
			}
			if serr == nil {
				drained := ""
				if cn != nil {
					drained = ", shards handed over"
				}
				fmt.Fprintf(a.io.Err, "memor: stopped serving http://%s; every queued episode applied%s, store %s closed\n", ln.Addr(), drained, dir)
			}
			return serr
		},
	}
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "listen address host:port")
	cmd.Flags().StringArrayVar(&origins, "allow-origin", nil, "let web pages of this origin (scheme://host[:port]) call the API (repeatable)")
	cmd.Flags().BoolVar(&exposeMetrics, "metrics", false, "serve GET /metrics beyond loopback too (on loopback it is always served)")
	cf.register(cmd.Flags())
	cmd.Flags().BoolVar(&conformance, "conformance", false, "also serve memortest's contract under /conformance/ (suite users memortest/... only)")
	return cmd
}

// closeTimeout bounds how long serve waits for the store to close once the
// server has shut down.
const closeTimeout = 10 * time.Second

// closeWithin closes e, giving up after d: an operation that is still
// running then (a write stuck in an extractor that ignores its context)
// would keep the process alive. Every acknowledged write is durable
// already; what was not acknowledged is applied after the next open or
// was never stored.
func closeWithin(e *memor.Engine, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("memor: the store did not close within %v (an operation is still running); exiting anyway: every acknowledged write is durable", d)
	}
}

func (a *app) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP tools over stdio (what memor-server runs)",
		Long: `mcp speaks the Model Context Protocol on stdin and stdout for an agent host
(Claude Desktop, Cursor, ...). Protocol logs go to stderr only; set
MEMOR_LOG=debug for more of them. Tools: add_memory, query_memory,
get_user_profile, get_history, query_as_of, correct_memory, list_conflicts,
forget_memory.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := a.logger(cmd)
			if err != nil {
				return err
			}
			return a.withEngine(memor.Options{Logger: logger}, func(e *memor.Engine) error {
				s := mcpserver.New(e, mcpserver.Options{Version: version(), Logger: logger})
				// mcpserver.Transport answers a malformed line with a
				// JSON-RPC error and keeps serving, where the SDK's
				// StdioTransport ends the session.
				err := s.Run(cmd.Context(), &mcpserver.Transport{Reader: a.io.In, Writer: a.io.Out, Logger: logger})
				if cmd.Context().Err() != nil {
					return nil // asked to stop
				}
				if err != nil && strings.Contains(err.Error(), "EOF") {
					return nil // the client closed stdin: a normal end
				}
				return err
			})
		},
	}
}

func (a *app) conformanceCmd() *cobra.Command {
	var base, name string
	var strict bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "conformance --url URL",
		Short: "Run memortest's conformance suite against any server speaking its HTTP contract",
		Long: `conformance runs every memortest case against the memory at URL, which must
serve POST URL/add, URL/query and URL/reset (memortest's HTTP contract, served
by 'memor serve --conformance' under /conformance), and prints the report
table. The suite's users are sent as memortest/<user>: it never adds to,
reads or resets any other user, warns when the store holds some, and resets
its own when done. MEMOR_TOKEN, if set, is sent as a bearer token. Exit 1
with --strict if any case fails.`,
		Example: `  memor serve --conformance &
  memor conformance --url http://127.0.0.1:7420/conformance`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(base)
			if base == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usage(cmd, "--url must be an http(s) URL such as http://127.0.0.1:7420/conformance")
			}
			if name == "" {
				name = u.Host
			}
			client := &http.Client{Timeout: timeout}
			if tok := a.io.Getenv("MEMOR_TOKEN"); tok != "" {
				client.Transport = bearer{token: tok, next: http.DefaultTransport}
			}
			if err := preflight(cmd.Context(), client, base); err != nil {
				return err
			}
			a.warnOtherUsers(cmd.Context(), client, base)
			b := backend.HTTPBackend(base, client)
			t, err := suite.Report(cmd.Context(), map[string]backend.Backend{name: b})
			if err != nil {
				return err
			}
			// Leave nothing behind: reset every user the cases used.
			if err := resetSuiteUsers(cmd.Context(), b); err != nil {
				fmt.Fprintf(a.io.Err, "memor conformance: warning: cleaning up the suite's users: %v\n", err)
			}
			row := t.Rows[0]
			if a.json {
				if err := a.printJSON(map[string]any{"arm": row.Arm, "cases": row.Cases, "passed": row.Passed,
					"stale": row.Stale, "missed": row.Missed, "leaks": row.Leaks, "errors": row.Errors,
					"time_travel_ok": row.TimeTravelOK, "categories": row.Categories}); err != nil {
					return err
				}
			} else {
				fmt.Fprint(a.io.Out, t.Markdown())
				if row.Errors > 0 {
					for _, r := range row.Results {
						if r.Err != nil {
							fmt.Fprintf(a.io.Out, "\nfirst backend error (case %s): %v\n", r.Case.Name, r.Err)
							break
						}
					}
				}
			}
			if row.Errors > 0 {
				return fmt.Errorf("conformance: the server failed to answer %d of %d cases (see the first backend error above)", row.Errors, row.Cases)
			}
			if strict && row.Passed < row.Cases {
				return fmt.Errorf("conformance: %d of %d cases failed", row.Cases-row.Passed, row.Cases)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&base, "url", "", "base URL of the memory under test")
	cmd.Flags().StringVar(&name, "name", "", "row name in the report (default the URL's host)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 if any case fails")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "per-request timeout")
	return cmd
}

// warnOtherUsers asks a memor server (GET URL/status) how many users of
// its store are outside the suite's prefix and, if any, says on stderr
// that the suite leaves them alone. A server without that route (any other
// memory) is not asked twice and gets no warning.
func (a *app) warnOtherUsers(ctx context.Context, client *http.Client, base string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/status", nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var st struct {
		Prefix     string `json:"prefix"`
		OtherUsers int    `json:"other_users"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st) != nil || st.Prefix == "" {
		return
	}
	if st.OtherUsers > 0 {
		fmt.Fprintf(a.io.Err, "memor conformance: warning: the store behind %s holds %d user(s) outside %q; the suite does not touch them (it only adds to, reads and resets users under %q)\n",
			base, st.OtherUsers, st.Prefix, st.Prefix)
	}
}

// resetSuiteUsers resets every user of the built-in cases (through b,
// which puts them under memortest.UserPrefix).
func resetSuiteUsers(ctx context.Context, b backend.Backend) error {
	cases, err := suite.Cases()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range cases {
		users := []string{c.User}
		for _, t := range c.Turns {
			users = append(users, t.User)
		}
		for _, u := range users {
			if seen[u] {
				continue
			}
			seen[u] = true
			// A user the memory refuses (400) holds nothing to reset.
			if err := b.Reset(ctx, u); err != nil && !strings.Contains(err.Error(), "status 400") {
				return err
			}
		}
	}
	return nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
