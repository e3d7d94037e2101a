package memor

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// TestAppendPathEqualsFullFold: resolving new values from the fact in
// force (appended + FoldFrom) writes exactly the bytes the full fold of
// the slot writes, over random histories with supersessions, restated
// values, low confidence, same-instant disagreement, late values, ends and
// corrections.
func TestAppendPathEqualsFullFold(t *testing.T) {
	for seed := range uint64(6) {
		var dumps [2][]byte
		for i, fast := range []bool{true, false} {
			appendFastPath = fast
			dumps[i] = runAppendWorkload(t, seed)
		}
		appendFastPath = true
		if !bytes.Equal(dumps[0], dumps[1]) {
			t.Fatalf("seed %d: the append path and the full fold stored different bytes (%d vs %d)", seed, len(dumps[0]), len(dumps[1]))
		}
	}
}

func runAppendWorkload(t *testing.T, seed uint64) []byte {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, Clock: func() time.Time {
		now = now.Add(time.Second)
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 9))
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 0
	for range 120 {
		step += r.IntN(3) // sometimes the same instant as the last value
		at := t0.Add(time.Duration(step) * time.Hour)
		if r.IntN(8) == 0 {
			at = t0.Add(time.Duration(r.IntN(step+1)) * time.Hour) // late
		}
		in := FactInput{Subject: "user", Predicate: "lives_in", Object: fmt.Sprint("city ", r.IntN(5)),
			ValidFrom: at, Confidence: []float64{1, 1, 0.95, 0.8, 0.4}[r.IntN(5)]}
		var err error
		switch k := r.IntN(12); {
		case k == 0:
			_, err = e.End(ctx, "u", EndInput{Subject: "user", Predicate: "lives_in", At: at})
		case k == 1:
			var fs []Fact
			if fs, err = e.History(ctx, "u", "user", "lives_in"); err == nil && len(fs) > 0 {
				err = e.Correct(ctx, "u", fs[r.IntN(len(fs))].ID)
			}
		case k == 2:
			in2 := in
			in2.Object = "city 9"
			_, err = e.AssertBatch(ctx, "u", []FactInput{in, in2})
		default:
			_, err = e.Assert(ctx, "u", in)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := e.db.Scan(ctx, nil, func(k, v []byte) error {
		fmt.Fprintf(&dump, "%q=%q\n", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return dump.Bytes()
}
