package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

// demoStory is what the demo user says, and when.
var demoStory = []struct{ at, text string }{
	{"2026-01-10", "I live in San Francisco."},
	{"2026-03-02", "My brother Alex adopted a golden retriever named Buddy last month."},
	{"2026-07-11", "I just moved to Seattle."},
}

const demoQuestion = "What kind of dog does my brother have?"

func (a *app) demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Play a short story and show what memor makes of it (temporary store unless --db)",
		Long: `demo tells memor three things a user said over six months, then shows the
current state, a time-travel answer, the audit trail of a move, and a
multi-hop answer with its graph path. It uses a temporary store, deleted
afterwards, unless --db is given on the command line.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, keep := a.db, true
			if !cmd.Flags().Changed("db") {
				tmp, err := os.MkdirTemp("", "memor-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir, keep = tmp, false
			}
			user := a.user
			if !cmd.Flags().Changed("user") {
				user = "me"
			}
			e, err := memor.Open(dir, memor.Options{NoSync: !keep})
			if err != nil {
				return err
			}
			defer e.Close()
			return a.demo(cmd, e, dir, keep, user)
		},
	}
}

func (a *app) demo(cmd *cobra.Command, e *memor.Engine, dir string, keep bool, user string) error {
	ctx, w := cmd.Context(), a.io.Out
	where := "temporary, deleted on exit"
	if keep {
		where = "kept"
	}
	fmt.Fprintf(w, "memor demo: a memory that knows when things were true\nstore: %s (%s), user %q\n\n", dir, where, user)

	fmt.Fprintln(w, "The user says, over six months:")
	for _, s := range demoStory {
		at, _ := time.Parse(time.DateOnly, s.at)
		if _, err := e.Add(ctx, user, s.text, memor.At(at), memor.Sync()); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  %q\n", s.at, s.text)
	}

	state, err := e.State(ctx, user)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWhat is true now                                   (memor state)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range state {
		fmt.Fprintf(tw, "  %s\t%s\n", f, span(f.ValidFrom, f.ValidTo))
	}
	tw.Flush()

	feb, _ := time.Parse(time.DateOnly, "2026-02-01")
	then, err := e.AsOf(ctx, user, feb, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWhere did I live on 2026-02-01?                    (memor asof --valid 2026-02-01)")
	found := false
	for _, f := range then {
		if f.Predicate == "lives_in" {
			fmt.Fprintf(w, "  %s   (%s)\n", f.Object, span(f.ValidFrom, f.ValidTo))
			found = true
		}
	}
	if !found {
		fmt.Fprintln(w, "  nothing known")
	}

	hist, err := e.History(ctx, user, "user", "lives_in")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nAudit trail of the move: nothing overwritten       (memor history lives_in)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  VALUE\tTRUE IN THE WORLD\tMEMOR'S BELIEF\tRULE")
	for _, f := range hist {
		belief := "current"
		if !f.ExpiredAt.IsZero() {
			belief = "revised by a later episode"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Object, span(f.ValidFrom, f.ValidTo), belief, f.Rule)
	}
	tw.Flush()

	// The multi-hop answer: the best result that was reached through the
	// graph, else the best result.
	rs, err := e.Query(ctx, user, demoQuestion, memor.QueryOptions{K: 3})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%-51s(memor query)\n", demoQuestion)
	if len(rs) == 0 {
		fmt.Fprintln(w, "  nothing relevant is known")
	} else {
		best := rs[0]
		for _, r := range rs {
			if r.Path != "" {
				best = r
				break
			}
		}
		fmt.Fprintf(w, "  %s\n", best.Text())
		if best.Path != "" {
			fmt.Fprintf(w, "  path: %s\n", best.Path)
		}
	}

	db := ""
	if keep {
		db = " --db " + shellQuote(dir)
	}
	fmt.Fprintf(w, "\nTry it on your own memory:\n  memor%s add \"I started working at Acme.\"\n  memor%s state\n", db, db)
	return nil
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " '\"$\\") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
