package cli

import (
	"fmt"
	"net"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/server"
	"github.com/memor-db/memor/studio"
)

func (a *app) studioCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "studio",
		Short: "Inspect the store in a browser: timelines on both clocks, episodes, query explain, conflicts, graph",
		Long: `studio opens an existing store and serves memor studio, a local web
inspector, at /studio/ on loopback (what 'memor serve' also mounts), and
prints its URL. For each user: a timeline of every fact version over valid
time, stacked by transaction time, with the rule that made each; two
sliders, "true at" and "as believed on", that redraw the state of that
moment (the URL keeps both instants); the episode log with its decisions
and a Retry of failed ones; a query explained signal by signal with the
Context block; contested facts beside the value in force; the entity graph
with a query's path; Forget with a dry run.

The studio has the API's rules: loopback only unless MEMOR_TOKEN is set,
foreign Host, Origin and cross-site requests refused, actions that change
the store (Retry, retracting a fact, Forget) are JSON POSTs. With
MEMOR_TOKEN the printed URL logs the browser in once (a SameSite=Strict
cookie scoped to /studio/). With --user the URL opens that user's timeline.`,
		Example: `  memor studio
  memor studio --user alice --addr 127.0.0.1:7421`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := a.io.Getenv("MEMOR_TOKEN")
			if !server.Loopback(addr) && token == "" {
				return usage(cmd, "--addr %s is reachable from other machines: set MEMOR_TOKEN to a secret bearer token, or bind 127.0.0.1", addr)
			}
			if token != "" && len(token) < server.MinTokenBytes {
				return usage(cmd, "MEMOR_TOKEN is %d bytes, shorter than %d: use a random one, e.g. MEMOR_TOKEN=$(openssl rand -hex 16)", len(token), server.MinTokenBytes)
			}
			logger, err := a.logger(cmd)
			if err != nil {
				return err
			}
			// The store must exist: the studio inspects, it does not
			// create (a mistyped --db is an error, not an empty store).
			e, err := a.open(memor.Options{Logger: logger})
			if err != nil {
				return err
			}
			ln, err := (&net.ListenConfig{}).Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				e.Close()
				return fmt.Errorf("cannot listen on %s: %w", addr, err)
			}
			dir, _ := a.dbPath()
			path := studio.Prefix
			if cmd.Flags().Changed("user") {
				path = studio.UserURL(a.user, "")
			}
			serr := server.Serve(cmd.Context(), e, ln, server.ServeOptions{
				Options: server.Options{Token: token, Logger: logger, Version: version(),
					Studio: studio.New(e, studio.Options{Logger: logger})},
				OnListen: func(ad net.Addr) {
					fmt.Fprintln(a.io.Out, studioURL(ad, path, token))
					fmt.Fprintf(a.io.Err, "memor studio: serving store %s at http://%s%s; open the URL above in a browser; Ctrl-C to stop\n", dir, ad, path)
				},
			})
			if cerr := closeWithin(e, closeTimeout); serr == nil {
				serr = cerr
			}
			return serr
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7421", "listen address host:port (port 0: any free port)")
	return cmd
}

// studioURL is the address to open: with a token, the login route, which
// sets the session cookie and sends the browser on to path.
func studioURL(ad net.Addr, path, token string) string {
	base := "http://" + ad.String()
	if token == "" {
		return base + path
	}
	// The login lands on the users list.
	return base + server.StudioPath + "login?token=" + url.QueryEscape(token)
}
