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
