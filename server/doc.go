// Package server is memor's HTTP API: JSON in and out, versioned under /v1,
// over one [memor.Engine].
//
// # Routes
//
//	POST   /v1/users/{user}/episodes              {"text", "at"?, "wait"?} → 202 queued, 201 applied
//	GET    /v1/users/{user}/state                 current facts
//	GET    /v1/users/{user}/history?subject=&predicate=
//	GET    /v1/users/{user}/query?q=&k=&valid=&known=
//	GET    /v1/users/{user}/asof?valid=&known=    what was believed at known to hold at valid
//	GET    /v1/users/{user}/conflicts             contested facts
//	GET    /v1/users/{user}/freshness             ingestion watermark
//	POST   /v1/users/{user}/facts/{id}/correct    the fact was never true
//	DELETE /v1/users/{user}                       hard delete (GDPR)
//	GET    /v1/health
//	POST   /conformance/{add,query,reset}         memortest's HTTP contract
//
// {user} is one path segment, percent-escaped by the client ("a%2Fb" is the
// user "a/b"). Times are RFC 3339 or a bare date YYYY-MM-DD (midnight UTC);
// an omitted time means now. Fact lists answer {"facts": [...]}, never null.
//
// # Errors
//
// Every error is JSON {"error": "...", "code": "..."} with the status that
// fits: memor's invalid-input sentinels are 400, ErrTooLarge and an
// oversized body 413, ErrNotFound 404, ErrClosed 503, ErrStorage (a full
// or failing disk) 503 with code "storage" and its detail in the log, a
// missing or wrong bearer token 401. Anything else is a 500 whose detail
// goes to the log, not to the client.
//
// # Safety
//
// [ListenAndServe] binds loopback unless told otherwise and refuses a
// non-loopback address without a bearer token; it sets read, write and
// idle timeouts, bounds request bodies, and on shutdown stops accepting
// requests, finishes the ones in flight, then waits for queued episodes
// to be applied.
//
// # Concurrency
//
// A [Handler] is safe for concurrent use, as the engine is.
package server
