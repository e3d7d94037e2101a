// Command memor-server is memor's MCP server over stdio, for agent hosts
// such as Claude Desktop and Cursor. It is `memor mcp` under its own name:
// the same flags (--db) and environment (MEMOR_DB, MEMOR_LOG) apply.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/memor-db/memor/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.RunServer(ctx, os.Args[1:], cli.StdIO())
	stop()
	os.Exit(code)
}
