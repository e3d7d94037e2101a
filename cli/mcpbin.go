package cli

import (
	"context"
	"os"
	"strings"
)

// RunServer is the command line of memor-server: `memor mcp` under its
// own name, so that its --help, --version and errors say memor-server.
func RunServer(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if stdio.In == nil {
		stdio.In = strings.NewReader("")
	}
	a := &app{io: stdio}
	root := a.mcpCmd()
	root.Use = "memor-server"
	root.Short = "memor-server: memor's MCP server over stdio, for Claude Desktop, Cursor and other agent hosts"
	root.Long = strings.Replace(root.Long, "mcp speaks", "memor-server (the same as 'memor mcp') speaks", 1)
	root.Version = version()
	root.SilenceErrors, root.SilenceUsage = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	a.globalFlags(root)
	return a.execute(ctx, root, args)
}
