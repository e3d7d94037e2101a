package studio

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/memor-db/memor"
)

// userRow is one line of the users list.
type userRow struct {
	ID                                 string
	Facts, Episodes, Conflicts, Failed int
	Pending                            uint64
	Applied                            uint64
}

type usersData struct {
	Q     string
	Rows  []userRow
	Pager pager
	All   int
}

// users lists the store's users, filtered by ?q= (a substring, any case),
// a page at a time: the counts are read for the shown page only, so the
// list of a store of thousands of users costs one page's reads.
func (h *Handler) users(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	all, err := h.e.Users(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	ids := all
	if q != "" {
		lq := strings.ToLower(q)
		ids = nil
		for _, u := range all {
			if strings.Contains(strings.ToLower(u), lq) {
				ids = append(ids, u)
			}
		}
	}
	pg := paginate(r, len(ids), PageSize)
	d := usersData{Q: q, Pager: pg, All: len(all)}
	for _, u := range ids[pg.From:pg.To] {
		row := userRow{ID: u}
		fr, err := h.e.Freshness(ctx, u)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		row.Episodes, row.Failed, row.Pending, row.Applied = int(fr.Latest), fr.Failed, fr.Pending, fr.Applied
		st, err := h.e.State(ctx, u)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		cs, err := h.e.Conflicts(ctx, u)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		row.Facts, row.Conflicts = len(st), len(cs)
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, "users.html", page{Title: "Users", View: "users", Data: d})
}

// episodeRow is an episode with what it produced.
type episodeRow struct {
	memor.Episode
	// Decisions are the first DecisionsShown of the episode's; More
	// counts the rest and Rules counts all of them by rule.
	Decisions []memor.Decision
	More      int
	Rules     []ruleCount
	Failed    bool
	Error     string
}

type ruleCount struct {
	Rule memor.Rule
	N    int
}

// DecisionsShown bounds the decisions listed under one episode (a bulk
// write makes thousands); the rest are counted by rule.
const DecisionsShown = 20

type episodesData struct {
	Rows   []episodeRow
	Pager  pager
	Failed int
}

// episodes shows the log, newest first, with each episode's decisions and
// its extraction status.
func (h *Handler) episodes(w http.ResponseWriter, r *http.Request) {
	ctx, user := r.Context(), r.PathValue("user")
	eps, err := h.e.Episodes(ctx, user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	log, err := h.e.Log(ctx, user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	failed, err := h.e.Failed(ctx, user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	slices.Reverse(eps)
	pg := paginate(r, len(eps), PageSize)
	shown := eps[pg.From:pg.To]
	bySeq := make(map[uint64]*episodeRow, len(shown))
	d := episodesData{Pager: pg, Failed: len(failed), Rows: make([]episodeRow, len(shown))}
	for i, ep := range shown {
		d.Rows[i].Episode = ep
		bySeq[ep.Seq] = &d.Rows[i]
	}
	for _, dec := range log {
		row := bySeq[dec.Episode]
		if row == nil {
			continue
		}
		if len(row.Decisions) < DecisionsShown {
			row.Decisions = append(row.Decisions, dec)
		} else {
			row.More++
		}
		if i := slices.IndexFunc(row.Rules, func(c ruleCount) bool { return c.Rule == dec.Rule }); i >= 0 {
			row.Rules[i].N++
		} else {
			row.Rules = append(row.Rules, ruleCount{dec.Rule, 1})
		}
	}
	for _, f := range failed {
		if row := bySeq[f.Seq]; row != nil {
			row.Failed, row.Error = true, f.Error
		}
	}
	h.render(w, r, "episodes.html", page{Title: "Episodes of " + user, User: user, View: "episodes", Data: d})
}

// retry re-runs the user's failed episodes.
func (h *Handler) retry(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	var req struct{}
	if err := decodePost(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	before, err := h.e.Failed(r.Context(), user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	still, err := h.e.Retry(r.Context(), user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	applied := max(len(before)-still, 0)
	writeJSON(w, http.StatusOK, map[string]any{"applied": applied, "still_failing": still,
		"message": fmt.Sprintf("%d episode(s) applied, %d still failing", applied, still), "redirect": UserURL(user, "episodes")})
}

// conflict is a contested version beside the value in force of its slot.
type conflict struct {
	Contested memor.Fact
	InForce   []memor.Fact
}

func (h *Handler) conflicts(w http.ResponseWriter, r *http.Request) {
	ctx, user := r.Context(), r.PathValue("user")
	cs, err := h.e.Conflicts(ctx, user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, err := h.e.State(ctx, user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var d []conflict
	for _, c := range cs {
		k := slotKey(c)
		row := conflict{Contested: c}
		for _, f := range st {
			if slotKey(f) == k {
				row.InForce = append(row.InForce, f)
			}
		}
		d = append(d, row)
	}
	h.render(w, r, "conflicts.html", page{Title: "Conflicts of " + user, User: user, View: "conflicts", Data: d})
}

// correct retracts a fact (memor.Correct): how a person settles a conflict,
// by retracting the contested value or the one in force.
func (h *Handler) correct(w http.ResponseWriter, r *http.Request) {
	h.settle(w, r, h.e.Correct, "retracted")
}

// accept puts a contested fact in force (memor.Accept): how a person
// settles a conflict in favour of the contested value.
func (h *Handler) accept(w http.ResponseWriter, r *http.Request) {
	h.settle(w, r, h.e.Accept, "accepted")
}

// settle applies do to the fact the POST names and sends the page back to
// the user's conflicts.
func (h *Handler) settle(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, user, factID string) error, done string) {
	user := r.PathValue("user")
	var req struct {
		FactID string `json:"fact_id"`
	}
	if err := decodePost(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	if req.FactID == "" {
		h.fail(w, r, fmt.Errorf("%w: fact_id is required", ErrBadRequest))
		return
	}
	if err := do(r.Context(), user, req.FactID); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": done, "redirect": UserURL(user, "conflicts")})
}

type forgetData struct {
	Counts memor.ForgetCounts
}

// forgetPlan is Forget's dry run: what would be deleted, by kind.
func (h *Handler) forgetPlan(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	c, err := h.e.ForgetPlan(r.Context(), user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "forget.html", page{Title: "Forget " + user, User: user, View: "forget", Data: forgetData{c}})
}

// forget erases the user once the request types the user ID.
func (h *Handler) forget(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	var req struct {
		Confirm string `json:"confirm"`
	}
	if err := decodePost(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Confirm != user {
		h.fail(w, r, fmt.Errorf("%w: type the user ID exactly to confirm; nothing was deleted", ErrBadRequest))
		return
	}
	if err := h.e.Forget(r.Context(), user); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "forgotten", "redirect": Prefix})
}

// removal counts the versions a view's time filter left out, by why.
type removal struct {
	Why string
	N   int
}

// timeFiltered says why each version of vs is not visible at (valid,
// known): what a query at that view cannot serve.
func timeFiltered(vs []memor.Fact, valid, known time.Time) []removal {
	reasons := []string{"contested", "retracted", "not yet recorded", "no longer believed", "not yet true", "no longer true"}
	n := make([]int, len(reasons))
	for _, f := range vs {
		switch {
		case f.VisibleAt(valid, known):
			continue
		case f.Status == memor.Contested:
			n[0]++
		case f.Status == memor.Retracted:
			n[1]++
		case f.RecordedAt.After(known):
			n[2]++
		case !f.ExpiredAt.IsZero() && !known.Before(f.ExpiredAt):
			n[3]++
		case f.ValidFrom.After(valid):
			n[4]++
		default:
			n[5]++
		}
	}
	var out []removal
	for i, r := range reasons {
		if n[i] > 0 {
			out = append(out, removal{r, n[i]})
		}
	}
	return out
}
