package cli

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/mcpserver"
	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/server"
)

func (a *app) serveCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (loopback only unless MEMOR_TOKEN is set)",
		Long: `serve answers the JSON API under /v1 and memortest's conformance contract
under /conformance/. It listens on loopback by default; any other address
needs a bearer token in MEMOR_TOKEN, which every request but /v1/health must
then send as "Authorization: Bearer <token>". On SIGINT or SIGTERM it stops
accepting, finishes requests in flight and applies every queued episode.`,
		Example: `  memor serve
  MEMOR_TOKEN=$(openssl rand -hex 16) memor serve --addr 0.0.0.0:7420`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := a.io.Getenv("MEMOR_TOKEN")
			if !server.Loopback(addr) && token == "" {
				return usage(cmd, "--addr %s is reachable from other machines: set MEMOR_TOKEN to a secret bearer token, or bind 127.0.0.1", addr)
			}
			logger := slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
			e, err := a.open(memor.Options{Logger: logger})
			if err != nil {
				return err
			}
			dir, _ := a.dbPath()
			serr := server.ListenAndServe(cmd.Context(), e, server.ServeOptions{
				Options: server.Options{Token: token, Logger: logger, Version: version()},
				Addr:    addr,
				OnListen: func(ad net.Addr) {
					fmt.Fprintf(a.io.Err, "memor: serving http://%s (store %s); Ctrl-C to stop\n", ad, dir)
				},
			})
			// The shutdown is bounded (ServeOptions.ShutdownTimeout);
			// closing must be too, or a write that never returns would
			// keep the process alive after SIGTERM.
			if cerr := closeWithin(e, closeTimeout); serr == nil {
				serr = cerr
			}
			return serr
		},
	}
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "listen address host:port")
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
			level := slog.LevelWarn
			if err := level.UnmarshalText([]byte(a.io.Getenv("MEMOR_LOG"))); err != nil {
				level = slog.LevelWarn
			}
			logger := slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: level}))
			return a.withEngine(memor.Options{Logger: logger}, func(e *memor.Engine) error {
				s := mcpserver.New(e, mcpserver.Options{Version: version(), Logger: logger})
				err := s.Run(cmd.Context(), &mcp.StdioTransport{})
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
by 'memor serve' under /conformance), and prints the report table. MEMOR_TOKEN,
if set, is sent as a bearer token. Exit 1 with --strict if any case fails.`,
		Example: `  memor serve &
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
			t, err := memortest.Report(cmd.Context(), map[string]memortest.Backend{name: memortest.HTTPBackend(base, client)})
			if err != nil {
				return err
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
