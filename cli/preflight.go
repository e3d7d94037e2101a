package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrUnreachable reports a conformance target that does not answer, or
// refuses the suite (401, 403): a report of such a run would measure
// nothing.
var ErrUnreachable = errors.New("cli: the memory under test cannot be used")

// preflight sends one request (POST URL/query with an empty body) before
// the suite runs. Any answer but 401 and 403 means the suite can reach
// the memory: a memory that refuses an empty query with 400 still serves
// real ones.
func preflight(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/query", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s does not answer (%v); is the server running ('memor serve --conformance')?", ErrUnreachable, base, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w: %s answered 401 unauthorized: set MEMOR_TOKEN to the server's bearer token", ErrUnreachable, base)
	case http.StatusForbidden:
		return fmt.Errorf("%w: %s answered 403 forbidden", ErrUnreachable, base)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s answered 404 to POST /query: is it memortest's contract (memor serve --conformance, at /conformance)?", ErrUnreachable, base)
	}
	return nil
}
