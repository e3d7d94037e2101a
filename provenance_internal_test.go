package memor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
)

func provDay(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }

// provenanceStory: San Francisco, then Seattle said twice, an end with
// nothing open, and a job that ends.
func provenanceStory(t *testing.T, e *Engine, user string) {
	t.Helper()
	ctx := context.Background()
	for i, text := range []string{"I live in San Francisco.", "I just moved to Seattle.", "I live in Seattle."} {
		if _, err := e.Add(ctx, user, text, At(provDay(i+1)), Sync()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.End(ctx, user, EndInput{Subject: "user", Predicate: "works_at", At: provDay(4)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(ctx, user, FactInput{Subject: "user", Predicate: "works_at", Object: "Acme", ValidFrom: provDay(5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.End(ctx, user, EndInput{Subject: "user", Predicate: "works_at", Object: "Acme", At: provDay(6)}); err != nil {
		t.Fatal(err)
	}
}

func factOf(fs []Fact, object string) *Fact {
	for i := range fs {
		if fs[i].Object == object && fs[i].Open() {
			return &fs[i]
		}
	}
	return nil
}

// TestProvenance: a fact lists every episode that supports it, and the
// resolution log says as data what its Detail says in words.
func TestProvenance(t *testing.T) {
	t.Parallel()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	provenanceStory(t, e, "u")

	hist, err := e.History(ctx, "u", "user", "lives_in")
	if err != nil {
		t.Fatal(err)
	}
	sf, sea := factOf(hist, "San Francisco"), factOf(hist, "Seattle")
	if sf == nil || sea == nil {
		t.Fatalf("history: %+v", hist)
	}
	if !slices.Equal(sea.Episodes, []uint64{2, 3}) || sea.Episode != 2 || sea.Reinforced != 2 {
		t.Errorf("Seattle, said in episodes 2 and 3: episodes %v (episode %d, reinforced %d)", sea.Episodes, sea.Episode, sea.Reinforced)
	}
	if !slices.Equal(sf.Episodes, []uint64{1}) {
		t.Errorf("San Francisco, said once: episodes %v", sf.Episodes)
	}
	b, _ := json.Marshal(sea)
	if !strings.Contains(string(b), `"episodes":[2,3]`) {
		t.Errorf("JSON lacks the episodes: %s", b)
	}
	// State serves the same list.
	st, err := e.State(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if f := factOf(st, "Seattle"); f == nil || !slices.Equal(f.Episodes, []uint64{2, 3}) {
		t.Errorf("state's Seattle: %+v", f)
	}

	log, err := e.Log(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	find := func(ep uint64, rule Rule) *Decision {
		for i := range log {
			if log[i].Episode == ep && log[i].Rule == rule {
				return &log[i]
			}
		}
		t.Fatalf("no %s decision for episode %d in %+v", rule, ep, log)
		return nil
	}
	if d := find(2, RuleSupersede); !slices.Equal(d.Closed, []string{sf.ID}) || d.FactID != sea.ID {
		t.Errorf("the move to Seattle closed %v, want San Francisco %s", d.Closed, sf.ID)
	}
	if d := find(3, RuleDup); d.Reason != ReasonReinforces || d.Reinforces != sea.ID || !strings.Contains(d.Detail, sea.ID) {
		t.Errorf("restatement: %+v, want reason reinforces of %s", d, sea.ID)
	}
	if d := find(4, RuleEnd); d.Reason != ReasonNothingToEnd || d.Closed != nil {
		t.Errorf("end with no job: %+v, want reason nothing_to_end", d)
	}
	jobs, err := e.History(ctx, "u", "user", "works_at")
	if err != nil || len(jobs) == 0 {
		t.Fatalf("works_at history %v %v", jobs, err)
	}
	if d := find(6, RuleEnd); d.Reason != ReasonClosedValue || !slices.Equal(d.Closed, []string{jobs[0].ID}) {
		t.Errorf("end of Acme: %+v, want closed_value of %s", d, jobs[0].ID)
	}
	b, _ = json.Marshal(find(3, RuleDup))
	if !strings.Contains(string(b), `"reason":"reinforces"`) || !strings.Contains(string(b), `"reinforces":"`+sea.ID+`"`) {
		t.Errorf("decision JSON: %s", b)
	}
	// The decisions a write returns are the logged ones, Closed included.
	ds, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "Lisbon", ValidFrom: provDay(7)})
	if err != nil || len(ds) == 0 || ds[0].Rule != RuleSupersede || ds[0].Object != "Lisbon" || !slices.Equal(ds[0].Closed, []string{sea.ID}) {
		t.Errorf("the move to Lisbon returned %+v, want a supersede closing Seattle %s", ds, sea.ID)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}

	// Rebuild reproduces it byte for byte.
	before := dumpUser(t, e, "u")
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if after := dumpUser(t, e, "u"); after != before {
		t.Errorf("rebuild changed the store:\n%s\n---\n%s", before, after)
	}

	// Export and import (a replay of the episodes) keep it.
	eps, err := e.Episodes(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if err := replayEpisode(ctx, e, "v", ep); err != nil {
			t.Fatal(err)
		}
	}
	hv, err := e.History(ctx, "v", "user", "lives_in")
	if err != nil {
		t.Fatal(err)
	}
	if f := factOf(hv, "Seattle"); f == nil || !slices.Equal(f.Episodes, []uint64{2, 3}) {
		t.Errorf("imported Seattle: %+v", f)
	}

	// Forget erases it with the user.
	if err := e.Forget(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if d := dumpUser(t, e, "u"); d != "" {
		t.Errorf("forget left:\n%s", d)
	}
}

// replayEpisode plays an exported episode into user as import does.
func replayEpisode(ctx context.Context, e *Engine, user string, ep Episode) error {
	switch ep.Kind {
	case EpisodeText:
		_, err := e.Add(ctx, user, ep.Text, At(ep.At), Sync())
		return err
	case EpisodeFacts:
		for _, op := range ep.Ops {
			var err error
			if op.Kind == extract.Assert {
				_, err = e.Assert(ctx, user, FactInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
					Context: op.Context, ValidFrom: op.ValidFrom, Confidence: op.Confidence, Quote: op.Quote})
			} else {
				_, err = e.End(ctx, user, EndInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
					Context: op.Context, At: op.ValidFrom, Quote: op.Quote})
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
