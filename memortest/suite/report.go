package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Row is how one arm did on a set of cases.
type Row struct {
	Arm string
	// Cases run and Passed.
	Cases, Passed int
	// Stale counts answer cases (not abstentions, not leakage probes) in
	// which a must-not-appear string was served: superseded, ended,
	// contested or unsure values, or another subject's.
	Stale int
	// Missed counts answer cases in which no expected answer was served.
	Missed int
	// Abstentions is how many "nothing known" cases there are (leakage
	// probes excluded); AbstainedOK how many served nothing relevant.
	Abstentions, AbstainedOK int
	// LeakProbes is how many cross-user probes there are; Leaks how many
	// served another user's value.
	LeakProbes, Leaks int
	// TimeTravel cases and how many passed.
	TimeTravel, TimeTravelOK int
	// Errors counts cases in which a backend call failed.
	Errors int
	// Categories maps a category to [passed, total].
	Categories map[string][2]int
	// Results holds every case's result, in case order.
	Results []Result
}

// Table is a report over several arms, rows in arm-name order.
type Table struct {
	Rows []Row
	// Categories in case order.
	Categories []string
}

// Report runs every built-in case against every arm, one arm after the
// other (Reset between cases), and counts what each got right and wrong.
// A backend failure in a case counts against the arm; Report returns an
// error only when ctx ends or the built-in cases cannot be read.
func Report(ctx context.Context, arms map[string]Backend) (Table, error) {
	cases, err := Cases()
	if err != nil {
		return Table{}, err
	}
	return ReportCases(ctx, cases, arms)
}

// ReportCases is [Report] over the given cases.
func ReportCases(ctx context.Context, cases []Case, arms map[string]Backend) (Table, error) {
	var t Table
	for _, c := range cases {
		if !slices.Contains(t.Categories, c.Category) {
			t.Categories = append(t.Categories, c.Category)
		}
	}
	names := make([]string, 0, len(arms))
	for name := range arms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		row := Row{Arm: name, Categories: map[string][2]int{}}
		for _, c := range cases {
			r, err := Grade(ctx, arms[name], c)
			if err != nil {
				return t, fmt.Errorf("memortest: report %s: %w", name, err)
			}
			row.add(r)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func (row *Row) add(r Result) {
	c := r.Case
	row.Results = append(row.Results, r)
	row.Cases++
	pass := r.Pass()
	cat := row.Categories[c.Category]
	cat[1]++
	if pass {
		row.Passed++
		cat[0]++
	}
	row.Categories[c.Category] = cat
	if r.Err != nil {
		row.Errors++
	}
	switch {
	case c.Leakage():
		row.LeakProbes++
		if len(r.StaleServed) > 0 {
			row.Leaks++
		}
	case c.Abstain:
		row.Abstentions++
		if pass {
			row.AbstainedOK++
		}
	default:
		if len(r.StaleServed) > 0 {
			row.Stale++
		}
		if r.Hit == "" {
			row.Missed++
		}
	}
	if c.TimeTravel() {
		row.TimeTravel++
		if pass {
			row.TimeTravelOK++
		}
	}
}

// Markdown renders the table: one summary row per arm, then passes per
// category.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| arm | correct | stale served | missed | abstentions ok | leaks | time travel ok | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s | %d/%d (%.0f%%) | %d/%d | %d | %d/%d | %d/%d | %d/%d | %d |\n",
			r.Arm, r.Passed, r.Cases, pct(r.Passed, r.Cases),
			r.Stale, r.Cases-r.Abstentions-r.LeakProbes, r.Missed,
			r.AbstainedOK, r.Abstentions, r.Leaks, r.LeakProbes,
			r.TimeTravelOK, r.TimeTravel, r.Errors)
	}
	b.WriteString("\n| category |")
	for _, r := range t.Rows {
		b.WriteString(" " + r.Arm + " |")
	}
	b.WriteString("\n|---|")
	for range t.Rows {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, cat := range t.Categories {
		b.WriteString("| " + cat + " |")
		for _, r := range t.Rows {
			c := r.Categories[cat]
			fmt.Fprintf(&b, " %d/%d |", c[0], c[1])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
