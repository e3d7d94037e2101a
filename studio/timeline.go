package studio

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/norm"
)

// The timeline's geometry, in SVG user units (the document scales to the
// width of the page).
const (
	tlWidth  = 1000.0
	tlLabel  = 190.0 // the slot names' column
	tlRight  = 990.0
	tlRow    = 22.0 // one version
	tlHead   = 28.0 // a slot's name row
	tlAxis   = 34.0
	day      = 24 * time.Hour
	barFloor = 4.0
)

// span is the time domain of a user's timeline and of both sliders: every
// instant of every version, and now, from the first day to the day after
// the last.
type span struct{ Min, Max time.Time }

func domain(vs []memor.Fact, now time.Time) span {
	lo, hi := now, now
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	for _, f := range vs {
		see(f.ValidFrom)
		see(f.ValidTo)
		see(f.RecordedAt)
		see(f.ExpiredAt)
	}
	return span{lo.UTC().Truncate(day), hi.UTC().Truncate(day).Add(day)}
}

func (s span) x(t time.Time) float64 {
	if t.Before(s.Min) {
		t = s.Min
	}
	if t.After(s.Max) {
		t = s.Max
	}
	return tlLabel + (tlRight-tlLabel)*float64(t.Sub(s.Min))/float64(s.Max.Sub(s.Min))
}

// slotKey names a version's slot: subject, predicate, context.
func slotKey(f memor.Fact) string {
	return norm.Key(f.Subject) + "\x00" + f.Predicate + "\x00" + norm.Key(f.Context)
}

func slotName(f memor.Fact) string {
	s := f.Subject + " " + f.Predicate
	if f.Context != "" {
		s += " (" + f.Context + ")"
	}
	return s
}

// barLabel is the text on a version's bar: its value, the rule that made
// it, and, in words, what colour alone must not say.
func barLabel(f memor.Fact, inView bool) string {
	parts := []string{f.Object, string(f.Rule)}
	if f.Status != memor.Active {
		parts = append(parts, f.Status.String())
	}
	if !f.Open() {
		parts = append(parts, "expired")
	}
	s := strings.Join(parts, " · ")
	if inView {
		s = "● " + s
	}
	return s
}

// barTitle says everything about a version: its four instants, confidence,
// quote and source episode.
func barTitle(f memor.Fact) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — rule %s, %s", f.String(), f.Rule, f.Status)
	to := "open"
	if !f.ValidTo.IsZero() {
		to = f.ValidTo.UTC().Format(time.RFC3339)
	}
	exp := "not expired: still believed"
	if !f.ExpiredAt.IsZero() {
		exp = "expired " + f.ExpiredAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "\ntrue from %s until %s\nrecorded %s, %s\nconfidence %.2f, said %d×, episode %d",
		f.ValidFrom.UTC().Format(time.RFC3339), to, f.RecordedAt.UTC().Format(time.RFC3339), exp, f.Confidence, f.Reinforced, f.Episode)
	if f.Quote != "" {
		fmt.Fprintf(&b, "\nquote: “%s”", f.Quote)
	}
	return b.String()
}

// timelineSVG draws versions (one page of a user's, in slot order) on s:
// one row per slot, one bar per version over its valid interval, the
// versions of a slot stacked in the order they were recorded and shaded
// by transaction time (later: darker). The bars visible at (valid, known)
// are marked ●; a line marks valid.
func timelineSVG(vs []memor.Fact, s span, valid, known time.Time) string {
	type slot struct {
		name string
		vs   []memor.Fact
	}
	var slots []slot
	for _, f := range vs {
		if n := len(slots); n > 0 && slotKey(slots[n-1].vs[0]) == slotKey(f) {
			slots[n-1].vs = append(slots[n-1].vs, f)
			continue
		}
		slots = append(slots, slot{slotName(f), []memor.Fact{f}})
	}
	height := tlAxis + 8
	for _, sl := range slots {
		height += tlHead + tlRow*float64(len(sl.vs))
	}
	var w svgWriter
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" id="timeline" viewBox="0 0 %.0f %.0f" role="group" aria-label="Timeline: one row per slot, one bar per version over its valid time">`, tlWidth, height)
	w.f(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-bg"/><line x1="0" y1="0" x2="0" y2="6" class="hatch-line"/></pattern></defs>`)
	// The axis: ticks at even fractions of the domain.
	for i := 0; i <= 6; i++ {
		t := s.Min.Add(time.Duration(float64(s.Max.Sub(s.Min)) * float64(i) / 6)).Truncate(day)
		x := s.x(t)
		w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="tick"/>`, x, tlAxis-6, x, height)
		if i == 6 {
			w.f(`<text x="%.1f" y="14" class="axis" text-anchor="end">%s</text>`, x, t.Format(time.DateOnly))
		} else {
			w.text(x+2, 14, "axis", t.Format(time.DateOnly))
		}
	}
	kspan := float64(s.Max.Sub(s.Min))
	y := tlAxis
	for _, sl := range slots {
		w.text(4, y+tlHead-9, "slot", sl.name)
		w.f(`<line x1="0" y1="%.1f" x2="%.1f" y2="%.1f" class="slot-rule"/>`, y+4, tlWidth, y+4)
		y += tlHead
		// Stacked by transaction time.
		order := append([]memor.Fact(nil), sl.vs...)
		sortByRecorded(order)
		for _, f := range order {
			x0 := s.x(f.ValidFrom)
			x1 := tlRight
			if !f.ValidTo.IsZero() {
				x1 = s.x(f.ValidTo)
			}
			x1 = max(x1, x0+barFloor)
			shade := 0.35 + 0.65*float64(f.RecordedAt.Sub(s.Min))/kspan
			in := f.VisibleAt(valid, known)
			class := "bar rule-" + string(f.Rule) + " st-" + f.Status.String()
			if !f.Open() {
				class += " expired"
			}
			if in {
				class += " inview"
			}
			w.f(`<g class="%s" tabindex="0" role="img" aria-label="%s" data-fact="%s" data-episode="%d" data-rule="%s" data-status="%s">`,
				class, esc(barLabel(f, in)+". "+strings.ReplaceAll(barTitle(f), "\n", "; ")), esc(f.ID), f.Episode, esc(string(f.Rule)), f.Status)
			w.f(`<title>%s</title>`, esc(barTitle(f)))
			w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" fill-opacity="%.2f"/>`, x0, y+2, x1-x0, tlRow-4, shade)
			// A label that would run off the right edge ends there.
			label := barLabel(f, in)
			if x0+4+labelWidth(label) > tlWidth {
				w.f(`<text x="%.1f" y="%.1f" class="label" text-anchor="end">%s</text>`, tlRight-4, y+tlRow-7, esc(label))
			} else {
				w.text(x0+4, y+tlRow-7, "label", label)
			}
			w.f(`</g>`)
			y += tlRow
		}
	}
	vx := s.x(valid)
	w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="now-line"/>`, vx, tlAxis-8, vx, height)
	w.text(vx+3, tlAxis-10, "now-label", "true at "+valid.UTC().Format(time.DateOnly))
	w.f(`</svg>`)
	return w.String()
}

// labelWidth estimates the width of a label at the timeline's 11 px
// font, in user units.
func labelWidth(s string) float64 { return 6.3 * float64(utf8.RuneCountInString(s)) }

func sortByRecorded(vs []memor.Fact) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].RecordedAt.Before(vs[j-1].RecordedAt); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

type timelineData struct {
	Valid, Known       time.Time
	Min, Max, Now      time.Time
	MinS, MaxS, Step   int64
	ValidS, KnownS     int64
	SVG                string
	State              []memor.Fact
	Pager              pager
	Versions, Contests int
	Self               string
}

func (h *Handler) timeline(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	valid, known, err := h.instants(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.e.Versions(r.Context(), user)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The state at the two instants is AsOf's, read off the versions
	// already in hand rather than by a second scan: AsOf serves the
	// versions VisibleAt the instants, in this order (the tests hold the
	// page to AsOf).
	var state []memor.Fact
	for _, f := range vs {
		if f.VisibleAt(valid, known) {
			state = append(state, f)
		}
	}
	s := domain(vs, h.o.Now())
	pg := paginate(r, len(vs), TimelinePage)
	d := timelineData{Valid: valid, Known: known, Min: s.Min, Max: s.Max,
		MinS: s.Min.Unix(), MaxS: s.Max.Unix(), Step: int64(day / time.Second),
		ValidS: valid.Unix(), KnownS: known.Unix(),
		SVG: timelineSVG(vs[pg.From:pg.To], s, valid, known), State: state, Pager: pg, Versions: len(vs),
		Self: UserURL(user, "")}
	for _, f := range vs {
		if f.Status == memor.Contested {
			d.Contests++
		}
	}
	h.render(w, r, "timeline.html", page{Title: "Timeline of " + user, User: user, View: "timeline", Data: d})
}
