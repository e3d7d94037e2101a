package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/corpus"
)

// TestCorpusOverHTTP posts every text of testdata/texts (JSON-escaped as a
// client would) queued and with wait, reads the user back and queries it
// with the text itself: every text is stored byte for byte and applied,
// none fails.
func TestCorpusOverHTTP(t *testing.T) {
	e := openEngine(t, memor.Options{})
	srv := httptest.NewServer(New(e, Options{}))
	t.Cleanup(srv.Close)
	a := &api{t: t, srv: srv, e: e}
	for _, tx := range corpus.MustTexts() {
		user := "/v1/users/" + url.PathEscape("c-"+tx.Name)
		a.must(http.StatusAccepted, "POST", user+"/episodes", map[string]any{"text": tx.Body})
		a.must(http.StatusCreated, "POST", user+"/episodes", map[string]any{"text": tx.Body, "wait": true})
		q := []rune(tx.Body)
		if len(q) > 300 {
			q = q[:300]
		}
		a.must(http.StatusOK, "GET", user+"/query?"+url.Values{"q": {string(q)}}.Encode(), nil)
		a.must(http.StatusOK, "GET", user+"/state", nil)
		if err := e.Flush(t.Context(), "c-"+tx.Name); err != nil {
			t.Fatal(err)
		}
		f := a.must(http.StatusOK, "GET", user+"/freshness", nil)
		if f["failed"] != float64(0) || f["pending"] != float64(0) || f["applied"] != float64(2) {
			t.Fatalf("%s: freshness %v", tx.Name, f)
		}
		eps, err := e.Episodes(t.Context(), "c-"+tx.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			if ep.Text != tx.Body {
				t.Fatalf("%s: stored text differs from what was posted", tx.Name)
			}
		}
	}
	if err := e.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
}
