package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/corpus"
)

// fuzzSteps bounds the program of one fuzz input, so that executions stay
// fast (the fuzzer must get through its seed corpus within a short
// -fuzztime on a loaded CI machine); the property test runs longer ones.
const (
	fuzzSteps     = 24
	propertySteps = 64
)

// input reads a fuzz input as a stream of small choices; past the end every
// choice is 0.
type input struct {
	b []byte
	i int
}

func (in *input) done() bool { return in.i >= len(in.b) }

func (in *input) byte() byte {
	if in.i >= len(in.b) {
		return 0
	}
	in.i++
	return in.b[in.i-1]
}

func (in *input) pick(n int) int { return int(in.byte()) % n }

func pickOf[T any](in *input, xs []T) T { return xs[in.pick(len(xs))] }

// runner drives one engine and the model through one program.
type runner struct {
	t     testing.TB
	ctx   context.Context
	dir   string
	clock *testClock
	e     *memor.Engine
	m     *Model
	log   []string
	txs   []time.Time // every transaction time seen, for knownAt choices
	// lastTx is the latest transaction time since Open: current reads
	// never look earlier than it, even when the clock steps back.
	lastTx time.Time
	// opClock is the clock when the current operation started.
	opClock time.Time
	// The program's vocabulary: the whole one, or a narrow one in which
	// nearly every claim lands in the same few slots.
	subjects, preds, contexts []string
	// ingested counts writes committed as ingested tables, bulk those the
	// bulk loader built.
	ingested, bulk uint64
}

func newRunner(t testing.TB) *runner {
	r := &runner{t: t, ctx: context.Background(), dir: t.TempDir(), clock: &testClock{t: clockBase},
		m: NewModel(modelConfig()), subjects: vocabSubjects, preds: vocabPreds, contexts: vocabContexts}
	r.open()
	t.Cleanup(func() {
		if r.e != nil {
			_ = r.e.Close()
		}
	})
	return r
}

func (r *runner) open() {
	// Every user's first write (and first after Forget) commits as an
	// ingested table, so the model checks that path too; the rest commit
	// through the log. A first write of two or more facts, or a first
	// Add with Sync, is built by the bulk loader; one of a single fact
	// goes the online way.
	e, err := memor.Open(r.dir, memor.Options{NoSync: true, Clock: r.clock.Now, Extractor: lineExtractor{},
		Workers: 1, Predicates: predicates, IngestMinBytes: 1, BulkMinFacts: 2})
	if err != nil {
		r.fail("open: %v", err)
	}
	// The engine restores its latest transaction time at Open, so lastTx
	// carries over a restart.
	r.e = e
}

func (r *runner) reopen() {
	r.countIngested()
	if err := r.e.Close(); err != nil {
		r.fail("close: %v", err)
	}
	r.e = nil
	r.open()
}

// countIngested adds the open engine's ingested tables to r.ingested.
func (r *runner) countIngested() {
	st, err := r.e.Stats(r.ctx)
	if err != nil {
		r.fail("stats: %v", err)
	}
	r.ingested += st.IngestedTables
	r.bulk += st.BulkLoads
}

func (r *runner) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("after:\n  %s\n%s", strings.Join(r.log, "\n  "), fmt.Sprintf(format, args...))
}

func (r *runner) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

// newestTx is the transaction time of user's newest episode.
func (r *runner) newestTx(user string) (time.Time, int) {
	eps, err := r.e.Episodes(r.ctx, user)
	if err != nil {
		r.fail("episodes: %v", err)
	}
	if len(eps) == 0 {
		return time.Time{}, 0
	}
	tx := eps[len(eps)-1].RecordedAt
	return tx, len(eps)
}

// applied checks a write's transaction time and records it in the model.
func (r *runner) applied(user string, tx time.Time, ops []Op) {
	r.t.Helper()
	if tx.Before(r.opClock) {
		r.fail("transaction time %v is before the clock %v", tx, r.opClock)
	}
	r.seen(tx)
	if err := r.m.Apply(user, tx, ops); err != nil {
		r.fail("model: %v", err)
	}
}

func (r *runner) seen(tx time.Time) {
	r.txs = append(r.txs, tx)
	if tx.After(r.lastTx) {
		r.lastTx = tx
	}
}

func (r *runner) genOp(in *input, vfZeroOK bool) Op {
	op := Op{Subject: pickOf(in, r.subjects), Predicate: pickOf(in, r.preds), Object: pickOf(in, vocabObjects),
		Context: pickOf(in, r.contexts), Confidence: pickOf(in, vocabConf)}
	b := in.byte()
	if !(vfZeroOK && b%11 == 10) {
		op.ValidFrom = validTime(b)
	}
	return op
}

// step runs one operation chosen by the input.
func (r *runner) step(in *input) {
	r.clock.Advance(time.Minute)
	r.opClock = r.clock.Now()
	user := pickOf(in, vocabUsers)
	switch in.pick(16) {
	case 0, 1, 2, 3:
		r.assertBatch(in, user)
	case 4, 5:
		r.end(in, user)
	case 6:
		r.correct(in, user)
	case 7:
		r.accept(in, user)
	case 8:
		if in.pick(3) != 0 {
			r.assertBatch(in, user) // forgetting often would leave little to compare
			return
		}
		r.logf("forget %q", user)
		if err := r.e.Forget(r.ctx, user); err != nil {
			r.fail("forget: %v", err)
		}
		r.m.Forget(user)
	case 9:
		older := r.clock.Now()
		if len(r.txs) > 0 && in.pick(2) == 0 {
			older = r.txs[in.pick(len(r.txs))]
		}
		r.logf("prune olderThan=%s", fmtT(older))
		if _, err := r.e.Prune(r.ctx, older); err != nil {
			r.fail("prune: %v", err)
		}
	case 10:
		r.logf("rebuild %q", user)
		if err := r.e.Rebuild(r.ctx, user); err != nil {
			r.fail("rebuild: %v", err)
		}
		// Rebuild takes a transaction time after the user's last one
		// (and writes nothing with it): current reads start there.
		if tx, n := r.newestTx(user); n > 0 && !tx.Before(r.lastTx) {
			r.lastTx = tx.Add(time.Nanosecond)
		}
	case 11:
		r.logf("close and reopen")
		r.reopen()
	case 12, 13, 14:
		r.addEpisode(in, user)
	case 15:
		steps := []time.Duration{0, time.Nanosecond, -time.Hour, 48 * time.Hour, time.Hour}
		d := pickOf(in, steps)
		r.logf("clock %+v (now %s)", d, fmtT(r.clock.Now().Add(d)))
		r.clock.Advance(d)
	}
}

func (r *runner) assertBatch(in *input, user string) {
	n := 1 + in.pick(3)
	var fs []memor.FactInput
	var ops []Op
	invalid := false
	now := r.clock.Now()
	for range n {
		op := r.genOp(in, true)
		if in.pick(24) == 0 {
			op.Object = " " // normalises to nothing: the batch is refused
			invalid = true
		}
		fs = append(fs, memor.FactInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
			Context: op.Context, ValidFrom: op.ValidFrom, Confidence: op.Confidence})
		if op.ValidFrom.IsZero() {
			op.ValidFrom = now // the engine clock at the call
		}
		ops = append(ops, op)
	}
	r.logf("assert %q %s", user, fmtOps(ops))
	_, err := r.e.AssertBatch(r.ctx, user, fs)
	if invalid {
		if !errors.Is(err, memor.ErrInvalidFact) {
			r.fail("assert with an empty object: %v, want ErrInvalidFact", err)
		}
		return
	}
	if err != nil {
		r.fail("assert: %v", err)
	}
	tx, _ := r.newestTx(user)
	r.applied(user, tx, ops)
}

func (r *runner) end(in *input, user string) {
	op := r.genOp(in, true)
	op.End, op.Confidence = true, 0
	if in.pick(3) == 0 {
		op.Object = "" // end every open value
	}
	in2 := memor.EndInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object, Context: op.Context, At: op.ValidFrom}
	if op.ValidFrom.IsZero() {
		op.ValidFrom = r.clock.Now()
	}
	r.logf("end %q %s", user, fmtOps([]Op{op}))
	if _, err := r.e.End(r.ctx, user, in2); err != nil {
		r.fail("end: %v", err)
	}
	tx, _ := r.newestTx(user)
	r.applied(user, tx, []Op{op})
}

func (r *runner) correct(in *input, user string) {
	claims := r.m.Claims(user)
	var id string
	var target *Claim
	switch mode := in.pick(8); {
	case mode < 6 && len(claims) > 0:
		c := claims[in.pick(len(claims))]
		target, id = &c, claimID(user, c)
	case mode == 6:
		id = "not-a-fact-id"
	default:
		id = factID(user, "nobody", "likes", "nothing", "", validBase)
	}
	if target != nil {
		r.logf("correct %q %s (end=%t)", user, fmtOps([]Op{{Subject: target.Subject, Predicate: target.Pred,
			Object: target.Object, Context: target.Context, ValidFrom: target.ValidFrom}}), target.End)
	} else {
		r.logf("correct %q %s", user, id)
	}
	_, before := r.newestTx(user)
	err := r.e.Correct(r.ctx, user, id)
	if target == nil || target.End {
		if !errors.Is(err, memor.ErrNotFound) {
			r.fail("correct of a non-fact: %v, want ErrNotFound", err)
		}
		return
	}
	if err != nil {
		r.fail("correct: %v", err)
	}
	tx, after := r.newestTx(user)
	if after == before {
		tx = time.Time{} // nothing changed: the model must agree
	} else {
		r.seen(tx)
	}
	changed, merr := r.m.Correct(user, tx, target.Subject, target.Pred, target.Object, target.Context, target.ValidFrom)
	if merr != nil || changed != (after > before) {
		r.fail("correct: engine wrote %d episode(s), model changed=%t err=%v", after-before, changed, merr)
	}
}

// accept accepts a claim of user, a contested one mostly, and checks the
// engine's answer and effect against the model's.
func (r *runner) accept(in *input, user string) {
	claims := r.m.Claims(user)
	var contested []Claim
	for _, c := range claims {
		if c.Contested {
			contested = append(contested, c)
		}
	}
	var target *Claim
	id := factID(user, "nobody", "likes", "nothing", "", validBase)
	switch mode := in.pick(8); {
	case mode < 5 && len(contested) > 0:
		c := contested[in.pick(len(contested))]
		target, id = &c, claimID(user, c)
	case mode < 7 && len(claims) > 0:
		c := claims[in.pick(len(claims))]
		target, id = &c, claimID(user, c)
	}
	if target != nil {
		r.logf("accept %q %s (end=%t)", user, fmtOps([]Op{{Subject: target.Subject, Predicate: target.Pred,
			Object: target.Object, Context: target.Context, ValidFrom: target.ValidFrom}}), target.End)
	} else {
		r.logf("accept %q %s", user, id)
	}
	_, before := r.newestTx(user)
	err := r.e.Accept(r.ctx, user, id)
	if target == nil || target.End {
		if !errors.Is(err, memor.ErrNotFound) {
			r.fail("accept of a non-fact: %v, want ErrNotFound", err)
		}
		return
	}
	tx, after := r.newestTx(user)
	if after == before {
		tx = time.Time{}
	} else {
		r.seen(tx)
	}
	changed, merr := r.m.Accept(user, tx, target.Subject, target.Pred, target.Object, target.Context, target.ValidFrom)
	switch {
	case errors.Is(merr, ErrNotContested):
		if !errors.Is(err, memor.ErrNotContested) {
			r.fail("accept of a fact the model does not contest: %v, want ErrNotContested", err)
		}
	case merr != nil:
		r.fail("model accept: %v", merr)
	case err != nil:
		r.fail("accept: %v", err)
	case changed != (after > before):
		r.fail("accept: engine wrote %d episode(s), model changed=%t", after-before, changed)
	}
}

func (r *runner) addEpisode(in *input, user string) {
	n := 1 + in.pick(3)
	var lines []string
	var ops []Op
	var opts []memor.AddOption
	var at time.Time
	if in.pick(2) == 0 {
		at = validTime(in.byte())
		opts = append(opts, memor.At(at))
	}
	for range n {
		op := r.genOp(in, true)
		kind := "A"
		switch in.pick(8) {
		case 0, 1:
			kind, op.End, op.Confidence = "E", true, 0
		case 2:
			kind = "Q" // invented quote: rejected
		case 3:
			op.Object = "" // empty object: rejected (for an end: every value)
		}
		lines = append(lines, opLine(kind, op))
		if kind != "Q" {
			ops = append(ops, op)
		}
	}
	// Realistic text around the op lines (the extractor ignores it, the
	// indexes do not): a corpus text or 1–500 random words.
	if prose := proseText(in); prose != "" {
		lines = append(lines, prose)
	}
	text := strings.Join(lines, "\n")
	mode := in.pick(3)
	if mode == 0 {
		opts = append(opts, memor.Sync())
	}
	r.logf("add %q at=%s mode=%d %q", user, fmtT(at), mode, text)
	ep, err := r.e.Add(r.ctx, user, text, opts...)
	if err != nil {
		r.fail("add: %v", err)
	}
	if mode == 2 {
		// Close with the episode (maybe) still queued: the next Open
		// applies it.
		r.reopen()
	}
	if err := r.e.Flush(r.ctx, user); err != nil {
		r.fail("flush: %v", err)
	}
	for i := range ops {
		if ops[i].ValidFrom.IsZero() {
			ops[i].ValidFrom = ep.At
		}
	}
	r.applied(user, ep.RecordedAt, ops)
}

// proseText draws the prose an episode carries besides its op lines: none,
// a text of testdata/texts, or a sequence of 1–500 words drawn from the
// corpus's vocabulary. Its '|' become '¦' so that no line of it reads as
// an op, and it is cut to leave room for the op lines in the 64 KiB limit.
func proseText(in *input) string {
	var s string
	switch in.pick(4) {
	case 0, 1:
		return ""
	case 2:
		texts := corpus.MustTexts()
		s = texts[(int(in.byte())<<8|int(in.byte()))%len(texts)].Body
	case 3:
		r := rand.New(rand.NewPCG(uint64(in.byte()), uint64(in.byte())))
		s = corpus.Words(r, 1+r.IntN(500))
	}
	s = strings.ReplaceAll(s, "|", "¦")
	n := min(len(s), 60<<10)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func fmtOps(ops []Op) string {
	var parts []string
	for _, o := range ops {
		k := "A"
		if o.End {
			k = "E"
		}
		parts = append(parts, fmt.Sprintf("%s|%q|%q|%q|%q|%s|%g", k, o.Subject, o.Predicate, o.Object, o.Context,
			fmtT(o.ValidFrom), o.Confidence))
	}
	return strings.Join(parts, " ; ")
}

// verify compares the engine with the model: State of every user, AsOf at
// instants chosen by the input, one History, episode counts, fact
// identities, and Check.
func (r *runner) verify(in *input) {
	r.t.Helper()
	all := view{tx: true, reinforced: true}
	// The engine's "now" for current state: its clock, but never before
	// its latest transaction (ticks the harness does not see, such as the
	// ingestion worker's, are a few nanoseconds later; no boundary in the
	// vocabulary falls that close).
	now := r.clock.Now()
	if r.lastTx.After(now) {
		now = r.lastTx
	}
	for _, u := range vocabUsers {
		got, err := r.e.State(r.ctx, u)
		if err != nil {
			r.fail("state: %v", err)
		}
		r.compare(fmt.Sprintf("State(%q) at %s", u, fmtT(now)), renderAll(r.m.State(u, now), all), renderEngine(got, all))
		eps, err := r.e.Episodes(r.ctx, u)
		if err != nil {
			r.fail("episodes: %v", err)
		}
		if len(eps) != r.m.Episodes(u) {
			r.fail("user %q has %d episodes, model %d", u, len(eps), r.m.Episodes(u))
		}
	}
	for range 2 {
		u := pickOf(in, vocabUsers)
		validAt, knownAt := now, now
		if b := in.byte(); b%4 != 0 {
			validAt = validTime(b)
		}
		if len(r.txs) > 0 && in.pick(4) != 0 {
			knownAt = r.txs[in.pick(len(r.txs))].Add(time.Duration(in.pick(3)-1) * time.Nanosecond)
		}
		got, err := r.e.AsOf(r.ctx, u, validAt, knownAt)
		if err != nil {
			r.fail("asof: %v", err)
		}
		// The model answers AsOf two independent ways; they must agree.
		r.compare(fmt.Sprintf("model AsOf(%q, valid=%s, known=%s) by versions and by fold", u, fmtT(validAt), fmtT(knownAt)),
			renderAll(r.m.AsOfByFold(u, validAt, knownAt), view{}), renderAll(r.m.AsOf(u, validAt, knownAt), view{}))
		r.compare(fmt.Sprintf("AsOf(%q, valid=%s, known=%s)", u, fmtT(validAt), fmtT(knownAt)),
			renderAll(r.m.AsOf(u, validAt, knownAt), all), renderEngine(got, all))
	}
	u, subj, pred := pickOf(in, vocabUsers), pickOf(in, vocabSubjects), pickOf(in, vocabPreds)
	got, err := r.e.History(r.ctx, u, subj, pred)
	if err != nil {
		r.fail("history: %v", err)
	}
	r.compare(fmt.Sprintf("History(%q, %q, %q)", u, subj, pred), renderAll(r.m.History(u, subj, pred), all), renderEngine(got, all))
	for _, f := range got {
		if want := factID(u, NormKey(f.Subject), f.Predicate, NormKey(f.Object), NormKey(f.Context), f.ValidFrom); f.ID != want {
			r.fail("fact %v has ID %s, want hash(user, subject, predicate, object, context, ValidFrom) = %s", f, f.ID, want)
		}
	}
	if err := r.e.Check(r.ctx); err != nil {
		r.fail("check: %v", err)
	}
}

func (r *runner) compare(what, want, got string) {
	r.t.Helper()
	if want != got {
		r.fail("%s differs:\n%s", what, diffLines(want, got))
	}
}

// runProgram runs the program encoded in data.
// runProgram runs the program in data and returns how many of its writes
// committed as ingested tables and how many the bulk loader built.
func runProgram(t testing.TB, data []byte, maxSteps int) (ingested, bulk uint64) {
	r := newRunner(t)
	in := &input{b: data}
	if in.pick(2) == 0 {
		r.subjects, r.preds, r.contexts = narrowSubjects, narrowPreds, narrowContexts
		r.logf("narrow vocabulary")
	}
	for n := 0; !in.done() && n < maxSteps; n++ {
		r.step(in)
		r.verify(in)
	}
	r.countIngested()
	return r.ingested, r.bulk
}

// FuzzOps: random programs of operations over a few users, subjects and
// predicates with colliding times; after each step the engine must agree
// with the model and Check must pass.
func FuzzOps(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x01\x02\x03\x00\x01\x00"))
	for seed := range uint64(2) {
		f.Add(randomProgram(seed, 300))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runProgram(t, data, fuzzSteps)
	})
}

func randomProgram(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x6d656d6f72))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// propertyRuns is how many random programs the property tests run by
// default (MEMOR_FUZZ_STEPS overrides it).
func propertyRuns(def int) int {
	if s := os.Getenv("MEMOR_FUZZ_STEPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return def / 4
	}
	return def
}

// TestOpsRandom runs FuzzOps's property over seeded random programs, so a
// plain `go test` explores beyond the seed corpus.
func TestOpsRandom(t *testing.T) {
	ingested, bulk := uint64(0), uint64(0)
	for seed := range uint64(propertyRuns(16)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			i, b := runProgram(t, randomProgram(1000+seed, 800), propertySteps)
			ingested, bulk = ingested+i, bulk+b
		})
	}
	if ingested == 0 {
		t.Error("no write was ingested as a table: the ingestion path went unchecked")
	}
	if bulk == 0 {
		t.Error("no write was bulk loaded: the bulk loader went unchecked")
	}
	t.Logf("%d writes ingested as tables, %d bulk loaded", ingested, bulk)
}
