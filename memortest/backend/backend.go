// Package backend is the memory a conformance suite talks to, [Backend],
// and its HTTP contract ([HTTPHandler], [HTTPBackend]), apart from the
// suite itself: it does not import package testing, so that a server that
// mounts the contract (memor serve --conformance) does not link it.
// Package memortest re-exports every name here.
package backend

import (
	"context"
	"errors"
	"time"
)

// Backend is the agent memory under test. The suite only ever talks to a
// memory through these three calls, so any store (a fact engine, a vector
// memory, a chunk store behind HTTP) can be measured the same way.
//
// Add must have applied text by the time it returns: the suite queries right
// after the last Add. Query returns at most k strings, best first; they may be
// facts rendered as text ("user lives_in Seattle") or raw turns. Reset forgets
// everything about user and nothing about anyone else.
type Backend interface {
	Add(ctx context.Context, user, text string, at time.Time) error
	Query(ctx context.Context, user, q string, k int) ([]string, error)
	Reset(ctx context.Context, user string) error
}

// Triple is one current fact, subject predicate object.
type Triple struct {
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`
}

func (t Triple) String() string { return t.Subject + " " + t.Predicate + " " + t.Object }

// Stater is implemented by backends that expose the facts they believe are
// true now. When a Backend is also a Stater the suite checks, besides what
// Query serves, that no value a case marks as gone is still current.
type Stater interface {
	Current(ctx context.Context, user string) ([]Triple, error)
}

// Sentinel errors of the contract.
var (
	// ErrHTTP reports an HTTP backend that answered outside the contract.
	ErrHTTP = errors.New("memortest: http contract")
	// ErrInvalidInput is for backends to wrap when they refuse a request
	// as malformed (an empty user ID, invalid text): HTTPHandler answers
	// 400 instead of 500.
	ErrInvalidInput = errors.New("memortest: invalid input")
)
