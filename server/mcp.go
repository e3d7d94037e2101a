package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// mcpRouted serves MCPPath on a cluster node. A tools/call naming a user
// (its arguments' user_id) is served by the user's owner, as a route of
// that user is: here, or forwarded (or redirected). Every other message
// (initialize, tools/list, ping, a call without a user) is answered here:
// its answer is the same on every node. The transport is stateless
// (mcpserver.NewHTTPHandler): each POST is a whole exchange and no node
// keeps a session, so the owner answers a forwarded call as it would a
// client's own. A JSON-RPC batch is refused, its calls possibly of users
// of several owners.
func (h *Handler) mcpRouted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set(NodeHeader, h.o.Router.Node())
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r, "MCP message")
		if err != nil {
			w.Header().Set(NodeHeader, h.o.Router.Node())
			h.fail(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		user, batch := mcpUser(body)
		if batch {
			w.Header().Set(NodeHeader, h.o.Router.Node())
			h.fail(w, r, fmt.Errorf("%w: a cluster node takes one JSON-RPC message a POST at %s, not a batch", ErrBadRequest, MCPPath))
			return
		}
		if user == "" {
			w.Header().Set(NodeHeader, h.o.Router.Node())
			next.ServeHTTP(w, r)
			return
		}
		h.serveUser(w, r, user, next.ServeHTTP)
	})
}

// mcpUser returns the user_id argument of a tools/call message, "" for
// any other message (or one that does not parse: the MCP handler answers
// it), and whether body is a batch. Keys match exactly, as the MCP SDK
// matches them.
func mcpUser(body []byte) (user string, batch bool) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return "", true
	}
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	var args map[string]json.RawMessage
	var method string
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != "tools/call" ||
		json.Unmarshal(msg["params"], &params) != nil || json.Unmarshal(params["arguments"], &args) != nil ||
		json.Unmarshal(args["user_id"], &user) != nil {
		return "", false
	}
	return user, false
}

// MCPThrough is mcpserver.Options.Through for a cluster node routed by
// rt: a write runs through rt.Write, as the HTTP routes' writes do; a read
// runs only where rt says this node serves the user. /mcp sends a call to
// the user's owner already (mcpRouted); this refuses a call that reached
// a node that no longer serves the user (its shard moved meanwhile) with
// the routing error, rather than answering from a stale copy.
func MCPThrough(rt Router) func(ctx context.Context, user string, write bool, fn func() error) error {
	return func(ctx context.Context, user string, write bool, fn func() error) error {
		if write {
			return rt.Write(ctx, user, fn)
		}
		addr, err := rt.Read(ctx, user, fn)
		if err != nil {
			return err
		}
		if addr != "" {
			return fmt.Errorf("%w: node %s does not serve this user (its owner is at %s)", ErrForwardLoop, rt.Node(), addr)
		}
		return nil
	}
}
