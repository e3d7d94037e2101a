package fuzz

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// runPermutation imports the claims encoded in data for user "p" one at a
// time in the generated order and for user "q" shuffled and grouped into
// multi-op episodes, applies the same corrections to both, and requires the
// same valid-time state (DESIGN §3, order independence) — and the model's.
func runPermutation(t testing.TB, data []byte) {
	in := &input{b: data}
	subjects, preds, contexts := vocabSubjects, vocabPreds, vocabContexts
	if in.pick(2) == 0 {
		subjects, preds, contexts = narrowSubjects, narrowPreds, narrowContexts
	}
	m := NewModel(modelConfig())
	type item struct {
		op Op
		c  Claim
	}
	var items []item
	seen := map[string]bool{}
	for n := 2 + in.pick(23); len(items) < n && !in.done(); {
		op := Op{Subject: pickOf(in, subjects), Predicate: pickOf(in, preds), Object: pickOf(in, vocabObjects),
			Context: pickOf(in, contexts), Confidence: pickOf(in, vocabConf), ValidFrom: validTime(in.byte())}
		if in.pick(4) == 0 {
			op.End, op.Confidence = true, 0
			if in.pick(2) == 0 {
				op.Object = ""
			}
		}
		c := Claim{End: op.End, SubjKey: NormKey(op.Subject), Pred: m.Canonical(op.Predicate), ObjKey: NormKey(op.Object),
			CtxKey: NormKey(op.Context), Subject: op.Subject, Object: op.Object, Context: op.Context, ValidFrom: op.ValidFrom}
		// Restating a claim with another confidence or spelling keeps the
		// first one (first provenance): that is order-dependent by design,
		// so each claim is generated once.
		if k := c.SortKey(); !seen[k] {
			seen[k] = true
			items = append(items, item{op, c})
		}
	}
	// Fisher–Yates driven by the input.
	perm := make([]int, len(items))
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := int(in.byte()) % (i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	var fixes []Claim
	for range in.pick(4) {
		if it := items[in.pick(len(items))]; !it.op.End {
			fixes = append(fixes, it.c)
		}
	}

	ctx := context.Background()
	clock := &testClock{t: clockBase}
	e, err := memor.Open(t.TempDir(), memor.Options{NoSync: true, Clock: clock.Now, Extractor: lineExtractor{},
		Workers: 1, Predicates: predicates})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("claims:\n  %s\n%s", strings.Join(log, "\n  "), fmt.Sprintf(format, args...))
	}
	for _, it := range items {
		clock.Advance(time.Minute)
		op := it.op
		log = append(log, fmtOps([]Op{op}))
		if op.End {
			_, err = e.End(ctx, "p", memor.EndInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
				Context: op.Context, At: op.ValidFrom})
		} else {
			_, err = e.Assert(ctx, "p", memor.FactInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
				Context: op.Context, ValidFrom: op.ValidFrom, Confidence: op.Confidence})
		}
		if err != nil {
			fail("p: %v", err)
		}
		if err := m.Apply("p", clock.Now(), []Op{op}); err != nil {
			fail("model: %v", err)
		}
	}
	log = append(log, fmt.Sprintf("q order %v", perm))
	for i := 0; i < len(perm); {
		clock.Advance(time.Minute)
		n := min(1+in.pick(3), len(perm)-i)
		var lines []string
		for _, k := range perm[i : i+n] {
			kind := "A"
			if items[k].op.End {
				kind = "E"
			}
			lines = append(lines, opLine(kind, items[k].op))
		}
		i += n
		if _, err := e.Add(ctx, "q", strings.Join(lines, "\n"), memor.Sync()); err != nil {
			fail("q: %v", err)
		}
	}
	for _, c := range fixes {
		clock.Advance(time.Minute)
		log = append(log, "correct "+fmtOps([]Op{{Subject: c.Subject, Predicate: c.Pred, Object: c.Object, Context: c.Context, ValidFrom: c.ValidFrom}}))
		for _, u := range []string{"p", "q"} {
			if err := e.Correct(ctx, u, claimID(u, c)); err != nil {
				fail("correct %s: %v", u, err)
			}
		}
		if _, err := m.Correct("p", clock.Now(), c.Subject, c.Pred, c.Object, c.Context, c.ValidFrom); err != nil {
			fail("model correct: %v", err)
		}
	}
	// Then accept some contested claims (rule accept): the state after is
	// the same for both orders too.
	for range in.pick(3) {
		var contested []Claim
		for _, c := range m.Claims("p") {
			if c.Contested {
				contested = append(contested, c)
			}
		}
		if len(contested) == 0 {
			break
		}
		c := contested[in.pick(len(contested))]
		clock.Advance(time.Minute)
		log = append(log, "accept "+fmtOps([]Op{{Subject: c.Subject, Predicate: c.Pred, Object: c.Object, Context: c.Context, ValidFrom: c.ValidFrom}}))
		for _, u := range []string{"p", "q"} {
			if err := e.Accept(ctx, u, claimID(u, c)); err != nil {
				fail("accept %s: %v", u, err)
			}
		}
		if _, err := m.Accept("p", clock.Now(), c.Subject, c.Pred, c.Object, c.Context, c.ValidFrom); err != nil {
			fail("model accept: %v", err)
		}
	}

	// The valid-time state: every version currently believed (contested
	// and retracted ones too), and AsOf(t, now) at every instant.
	vt := view{reinforced: true}
	current := func(u string) string {
		var all []memor.Fact
		for _, s := range subjects {
			for _, p := range preds {
				hs, err := e.History(ctx, u, s, p)
				if err != nil {
					fail("history: %v", err)
				}
				for _, f := range hs {
					if f.ExpiredAt.IsZero() {
						all = append(all, f)
					}
				}
			}
		}
		return dedupLines(renderEngine(all, vt))
	}
	p, q := current("p"), current("q")
	if p != q {
		fail("valid-time state depends on the order:\n%s", diffLines(p, q))
	}
	if want := renderAll(m.Current("p"), vt); p != want {
		fail("engine and model differ:\n%s", diffLines(want, p))
	}
	clock.Advance(time.Minute) // after every transaction of both users
	now := clock.Now()
	for d := range 16 {
		at := validTime(byte(d))
		fp, err1 := e.AsOf(ctx, "p", at, now)
		fq, err2 := e.AsOf(ctx, "q", at, now)
		if err1 != nil || err2 != nil {
			fail("asof: %v %v", err1, err2)
		}
		if a, b := renderEngine(fp, vt), renderEngine(fq, vt); a != b {
			fail("AsOf(%s) depends on the order:\n%s", fmtT(at), diffLines(a, b))
		}
	}
	if err := e.Check(ctx); err != nil {
		fail("check: %v", err)
	}
}

// dedupLines drops repeated lines of a sorted rendering: the vocabulary
// spells one slot several ways, so History returns it several times.
func dedupLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// FuzzPermutation: the same claims in two orders (and batchings) give the
// same valid-time state.
func FuzzPermutation(f *testing.F) {
	f.Add([]byte("\x01\x05"))
	for seed := range uint64(2) {
		f.Add(randomProgram(seed, 200))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runPermutation(t, data)
	})
}

// TestPermutationRandom runs FuzzPermutation's property over seeded random
// inputs.
func TestPermutationRandom(t *testing.T) {
	for seed := range uint64(propertyRuns(24)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runPermutation(t, randomProgram(2000+seed, 300))
		})
	}
}
