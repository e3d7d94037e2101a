package memor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memor-db/memor"
)

// livesIn returns the object of user's lives_in in force at valid time
// day(d), now, or "" with none.
func livesIn(t *testing.T, e *memor.Engine, user string, d int) string {
	t.Helper()
	fs, err := e.AsOf(context.Background(), user, day(d), day(1000))
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, f := range fs {
		if f.Subject == "user" && f.Predicate == "lives_in" {
			objs = append(objs, f.Object)
		}
	}
	return strings.Join(objs, ",")
}

func assertFact(t *testing.T, e *memor.Engine, user string, f memor.FactInput) memor.Decision {
	t.Helper()
	ds, err := e.Assert(context.Background(), user, f)
	if err != nil || len(ds) == 0 {
		t.Fatalf("assert %v: %v %v", f, ds, err)
	}
	return ds[0]
}

// TestAcceptSameInstant: two values of a One slot said for one instant
// are both contested; accepting one puts it in force from that instant
// (closing the value before it there), leaves the rival contested, and
// survives Rebuild byte for byte. Accepting the rival later moves the
// choice to it; a later genuine assertion still supersedes.
func TestAcceptSameInstant(t *testing.T) {
	t.Parallel()
	e, dir := openTest(t, memor.Options{})
	ctx := context.Background()
	assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "San Francisco", ValidFrom: day(0)})
	sea := assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Seattle", ValidFrom: day(10)})
	pdx := assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Portland", ValidFrom: day(10)})
	if pdx.Rule != memor.RuleContest {
		t.Fatalf("rival: %+v, want contest", pdx)
	}
	if got := livesIn(t, e, "u", 20); got != "San Francisco" {
		t.Fatalf("before accept: %q", got)
	}
	if err := e.Accept(ctx, "u", sea.FactID); err != nil {
		t.Fatal(err)
	}
	if got := livesIn(t, e, "u", 20); got != "Seattle" {
		t.Fatalf("after accept at day 20: %q, want Seattle", got)
	}
	if got := livesIn(t, e, "u", 9); got != "San Francisco" {
		t.Fatalf("after accept at day 9: %q, want San Francisco", got)
	}
	cs, err := e.Conflicts(ctx, "u")
	if err != nil || len(cs) != 1 || cs[0].Object != "Portland" {
		t.Fatalf("conflicts after accept: %v %v", cs, err)
	}
	hs, err := e.History(ctx, "u", "user", "lives_in")
	if err != nil {
		t.Fatal(err)
	}
	var inForce *memor.Fact
	for i, f := range hs {
		if f.Open() && f.ID == sea.FactID {
			inForce = &hs[i]
		}
	}
	if inForce == nil || inForce.Status != memor.Active || inForce.Rule != memor.RuleAccept || !inForce.ValidFrom.Equal(day(10)) {
		t.Fatalf("accepted version: %+v", inForce)
	}
	log, err := e.Log(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(log, func(d memor.Decision) bool {
		return d.Rule == memor.RuleAccept && d.FactID == sea.FactID && d.Reason == memor.ReasonAccepted
	}) {
		t.Fatalf("no accept decision in the log: %v", log)
	}
	// Accepting it again changes nothing; it writes no episode.
	eps, _ := e.Episodes(ctx, "u")
	if err := e.Accept(ctx, "u", sea.FactID); err != nil {
		t.Fatal(err)
	}
	if again, _ := e.Episodes(ctx, "u"); len(again) != len(eps) {
		t.Fatalf("a repeated accept wrote an episode: %d → %d", len(eps), len(again))
	}

	hist := dump(t, dir, e, "u")
	log1 := fmt.Sprint(log)
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, dir, e, "u"); got != hist {
		t.Fatalf("rebuild changed versions:\n%s\n---\n%s", hist, got)
	}
	if log2, _ := e.Log(ctx, "u"); fmt.Sprint(log2) != log1 {
		t.Fatalf("rebuild changed the log:\n%v\n---\n%v", log1, log2)
	}

	// The later acceptance of the rival wins the tie.
	if err := e.Accept(ctx, "u", pdx.FactID); err != nil {
		t.Fatal(err)
	}
	if got := livesIn(t, e, "u", 20); got != "Portland" {
		t.Fatalf("after accepting the rival: %q, want Portland", got)
	}
	if cs, _ := e.Conflicts(ctx, "u"); len(cs) != 1 || cs[0].Object != "Seattle" {
		t.Fatalf("conflicts after accepting the rival: %v", cs)
	}
	// A later genuine assertion of a rival still applies.
	assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Seattle", ValidFrom: day(30)})
	if got := livesIn(t, e, "u", 40); got != "Seattle" {
		t.Fatalf("after a later assertion: %q, want Seattle", got)
	}
	if got := livesIn(t, e, "u", 20); got != "Portland" {
		t.Fatalf("before the later assertion: %q, want Portland", got)
	}
}

// TestAcceptLessConfident: a claim contested for being more than 0.1 less
// confident than the value in force is applied once accepted.
func TestAcceptLessConfident(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "San Francisco", ValidFrom: day(0), Confidence: 0.95})
	sea := assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Seattle", ValidFrom: day(10), Confidence: 0.6})
	if sea.Rule != memor.RuleContest {
		t.Fatalf("less confident claim: %+v, want contest", sea)
	}
	if err := e.Accept(ctx, "u", sea.FactID); err != nil {
		t.Fatal(err)
	}
	if got := livesIn(t, e, "u", 20); got != "Seattle" {
		t.Fatalf("after accept: %q, want Seattle", got)
	}
	if cs, _ := e.Conflicts(ctx, "u"); len(cs) != 0 {
		t.Fatalf("conflicts after accept: %v", cs)
	}
	// Correcting the accepted fact retracts it: San Francisco again.
	if err := e.Correct(ctx, "u", sea.FactID); err != nil {
		t.Fatal(err)
	}
	if got := livesIn(t, e, "u", 20); got != "San Francisco" {
		t.Fatalf("after correcting the accepted fact: %q", got)
	}
	if err := e.Accept(ctx, "u", sea.FactID); !errors.Is(err, memor.ErrNotContested) {
		t.Fatalf("accept of a retracted fact: %v, want ErrNotContested", err)
	}
}

// TestAcceptErrors: Accept of what is not a contested fact fails with a
// sentinel.
func TestAcceptErrors(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	sf := assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "San Francisco", ValidFrom: day(0)})
	ends, err := e.End(ctx, "u", memor.EndInput{Subject: "user", Predicate: "plays_instrument", Object: "violin", At: day(3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, user, id string
		want           error
	}{
		{"in force", "u", sf.FactID, memor.ErrNotContested},
		{"an end", "u", ends[0].FactID, memor.ErrNotFound},
		{"unknown", "u", strings.Repeat("ab", 16), memor.ErrNotFound},
		{"malformed", "u", "nope", memor.ErrNotFound},
		{"another user's", "v", sf.FactID, memor.ErrNotFound},
		{"invalid user", "", sf.FactID, memor.ErrInvalidUser},
	} {
		if err := e.Accept(ctx, c.user, c.id); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestAcceptOrderIndependent: the state after an accept does not depend
// on the order the slot's claims arrived in.
func TestAcceptOrderIndependent(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	in := []memor.FactInput{
		{Subject: "user", Predicate: "lives_in", Object: "San Francisco", ValidFrom: day(0)},
		{Subject: "user", Predicate: "lives_in", Object: "Seattle", ValidFrom: day(10)},
		{Subject: "user", Predicate: "lives_in", Object: "Portland", ValidFrom: day(10)},
		{Subject: "user", Predicate: "lives_in", Object: "Denver", ValidFrom: day(20), Confidence: 0.9},
	}
	var states []string
	for i, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
		u := fmt.Sprint("u", i)
		var pdx string
		for _, k := range order {
			d := assertFact(t, e, u, in[k])
			if k == 2 {
				pdx = d.FactID
			}
		}
		if err := e.Accept(ctx, u, pdx); err != nil {
			t.Fatal(err)
		}
		states = append(states, validState(t, e, u))
	}
	if states[0] != states[1] || states[0] != states[2] {
		t.Fatalf("order changed the state:\n%s\n---\n%s\n---\n%s", states[0], states[1], states[2])
	}
	if !strings.Contains(states[0], "Portland") {
		t.Fatalf("state: %s", states[0])
	}
}

// TestAcceptExportImport: an acceptance is an episode of the export, and
// importing it into another store reproduces the accepted state.
func TestAcceptExportImport(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "San Francisco", ValidFrom: day(0)})
	assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Seattle", ValidFrom: day(10)})
	pdx := assertFact(t, e, "u", memor.FactInput{Subject: "user", Predicate: "lives_in", Object: "Portland", ValidFrom: day(10)})
	if err := e.Accept(ctx, "u", pdx.FactID); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := e.Export(ctx, &b, "u"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"kind":"accept"`) || !strings.Contains(b.String(), `"accept":{"fact_id":"`+pdx.FactID+`"}`) {
		t.Fatalf("export lacks the accept episode:\n%s", b.String())
	}
	f, _ := openTest(t, memor.Options{})
	if _, err := f.Import(ctx, strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	if got, want := validState(t, f, "u"), validState(t, e, "u"); got != want {
		t.Fatalf("imported state:\n%s\nwant\n%s", got, want)
	}
	if got := livesIn(t, f, "u", 20); got != "Portland" {
		t.Fatalf("imported: %q, want Portland", got)
	}
}

// TestCheckAcceptEpisode: an accept episode without its fact is invalid.
func TestCheckAcceptEpisode(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	if err := e.CheckEpisode(memor.Episode{User: "u", Kind: memor.EpisodeAccept}); !errors.Is(err, memor.ErrInvalidFact) {
		t.Errorf("accept episode without a body: %v, want ErrInvalidFact", err)
	}
	ok := memor.Episode{User: "u", Kind: memor.EpisodeAccept, Accept: &memor.Acceptance{FactID: strings.Repeat("ab", 16)}}
	if err := e.CheckEpisode(ok); err != nil {
		t.Errorf("accept episode: %v", err)
	}
	if k := memor.EpisodeAccept.String(); k != "accept" {
		t.Errorf("kind name %q", k)
	}
}
