// Package server is memor's HTTP API: JSON in and out, versioned under /v1,
// over one [memor.Engine].
//
// # Routes
//
//	POST   /v1/users/{user}/episodes              {"text", "at"?, "wait"?} → 202 queued, 201 applied, 200 repeated (Idempotency-Key)
//	GET    /v1/users/{user}/state                 current facts
//	GET    /v1/users/{user}/history?subject=&predicate=
//	GET    /v1/users/{user}/query?q=&k=&valid=&known=&explain=&min_support=
//	GET    /v1/users/{user}/asof?valid=&known=    what was believed at known to hold at valid
//	GET    /v1/users/{user}/conflicts             contested facts
//	GET    /v1/users/{user}/freshness             ingestion watermark
//	GET    /v1/users/{user}/export                the user's backup (application/x-ndjson, streamed)
//	POST   /v1/users/{user}/import                restore a backup of the user → memor.ImportSummary
//	POST   /v1/users/{user}/facts/{id}/correct    the fact was never true
//	POST   /v1/users/{user}/facts/{id}/accept     the contested fact is the value in force (rule accept)
//	DELETE /v1/users/{user}                       hard delete (GDPR)
//	GET    /v1/health
//	GET    /metrics                               Prometheus text format (Options.Metrics only; see Metrics)
//	POST   /conformance/{add,query,reset}         memortest's HTTP contract (Options.Conformance only)
//	GET    /conformance/status                    users in and outside memortest.UserPrefix
//	POST   /mcp                                   MCP over streamable HTTP (Options.MCP only)
//
// {user} is one path segment, percent-escaped by the client ("a%2Fb" is the
// user "a/b"). Times are RFC 3339 or a bare date YYYY-MM-DD (midnight UTC);
// an omitted time means now. Fact lists answer {"facts": [...]}, never null.
//
// # Errors
//
// Every error is JSON {"error": "...", "code": "..."} with the status that
// fits: memor's invalid-input sentinels are 400, ErrTooLarge and an
// oversized body 413, ErrNotFound 404, ErrNotContested 409, ErrClosed 503, ErrStorage (a full
// or failing disk) 503 with code "storage" and its detail in the log, a
// missing or wrong bearer token 401, a refused Host or web page 403
// (forbidden_host, forbidden_origin), a body that is not application/json
// (or, for an import, application/x-ndjson) 415. Anything else is a 500 whose detail goes to the log, not to the
// client. (/conformance/add, query and reset answer memortest's plain-text
// errors.)
//
// # Safety
//
// Before any route a [Handler] refuses: a Host that is not a loopback
// name or address, unless Options.AnyHost (DNS rebinding); a request from
// a web page, that is an Origin neither this server's nor in
// Options.AllowOrigins, or Sec-Fetch-Site cross-site or same-site; a
// missing or wrong token; a path with an empty or dot segment, literal or
// percent-encoded; a query value that is not UTF-8; a body whose
// Content-Type is not application/json. A body that is not valid UTF-8
// (or holds an unpaired surrogate escape) is refused as invalid_text
// rather than decoded with U+FFFD in its place.
//
// [ListenAndServe] binds loopback unless told otherwise and refuses a
// non-loopback address without a bearer token, a token shorter than
// [MinTokenBytes] and a malformed allowed origin. Beyond loopback it sets
// Options.AnyHost (the token guards; the origin checks still apply). It
// sets read, write and
// idle timeouts, bounds request bodies, and on shutdown stops accepting
// requests, finishes the ones in flight, then waits for queued episodes
// to be applied.
//
// # Cluster
//
// With Options.Router the Handler is one node of a memor cluster: every
// route of one user ({user}) is served here when this node owns the
// user's shard, else forwarded to the owner's address from the cluster's
// node registry (never from the request), marked with [ForwardedHeader]
// so it is never forwarded twice, or answered 307 to the owner when the
// client sends [RedirectHeader]: true. The Safety checks run on the node
// that receives the request, before any forward; the owner checks the
// token and Host again. Answers name the node that served them
// ([NodeHeader]). A node that cannot answer yet says 503 with Retry-After
// and a code: no_owner, owner_unreachable, forward_loop, draining,
// behind, log_unavailable. A forwarded import refused as behind is sent
// again (behindRetry). GET /v1/users lists the cluster's users
// (Router.Users); an MCP tools/call naming a user is routed like a route
// of that user (mcpRouted); the studio and the conformance contract
// answer 501 not_in_cluster.
//
// # Concurrency
//
// A [Handler] is safe for concurrent use, as the engine is.
package server
