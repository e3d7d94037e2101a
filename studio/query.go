package studio

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/memor-db/memor"
)

type queryData struct {
	Q, Valid, Known          string
	K                        int
	NoEpisodes, TimeFromText bool
	Forgetting               bool
	Ran                      bool
	Results                  []memor.Result
	Query                    *memor.QueryExplanation
	// Removed is what the view's time filter left out of the candidates.
	Removed []removal
	Context string
}

// query runs a question with QueryOptions.Explain and shows each result's
// signals, what the query decided (its view, its focus) and the Context
// block an agent would be given.
func (h *Handler) query(w http.ResponseWriter, r *http.Request) {
	ctx, user := r.Context(), r.PathValue("user")
	q := r.URL.Query()
	d := queryData{Q: strings.TrimSpace(q.Get("q")), Valid: q.Get("valid"), Known: q.Get("known"), K: memor.DefaultK,
		NoEpisodes: q.Get("noep") != "", TimeFromText: q.Get("tft") != "", Forgetting: q.Get("forget") != ""}
	if s := q.Get("k"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 || k > 100 {
			h.fail(w, r, fmt.Errorf("%w: k must be an integer in [1, 100], got %q", ErrBadRequest, s))
			return
		}
		d.K = k
	}
	opts := memor.QueryOptions{K: d.K, NoEpisodes: d.NoEpisodes, TimeFromText: d.TimeFromText, Forgetting: d.Forgetting, Explain: true}
	var err error
	if opts.ValidAt, err = ParseInstant(d.Valid, opts.ValidAt); err != nil {
		h.fail(w, r, err)
		return
	}
	if opts.KnownAt, err = ParseInstant(d.Known, opts.KnownAt); err != nil {
		h.fail(w, r, err)
		return
	}
	if d.Q != "" {
		d.Ran = true
		if d.Results, err = h.e.Query(ctx, user, d.Q, opts); err != nil {
			h.fail(w, r, err)
			return
		}
		for _, res := range d.Results {
			if res.Explanation != nil && res.Explanation.Query != nil {
				d.Query = res.Explanation.Query
				break
			}
		}
		if d.Query != nil {
			vs, err := h.e.Versions(ctx, user)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			d.Removed = timeFiltered(vs, d.Query.ValidAt, d.Query.KnownAt)
		}
		if d.Context, err = h.e.Context(ctx, user, d.Q); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.render(w, r, "query.html", page{Title: "Query " + user, User: user, View: "query", Data: d})
}
