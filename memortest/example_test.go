package memortest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
	"github.com/memor-db/memor/memortest/reference"
)

// Report puts several memories side by side.
func ExampleReport() {
	tab, err := memortest.Report(context.Background(), map[string]memortest.Backend{
		"reference": reference.New(reference.Options{}),
		"naive":     naive.New(),
	})
	if err != nil {
		panic(err)
	}
	for _, r := range tab.Rows {
		fmt.Printf("%s: %d/%d correct, %d stale answers served, %d leaks\n", r.Arm, r.Passed, r.Cases, r.Stale, r.Leaks)
	}
	// Output:
	// naive: 39/98 correct, 40 stale answers served, 0 leaks
	// reference: 98/98 correct, 0 stale answers served, 0 leaks
}

// Check returns every finding joined; each says which rule was broken and
// what was served.
func ExampleCheck() {
	err := memortest.Check(naive.New())
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var f *memortest.Finding
		if errors.As(e, &f) && f.Case.Name == "update-location-moved" {
			fmt.Println(f.Case.Rule)
			fmt.Println(f.StaleServed, f.Served)
		}
	}
	// Output:
	// A newer value of a one-valued fact (lives_in) replaces the older one.
	// [Seattle] [2025-01-10: I live in Seattle.]
}

// A memory written in another language is measured through the HTTP
// contract; here the server side is the reference memory.
func ExampleHTTPBackend() {
	srv := httptest.NewServer(memortest.HTTPHandler(reference.New(reference.Options{})))
	defer srv.Close()
	fmt.Println(memortest.Check(memortest.HTTPBackend(srv.URL, srv.Client())))
	// Output:
	// <nil>
}
