package memortest

import (
	"context"
	"net/http"
	"testing"

	"github.com/memor-db/memor/memortest/backend"
	"github.com/memor-db/memor/memortest/suite"
)

// The suite itself lives in package suite, which does not import testing;
// the names below re-export it so that memortest stays the one import a
// backend's tests need.

// Backend is the agent memory under test (see [backend.Backend]).
type Backend = backend.Backend

// Triple is one current fact, subject predicate object.
type Triple = backend.Triple

// Stater is implemented by backends that expose the facts they believe are
// true now (see [backend.Stater]).
type Stater = backend.Stater

// Sentinel errors. Every error the package returns wraps one of them.
var (
	// ErrCase reports a malformed case file or case.
	ErrCase = suite.ErrCase
	// ErrBroken reports that a backend broke a rule of the suite; the
	// *Finding that wraps it says which one.
	ErrBroken = suite.ErrBroken
	// ErrBackend reports that a backend call itself failed.
	ErrBackend = suite.ErrBackend
	// ErrHTTP reports an HTTP backend that answered outside the contract
	// (backend.ErrHTTP).
	ErrHTTP = backend.ErrHTTP
	// ErrInvalidInput is for backends to wrap when they refuse a request
	// as malformed (backend.ErrInvalidInput).
	ErrInvalidInput = backend.ErrInvalidInput
)

const (
	// DefaultK is how many results a case asks for when it does not say.
	DefaultK = suite.DefaultK
	// DefaultUser is the user of a turn or question that names none.
	DefaultUser = suite.DefaultUser
)

type (
	// Turn is one thing a user said, at a known instant (see [suite.Turn]).
	Turn = suite.Turn
	// Case is one conformance case (see [suite.Case]).
	Case = suite.Case
	// Result is how one backend did on one case (see [suite.Result]).
	Result = suite.Result
	// Finding is the error describing a failed case (see [suite.Finding]).
	Finding = suite.Finding
	// Row is how one arm did on a set of cases (see [suite.Row]).
	Row = suite.Row
	// Table is a report over several arms (see [suite.Table]).
	Table = suite.Table
)

// Cases returns the built-in cases (see [suite.Cases]).
func Cases() ([]Case, error) { return suite.Cases() }

// Parse reads cases in the testdata format (see [suite.Parse]).
func Parse(file string, data []byte) ([]Case, error) { return suite.Parse(file, data) }

// Normalize is the suite's text normalisation (see [suite.Normalize]).
func Normalize(s string) string { return suite.Normalize(s) }

// Contains is the suite's only grading (see [suite.Contains]).
func Contains(served, want string) bool { return suite.Contains(served, want) }

// Grade runs one case against b (see [suite.Grade]).
func Grade(ctx context.Context, b Backend, c Case) (Result, error) { return suite.Grade(ctx, b, c) }

// Check runs every built-in case against b (see [suite.Check]).
func Check(b Backend) error { return suite.Check(b) }

// CheckContext is [Check] with a context.
func CheckContext(ctx context.Context, b Backend) error { return suite.CheckContext(ctx, b) }

// Report runs every built-in case against every arm (see [suite.Report]).
func Report(ctx context.Context, arms map[string]Backend) (Table, error) {
	return suite.Report(ctx, arms)
}

// ReportCases is [Report] over the given cases.
func ReportCases(ctx context.Context, cases []Case, arms map[string]Backend) (Table, error) {
	return suite.ReportCases(ctx, cases, arms)
}

// Run runs every built-in case (see [Cases]) against a fresh backend from
// newBackend, each as the subtest category/name, so that
// `go test -run 'TestMemory/update/'` or `-skip 'TestMemory/time-travel'`
// select by the names in testdata. It also checks Reset.
func Run(t *testing.T, newBackend func(*testing.T) Backend) {
	t.Helper()
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	RunCases(t, cases, newBackend)
}

// RunCases is [Run] over the given cases, e.g. a backend's own case files
// read with [Parse].
func RunCases(t *testing.T, cases []Case, newBackend func(*testing.T) Backend) {
	t.Helper()
	byCat := map[string][]Case{}
	var cats []string
	for _, c := range cases {
		if _, ok := byCat[c.Category]; !ok {
			cats = append(cats, c.Category)
		}
		byCat[c.Category] = append(byCat[c.Category], c)
	}
	for _, cat := range cats {
		t.Run(cat, func(t *testing.T) {
			for _, c := range byCat[cat] {
				t.Run(c.Name, func(t *testing.T) {
					r, err := Grade(t.Context(), newBackend(t), c)
					if err != nil {
						t.Fatal(err)
					}
					if !r.Pass() {
						t.Error(&Finding{Result: r})
					}
				})
			}
		})
	}
	t.Run("reset", func(t *testing.T) {
		if err := suite.CheckReset(t.Context(), newBackend(t)); err != nil {
			t.Error(err)
		}
	})
}

// UserPrefix is the reserved prefix of the suite's users over HTTP
// (backend.UserPrefix).
const UserPrefix = backend.UserPrefix

// HTTPBackend is a Backend that speaks the HTTP contract to baseURL
// (backend.HTTPBackend).
func HTTPBackend(baseURL string, client *http.Client) Backend {
	return backend.HTTPBackend(baseURL, client)
}

// HTTPHandler serves b under the HTTP contract (backend.HTTPHandler).
func HTTPHandler(b Backend) http.Handler { return backend.HTTPHandler(b) }
