package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
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
	all, err := h.allUsers(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, next := usersPage(all, q.Get("after"), limit)
	writeJSON(w, http.StatusOK, usersResponse{Users: page, Next: next})
}

// allUsers lists the users GET /v1/users pages through: the store's, or
// on a cluster node the cluster's, from its episode log (Router.Users).
// The log, not the shards' owners: every acknowledged episode is in the
// log before it is in any store, and Forget purges the log at once, so
// the log lists exactly the users that exist; asking each owner would
// miss the users of a shard being moved (no owner, or one still catching
// up) and list a forgotten user until its owner's next lease round.
func (h *Handler) allUsers(ctx context.Context) ([]string, error) {
	if h.o.Router != nil {
		return h.o.Router.Users(ctx)
	}
	return h.e.Users(ctx)
}

// usersPage returns at most limit of the IDs all (which it sorts) after
// the ID after, in ascending order, and the after of the next page (""
// on the last).
func usersPage(all []string, after string, limit int) ([]string, string) {
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
	return page, next
}
