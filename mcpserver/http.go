package mcpserver

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor"
)

// NewHTTPHandler returns the tools of [New] over MCP's streamable HTTP
// transport, for several hosts (Claude Desktop, Cursor, ...) sharing one
// engine through one server.
//
// It serves the transport statelessly, each POST a whole exchange answered
// with application/json: the tools need nothing from the client between
// calls (no sampling, no elicitation), so the server keeps no session,
// no idle stream outlives a request (a GET is 405, which clients take as
// "no server-initiated stream"), and a restarted server serves a client's
// next call without it having to initialize again.
//
// The handler does no access control of its own: mount it behind
// [server.Options.MCP] (at [server.MCPPath]), whose Handler applies the same Host, Origin,
// Sec-Fetch-Site and bearer token checks as every /v1 route. The SDK's own
// Host check is off for that reason: beyond loopback the token guards (as
// for /v1), where the SDK would refuse a proxy's request by its Host.
//
// Safe for concurrent use, as the engine is.
func NewHTTPHandler(e *memor.Engine, o Options) http.Handler {
	s := New(e, o)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		Logger:                     o.Logger,
		DisableLocalhostProtection: true,
	})
}
