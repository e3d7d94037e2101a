package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

func (a *app) addCmd() *cobra.Command {
	var at, speaker string
	cmd := &cobra.Command{
		Use:   "add [TEXT...]",
		Short: "Remember what the user said (text from the arguments, or stdin)",
		Example: `  memor add "I live in San Francisco." --at 2026-01-10
  echo "I just moved to Seattle." | memor add --at 2026-07-11
  memor add --speaker Caroline "I play acoustic guitar."`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			when, err := parseTime(cmd, "at", at, time.Time{})
			if err != nil {
				return err
			}
			text := strings.Join(args, " ")
			if len(args) == 0 || text == "-" {
				data, err := io.ReadAll(io.LimitReader(a.io.In, 16<<20))
				if err != nil {
					return fmt.Errorf("reading stdin: %w", err)
				}
				text = string(data)
			}
			text = strings.TrimSpace(text)
			if text == "" {
				return usage(cmd, "nothing to add: pass the text as arguments or on stdin")
			}
			var ds []memor.Decision
			opts := []memor.AddOption{memor.Decisions(&ds)}
			if !when.IsZero() {
				opts = append(opts, memor.At(when))
			}
			if cmd.Flags().Changed("speaker") {
				opts = append(opts, memor.Speaker(speaker))
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				ep, err := e.Add(cmd.Context(), a.user, text, opts...)
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(newAddReport(ep, ds))
				}
				printAdd(a.io.Out, a.user, ep, ds)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "when it was said (default now)")
	cmd.Flags().StringVar(&speaker, "speaker", "", "who said it, in a conversation of several people: their first person is about NAME, not the user (default: the user)")
	return cmd
}

func (a *app) queryCmd() *cobra.Command {
	var k int
	var valid, known string
	var explain bool
	var minSupport float64
	cmd := &cobra.Command{
		Use:   "query QUESTION...",
		Short: "Ask the memory: ranked facts and episodes, with graph paths",
		Example: `  memor query "What kind of dog does my brother have?"
  memor query "Where do I live?" --valid 2026-02-01
  memor query "What kind of dog does my brother have?" --explain
  memor query "What did I say about the launch?" --min-support -1`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			o := memor.QueryOptions{K: k, Explain: explain, MinSupport: minSupport}
			if math.IsNaN(minSupport) || math.IsInf(minSupport, 0) || minSupport > 1 {
				return usage(cmd, "--min-support must be at most 1 (0: the default, negative: never answer nothing known)")
			}
			if o.ValidAt, err = parseTime(cmd, "valid", valid, time.Time{}); err != nil {
				return err
			}
			if o.KnownAt, err = parseTime(cmd, "known", known, time.Time{}); err != nil {
				return err
			}
			if k < 1 {
				return usage(cmd, "--k must be at least 1")
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				rs, err := e.Query(cmd.Context(), a.user, strings.Join(args, " "), o)
				if err != nil {
					return err
				}
				if a.json {
					if rs == nil {
						rs = []memor.Result{}
					}
					return a.printJSON(rs)
				}
				if !o.ValidAt.IsZero() || !o.KnownAt.IsZero() {
					// Say which instant each axis was, as asof does.
					v, k := "now", "now"
					if !o.ValidAt.IsZero() {
						v = when(o.ValidAt)
					}
					if !o.KnownAt.IsZero() {
						k = instant(o.KnownAt)
					}
					fmt.Fprintf(a.io.Out, "true at %s (valid time), as memor knew it at %s (known time)\n", v, k)
				}
				if len(rs) == 0 {
					fmt.Fprintln(a.io.Out, "nothing relevant is known")
				}
				if explain && len(rs) > 0 && rs[0].Explanation != nil {
					fmt.Fprint(a.io.Out, rs[0].Explanation.Query.String())
				}
				for i, r := range rs {
					fmt.Fprintf(a.io.Out, "%2d. %-50s %.3f", i+1, r.Text(), r.Score)
					if r.Fact != nil {
						fmt.Fprintf(a.io.Out, "  %s", span(r.Fact.ValidFrom, r.Fact.ValidTo))
					}
					fmt.Fprintln(a.io.Out)
					if r.Explanation != nil {
						for _, line := range strings.SplitAfter(strings.TrimRight(r.Explanation.String(), "\n"), "\n") {
							fmt.Fprint(a.io.Out, "    "+line)
						}
						fmt.Fprintln(a.io.Out)
					} else if r.Path != "" {
						fmt.Fprintf(a.io.Out, "    path: %s\n", r.Path)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVarP(&k, "k", "k", 10, "how many results")
	cmd.Flags().StringVar(&valid, "valid", "", "true at this time (default now)")
	cmd.Flags().StringVar(&known, "known", "", "as memor knew it at this time (default now)")
	cmd.Flags().BoolVar(&explain, "explain", false, "say why each result ranked where it did")
	cmd.Flags().Float64Var(&minSupport, "min-support", 0, "answer nothing known when no result explains this share of the question (0: memor.DefaultMinSupport, negative: never)")
	return cmd
}

func (a *app) stateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "state",
		Short: "What is true now: every current fact of the user",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.facts(func(e *memor.Engine) ([]memor.Fact, error) { return e.State(cmd.Context(), a.user) }, false)
		},
	}
}

func (a *app) historyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history [SUBJECT] PREDICATE",
		Short: "Every version of a fact: valid time, belief time, status and rule",
		Long: `history lists every version memor ever held of (SUBJECT, PREDICATE), subject
"user" by default: when each value held in the world (valid), when memor
believed it (believed), and the resolution rule that produced the version.`,
		Example: `  memor history lives_in
  memor history Alex has_pet`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			subject, predicate := "user", args[0]
			if len(args) == 2 {
				subject, predicate = args[0], args[1]
			}
			return a.facts(func(e *memor.Engine) ([]memor.Fact, error) {
				return e.History(cmd.Context(), a.user, subject, predicate)
			}, true)
		},
	}
}

func (a *app) conflictsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "conflicts",
		Short: "Contested facts held for review, never served as state",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.facts(func(e *memor.Engine) ([]memor.Fact, error) { return e.Conflicts(cmd.Context(), a.user) }, true)
		},
	}
}

// facts runs a fact-listing read and prints the result.
func (a *app) facts(read func(*memor.Engine) ([]memor.Fact, error), belief bool) error {
	return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
		fs, err := read(e)
		if err != nil {
			return err
		}
		if a.json {
			if fs == nil {
				fs = []memor.Fact{}
			}
			return a.printJSON(fs)
		}
		if len(fs) == 0 {
			fmt.Fprintln(a.io.Out, "nothing known")
			return nil
		}
		a.printFacts(fs, belief)
		return nil
	})
}

func (a *app) correctCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "correct FACT_ID",
		Short:   "Retract a fact that was never true; what it replaced is restored",
		Example: "  memor state            # find the ID\n  memor correct 3f1c…",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				if err := e.Correct(cmd.Context(), a.user, args[0]); err != nil {
					return err
				}
				return a.done(map[string]string{"corrected": args[0]}, "retracted "+args[0])
			})
		},
	}
}

func (a *app) acceptCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "accept FACT_ID",
		Short:   "Accept a contested fact: it is the value in force from its valid time",
		Example: "  memor conflicts        # find the ID\n  memor accept 3f1c…",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				if err := e.Accept(cmd.Context(), a.user, args[0]); err != nil {
					return err
				}
				return a.done(map[string]string{"accepted": args[0]}, "accepted "+args[0])
			})
		},
	}
}

func (a *app) forgetCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "forget --yes",
		Short: "Hard-delete everything about the user (GDPR erasure)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return usage(cmd, "forget deletes every episode and fact of user %q for good: confirm with --yes", a.user)
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				if err := e.Forget(cmd.Context(), a.user); err != nil {
					return err
				}
				if c, err := a.loadConfig(); err == nil && c.get("store.kek_file") != "" {
					fmt.Fprintln(a.io.Err, "memor: the store is encrypted: run 'memor kek rotate NEW_FILE', then destroy the old KEK, to leave nothing of "+a.user+" readable")
				}
				return a.done(map[string]string{"forgotten": a.user}, "forgot everything about "+a.user)
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")
	return cmd
}

func (a *app) pruneCmd() *cobra.Command {
	var before string
	cmd := &cobra.Command{
		Use:   "prune --before TIME",
		Short: "Move versions no longer believed before TIME to the archive (all users)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before == "" {
				return usage(cmd, "--before is required")
			}
			t, err := parseTime(cmd, "before", before, time.Time{})
			if err != nil {
				return err
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				n, err := e.Prune(cmd.Context(), t)
				if err != nil {
					return err
				}
				return a.done(map[string]int{"archived": n}, fmt.Sprintf("archived %d versions", n))
			})
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "archive versions that stopped being believed before this time")
	return cmd
}

func (a *app) rebuildCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "rebuild [--all]",
		Short: "Replay the episode log and recompute facts and indexes (the user, or --all)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bar := a.progressIn("rebuild", "episodes")
			ctx := cmd.Context()
			if bar != nil {
				ctx = memor.WithProgress(ctx, bar.report)
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				users := []string{a.user}
				if all {
					var err error
					if users, err = e.Users(cmd.Context()); err != nil {
						return err
					}
				}
				for _, u := range users {
					if err := e.Rebuild(ctx, u); err != nil {
						bar.finish()
						return fmt.Errorf("rebuild %q: %w", u, err)
					}
				}
				bar.finish()
				return a.done(map[string]int{"users": len(users)}, fmt.Sprintf("rebuilt %d user(s)", len(users)))
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "rebuild every user")
	return cmd
}

func (a *app) checkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify every index and fact against the episode log (exit 1 on a finding)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bar := a.progressIn("check", "users")
			ctx := cmd.Context()
			if bar != nil {
				ctx = memor.WithProgress(ctx, bar.report)
			}
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				err := e.Check(ctx)
				bar.finish()
				if err != nil && !errors.Is(err, memor.ErrCheck) {
					return err
				}
				var findings []string
				if err != nil {
					for _, line := range strings.Split(err.Error(), "\n") {
						if line != "" && line != memor.ErrCheck.Error() {
							findings = append(findings, line)
						}
					}
				}
				if a.json {
					if findings == nil {
						findings = []string{}
					}
					if perr := a.printJSON(map[string]any{"ok": err == nil, "findings": findings}); perr != nil {
						return perr
					}
				} else if err == nil {
					fmt.Fprintln(a.io.Out, "ok: every index and fact agrees with the episode log")
				} else {
					for _, f := range findings {
						fmt.Fprintln(a.io.Out, f)
					}
				}
				if err != nil {
					return fmt.Errorf("%w: %d finding(s)", memor.ErrCheck, len(findings))
				}
				return nil
			})
		},
	}
}

// done prints the outcome of a write command.
func (a *app) done(v any, human string) error {
	if a.json {
		return a.printJSON(v)
	}
	fmt.Fprintln(a.io.Out, human)
	return nil
}
