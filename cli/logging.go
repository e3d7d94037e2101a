package cli

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// logger is the servers' logger on stderr at the level MEMOR_LOG names
// (debug, info, warn, error; default warn). An unknown level is a usage
// error: a typo must not silence the logs asked for.
func (a *app) logger(cmd *cobra.Command) (*slog.Logger, error) {
	level := slog.LevelWarn
	if v := strings.TrimSpace(a.io.Getenv("MEMOR_LOG")); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, usage(cmd, "MEMOR_LOG=%q is not a log level: use debug, info, warn or error", v)
		}
	}
	return slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: level})), nil
}
