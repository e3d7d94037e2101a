package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

func (a *app) usersCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "users",
		Short: "List the users the store holds (tell a mistyped --user from an empty memory)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				us, err := e.Users(cmd.Context())
				if err != nil {
					return err
				}
				if a.json {
					if us == nil {
						us = []string{}
					}
					return a.printJSON(us)
				}
				if len(us) == 0 {
					fmt.Fprintln(a.io.Out, "no users yet")
				}
				for _, u := range us {
					fmt.Fprintln(a.io.Out, u)
				}
				return nil
			})
		},
	}
}
