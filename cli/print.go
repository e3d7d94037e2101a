package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memor-db/memor"
)

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.io.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printFacts renders facts as an aligned table. belief adds the
// transaction-time interval, the status and the rule (history, audits).
func (a *app) printFacts(fs []memor.Fact, belief bool) {
	tw := tabwriter.NewWriter(a.io.Out, 0, 0, 2, ' ', 0)
	if belief {
		fmt.Fprintln(tw, "FACT\tVALID\tBELIEVED\tSTATUS\tRULE\tEPISODES\tID")
	} else {
		fmt.Fprintln(tw, "FACT\tVALID\tID")
	}
	for _, f := range fs {
		if belief {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f, span(f.ValidFrom, f.ValidTo),
				instantSpan(f.RecordedAt, f.ExpiredAt), f.Status, f.Rule, episodeList(f), f.ID)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f, span(f.ValidFrom, f.ValidTo), f.ID)
		}
	}
	tw.Flush()
}

// when renders a valid-time instant: a bare date at midnight UTC, else
// minutes with the zone (UTC).
func when(t time.Time) string {
	t = t.UTC()
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02 15:04 MST")
}

// instant renders a transaction-time instant to the second, with the zone.
func instant(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") }

// span renders a valid-time interval; an open end is "now".
func span(from, to time.Time) string {
	if to.IsZero() {
		return "since " + when(from)
	}
	return when(from) + " → " + when(to)
}

// instantSpan renders a transaction-time interval to the second.
func instantSpan(from, to time.Time) string {
	if to.IsZero() {
		return "since " + instant(from)
	}
	return instant(from) + " → " + instant(to)
}

// isTerminal reports whether w is a character device (a terminal, or
// /dev/null, where drawing is harmless).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// bar is a one-line progress bar on stderr. A nil *bar draws nothing, so
// callers need not check whether stderr is a terminal.
type bar struct {
	w           io.Writer
	label, note string
	done, total int
	last        time.Time
	drawn       bool
}

// progress returns a bar on stderr if it is a terminal, else nil.
func (a *app) progress(label string) *bar {
	if !isTerminal(a.io.Err) {
		return nil
	}
	return &bar{w: a.io.Err, label: label}
}

// set records done/total and redraws at most 10 times a second.
func (b *bar) set(note string, done, total int) {
	if b == nil || total <= 0 {
		return
	}
	b.note, b.done, b.total = note, done, total
	if now := time.Now(); now.Sub(b.last) >= 100*time.Millisecond {
		b.last = now
		b.draw()
	}
}

func (b *bar) draw() {
	const width = 30
	n := min(width, b.done*width/b.total)
	note := b.note
	if len(note) > 24 {
		note = note[:23] + "…"
	}
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%% %s\033[K", b.label, strings.Repeat("=", n), strings.Repeat(" ", width-n),
		b.done*100/b.total, note)
	b.drawn = true
}

// finish draws the final state and ends the bar's line.
func (b *bar) finish() {
	if b == nil || b.total == 0 {
		return
	}
	b.draw()
	fmt.Fprintln(b.w)
}

// episodeList renders the episodes that support a fact: "2,3".
func episodeList(f memor.Fact) string {
	eps := f.Episodes
	if len(eps) == 0 {
		eps = []uint64{f.Episode}
	}
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = strconv.FormatUint(ep, 10)
	}
	return strings.Join(parts, ",")
}
