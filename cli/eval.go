package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor/eval"
)

func (a *app) evalCmd() *cobra.Command {
	var convs string
	var limit int
	var minSupport float64
	cmd := &cobra.Command{
		Use:   "eval PATH",
		Short: "Measure retrieval on conversations with known evidence (BEAM folder or JSON Lines)",
		Long: `eval builds a temporary store per conversation of PATH (a BEAM folder of
N/chat.json and N/probing_questions.json, or a JSON Lines file: see the
README), asks every question with evidence through Query, and prints
recall@5/10/20 per question type for memor, each of its signals alone, BM25
over the raw turns and the most recent messages. --db is not used.`,
		Example: `  memor eval ../shared/datasets/beam-100k --conversations 1,2,3
  memor eval my-chats.jsonl --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usage(cmd, "--limit must be at least 0")
			}
			cs, err := eval.Load(args[0])
			if err != nil {
				return err
			}
			var names []string
			for _, n := range strings.Split(convs, ",") {
				if n = strings.TrimSpace(n); n != "" {
					names = append(names, n)
				}
			}
			if cs, err = eval.Select(cs, names, limit); err != nil {
				return usage(cmd, "%v", err)
			}
			r, err := eval.Run(cmd.Context(), cs, eval.Options{MinSupport: minSupport, Progress: func(c string, done, total int) {
				fmt.Fprintf(a.io.Err, "conversation %s done (%d/%d)\n", c, done, total)
			}})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(r)
			}
			return r.WriteTable(a.io.Out)
		},
	}
	cmd.Flags().StringVar(&convs, "conversations", "", "comma-separated conversation names to run (default all)")
	cmd.Flags().IntVar(&limit, "limit", 0, "run only the first N conversations (0 = all)")
	cmd.Flags().Float64Var(&minSupport, "min-support", 0, "memor's abstention threshold (QueryOptions.MinSupport; 0 = default, negative = never abstain)")
	return cmd
}
