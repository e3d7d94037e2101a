package memor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/diskscan"
	"github.com/memor-db/memor/kv"
)

// scriptedJudge answers the verdicts of its script in turn (the last one
// for ever after) and records the predicates it was asked about.
type scriptedJudge struct {
	mu     sync.Mutex
	script []extract.Verdict
	asked  []string
}

func (j *scriptedJudge) Judge(_ context.Context, predicate string, _ []string) (extract.Verdict, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	v := j.script[min(len(j.asked), len(j.script)-1)]
	j.asked = append(j.asked, predicate)
	return v, nil
}

func (j *scriptedJudge) calls() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.asked...)
}

func assertTeams(t *testing.T, e *memor.Engine, user string, teams ...string) {
	t.Helper()
	for i, team := range teams {
		if _, err := e.Assert(context.Background(), user, memor.FactInput{Subject: "user", Predicate: "team", Object: team, ValidFrom: day(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJudgeVerdictIsPerUser (issue 15.8): the judge's verdict on a
// predicate is cached per user. It used to be cached under one global
// key: the verdict learned from tenant A resolved tenant B's facts (B's
// second team replaced the first because A's judge call said "replace"),
// and it outlived A's Forget.
func TestJudgeVerdictIsPerUser(t *testing.T) {
	t.Parallel()
	j := &scriptedJudge{script: []extract.Verdict{extract.Replace, extract.Append}}
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	ctx := context.Background()
	assertTeams(t, e, "A", "Red", "Blue")
	assertTeams(t, e, "B", "Green", "Gold")
	if got := fmt.Sprint(objects(t, e, "A")); got != "[team=Blue]" {
		t.Errorf("A: %s, want [team=Blue] (its judge said replace)", got)
	}
	if got := fmt.Sprint(objects(t, e, "B")); got != "[team=Gold team=Green]" && got != "[team=Green team=Gold]" {
		t.Errorf("B: %s, want both teams (its judge said append): A's verdict decided B's facts", got)
	}
	if got := fmt.Sprint(j.calls()); got != "[team team]" {
		t.Errorf("judge asked about %s, want [team team] (once per user)", got)
	}
	// A's verdict goes with A: when A comes back the judge is asked again,
	// and B's verdict stands through B's Rebuild and a reopen.
	if err := e.Forget(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	assertTeams(t, e, "A", "Red", "Blue")
	if got := fmt.Sprint(objects(t, e, "A")); got != "[team=Blue team=Red]" && got != "[team=Red team=Blue]" {
		t.Errorf("A after Forget: %s, want both teams (the judge now says append)", got)
	}
	if n := len(j.calls()); n != 3 {
		t.Errorf("judge asked %d times, want 3 (A's verdict went with A's Forget)", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = memor.Open(dir, memor.Options{Judge: &scriptedJudge{script: []extract.Verdict{extract.Replace}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Rebuild(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, e, "B"); len(got) != 2 {
		t.Errorf("B after reopen and Rebuild: %v, want both teams (its cached verdict)", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestJudgeVerdictsUpgrade: a store of format 4 kept judge verdicts under
// global 'J' keys. Open moves each into the users whose claims name its
// predicate (their facts resolve as before: Rebuild asks the judge
// nothing), drops the verdicts no user's claim names (a forgotten
// user's predicate), and after Close no file holds the old keys' bytes.
func TestJudgeVerdictsUpgrade(t *testing.T) {
	if encryptAllBuild {
		t.Skip("plain files only: it finds the old verdict in plain files")
	}
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	const secret = "zanzibarsecretpredicate"
	j := &scriptedJudge{script: []extract.Verdict{extract.Replace}}
	e, err := memor.Open(dir, memor.Options{Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	assertTeams(t, e, "A", "Red", "Blue")
	assertTeams(t, e, "B", "Green", "Gold")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Rewrite the store as format 4 had it: one global verdict on team,
	// none in the users' keyspaces, and the verdict of a predicate of a
	// user forgotten long ago.
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for _, u := range []string{"A", "B"} {
		p := kv.UserKey(u, kv.SubJudge)
		if err := b.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, pred := range []string{"team", secret} {
		if err := b.Set(kv.AppendString([]byte{kv.TagJudge}, pred), []byte{byte(extract.Replace)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.SetFormatVersionForTest(dir, 4); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	holding := func() []string {
		hits, err := diskscan.FilesContaining(dir, []byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	if len(holding()) == 0 {
		t.Fatal("the old verdict is in no file: the test would prove nothing")
	}

	// The judge would now say append: were a verdict lost, Rebuild would
	// ask it and keep both teams.
	j2 := &scriptedJudge{script: []extract.Verdict{extract.Append}}
	e, err = memor.Open(dir, memor.Options{Judge: j2})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"A", "B"} {
		if err := e.Rebuild(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(objects(t, e, "A"), objects(t, e, "B")); got != "[team=Blue] [team=Gold]" {
		t.Errorf("after the upgrade: %s, want [team=Blue] [team=Gold] (the old verdict)", got)
	}
	if calls := j2.calls(); len(calls) != 0 {
		t.Errorf("the upgraded store asked the judge about %v", calls)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := holding(); len(hits) > 0 {
		t.Errorf("after the upgrade and Close the old verdict's predicate is in %s", strings.Join(hits, ", "))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "MEMOR_FORMAT")); err != nil || !bytes.Equal(b, fmt.Appendf(nil, "memor format %d\n", kv.FormatVersion)) {
		t.Errorf("format sidecar %q, %v", b, err)
	}
	db, err = kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.ScanRange(ctx, []byte{kv.TagJudge}, []byte{kv.TagJudge + 1}, func(_, _ []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d global verdicts left (%v)", n, err)
	}
}
