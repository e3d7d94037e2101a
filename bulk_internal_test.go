package memor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
)

// tallyJudge answers append for "hobby", replace for any other predicate,
// and counts its calls.
type tallyJudge struct{ calls atomic.Int64 }

func (j *tallyJudge) Judge(_ context.Context, predicate string, _ []string) (extract.Verdict, error) {
	j.calls.Add(1)
	if predicate == "hobby" {
		return extract.Append, nil
	}
	return extract.Replace, nil
}

// failingJudge fails every verdict.
type failingJudge struct{}

func (failingJudge) Judge(context.Context, string, []string) (extract.Verdict, error) {
	return 0, errors.New("judge down")
}

// TestBulkJudgedEqualsOnline: a bulk load whose predicates the judge
// decides (one Many, one One, asked once each and cached in memory for the
// rest of the load) stores what the online path stores, asking the judge
// as often; with a judge that fails, both refuse the write and store
// nothing of the user.
func TestBulkJudgedEqualsOnline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]FactInput, 300)
	for i := range batch {
		f := FactInput{Subject: []string{"user", "Ann"}[i%2], ValidFrom: t0.Add(time.Duration(i%40) * time.Hour)}
		switch i % 3 {
		case 0:
			f.Predicate, f.Object = "hobby", fmt.Sprint("hobby ", i%17)
		case 1:
			f.Predicate, f.Object = "glorp_holder", fmt.Sprint("glorp ", i%5)
			if i%4 == 1 {
				f.Context = "side job"
			}
		default:
			f.Predicate, f.Object = "lives_in", fmt.Sprint("town ", i%7)
		}
		batch[i] = f
	}
	run := func(bulk bool, judge extract.Judge) ([]byte, []Decision, Stats, error) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tune := defaultTuning()
		tune.bulk = bulk
		e, err := openTuned(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, Judge: judge,
			Clock: func() time.Time { now = now.Add(time.Second); return now }}, tune)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		d, werr := e.AssertBatch(ctx, "ann", batch)
		st, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return checkedDump(t, e), d, st, werr
	}
	var judges [2]tallyJudge
	online, od, ost, err := run(false, &judges[0])
	if err != nil {
		t.Fatal(err)
	}
	bulk, bd, bst, err := run(true, &judges[1])
	if err != nil {
		t.Fatal(err)
	}
	if ost.BulkLoads != 0 || bst.BulkLoads != 1 {
		t.Fatalf("bulk loads: online %d, bulk %d", ost.BulkLoads, bst.BulkLoads)
	}
	if !bytes.Equal(online, bulk) {
		t.Fatal("the bulk load stored other bytes than the online path")
	}
	if fmt.Sprint(od) != fmt.Sprint(bd) {
		t.Fatal("the bulk load returned other decisions than the online path")
	}
	if a, b := judges[0].calls.Load(), judges[1].calls.Load(); a != 2 || b != 2 {
		t.Fatalf("judge asked %d times online, %d in the bulk load; want 2", a, b)
	}

	for _, bulk := range []bool{false, true} {
		dump, _, _, err := run(bulk, failingJudge{})
		if !errors.Is(err, errJudge) {
			t.Fatalf("bulk %v: a failing judge gave %v", bulk, err)
		}
		if bytes.Contains(dump, []byte(`"uann`)) {
			t.Fatalf("bulk %v: a refused write stored keys of the user", bulk)
		}
	}
}

// TestBulkTextEqualsOnline: a new user's first episode added inline (Add
// with Sync), bulk loaded, stores what the online path stores, and so do
// the writes after it: sentences the default extractor turns into One and
// Many facts, relatives, ends, quotes of several claims, speakers, chatter
// without facts, and text without a term.
func TestBulkTextEqualsOnline(t *testing.T) {
	t.Parallel()
	texts := []string{
		"I live in Boston and I like tea. My brother Alex plays the violin.",
		"I moved to Denver last month. I no longer play the piano.",
		"We talked about the weather for a while, nothing much.",
		"I like coffee and I like tea. I work at Acme.",
		"My sister Jo lives in Paris. I also live in Lyon.",
		"...",
		"I play the guitar. I don't like tea anymore.",
	}
	speakers := []string{"", "", "Caroline", "", "Mel", "", ""}
	run := func(bulk bool) ([]byte, Stats) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tune := defaultTuning()
		tune.bulk = bulk
		e, err := openTuned(filepath.Join(t.TempDir(), "db"), Options{NoSync: true,
			Clock: func() time.Time { now = now.Add(time.Second); return now }}, tune)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		for u := range 14 {
			user := fmt.Sprint("u", u)
			for k := range 3 {
				i := (u + 3*k) % len(texts)
				opts := []AddOption{Sync(), At(time.Date(2024, 5, 1+u, 0, 0, 0, 0, time.UTC))}
				if s := speakers[(u+k)%len(speakers)]; s != "" {
					opts = append(opts, Speaker(s))
				}
				var d []Decision
				if k == 0 && u%2 == 0 {
					opts = append(opts, Decisions(&d))
				}
				if _, err := e.Add(ctx, user, texts[i], opts...); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Query(ctx, user, "where does the user live", QueryOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return checkedDump(t, e), st
	}
	online, ost := run(false)
	bulk, bst := run(true)
	if ost.BulkLoads != 0 || bst.BulkLoads != 14 {
		t.Fatalf("bulk loads: online %d, bulk %d; want 0 and 14", ost.BulkLoads, bst.BulkLoads)
	}
	if !bytes.Equal(online, bulk) {
		a, b := bytes.Split(online, []byte("\n")), bytes.Split(bulk, []byte("\n"))
		for j := range min(len(a), len(b)) {
			if !bytes.Equal(a[j], b[j]) {
				t.Fatalf("line %d differs:\nonline %s\nbulk   %s", j, a[j], b[j])
			}
		}
		t.Fatalf("online stored %d lines, bulk %d", len(a), len(b))
	}
}
