package cli_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
)

// conformance measures any server that speaks memortest's HTTP contract;
// --strict turns a failed case into exit 1, which is what CI keys on.
func TestConformanceStrict(t *testing.T) {
	srv := httptest.NewServer(memortest.HTTPHandler(naive.New()))
	defer srv.Close()
	e := newEnv(t)
	r := e.run("", "conformance", "--url", srv.URL, "--name", "naive")
	if r.code != 0 || !strings.Contains(r.stdout, "| naive | ") {
		t.Fatalf("conformance of the naive memory: %+v", r)
	}
	r = e.run("", "conformance", "--url", srv.URL, "--name", "naive", "--strict")
	if r.code != 1 || !strings.Contains(r.stderr, "cases failed") || !strings.Contains(r.stdout, "| naive | ") {
		t.Errorf("--strict on a failing memory: %+v", r)
	}
}
