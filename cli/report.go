package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/memor-db/memor"
)

// addReport is what `memor add --json` prints: the episode's fields, and
// what it changed.
type addReport struct {
	memor.Episode
	Changes   memor.Changes    `json:"changes"`
	Decisions []memor.Decision `json:"decisions"`
}

func newAddReport(ep memor.Episode, ds []memor.Decision) addReport {
	if ds == nil {
		ds = []memor.Decision{}
	}
	return addReport{Episode: ep, Changes: memor.Summarize(ds), Decisions: ds}
}

// printAdd says what an add did: the episode with its two times, then one
// line per decision, or that nothing was extracted.
func printAdd(w io.Writer, user string, ep memor.Episode, ds []memor.Decision) {
	fmt.Fprintf(w, "remembered episode %d for %s: said %s (valid time), recorded %s (known time)\n",
		ep.Seq, user, when(ep.At), instant(ep.RecordedAt))
	if len(ds) == 0 {
		fmt.Fprintln(w, "nothing extracted; kept and searchable (memor query finds it)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Change(), claim(d), decisionNote(d))
	}
	tw.Flush()
	if memor.Summarize(ds).Contested > 0 {
		fmt.Fprintln(w, "contested claims are held for review, not served as state: see 'memor conflicts'")
	}
}

func claim(d memor.Decision) string {
	s := d.Subject + " " + d.Predicate
	if d.Object != "" {
		s += " " + d.Object
	}
	if d.Context != "" {
		s += " (" + d.Context + ")"
	}
	return s
}

// decisionNote names the rule, and the detail when there is one.
func decisionNote(d memor.Decision) string {
	s := "rule " + string(d.Rule)
	if d.Detail != "" {
		s += ": " + d.Detail
	}
	return s
}
