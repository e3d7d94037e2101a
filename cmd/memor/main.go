// Command memor is memor's command line: add, query, time travel, audit,
// import/export, the HTTP API (serve), the MCP server (mcp) and a demo.
// Run `memor --help`; the commands live in package cli.
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
	code := cli.Run(ctx, os.Args[1:], cli.StdIO())
	stop()
	os.Exit(code)
}
