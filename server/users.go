package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/memor-db/memor"
)

// DefaultUsersLimit and MaxUsersLimit bound a page of GET /v1/users.
const (
	DefaultUsersLimit = 100
	MaxUsersLimit     = 1000
)

// usersResponse is a page of GET /v1/users: user IDs in ascending order
// after ?after=, at most ?limit= of them; Next, when set, is the ?after=
// of the next page.
type usersResponse struct {
	Users []string `json:"users"`
	Next  string   `json:"next,omitempty"`
}

func (h *Handler) users(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := DefaultUsersLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxUsersLimit {
			h.fail(w, r, fmt.Errorf("%w: limit must be an integer from 1 to %d, got %q", ErrBadRequest, MaxUsersLimit, s))
			return
		}
		limit = n
	}
	page, next, err := usersPage(r.Context(), h.e, q.Get("after"), limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, usersResponse{Users: page, Next: next})
}

// usersPage returns at most limit user IDs of e after the ID after, in
// ascending order, and the after of the next page ("" on the last).
func usersPage(ctx context.Context, e *memor.Engine, after string, limit int) ([]string, string, error) {
	all, err := e.Users(ctx)
	if err != nil {
		return nil, "", err
	}
	sort.Strings(all)
	i := sort.SearchStrings(all, after)
	if i < len(all) && all[i] == after {
		i++
	}
	page := all[i:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = page[limit-1]
	}
	if page == nil {
		page = []string{}
	}
	return page, next, nil
}
