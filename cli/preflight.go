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

// preflight asks the memory under test GET URL/status before the suite
// runs (memor serve --conformance answers it; another memory may answer
// 404, which is fine). No answer, 401 or 403 means the suite would
// measure nothing.
func preflight(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/status", nil)
	if err != nil {
		return err
	}
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
	}
	return nil
}
