package server

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// takes wraps a route's handler so that a query parameter the route does
// not read, or one it reads given more than once, is 400 bad_request
// before the request is routed or served. A misspelt or unsupported
// parameter would otherwise be ignored: "/state?valid=2026-01-01" or
// "/asof?valid_at=…" would answer for now with nothing to say the time
// was not used, and "?k=5&k=50" would serve the first k silently.
func (h *Handler) takes(fn http.HandlerFunc, params ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkParams(r, params); err != nil {
			h.fail(w, r, err)
			return
		}
		fn(w, r)
	}
}

// checkParams reports the first (in sorted order) query parameter of r
// that is not in params or is given more than once.
func checkParams(r *http.Request, params []string) error {
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(params, k) {
			if len(params) == 0 {
				return fmt.Errorf("%w: %s takes no query parameters, got %q", ErrBadRequest, r.URL.Path, k)
			}
			return fmt.Errorf("%w: unknown query parameter %q (this route takes %s)", ErrBadRequest, k, strings.Join(params, ", "))
		}
		if n := len(q[k]); n > 1 {
			return fmt.Errorf("%w: query parameter %q given %d times, send it once", ErrBadRequest, k, n)
		}
	}
	return nil
}
