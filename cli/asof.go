package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

func (a *app) asOfCmd() *cobra.Command {
	var valid, known string
	var after uint64
	cmd := &cobra.Command{
		Use:   "asof",
		Short: "Time travel and audit: what was true at --valid, as known at --known",
		Long: `asof answers on two time axes. --valid is valid time: the moment in the
world the facts are true at ("where did I live in February?"). --known is
known (transaction) time: what memor believed at that moment of its own
clock ("what did the agent believe when it answered?"). memor learns a fact
when it is added, whatever --at said, so --known before the first add knows
nothing; --known-after N audits what memor believed right after it recorded
episode N.`,
		Example: `  memor asof --valid 2026-02-01                       # where did I live then?
  memor asof --valid 2026-08-01 --known-after 1       # what did we believe before hearing of the move?`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now().UTC()
			v, err := parseTime(cmd, "valid", valid, now)
			if err != nil {
				return err
			}
			k, err := parseTime(cmd, "known", known, now)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("known-after") && cmd.Flags().Changed("known") {
				return usage(cmd, "--known and --known-after both set the known time: pass one")
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				var eps []memor.Episode
				if cmd.Flags().Changed("known-after") || !a.json {
					if eps, err = e.Episodes(cmd.Context(), a.user); err != nil {
						return err
					}
				}
				knownNote := "(known time)"
				if cmd.Flags().Changed("known-after") {
					i := -1
					for j, ep := range eps {
						if ep.Seq == after {
							i = j
						}
					}
					if i < 0 {
						return usage(cmd, "--known-after %d: user %q has no episode %d (they have %d)", after, a.user, after, len(eps))
					}
					k = eps[i].RecordedAt
					knownNote = fmt.Sprintf("(known time: right after episode %d)", after)
				}
				fs, err := e.AsOf(cmd.Context(), a.user, v, k)
				if err != nil {
					return err
				}
				if a.json {
					if fs == nil {
						fs = []memor.Fact{}
					}
					return a.printJSON(fs)
				}
				fmt.Fprintf(a.io.Out, "true at %s (valid time), as memor knew it at %s %s\n", when(v), instant(k), knownNote)
				if len(fs) == 0 {
					fmt.Fprint(a.io.Out, "nothing known")
					if len(eps) > 0 && k.Before(eps[0].RecordedAt) {
						fmt.Fprintf(a.io.Out, ": memor first heard from %s at %s, after that known time", a.user, instant(eps[0].RecordedAt))
					}
					fmt.Fprintln(a.io.Out)
					return nil
				}
				a.printFacts(fs, false)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&valid, "valid", "", "the moment in the world (default now)")
	cmd.Flags().StringVar(&known, "known", "", "what memor knew at this moment of its clock (default now)")
	cmd.Flags().Uint64Var(&after, "known-after", 0, "what memor knew right after it recorded episode N (instead of --known)")
	return cmd
}
