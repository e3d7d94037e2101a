package memor_test

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestVersionsEveryKeyspace: Versions holds every version History holds for
// each slot (live, expired, contested, retracted), in the same order, and
// nothing else.
func TestVersionsEveryKeyspace(t *testing.T) {
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	for _, s := range []struct{ at, text string }{
		{"2026-01-10", "I live in San Francisco."},
		{"2026-03-02", "I work at Initech."},
		{"2026-07-11", "I just moved to Seattle."},
		{"2026-09-01", "I might move to Austin."},
	} {
		at, _ := time.Parse(time.DateOnly, s.at)
		if _, err := e.Add(ctx, "u", s.text, memor.At(at), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	st, err := e.State(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st {
		if f.Predicate != "lives_in" {
			if err := e.Correct(ctx, "u", f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := e.Versions(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	var want []memor.Fact
	for _, p := range []string{"lives_in", "works_at"} {
		h, err := e.History(ctx, "u", "user", p)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, h...)
	}
	if len(all) != len(want) {
		t.Fatalf("Versions: %d versions, History: %d\n%v\n%v", len(all), len(want), all, want)
	}
	seen := map[memor.Status]bool{}
	for i := range all {
		if all[i].ID != want[i].ID || !all[i].RecordedAt.Equal(want[i].RecordedAt) || all[i].Rule != want[i].Rule {
			t.Errorf("version %d: %v %s %s, History %v %s %s", i, all[i], all[i].Rule, all[i].Status, want[i], want[i].Rule, want[i].Status)
		}
		seen[all[i].Status] = true
	}
	for _, s := range []memor.Status{memor.Active, memor.Contested, memor.Retracted} {
		if !seen[s] {
			t.Errorf("no %s version among %v", s, all)
		}
	}
	if _, err := e.Versions(ctx, ""); err == nil {
		t.Error("Versions of an invalid user: no error")
	}
}

// TestForgetPlanCountsWhatForgetDeletes: the dry run counts the user's
// episodes, versions and decisions, deletes nothing, leaves other users
// out, and counts zero once Forget ran.
func TestForgetPlanCountsWhatForgetDeletes(t *testing.T) {
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{})
	for i, text := range []string{"I live in Oslo.", "I just moved to Bergen.", "I play the violin."} {
		if _, err := e.Add(ctx, "a", text, memor.At(day(i*10)), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Add(ctx, "ab", "I live in Rome.", memor.At(day(1)), memor.Sync()); err != nil {
		t.Fatal(err)
	}
	c, err := e.ForgetPlan(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := e.Episodes(ctx, "a")
	all, _ := e.Versions(ctx, "a")
	log, _ := e.Log(ctx, "a")
	st, _ := e.State(ctx, "a")
	if c.Episodes != len(eps) || c.Versions() != len(all) || c.Decisions != len(log) || c.Live < len(st) || c.History == 0 {
		t.Errorf("plan %+v; episodes %d, versions %d, decisions %d, state %d", c, len(eps), len(all), len(log), len(st))
	}
	if c.Keys <= c.Episodes+c.Versions()+c.Decisions {
		t.Errorf("plan %+v: Keys must count the index postings too", c)
	}
	if again, _ := e.Versions(ctx, "a"); len(again) != len(all) {
		t.Errorf("ForgetPlan deleted something: %d versions, then %d", len(all), len(again))
	}
	if err := e.Forget(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if c, err := e.ForgetPlan(ctx, "a"); err != nil || c != (memor.ForgetCounts{}) {
		t.Errorf("after Forget: %+v %v, want zero", c, err)
	}
	if c, err := e.ForgetPlan(ctx, "ab"); err != nil || c.Episodes != 1 {
		t.Errorf("the other user: %+v %v, want 1 episode", c, err)
	}
}
